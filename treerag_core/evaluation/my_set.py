"""Score strategies on a workspace's labelled questions, every mean with its bootstrap interval."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from treerag_core.base.errors import QueryError
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.dataset import EvalQuestion
from treerag_core.evaluation.harness import passages_of, picked_paths, question_record
from treerag_core.evaluation.intervals import Interval, mean_interval
from treerag_core.evaluation.metrics import question_metrics
from treerag_core.pipeline import Engine, run

HEADLINE = ("hit@1", "hit@5", "recall@5", "mrr@10", "recall@1000c", "recall@2000c", "hit@2000c")


@dataclass(frozen=True)
class SetScore:
    """One strategy on the labelled questions: each metric's mean with its interval, and
    the per-question records (the harness's shape: outcome, top passages, metrics)."""

    strategy: str
    means: dict[str, Interval]
    records: tuple[dict, ...]
    skipped: dict[str, int]


def score_set(
    engine: Engine,
    questions: Sequence[EvalQuestion],
    settings: QuerySettings,
    strategies: Sequence[str],
    *,
    scope: str = "corpus",
    progress: Callable[[int, int], None] | None = None,
) -> list[SetScore]:
    """Every strategy on every usable question, retrieval only (no answer is written)."""
    usable = [q for q in questions if q.usable]
    run_settings = settings.set("answer.final_top_k", 50).set("answer.context_chars", 0)
    run_settings = run_settings.set("llm.enabled", False)
    pages = {d.doc_id: d.page_starts for d in engine.index.documents if d.page_starts}
    total, done, out = len(usable) * len(strategies), 0, []
    for strategy in strategies:
        per: list[dict[str, float]] = []
        records: list[dict] = []
        skipped: dict[str, int] = {}
        for q in usable:
            where = list(q.docs) if scope == "doc" else None
            try:
                trace = run(engine, q.question, run_settings, strategy=strategy, scope=where,
                            synthesize=False)  # fmt: skip
            except QueryError as exc:
                skipped[str(exc)] = skipped.get(str(exc), 0) + 1
            else:
                metrics = question_metrics(q, passages_of(trace), picked_paths(trace), pages)
                per.append(metrics)
                records.append(question_record(q, trace, metrics))
            done += 1
            if progress is not None:
                progress(done, total)
        means = {k: mean_interval([m[k] for m in per]) for k in HEADLINE if per and k in per[0]}
        out.append(SetScore(strategy, means, tuple(records), skipped))
    return out
