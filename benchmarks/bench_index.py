"""Index-build throughput against the embedder alone (same run), peak RSS, non-model time split."""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import EVAL, REPO, fail, parse_source, reported, stderr, write_json
from benchmarks.bench_query import ModelClock, TimedEmbedder
from treerag_core import CorpusIndex, Embedder, SourceDocument, build_index, get_embedder, tokenize
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import InputDocumentError, TreeRAGError
from treerag_core.base.text_rules import detect_language
from treerag_core.ingest.chunking import chunk_leaf
from treerag_core.ingest.node_summaries import summarize_tree

DEFAULT_DATASET = "qasper"
TARGET_RATIO = 0.85  # build chunks/s >= 0.85 x embedder-alone chunks/s
WARMUP_TEXTS = 64
BATCH_SIZE = 32  # what build_index passes (the Embedder.embed default)
STAGE_REPEATS = 3

Log = Callable[[str], None]


def _no_log(message: str) -> None:
    """Default logger: silent."""


class NullEmbedder:
    """Costs nothing: a build with it times everything the build does except the model."""

    name = "null"

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def embed(
        self,
        texts: Sequence[str],
        batch_size: int = BATCH_SIZE,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 1.0  # unit rows, like a real embedder
        if progress is not None:  # same call pattern as the real batching loop
            for start in range(0, len(texts), batch_size):
                progress(min(start + batch_size, len(texts)), len(texts))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def load_sources(docs_dir: Path) -> list[SourceDocument]:
    """Every `*.md` in `docs_dir`, sorted by name.

    Raises:
        InputDocumentError: the folder is missing or holds no Markdown.
    """
    paths = sorted(Path(docs_dir).glob("*.md"))
    if not paths:
        raise InputDocumentError(
            f"no *.md documents in {docs_dir}; pass --data pointing at the eval folder "
            "(the one holding qasper/, lecoqa_laws/, ...)"
        )
    return [SourceDocument(p.name, p.read_text(encoding="utf-8")) for p in paths]


# ---- memory --------------------------------------------------------------------------------
def _peak_rss_kb() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # macOS reports bytes


def _rss_kb() -> int:
    """Current resident set size; the peak so far where /proc is unavailable."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return _peak_rss_kb()


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0) so ru_maxrss covers one pass only."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def embedding_mb(n_chunks: int, dim: int) -> float:
    """The index's embedding matrix (float32 rows, one per chunk) in MiB, like the RSS figures."""
    return round(n_chunks * dim * 4 / 2**20, 1)


def _mb(kb: float) -> float:
    return round(kb / 1024, 1)


# ---- timed passes --------------------------------------------------------------------------
def _timed_pass(fn: Callable[[], Any]) -> tuple[float, Any, dict[str, int | bool]]:
    gc.collect()
    reset = _reset_peak_rss()
    before = _rss_kb()
    started = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - started
    after = _rss_kb()
    # The reset sets the mark to the RSS of that instant, a hair off `before`: clamp.
    mem = {"rss_before_kb": before, "peak_kb": max(_peak_rss_kb(), before, after)}
    mem["rss_after_kb"] = after
    mem["peak_is_per_pass"] = reset
    return seconds, value, mem


def stage_seconds(sources: Sequence[SourceDocument], settings: IndexSettings) -> dict[str, float]:
    """Seconds per non-model stage, calling each engine function as `build_index` does."""
    times = dict.fromkeys(("parse", "summarise", "chunk", "doc_info", "tokenise", "assemble"), 0.0)
    nodes = {}
    chunks = []
    next_id = 1
    for src in sources:
        t0 = time.perf_counter()
        doc_nodes = parse_source(src.text, src.name, settings, first_id=next_id)
        t1 = time.perf_counter()
        doc_nodes = summarize_tree(doc_nodes, max_chars=settings.summary_chars)
        t2 = time.perf_counter()
        for node in doc_nodes:
            nodes[node.node_id] = node
            if node.is_leaf:
                chunks.extend(
                    chunk_leaf(
                        node,
                        src.text,
                        chunk_size=settings.chunk_size,
                        overlap=settings.chunk_overlap,
                        min_chars=settings.min_chunk_chars,
                    )
                )
        t3 = time.perf_counter()
        _info = (detect_language(src.text), src.sha256)  # what DocumentInfo costs
        t4 = time.perf_counter()
        next_id += len(doc_nodes)
        times["parse"] += t1 - t0
        times["summarise"] += t2 - t1
        times["chunk"] += t3 - t2
        times["doc_info"] += t4 - t3
    t0 = time.perf_counter()
    tokens = [tokenize(c.text) for c in chunks]
    t1 = time.perf_counter()
    CorpusIndex(
        settings=settings,
        embedder_name="null",
        dim=8,
        documents=[],
        texts={s.name: s.text for s in sources},
        nodes=nodes,
        chunks=chunks,
        embeddings=np.zeros((len(chunks), 8), dtype=np.float32),
        tokens=tokens,
    )
    times["assemble"] = time.perf_counter() - t1
    times["tokenise"] = t1 - t0
    return times


def profile_build(
    sources: Sequence[SourceDocument], settings: IndexSettings, dim: int, top: int = 15
) -> list[dict[str, Any]]:
    """cProfile of one model-free build: the functions with the most own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    build_index(sources, settings, NullEmbedder(dim))
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = []
    for (path, line, func), (_, calls, own, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
        short = path.split(str(REPO) + "/")[-1] if str(REPO) in path else Path(path).name
        rows.append(
            {"function": f"{short}:{line}({func})", "calls": calls, "own_s": own, "cum_s": cum}
        )
    rows.sort(key=lambda r: -r["own_s"])
    return rows[:top]


def run_index_bench(
    sources: Sequence[SourceDocument],
    embedder: Embedder,
    *,
    settings: IndexSettings | None = None,
    repeats: int = 2,
    profile: bool = False,
    log: Log = _no_log,
) -> dict[str, Any]:
    """Build the index and embed its chunk texts alone, alternating (B A A B ...).

    The model is warmed on WARMUP_TEXTS chunk texts before either is timed, and the order
    alternates so neither side always runs first. The verdict uses the same-pass ratio (model
    seconds inside a build over that build's seconds, worst pass): on a shared machine whole
    passes of the same work differ by 2x, which swamps a 15% budget when the two sides come
    from different passes. The separate-pass rates are reported beside it.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, but got {repeats}")
    settings = settings or IndexSettings(embedder=embedder.name)
    dim = embedder.dim

    log("index bench: model-free build (cold: first use of parser, stemmer, jieba)")
    started = time.perf_counter()
    null_index = build_index(sources, settings, NullEmbedder(dim))
    cold_seconds = time.perf_counter() - started
    texts = [c.text for c in null_index.chunks]
    n_chunks = len(texts)
    if n_chunks == 0:
        raise InputDocumentError("the documents produced no chunks; nothing to benchmark")
    del null_index

    log(f"index bench: warming {embedder.name} on {min(WARMUP_TEXTS, n_chunks)} texts")
    embedder.embed(texts[:WARMUP_TEXTS], batch_size=BATCH_SIZE)

    clock = ModelClock()
    timed = TimedEmbedder(embedder, clock)  # times the model calls made inside each build
    builds: list[float] = []
    in_build_model: list[float] = []
    embeds: list[float] = []
    build_mem: list[dict[str, int | bool]] = []
    embed_mem: list[dict[str, int | bool]] = []
    order = []
    for rep in range(repeats):
        pair = ("build", "embed") if rep % 2 == 0 else ("embed", "build")
        for kind in pair:
            order.append(kind)
            log(f"index bench: pass {len(order)}/{2 * repeats}: {kind} ({n_chunks} chunks)")
            if kind == "build":
                clock.reset()
                seconds, index, mem = _timed_pass(lambda: build_index(sources, settings, timed))
                if len(index.chunks) != n_chunks:
                    raise RuntimeError("the build produced other chunks than the model-free build")
                del index
                builds.append(seconds)
                in_build_model.append(clock.embed_seconds)
                build_mem.append(mem)
            else:
                seconds, _, mem = _timed_pass(lambda: embedder.embed(texts, batch_size=BATCH_SIZE))
                embeds.append(seconds)
                embed_mem.append(mem)

    log("index bench: model-free build and per-stage split (warm)")
    nonmodel_runs = []
    stage_runs = []
    for _ in range(STAGE_REPEATS):
        t = time.perf_counter()
        build_index(sources, settings, NullEmbedder(dim))
        nonmodel_runs.append(time.perf_counter() - t)
        stage_runs.append(stage_seconds(sources, settings))
    nonmodel = min(nonmodel_runs)
    stages = {k: min(run[k] for run in stage_runs) for k in stage_runs[0]}

    best_build, best_embed = min(builds), min(embeds)
    build_rate = n_chunks / best_build
    embed_rate = n_chunks / best_embed
    # Same-pass ratio: model seconds inside a build / that build's seconds. Both sides share
    # the same seconds of machine load, so it is immune to the noise that moves whole passes.
    in_pass = [m / b for m, b in zip(in_build_model, builds, strict=True)]
    ratio = min(in_pass)  # the worst pass: conservative
    first_build_mem = build_mem[0]
    result: dict[str, Any] = {
        "documents": len(sources),
        "chars": sum(len(s.text) for s in sources),
        "chunks": n_chunks,
        "embedder": embedder.name,
        "dim": dim,
        "batch_size": BATCH_SIZE,
        "repeats": repeats,
        "order": order,
        "build_seconds": [round(s, 3) for s in builds],
        "embed_seconds": [round(s, 3) for s in embeds],
        "model_seconds_in_build": [round(s, 3) for s in in_build_model],
        "build_chunks_per_s": round(build_rate, 1),
        "embed_chunks_per_s": round(embed_rate, 1),
        "embed_in_build_chunks_per_s": round(n_chunks / min(in_build_model), 1),
        "ratio": round(ratio, 4),
        "ratio_in_pass": [round(r, 4) for r in in_pass],
        "ratio_separate_passes": round(build_rate / embed_rate, 4),
        "embed_alone_spread": round(max(embeds) / best_embed, 3),
        "target_ratio": TARGET_RATIO,
        "target_met": ratio >= TARGET_RATIO,
        "nonmodel_seconds": round(nonmodel, 4),
        "nonmodel_cold_seconds": round(cold_seconds, 4),
        "nonmodel_share_of_build": round(nonmodel / best_build, 4),
        "stages_seconds": {k: round(v, 4) for k, v in stages.items()},
        # best-of per stage vs best-of total can cross by a millisecond: never report < 0
        "stages_unattributed_seconds": round(max(0.0, nonmodel - sum(stages.values())), 4),
        "memory_mb": {
            "rss_before_build": _mb(int(first_build_mem["rss_before_kb"])),
            "peak_during_build": _mb(int(first_build_mem["peak_kb"])),
            "build_peak_growth": _mb(
                max(0, int(first_build_mem["peak_kb"]) - int(first_build_mem["rss_before_kb"]))
            ),
            "rss_after_build": _mb(int(first_build_mem["rss_after_kb"])),
            "peak_during_embed_alone": _mb(max(int(m["peak_kb"]) for m in embed_mem)),
            "embeddings": embedding_mb(n_chunks, dim),
            "peak_is_per_pass": bool(first_build_mem["peak_is_per_pass"]),
        },
    }
    if profile:
        log("index bench: cProfile of one model-free build")
        result["profile_top"] = profile_build(sources, settings, dim)
    return result


def verdict(result: dict[str, Any]) -> str:
    """One line saying whether the ratio target was met; never hidden when it is not."""
    ratio, target = result["ratio"], result["target_ratio"]
    word = "MET" if result["target_met"] else "MISSED"
    sign = ">=" if result["target_met"] else "<"
    line = (
        f"TARGET {word}: build/embedder = {ratio:.3f} {sign} {target} (same-pass, worst of "
        f"{len(result['ratio_in_pass'])}): everything but the model costs {1 - ratio:.1%} of "
        f"the build (limit {1 - target:.0%})"
    )
    separate = result["ratio_separate_passes"]
    if (separate >= target) != result["target_met"]:
        line += (
            f"; the separate-pass ratio says {separate:.3f}: embedder-alone passes varied "
            f"x{result['embed_alone_spread']:.2f} between runs, so that one is machine noise"
        )
    return line


def to_markdown(result: dict[str, Any]) -> str:
    """The figures as Markdown tables (printed by the script, pasted into the report)."""
    mem = result["memory_mb"]
    peak_note = "" if mem["peak_is_per_pass"] else " (process peak: could not reset per pass)"

    def seconds(values: Sequence[float]) -> str:
        return ", ".join(f"{v:.2f}" for v in values)

    lines = [
        f"{result['documents']} documents, {result['chars']:,} chars, {result['chunks']} chunks; "
        f"embedder `{result['embedder']}` ({result['dim']}-d), batch {result['batch_size']}, "
        f"order {' '.join(result['order'])}; rates from the best pass of each side.",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| build, whole index (chunks/s) | {result['build_chunks_per_s']:.1f} |",
        f"| embedder alone, same texts, own pass (chunks/s) | {result['embed_chunks_per_s']:.1f} |",
        f"| embedder inside the build (chunks/s) | {result['embed_in_build_chunks_per_s']:.1f} |",
        f"| **ratio build / embedder, same pass (target >= {result['target_ratio']})** "
        f"| **{result['ratio']:.3f}** |",
        f"| ratio per build pass | {', '.join(f'{r:.3f}' for r in result['ratio_in_pass'])} |",
        f"| ratio build / embedder, separate passes | {result['ratio_separate_passes']:.3f} |",
        f"| build seconds (each pass) | {seconds(result['build_seconds'])} |",
        f"| model seconds inside each build | {seconds(result['model_seconds_in_build'])} |",
        f"| embedder-alone seconds (each pass) | {seconds(result['embed_seconds'])} |",
        f"| model-free build, warm (s) | {result['nonmodel_seconds']:.3f} |",
        f"| model-free build, cold first call (s) | {result['nonmodel_cold_seconds']:.3f} |",
        f"| model-free build / best build | {result['nonmodel_share_of_build']:.1%} |",
        f"| RSS before build (MB) | {mem['rss_before_build']:.1f} |",
        f"| peak RSS during build (MB){peak_note} | {mem['peak_during_build']:.1f} |",
        f"| peak growth during build (MB) | {mem['build_peak_growth']:.1f} |",
        f"| RSS after build (MB) | {mem['rss_after_build']:.1f} |",
        f"| peak RSS during embedder alone (MB) | {mem['peak_during_embed_alone']:.1f} |",
        f"| embedding matrix (MB) | {mem['embeddings']:.1f} |",
        "",
        f"**{verdict(result)}**",
        "",
        "Non-model stages (best of 3, warm; each engine function timed as `build_index` calls it):",
        "",
        "| stage | seconds | share of model-free build |",
        "|---|---:|---:|",
    ]
    total = result["nonmodel_seconds"] or 1.0
    stages = dict(result["stages_seconds"])
    stages["unattributed (loop, progress, copies)"] = result["stages_unattributed_seconds"]
    for name, seconds in stages.items():
        lines.append(f"| {name} | {seconds:.4f} | {seconds / total:.1%} |")
    if result.get("profile_top"):
        lines += ["", "cProfile, model-free build (top own time):", ""]
        lines += ["| function | calls | own s | cum s |", "|---|---:|---:|---:|"]
        for row in result["profile_top"]:
            lines.append(
                f"| `{row['function']}` | {row['calls']} | {row['own_s']:.4f} "
                f"| {row['cum_s']:.4f} |"
            )
    return "\n".join(lines) + "\n"


# ---- embedders side by side (--compare) ------------------------------------------------------
def chunk_texts(sources: Sequence[SourceDocument], most: int | None) -> list[str]:
    """The chunk texts a build embeds (model-free builds), document by document until `most`."""
    texts: list[str] = []
    for source in sources:
        if most is not None and len(texts) >= most:
            break
        index = build_index([source], IndexSettings(embedder="hashing"), NullEmbedder(1))
        texts += [c.text for c in index.chunks]
    return texts if most is None else texts[:most]


def embedder_figures(name: str, texts: Sequence[str]) -> dict[str, Any]:
    """One embedder in this process: load seconds, then chunks/s over `texts` after a warm-up,
    and the process's peak RSS (model + activations; run it in a fresh process)."""
    started = time.perf_counter()
    embedder = get_embedder(name)
    embedder.embed(texts[:8], batch_size=BATCH_SIZE)  # loads the model
    load = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    embedder.embed(texts, batch_size=BATCH_SIZE)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "embedder": name,
        "texts": len(texts),
        "load_seconds": round(load, 2),
        "embed_seconds": round(seconds, 2),
        "chunks_per_s": round(len(texts) / seconds, 1),
        # CPU seconds (all threads) the embedding took: what load on a shared machine does
        # not inflate; two free cores give up to 2 CPU seconds per second.
        "chunks_per_cpu_s": round(len(texts) / max(cpu, 1e-9), 1),
        "peak_rss_mb": _mb(_peak_rss_kb()),
        "loadavg": round(os.getloadavg()[0], 1),
    }


def compare_embedders(
    datasets: Sequence[str], data: Path, names: Sequence[str], most: int | None, log: Log
) -> list[dict[str, Any]]:
    """Each embedder in its own process (a clean peak RSS) on the same chunk texts, in the
    order A B C, then C B A: machine load drifts, so each side runs early once and late once;
    the faster of its two runs is kept."""
    rows: list[dict[str, Any]] = []
    for dataset in datasets:
        texts = chunk_texts(load_sources(data / dataset / "docs"), most)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        with tempfile.TemporaryDirectory() as folder:
            shared = Path(folder) / "texts.json"
            shared.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
            for name in [*names, *reversed(names)]:
                log(f"index bench: {dataset}: {name} ({len(texts)} chunks)")
                argv = [sys.executable, __file__, "--one", name, "--texts", str(shared)]
                runs[name].append(_child(argv, f"{name} on {dataset}"))
                got = runs[name][-1]  # said at once: a long run stopped early keeps its figures
                log(f"index bench: {dataset}: {name}: {json.dumps(got)}")
        for name in names:
            best = max(runs[name], key=lambda r: r["chunks_per_s"])
            rows.append(
                {
                    "dataset": dataset,
                    **best,
                    "all_chunks_per_s": [r["chunks_per_s"] for r in runs[name]],
                }
            )
    return rows


def _child(argv: list[str], what: str) -> dict[str, Any]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise TreeRAGError(f"{what} failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout)


def comparison_markdown(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| set | embedder | chunks | chunks/s (best of 2) | both runs | chunks per CPU-second "
        "| load s | peak RSS MB | load average |",
        "|---|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        runs = ", ".join(f"{v:.1f}" for v in r["all_chunks_per_s"])
        lines.append(
            f"| {r['dataset']} | {r['embedder']} | {r['texts']} | {r['chunks_per_s']:.1f} "
            f"| {runs} | {r['chunks_per_cpu_s']:.1f} | {r['load_seconds']:.1f} "
            f"| {r['peak_rss_mb']:.0f} | {r['loadavg']} |"
        )
    cpus = os.cpu_count()
    lines += [
        "",
        f"{cpus} CPUs, shared with other jobs (the load average column: runnable processes "
        "when the run ended); compare embedders within one set, not against absolute targets. "
        f"Chunks per CPU-second is what the embedder costs whatever the load: {cpus} free "
        f"cores give up to {cpus} CPU-seconds a second (less with threads that wait).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    parser.add_argument("--data", type=Path, default=EVAL, help="the eval folder")
    parser.add_argument("--dataset", default=DEFAULT_DATASET, help="subfolder with docs/*.md")
    parser.add_argument("--repeats", type=int, default=2, help="timed passes of each side")
    parser.add_argument("--profile", action="store_true", help="cProfile a model-free build")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument(
        "--compare",
        help="comma-separated embedders to time side by side on --dataset (comma-separated "
        "too), each in its own process: chunks/s, load time, peak RSS",
    )
    parser.add_argument("--max-chunks", type=int, help="with --compare: the first N chunks only")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # --compare's child process ...
    parser.add_argument("--texts", type=Path, help=argparse.SUPPRESS)  # ... and its texts
    args = parser.parse_args(argv)
    if args.max_chunks is not None and args.max_chunks < 1:
        parser.error(f"--max-chunks must be >= 1, got {args.max_chunks}")
    if args.one:
        texts = json.loads(args.texts.read_text(encoding="utf-8"))
        print(json.dumps(embedder_figures(args.one, texts)))
        return 0
    if args.compare:
        names = [n.strip() for n in args.compare.split(",") if n.strip()]
        datasets = [d.strip() for d in args.dataset.split(",") if d.strip()]
        try:
            rows = compare_embedders(datasets, args.data, names, args.max_chunks, stderr)
        except TreeRAGError as exc:
            return fail(exc)
        print(comparison_markdown(rows))
        write_json(args.json, rows)
        return 0

    def bench() -> dict[str, Any]:
        sources = load_sources(args.data / args.dataset / "docs")
        embedder = get_embedder(args.embedder)
        return run_index_bench(
            sources, embedder, repeats=args.repeats, profile=args.profile, log=stderr
        )

    return reported("Index build", args.dataset, args.json, to_markdown, bench)


if __name__ == "__main__":
    sys.exit(main())
