"""One question through several strategies side by side (steps 1-2, no LLM call)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from treerag_core.base.errors import TreeRAGError
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import LocateResult, Trace
from treerag_core.pipeline import Engine, run
from treerag_core.strategies import get_strategy, strategy_names


@dataclass(frozen=True)
class Compared:
    """One strategy's run of the question: its trace and seconds, or why it could not run."""

    strategy: str
    label: str
    trace: Trace | None
    seconds: float
    error: str = ""
    failure: Exception | None = None  # the error itself, so an edge can word it its own way


def compare_strategies(
    engine: Engine,
    question: str,
    settings: QuerySettings,
    strategies: Sequence[str] | None = None,
    scope: Sequence[str] | None = None,
    located: LocateResult | None = None,
    located_by: str = "",
) -> list[Compared]:
    """Run `question` through each strategy (default: every runnable registered one).

    The LLM is off (comparing never costs a call) and no answer is written. `located`, the
    step 1 of a trace made by strategy `located_by`, is offered to that strategy only (the
    engine reuses it when its inputs still hold). A strategy that fails is reported with its
    message, and the others still run.
    """
    local = settings.set("llm.enabled", False)
    out: list[Compared] = []
    for name in strategies if strategies is not None else strategy_names(runnable=True):
        plugin = get_strategy(name)
        started = time.perf_counter()
        try:
            trace = run(
                engine,
                question,
                local,
                strategy=name,
                located=located if name == located_by else None,
                scope=scope,
                synthesize=False,
            )
        except (TreeRAGError, ValueError) as exc:
            seconds = time.perf_counter() - started
            out.append(Compared(name, plugin.label, None, seconds, str(exc), exc))
            continue
        out.append(Compared(name, plugin.label, trace, time.perf_counter() - started))
    return out
