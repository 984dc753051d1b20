"""Scale: FAISS (in process) against Qdrant (`:memory:`) from 10k to 100k+ chunks, same run.

The corpus is the dev documents (English and Chinese) repeated with changed text until it
holds the target number of chunks. Each (size, backend) runs in its own process so its peak
RSS is its own. Per backend: build time (FAISS: the flat groups a query touches; Qdrant:
upserting every document, parent and child point) and query p50/p95 for `treerag`,
`flat-hybrid` and `drilldown` (retrieval only: no cross-encoder, no LLM).

    python benchmarks/bench_scale.py --data ../shared/eval [--sizes 10000,100000]
        [--queries 30] [--embedder hashing] [--json OUT]

`--synthetic` measures in-process FAISS + BM25 against Milvus Lite on synthetic chunks up to
a million and more (benchmarks/scale_synthetic.py says what is generated and timed):

    python benchmarks/bench_scale.py --synthetic --sizes 10000,100000,1000000 [--window 400]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks._common import EVAL
from treerag_core import Drilldown, layers_of
from treerag_core.base.names import StrategyName

DATASETS = ("qasper", "lecoqa_laws", "gitlab_handbook")
BACKENDS = ("faiss", "qdrant")
STRATEGIES = (StrategyName.TREERAG.value, StrategyName.FLAT_HYBRID.value, Drilldown.name)
_WORD = re.compile(r"[A-Za-z]{4,}|[\u4e00-\u9fff]{2}")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def mutate(text: str, copy: int, vocabulary: list[str]) -> str:
    """The document with about a quarter of its words (or Han pairs) swapped, seeded by copy:
    headings and structure stay, the text (and so every vector and BM25 row) changes."""
    rng = random.Random(copy)

    def swap(match: re.Match) -> str:
        return rng.choice(vocabulary) if rng.random() < 0.25 else match.group()

    lines = []
    for line in text.split("\n"):
        lines.append(line if line.lstrip().startswith("#") else _WORD.sub(swap, line))
    return "\n".join(lines)


def corpus(data: Path, target_chunks: int, chunk_size: int):
    """Source documents (dev docs of every set, then mutated copies) of ~target_chunks chunks."""
    from treerag_core import SourceDocument

    originals = []
    for name in DATASETS:
        docs = sorted((data / name / "docs").glob("*.md"))
        originals += [(f"{name}/{p.name}", p.read_text(encoding="utf-8")) for p in docs]
    # Interleave languages so a cut-off corpus still holds both.
    originals.sort(key=lambda d: (hash(d[0]) % 7, d[0]))
    vocab = {n: sorted(set(_WORD.findall(t)))[:2000] or ["x"] for n, t in originals}
    budget = target_chunks * chunk_size * 0.56  # measured: ~110 chars of source per chunk
    sources, chars, copy = [], 0, 0
    while chars < budget:
        for name, text in originals:
            body = text if copy == 0 else mutate(text, copy, vocab[name])
            sources.append(SourceDocument(f"{name}#{copy}", body))
            chars += len(body)
            if chars >= budget:
                break
        copy += 1
    return sources


def build_corpus(args) -> int:
    """Child process: build the index for one size and save it (JSON + .npy)."""
    from treerag_core import build_index, get_embedder, save_index
    from treerag_core.base.config import IndexSettings

    settings = IndexSettings(embedder=args.embedder)
    sources = corpus(Path(args.data), args.size, settings.chunk_size)
    started, cpu = time.perf_counter(), time.process_time()
    index = build_index(sources, settings, get_embedder(args.embedder))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    save_index(index, args.folder)
    langs = defaultdict(int)
    for doc in index.documents:
        langs[doc.language] += 1
    print(
        json.dumps(
            {
                "documents": len(index.documents),
                "languages": dict(langs),
                "chunks": len(index.chunks),
                "parents": len(layers_of(index).parent_ids),
                "index_build_s": round(seconds, 1),
                "index_build_cpu_s": round(cpu, 1),
                "index_peak_rss_mb": round(peak_rss_mb(), 0),
            }
        )
    )
    return 0


def _questions(data: Path, n: int) -> list[str]:
    out = []
    for name in DATASETS:
        rows = (data / name / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        out += [json.loads(r)["question"] for r in rows[: n // len(DATASETS) + 1]]
    return out[:n]


def qdrant_treerag(store, index, qvec, tokens, max_leaves: int = 5, per_leaf: int = 8):
    """The local locate + retrieve of treerag done in Qdrant: hybrid over-fetch, best child per
    section picks the sections, then a hybrid search inside each picked section."""
    from treerag_core.index.vectors.base import VectorQuery

    best: dict[str, float] = {}
    for hit in store.search(VectorQuery(qvec, "child", limit=200, tokens=tuple(tokens))):
        best[hit.parent_id] = max(best.get(hit.parent_id, 0.0), hit.score)
    leaves = sorted(best, key=lambda p: -best[p])[:max_leaves]
    return [
        store.search(
            VectorQuery(qvec, "child", limit=per_leaf, parent_ids=(p,), tokens=tuple(tokens))
        )
        for p in leaves
    ]


def run_backend(args) -> int:
    """Child process: load one index, build one backend, time the three strategies."""
    import numpy as np

    from treerag_core import index_embedder, load_index, tokenize
    from treerag_core.index.vectors.attach import attach_store
    from treerag_core.index.vectors.base import VectorQuery

    index = load_index(args.folder)
    embedder = index_embedder(index.embedder_name, named=[args.embedder])
    loaded_rss = peak_rss_mb()
    n = args.qdrant_queries if args.backend == "qdrant" else args.queries
    questions = _questions(Path(args.data), n)
    started, cpu = time.perf_counter(), time.process_time()
    store = None
    if args.backend == "qdrant":
        from treerag_core.index.vectors.qdrant_store import QdrantStore
        from treerag_core.strategies.drilldown.vector_store import push_index

        store = QdrantStore.in_memory(index.dim)
        push_index(index, store)
        attach_store(index, store)
    else:
        # What the FAISS path builds before answering: the whole-corpus group (flat search,
        # treerag's locator) and every section's own group (treerag and drilldown step 2).
        index.score_scope(None, np.zeros(index.dim, np.float32), [])
        for parent_id in layers_of(index).parent_ids:
            index.leaf_faiss(parent_id)
    build_s, build_cpu = time.perf_counter() - started, time.process_time() - cpu

    timings: dict[str, list[float]] = {s: [] for s in STRATEGIES}
    cpu_ms: dict[str, list[float]] = {s: [] for s in STRATEGIES}
    for question in questions:
        tokens = tokenize(question)
        for strategy in STRATEGIES:
            t0, c0 = time.perf_counter(), time.process_time()
            qvec = embedder.embed_query(question)
            if strategy == Drilldown.name or args.backend == "faiss":
                run_plugin(index, strategy, question, qvec)  # drilldown: via the attached store
            elif strategy == StrategyName.FLAT_HYBRID:
                store.search(VectorQuery(qvec, "child", limit=40, tokens=tuple(tokens)))
            else:
                qdrant_treerag(store, index, qvec, tokens)
            timings[strategy].append((time.perf_counter() - t0) * 1000)
            cpu_ms[strategy].append((time.process_time() - c0) * 1000)
    out = {
        "backend": args.backend,
        "build_s": round(build_s, 2),
        "build_cpu_s": round(build_cpu, 2),
        "queries": len(questions),
        "peak_rss_mb": round(peak_rss_mb(), 0),
        "rss_after_load_mb": round(loaded_rss, 0),
    }
    for strategy, values in timings.items():
        out[f"{strategy}_p50_ms"] = round(float(np.percentile(values, 50)), 1)
        out[f"{strategy}_p95_ms"] = round(float(np.percentile(values, 95)), 1)
        out[f"{strategy}_cpu_p50_ms"] = round(float(np.percentile(cpu_ms[strategy], 50)), 1)
        out[f"{strategy}_cpu_p95_ms"] = round(float(np.percentile(cpu_ms[strategy], 95)), 1)
    print(json.dumps(out))
    return 0


def run_plugin(index, strategy: str, question: str, qvec) -> None:
    """A registered strategy's steps 1-2 (local locator, no LLM, no cross-encoder)."""
    from treerag_core import get_strategy
    from treerag_core.base.settings import QuerySettings
    from treerag_core.strategies.base import QueryContext

    plugin = get_strategy(strategy)
    settings = QuerySettings().set("locate.locator", "local").set("llm.enabled", False)
    ctx = QueryContext(
        index,
        question,
        "en",
        plugin.effective_settings(settings),
        None,
        lambda _: qvec,
        tokenize_fn,
    )
    plugin.retrieve(ctx, plugin.locate(ctx))


def tokenize_fn(text: str) -> list[str]:
    from treerag_core import tokenize

    return tokenize(text)


def _child(mode: str, **kw) -> dict:
    cmd = [sys.executable, __file__, "--mode", mode] + [
        f"--{k.replace('_', '-')}={v}" for k, v in kw.items()
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    head = ["chunks", "backend", "build s (cpu)", "peak RSS MB", "queries"] + [
        f"{s} ms: cpu p50 / p95 (wall p50)" for s in STRATEGIES
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for r in rows:
        cells = [
            f"{r['chunks']:,}",
            r["backend"],
            f"{r['build_s']:.1f} ({r['build_cpu_s']:.1f})",
            f"{r['peak_rss_mb']:.0f}",
            str(r["queries"]),
        ]
        cells += [
            f"{r[f'{s}_cpu_p50_ms']:.0f} / {r[f'{s}_cpu_p95_ms']:.0f} ({r[f'{s}_p50_ms']:.0f})"
            for s in STRATEGIES
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(EVAL))
    parser.add_argument("--sizes", default="10000,100000", help="target chunk counts")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument(
        "--qdrant-queries", type=int, default=3, help="fewer: the in-memory client scans in Python"
    )
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--json", default=None)
    parser.add_argument("--mode", default="main", choices=("main", "build", "backend"))
    parser.add_argument("--size", type=int, default=0)
    parser.add_argument("--folder", default="")
    parser.add_argument("--backend", default="faiss", choices=BACKENDS)
    parser.add_argument(
        "--synthetic", action="store_true", help="FAISS + BM25 vs Milvus Lite, synthetic chunks"
    )
    parser.add_argument("--synthetic-child", default=None, choices=("faiss", "milvus"))
    parser.add_argument("--synthetic-backends", default="faiss,milvus")
    parser.add_argument(
        "--window", type=int, default=400, help="Milvus: top rows per retriever (synthetic)"
    )
    args = parser.parse_args(argv)
    if args.synthetic or args.synthetic_child:
        from benchmarks import scale_synthetic

        if args.synthetic_child:
            return scale_synthetic.child(args.synthetic_child, args.size, args.queries, args.window)
        sizes = [int(s) for s in args.sizes.split(",")]
        backends = tuple(b.strip() for b in args.synthetic_backends.split(","))
        rows = scale_synthetic.run_all(sizes, args.queries, args.window, args.json, backends)
        print(
            f"synthetic chunks ({scale_synthetic.DIM}-d unit random vectors, Zipf tokens); "
            f"{args.queries} queries; Milvus window {args.window}; retrieval only"
        )
        print(scale_synthetic.table(rows))
        return 0
    if args.mode == "build":
        return build_corpus(args)
    if args.mode == "backend":
        return run_backend(args)

    rows, builds = [], []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            folder = Path(tmp) / f"index-{size}"
            built = _child(
                "build", data=args.data, size=size, folder=folder, embedder=args.embedder
            )
            builds.append({"target": size, **built})
            print(f"corpus {size:,}: {json.dumps(built)}", file=sys.stderr)
            for backend in BACKENDS:
                got = _child(
                    "backend",
                    data=args.data,
                    folder=folder,
                    embedder=args.embedder,
                    backend=backend,
                    queries=args.queries,
                    qdrant_queries=args.qdrant_queries,
                )
                rows.append({"chunks": built["chunks"], **got})
                print(f"  {backend}: {json.dumps(got)}", file=sys.stderr)
                if args.json:  # partial results survive an interrupted run
                    Path(args.json).write_text(
                        json.dumps({"builds": builds, "backends": rows}, indent=1)
                    )
    print(
        f"embedder {args.embedder}; {args.queries} questions (all three dev sets); retrieval only"
    )
    print("| corpus | documents | languages | chunks | parents | build s (cpu) | peak RSS MB |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for b in builds:
        print(
            f"| {b['target']:,} | {b['documents']} | {b['languages']} | {b['chunks']:,} | "
            f"{b['parents']:,} | {b['index_build_s']} ({b['index_build_cpu_s']}) | "
            f"{b['index_peak_rss_mb']:.0f} |"
        )
    print()
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"builds": builds, "backends": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
