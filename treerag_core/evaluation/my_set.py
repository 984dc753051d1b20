"""Score strategies on a workspace's labelled questions: the harness's report, so the
Evaluate page shows it as it shows a dev set's (metrics with intervals, curves, questions,
coverage)."""

from __future__ import annotations

from collections.abc import Sequence

from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.dataset import EvalQuestion
from treerag_core.evaluation.harness import EvalConfig, Progress, ShouldStop, evaluate_questions
from treerag_core.pipeline import Engine

MY_SET = "my labelled questions"  # the report's dataset name: the workspace's own set


def labelled_report(
    engine: Engine,
    questions: Sequence[EvalQuestion],
    settings: QuerySettings,
    strategies: Sequence[str],
    *,
    scope: str = "corpus",
    limit: int | None = None,
    progress: Progress | None = None,
    use_llm: bool = False,
    should_stop: ShouldStop | None = None,
) -> dict:
    """Every strategy on the first `limit` usable labelled questions, retrieval only (no
    answer is written), as an eval report named `MY_SET`. `use_llm`: a strategy that uses
    the locator runs twice, local and `+llm` (the LLM of `settings.llm`, with the engine's
    key), as `eval --llm` does.

    Raises:
        ValueError: an unknown strategy, scope or limit.
    """
    config = EvalConfig(
        strategies=tuple(strategies),
        scope=scope,
        limit=limit,
        use_llm=use_llm,
        write_answers=False,
        index_settings=engine.index.settings,
        query_settings=settings,
    )
    usable = [q for q in questions if q.usable][:limit]
    return evaluate_questions(
        engine, usable, config, dataset=MY_SET, progress=progress, should_stop=should_stop
    )
