"""A slider retune's time with the cross-encoder score cache and without it, on English questions.

A retune is what the explorer does when a slider moves: `pipeline.rerun` of the question with
new settings (step 1 reused, the cross-encoder rescoring the new candidates, the keyless
answer rebuilt). Uncached, every candidate is scored again; cached, only the passages the
cross-encoder has not seen for this question. Both runs alternate on the same engine, so load
that changes over the run touches both alike. Usage:

    python benchmarks/bench_retune.py --cache data/eval-cache [--dataset qasper] [--limit 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import EVAL, EVAL_CACHE, write_json
from benchmarks.bench_query import ModelClock, TimedReranker
from treerag_core import Engine, dataset_index, get_embedder, get_reranker, rerun, run
from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation import load_dataset
from treerag_core.search.rerank import CachedReranker, Reranker

if TYPE_CHECKING:  # annotations only
    from treerag_core import CorpusIndex, Embedder

TARGET_SECONDS = 0.3  # issue 14: a retune, rerank included, in under 0.3 s
# Slider moves, each from the settings left by the one before (as a user drags them).
MOVES: tuple[tuple[str, Any], ...] = (
    ("retrieve.dense_weight", 0.6),
    ("retrieve.dense_weight", 0.4),
    ("retrieve.top_k_per_leaf", 10),
    ("answer.final_top_k", 8),
    ("retrieve.dense_weight", 0.5),
)


def _inner(reranker: Reranker) -> Reranker:
    """The model under a cached reranker (a fresh cache around it is the uncached case)."""
    return reranker.inner if isinstance(reranker, CachedReranker) else reranker


def run_retune_bench(
    index: CorpusIndex,
    embedder: Embedder,
    questions: Sequence[tuple[str, list[str] | None]],
    *,
    settings: QuerySettings | None = None,
    reranker_factory: Callable[[str], Reranker] = get_reranker,
    moves: Sequence[tuple[str, Any]] = MOVES,
) -> dict[str, Any]:
    """Time every slider move of every question cached and uncached (alternating first).

    Returns the per-move times in ms, their medians, the median ratio uncached / cached and
    how many pairs the cross-encoder scored per move in each case.
    """
    if not questions:
        raise ValueError("no questions to time")
    settings = settings or QuerySettings().set("llm.enabled", False)
    clock = ModelClock()
    # The clock sits under the cache: it counts only the pairs the model really scores.
    model = TimedReranker(_inner(reranker_factory(settings.rerank.model)), clock)
    cached = CachedReranker(model)
    engine = Engine(index, embedder, reranker_factory=lambda _name: cached)
    times: dict[str, list[float]] = {"cached": [], "uncached": []}
    pairs: dict[str, list[int]] = {"cached": [], "uncached": []}
    model_ms: dict[str, list[float]] = {"cached": [], "uncached": []}
    step = 0
    for question, scope in questions:
        trace = run(engine, question, settings, scope=scope)  # the first ask fills the cache
        current = settings
        for key, value in moves:
            current = current.set(key, value)
            order = ("cached", "uncached") if step % 2 == 0 else ("uncached", "cached")
            step += 1
            for case in order:
                reranker = cached if case == "cached" else CachedReranker(model)
                engine.reranker_factory = lambda _name, r=reranker: r
                clock.reset()
                started = time.perf_counter()
                rerun(engine, trace, current)
                times[case].append((time.perf_counter() - started) * 1000)
                pairs[case].append(clock.rerank_pairs)
                model_ms[case].append(clock.rerank_seconds * 1000)
        engine.reranker_factory = lambda _name: cached
    med = {case: statistics.median(ms) for case, ms in times.items()}
    ratios = [u / c for u, c in zip(times["uncached"], times["cached"], strict=True) if c > 0]
    return {
        "moves": [f"{k}={v}" for k, v in moves],
        "n_retunes": len(times["cached"]),
        "ms": {case: [round(t, 1) for t in ms] for case, ms in times.items()},
        "median_ms": {case: round(v, 1) for case, v in med.items()},
        "p95_ms": {case: round(_p95(ms), 1) for case, ms in times.items()},
        "median_ratio_uncached_over_cached": round(statistics.median(ratios), 2),
        "pairs_scored_median": {case: statistics.median(p) for case, p in pairs.items()},
        "model_ms_median": {case: round(statistics.median(m), 1) for case, m in model_ms.items()},
        "target_s": TARGET_SECONDS,
        "meets_target": med["cached"] / 1000 < TARGET_SECONDS,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=EVAL)
    parser.add_argument("--cache", type=Path, default=EVAL_CACHE)
    parser.add_argument("--dataset", default="qasper", help="an English dev set")
    parser.add_argument("--limit", type=int, default=3, help="questions (each tries every move)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    data = load_dataset(args.data / args.dataset)
    settings = IndexSettings()
    index = dataset_index(data, settings, args.cache)
    questions = [(q.question, list(q.docs)) for q in data.usable_questions[: args.limit]]
    report = run_retune_bench(index, get_embedder(settings.embedder), questions)
    report["dataset"] = args.dataset
    med = report["median_ms"]
    print(
        f"retune on {args.dataset} ({report['n_retunes']} slider moves): "
        f"cached {med['cached']:.0f} ms, uncached {med['uncached']:.0f} ms median, "
        f"ratio {report['median_ratio_uncached_over_cached']:.1f}x; cross-encoder pairs "
        f"{report['pairs_scored_median']['cached']:.0f} vs "
        f"{report['pairs_scored_median']['uncached']:.0f}; target < {TARGET_SECONDS} s cached: "
        f"{'met' if report['meets_target'] else 'MISSED'}; load average "
        f"{' '.join(str(x) for x in report['load_average'])}"
    )
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
