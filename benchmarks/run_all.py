"""`make bench`: index and query benchmarks plus a quality run of every strategy, one report."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import bench_index, bench_query
from benchmarks._common import EVAL, EVAL_CACHE, REPO
from treerag_core import EvalConfig, evaluate, get_embedder, index_embedder, strategy_names
from treerag_core.base.config import GRAPH_LEAF_CHARS, IndexSettings
from treerag_core.base.errors import TreeRAGError
from treerag_core.evaluation import difference_table, markdown_table, write_report

DEFAULT_OUT = REPO / "bench-results"
DEV_SETS = ("qasper", "lecoqa_laws")
# Every registered strategy (the oracle included), read from the registry.
STRATEGIES = tuple(strategy_names())
# The quality runs' index carries leaf graphs, so treerag-kg runs: the graphs are a part of
# their own (the same chunks and vectors), so no other strategy's figures move.
GRAPH_MIN_LEAF_CHARS = GRAPH_LEAF_CHARS
QUERY_SETS = ("qasper", "lecoqa_laws")  # the target is set on qasper; Chinese shown beside it
EVAL_SCOPES = ("doc", "corpus")
QUICK_LIMIT = 10
TIME_BUDGET_S = 15 * 60
DETAIL_KEYS = (
    "hit@1",
    "hit@3",
    "hit@10",
    "recall@1",
    "recall@3",
    "recall@10",
    "hit@1000c",
    "hit@2000c",
    "section_hit@1",
    "section_hit@3",
    "latency_ms.total.p95",
)


class Progress:
    """Timestamped progress lines on stderr, at most one per `every` seconds for counters."""

    def __init__(self, every: float = 10.0) -> None:
        self.started = time.perf_counter()
        self.every = every
        self._last = 0.0

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def __call__(self, message: str) -> None:
        minutes, seconds = divmod(int(self.elapsed()), 60)
        print(f"[bench {minutes:02d}:{seconds:02d}] {message}", file=sys.stderr, flush=True)

    def counter(self, label: str) -> Callable[[int, int], None]:
        def update(done: int, total: int) -> None:
            now = time.perf_counter()
            if done == total or now - self._last >= self.every:
                self._last = now
                self(f"{label}: {done}/{total}")

        return update


def run_quality(
    data_dir: Path,
    cache_dir: Path,
    embedder_name: str,
    limit: int | None,
    log: Progress,
    datasets: Sequence[str] = DEV_SETS,
    scopes: Sequence[str] = EVAL_SCOPES,
) -> tuple[dict[str, Any], dict[str, float]]:
    """Every strategy on every dev set and scope; reports and seconds keyed `set/scope`."""
    reports: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for dataset in datasets:
        for scope in scopes:
            key = f"{dataset}/{scope}"
            log(f"quality {key}: loading or building the index, then {len(STRATEGIES)} strategies")
            config = EvalConfig(
                strategies=STRATEGIES,
                scope=scope,
                limit=limit,
                index_settings=IndexSettings(
                    embedder=embedder_name, graph_min_leaf_chars=GRAPH_MIN_LEAF_CHARS
                ),
            )
            started = time.perf_counter()
            reports[key] = evaluate(
                data_dir / dataset, config, cache_dir=cache_dir, progress=log.counter(key)
            )
            seconds[key] = round(time.perf_counter() - started, 1)
    return reports, seconds


def _machine() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in load] if load else None,
    }


def render_markdown(results: dict[str, Any]) -> str:
    """The whole report: run facts, index table, query tables, one quality table per run."""
    timings = results["timings_s"]
    total = timings["total"]
    budget = "within" if total <= TIME_BUDGET_S else "OVER"
    machine = results["machine"]
    lines = [
        "# TreeRAG benchmark report",
        "",
        f"Generated {results['generated_at']} ({results['mode']} run"
        + (f", --limit {results['limit']}" if results["limit"] else "")
        + f"), embedder `{results['embedder']}`.",
        f"Machine: {machine['cpus']} CPUs, Python {machine['python']}, load average at start "
        f"{machine['loadavg_at_start']}, at end {machine.get('loadavg_at_end')}. Shared and "
        "noisy: compare the ratios (measured against a baseline in the same run), not the "
        "absolute figures, across runs.",
        "",
        f"Wall time: **{total / 60:.1f} min** ({budget} the {TIME_BUDGET_S // 60}-minute budget).",
        "",
        "| step | seconds |",
        "|---|---:|",
    ]
    lines += [f"| {step} | {secs:.1f} |" for step, secs in timings.items() if step != "total"]
    lines += [f"| total | {total:.1f} |", ""]
    index = results["index"]
    lines += [f"## Index build ({index['dataset']})", "", bench_index.to_markdown(index)]
    for dataset, query in results["query"].items():
        lines += [f"## Query latency ({dataset})", ""]
        if dataset != bench_query.DEFAULT_DATASET:
            lines += [
                "Chinese questions: the English cross-encoder is skipped (setting "
                "`rerank_chinese`), so query embedding is the only model call.",
                "",
            ]
        lines += [bench_query.to_markdown(query)]
    lines += [
        "## Retrieval quality",
        "",
        "All strategies, no LLM (local locator, extractive), final top-k 10. Metrics as the "
        "eval README defines them; `left out` = unanswerable or evidence not found verbatim.",
        "",
    ]
    for key, report in results["quality"].items():
        partial = " (PARTIAL: interrupted)" if report.get("partial") else ""
        lines += [f"### {key}{partial}", "", markdown_table(report)]
        lines += [markdown_table(report, DETAIL_KEYS)]
        differences = difference_table(report)
        if differences:
            lines += ["Paired differences (bootstrap 95% interval; bold excludes 0):", ""]
            lines += [differences]
        if report.get("skipped"):
            lines += [f"Skipped: {report['skipped']}", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=EVAL, help="the eval folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="report folder")
    parser.add_argument("--cache", type=Path, default=EVAL_CACHE, help="index cache folder")
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    parser.add_argument(
        "--quick", action="store_true", help=f"--limit {QUICK_LIMIT} and one index pass each"
    )
    parser.add_argument("--limit", type=int, help="questions per set (query bench and quality)")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit must be >= 1, but got {args.limit}")
    limit = args.limit if args.limit is not None else (QUICK_LIMIT if args.quick else None)
    repeats = 1 if args.quick else 2
    log = Progress()
    timings: dict[str, float] = {}
    results: dict[str, Any] = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "limit": limit,
        "embedder": args.embedder,
        "machine": _machine(),
    }
    try:
        step = time.perf_counter()
        log(f"index bench: {bench_index.DEFAULT_DATASET}, {repeats} pass(es) each side")
        sources = bench_index.load_sources(args.data / bench_index.DEFAULT_DATASET / "docs")
        index_result = bench_index.run_index_bench(
            sources, get_embedder(args.embedder), repeats=repeats, log=log
        )
        index_result["dataset"] = bench_index.DEFAULT_DATASET
        results["index"] = index_result
        timings["index bench"] = round(time.perf_counter() - step, 1)
        log(bench_index.verdict(index_result))

        results["query"] = {}
        for dataset in QUERY_SETS:
            step = time.perf_counter()
            log(f"query bench: {dataset}, loading or building its index")
            cases = bench_query.load_cases(args.data, dataset, limit)
            index = bench_query.load_bench_index(args.data, dataset, args.embedder, args.cache)
            query_result = bench_query.run_query_bench(
                index, index_embedder(index.embedder_name, named=[args.embedder]), cases, log=log
            )
            query_result["dataset"] = dataset
            results["query"][dataset] = query_result
            timings[f"query bench {dataset}"] = round(time.perf_counter() - step, 1)
            for line in bench_query.verdicts(query_result):
                log(line)

        results["quality"], per_run = run_quality(args.data, args.cache, args.embedder, limit, log)
        timings.update({f"quality {k}": v for k, v in per_run.items()})
    except (TreeRAGError, ValueError) as exc:
        log(f"error: {exc}")
        return 2
    timings["total"] = round(log.elapsed(), 1)
    results["timings_s"] = timings
    if hasattr(os, "getloadavg"):
        results["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.mkdir(parents=True, exist_ok=True)
    write_report(args.out / "report.json", results)
    (args.out / "report.md").write_text(render_markdown(results), encoding="utf-8")
    log(f"wrote {args.out / 'report.md'} and report.json in {timings['total'] / 60:.1f} min")
    if timings["total"] > TIME_BUDGET_S:
        log(f"OVER BUDGET: {timings['total'] / 60:.1f} min > {TIME_BUDGET_S // 60} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
