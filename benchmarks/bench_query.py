"""Per-stage query latency and the share of query time outside model inference, vs flat-hybrid."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import EVAL, EVAL_CACHE, reported, stderr
from treerag_core import Engine, dataset_index, get_reranker, index_embedder, run
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import QueryError
from treerag_core.base.names import StrategyName
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation import load_dataset, percentile

if TYPE_CHECKING:  # annotations only
    from treerag_core import CorpusIndex, Embedder

DEFAULT_DATASET = "qasper"
# The strategy under test, then its baseline.
STRATEGIES = (StrategyName.TREERAG.value, StrategyName.FLAT_HYBRID.value)
SCOPES = ("doc", "corpus")
TARGET_OVERHEAD = 0.10  # engine time (everything but model inference) < 10% of query time
STAGES = ("locate", "retrieve", "rerank", "total", "embed_model", "rerank_model", "overhead")

Log = Callable[[str], None]


def _no_log(message: str) -> None:
    """Default logger: silent."""


@dataclass(frozen=True)
class QueryCase:
    """One question and the documents its doc scope restricts it to."""

    text: str
    docs: tuple[str, ...]


class ModelClock:
    """Seconds spent inside model calls since the last reset."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.embed_seconds = 0.0
        self.embed_calls = 0
        self.rerank_seconds = 0.0
        self.rerank_pairs = 0


class TimedEmbedder:
    """Passes every call to the real embedder and adds its wall time to a ModelClock."""

    def __init__(self, inner: Embedder, clock: ModelClock) -> None:
        self.inner = inner
        self.clock = clock
        self.name = inner.name
        self.dim = inner.dim

    def embed(self, texts: Sequence[str], batch_size: int = 32, progress=None) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self.inner.embed(texts, batch_size=batch_size, progress=progress)
        finally:
            self.clock.embed_seconds += time.perf_counter() - started
            self.clock.embed_calls += 1

    def embed_query(self, text: str) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self.inner.embed_query(text)
        finally:
            self.clock.embed_seconds += time.perf_counter() - started
            self.clock.embed_calls += 1


class TimedReranker:
    """Passes `score` to the real cross-encoder and adds its wall time to a ModelClock."""

    def __init__(self, inner: Any, clock: ModelClock) -> None:
        self.inner = inner
        self.clock = clock
        self.name = inner.name

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self.inner.score(query, passages, batch_size=batch_size)
        finally:
            self.clock.rerank_seconds += time.perf_counter() - started
            self.clock.rerank_pairs += len(passages)


def timed_reranker_factory(
    clock: ModelClock, factory: Callable[[str], Any] = get_reranker
) -> Callable[[str], TimedReranker]:
    """An Engine.reranker_factory whose rerankers report to `clock` (load errors pass through)."""
    cache: dict[str, TimedReranker] = {}

    def make(model: str) -> TimedReranker:
        if model not in cache:
            cache[model] = TimedReranker(factory(model), clock)
        return cache[model]

    return make


def _scope_of(case: QueryCase, scope: str) -> list[str] | None:
    return list(case.docs) if scope == "doc" else None


def run_query_bench(
    index: CorpusIndex,
    embedder: Embedder,
    cases: Sequence[QueryCase],
    *,
    strategies: Sequence[str] = STRATEGIES,
    scopes: Sequence[str] = SCOPES,
    settings: QuerySettings | None = None,
    reranker_factory: Callable[[str], Any] = get_reranker,
    log: Log = _no_log,
) -> dict[str, Any]:
    """Time every case under every scope and strategy (interleaved), after one warm-up each.

    Each query gets a fresh Engine (no query-vector cache carried over from another scope or
    strategy) over the shared index. Model time is what the wrapped embedder and cross-encoder
    spend; overhead is the rest of the wall time of `pipeline.run`.
    """
    if not cases:
        raise ValueError("no questions to time")
    settings = settings or QuerySettings().set("llm.enabled", False)
    clock = ModelClock()
    timed_embedder = TimedEmbedder(embedder, clock)
    factory = timed_reranker_factory(clock, reranker_factory)

    def engine() -> Engine:
        return Engine(index, timed_embedder, api_key=None, reranker_factory=factory)

    log("query bench: warm-up (loads the models, builds corpus-scope caches)")
    for scope in scopes:
        for strategy in strategies:
            run(engine(), cases[0].text, settings, strategy=strategy,
                scope=_scope_of(cases[0], scope), synthesize=False)  # fmt: skip

    records: dict[str, dict[str, list[dict[str, Any]]]] = {
        sc: {st: [] for st in strategies} for sc in scopes
    }
    skipped: dict[str, int] = {}
    fallbacks: dict[str, int] = {}
    seen_scopes: set[tuple[str, str, tuple[str, ...]]] = {
        (sc, st, tuple(cases[0].docs) if sc == "doc" else ()) for sc in scopes for st in strategies
    }
    total_runs = len(cases) * len(scopes) * len(strategies)
    done = 0
    for case in cases:
        for scope in scopes:
            for strategy in strategies:
                done += 1
                key = (scope, strategy, case.docs if scope == "doc" else ())
                cold = key not in seen_scopes  # first query on this scope builds its caches
                seen_scopes.add(key)
                clock.reset()
                started = time.perf_counter()
                try:
                    trace = run(engine(), case.text, settings, strategy=strategy,
                                scope=_scope_of(case, scope), synthesize=False)  # fmt: skip
                except QueryError as exc:
                    skipped[str(exc)] = skipped.get(str(exc), 0) + 1
                    continue
                total = time.perf_counter() - started
                model = clock.embed_seconds + clock.rerank_seconds
                for fb in trace.fallbacks:
                    name = f"{fb.stage}:{fb.reason}"
                    fallbacks[name] = fallbacks.get(name, 0) + 1
                records[scope][strategy].append(
                    {
                        "locate": (trace.locate.seconds if trace.locate else 0.0) * 1000,
                        "retrieve": trace.retrieve_seconds * 1000,
                        "rerank": trace.rerank_seconds * 1000,
                        "total": total * 1000,
                        "embed_model": clock.embed_seconds * 1000,
                        "rerank_model": clock.rerank_seconds * 1000,
                        "overhead": max(0.0, total - model) * 1000,
                        "embed_calls": clock.embed_calls,
                        "rerank_pairs": clock.rerank_pairs,
                        "cold_scope": cold,
                    }
                )
                if done % 25 == 0 or done == total_runs:
                    log(f"query bench: {done}/{total_runs} queries")
    summary = {
        scope: {st: summarize(records[scope][st]) for st in strategies if records[scope][st]}
        for scope in scopes
    }
    return {
        "questions": len(cases),
        "strategies": list(strategies),
        "scopes": list(scopes),
        "embedder": embedder.name,
        "settings": settings.to_dict(),
        "target_overhead": TARGET_OVERHEAD,
        "summary": summary,
        "vs_baseline": _vs_baseline(summary, strategies),
        "skipped": skipped,
        "fallbacks": fallbacks,
        "records": records,
    }


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """p50/p95 per stage (ms) and the overhead share (sum of overhead / sum of query time)."""
    out: dict[str, Any] = {"n": len(rows)}
    for stage in STAGES:
        values = [float(r[stage]) for r in rows]
        out[stage] = {"p50": percentile(values, 50), "p95": percentile(values, 95)}
    total = sum(r["total"] for r in rows)
    overhead = sum(r["overhead"] for r in rows)
    warm = [r for r in rows if not r["cold_scope"]]
    warm_total = sum(r["total"] for r in warm)
    out["overhead_share"] = overhead / total if total > 0 else 0.0
    out["overhead_share_warm"] = (
        sum(r["overhead"] for r in warm) / warm_total if warm_total > 0 else None
    )
    out["n_cold_scope"] = len(rows) - len(warm)
    out["rerank_pairs_mean"] = sum(r["rerank_pairs"] for r in rows) / len(rows)
    out["embed_calls_mean"] = sum(r["embed_calls"] for r in rows) / len(rows)
    out["target_met"] = out["overhead_share"] < TARGET_OVERHEAD
    return out


def _vs_baseline(summary: dict[str, Any], strategies: Sequence[str]) -> dict[str, Any]:
    """Each strategy's total p50/p95 divided by the baseline's (the last strategy), per scope."""
    if len(strategies) < 2:
        return {}
    base = strategies[-1]
    out: dict[str, Any] = {}
    for scope, by_strategy in summary.items():
        if base not in by_strategy:
            continue
        ref = by_strategy[base]["total"]
        out[scope] = {
            st: {
                "total_p50_ratio": s["total"]["p50"] / ref["p50"] if ref["p50"] else None,
                "total_p95_ratio": s["total"]["p95"] / ref["p95"] if ref["p95"] else None,
            }
            for st, s in by_strategy.items()
            if st != base
        }
    return out


def verdicts(result: dict[str, Any]) -> list[str]:
    """One line per scope for the strategy under test; a miss is said plainly."""
    lines = []
    under_test = result["strategies"][0]
    for scope, by_strategy in result["summary"].items():
        s = by_strategy.get(under_test)
        if s is None:
            continue
        share = s["overhead_share"]
        word = "MET" if s["target_met"] else "MISSED"
        lines.append(
            f"TARGET {word} ({under_test}, {scope} scope): engine overhead {share:.1%} of "
            f"query time (limit {result['target_overhead']:.0%})"
        )
    return lines


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def to_markdown(result: dict[str, Any]) -> str:
    """Per scope: one row per strategy with p50/p95 of each stage and the overhead share."""
    lines = [
        f"{result['questions']} questions, embedder `{result['embedder']}`, no LLM "
        "(local locator), rerank on; every query on a fresh Engine after one warm-up per "
        "scope and strategy. Model time = embedder calls + cross-encoder `score`; overhead = "
        "the rest of `pipeline.run`. Latencies in ms, p50 / p95.",
        "",
    ]
    for scope, by_strategy in result["summary"].items():
        lines += [
            f"**{scope} scope**",
            "",
            "| strategy | n | locate | retrieve | rerank | total | query embed | cross-enc "
            "| overhead | overhead share | share (warm scopes) | pairs/query |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for strategy, s in by_strategy.items():
            cells = [
                f"{_ms(s[st]['p50'])} / {_ms(s[st]['p95'])}"
                for st in (
                    "locate",
                    "retrieve",
                    "rerank",
                    "total",
                    "embed_model",
                    "rerank_model",
                    "overhead",
                )
            ]
            warm = s["overhead_share_warm"]
            lines.append(
                f"| {strategy} | {s['n']} | {' | '.join(cells)} | {s['overhead_share']:.1%} | "
                f"{'—' if warm is None else f'{warm:.1%}'} | {s['rerank_pairs_mean']:.1f} |"
            )
        ratios = result["vs_baseline"].get(scope, {})
        for strategy, r in ratios.items():
            p50, p95 = r["total_p50_ratio"], r["total_p95_ratio"]
            lines += [
                "",
                f"{strategy} / {result['strategies'][-1]} total latency: "
                f"p50 x{'—' if p50 is None else f'{p50:.2f}'}, "
                f"p95 x{'—' if p95 is None else f'{p95:.2f}'}",
            ]
        lines.append("")
    lines += [f"- **{line}**" for line in verdicts(result)]
    if result["skipped"]:
        lines += ["", f"Skipped questions: {result['skipped']}"]
    if result["fallbacks"]:
        lines += ["", f"Fallbacks taken (count over all timed queries): {result['fallbacks']}"]
    return "\n".join(lines) + "\n"


def load_cases(data_dir: Path, dataset: str, limit: int | None = None) -> list[QueryCase]:
    """Every question of the set (answerable or not: latency does not need gold), in file order."""
    loaded = load_dataset(Path(data_dir) / dataset)
    cases = [QueryCase(q.question, tuple(q.docs)) for q in loaded.questions]
    return cases[:limit] if limit is not None else cases


def load_bench_index(
    data_dir: Path, dataset: str, embedder_name: str, cache_dir: Path | None
) -> CorpusIndex:
    """The set's index, built once and cached exactly as the evaluation harness caches it."""
    return dataset_index(
        load_dataset(Path(data_dir) / dataset), IndexSettings(embedder=embedder_name), cache_dir
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    parser.add_argument("--data", type=Path, default=EVAL, help="the eval folder")
    parser.add_argument("--dataset", default=DEFAULT_DATASET)
    parser.add_argument("--limit", type=int, help="time only the first N questions")
    parser.add_argument("--cache", type=Path, default=EVAL_CACHE, help="index cache folder")
    parser.add_argument("--no-cache", action="store_true", help="build the index in memory")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit must be >= 1, but got {args.limit}")
    cache = None if args.no_cache else args.cache

    def bench() -> dict[str, Any]:
        cases = load_cases(args.data, args.dataset, args.limit)
        stderr(f"query bench: loading or building the {args.dataset} index ({args.embedder})")
        index = load_bench_index(args.data, args.dataset, args.embedder, cache)
        embedder = index_embedder(index.embedder_name, named=[args.embedder])
        return run_query_bench(index, embedder, cases, log=stderr)

    return reported("Query latency", args.dataset, args.json, to_markdown, bench)


if __name__ == "__main__":
    sys.exit(main())
