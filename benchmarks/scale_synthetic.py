"""Scale past one process: in-process FAISS + BM25 against Milvus Lite on synthetic chunks.

Synthetic, stated: unit random vectors (384-d, MiniLM's size) and texts of Zipf-distributed
tokens (40 a chunk, a 50,000-token vocabulary, 4 heading tokens a leaf); 8 chunks a leaf, 50
leaves a document. Only the engines are measured, so nothing needs a model or a parser.
Each (size, backend) runs in its own process: its peak RSS is its own (Milvus Lite's engine
is a child process, reported beside it). Both backends run the same code the strategies do:

- flat-hybrid: cosine + BM25 over every chunk, weighted fusion (min-max), the best 40;
- treerag (retrieval only): cosine + heading path + passage BM25 over every chunk, fused,
  routed to the two documents holding the best chunks, then the best 40 inside them.

In process that is `FlatGroup` + `LeafBM25` over the corpus (treerag_core.index.corpus's flat path);
on Milvus it is `MilvusStore.score_chunks` (the engine's FLAT cosine and BM25, its top
`--window` per retriever, the rest floored), as `CorpusIndex.score_scope` calls it.

    python benchmarks/bench_scale.py --synthetic --sizes 10000,100000 [--queries 30] [--json OUT]
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from treerag_core.base.names import StrategyName

# The two strategies whose search is timed, as the reports name them.
FLAT = StrategyName.FLAT_HYBRID.value
TREE = StrategyName.TREERAG.value
DIM = 384
VOCAB = 50_000
TOKENS_PER_CHUNK = 40
CHUNKS_PER_LEAF = 8
LEAVES_PER_DOC = 50
CHUNKS_PER_DOC = CHUNKS_PER_LEAF * LEAVES_PER_DOC
CANDIDATES = 40
GEN_BATCH = 10_000
INSERT_ROWS = 1000


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def children_rss_mb() -> float:
    """Resident memory of our child processes now (Milvus Lite's engine), from /proc."""
    total = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if fields.get("PPid", "").strip() == str(os.getpid()):
            total += int(fields.get("VmRSS", "0 kB").split()[0])
    return total / 1024


def disk_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def _words(ids: np.ndarray) -> list[str]:
    return [f"w{i}" for i in ids]


def batches(size: int, seed: int = 7):
    """(start, vectors, token lists, path token lists) for rows start.., GEN_BATCH at a time."""
    rng = np.random.default_rng(seed)
    for start in range(0, size, GEN_BATCH):
        n = min(GEN_BATCH, size - start)
        vectors = rng.standard_normal((n, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ids = np.minimum(rng.zipf(1.2, size=(n, TOKENS_PER_CHUNK)), VOCAB) - 1
        tokens = [_words(row) for row in ids]
        paths = []
        for row in range(start, start + n):
            leaf = row // CHUNKS_PER_LEAF
            leaf_rng = np.random.default_rng(leaf)  # same heading tokens for a leaf's chunks
            paths.append(_words(leaf_rng.integers(0, VOCAB, 4)))
        yield start, vectors, tokens, paths


def questions(size: int, n: int, seed: int = 11) -> list[tuple[np.ndarray, list[str]]]:
    """Queries near a random chunk: its vector plus noise, 4 of its tokens."""
    rng = np.random.default_rng(seed)
    picks = sorted(rng.choice(size, size=n, replace=False).tolist())
    out = []
    for start, vectors, tokens, _ in batches(size):
        for row in picks:
            if start <= row < start + len(vectors):
                v = vectors[row - start] + 0.5 * rng.standard_normal(DIM).astype(np.float32)
                out.append((v / np.linalg.norm(v), list(rng.choice(tokens[row - start], 4))))
    return out


@dataclass(frozen=True)
class _Chunk:
    chunk_id: str


class _Rows:
    """What `score_chunks` reads of an index: `chunks[row].chunk_id` (made on demand)."""

    def __getitem__(self, row: int) -> _Chunk:
        return _Chunk(f"c{row}")


class SyntheticIndex:
    chunks = _Rows()


def route(fused: np.ndarray, rows: np.ndarray, keep_docs: int = 2) -> list[int]:
    """The documents of the best chunks (treerag's routing: best chunk per document)."""
    best: dict[int, float] = {}
    for i in np.argsort(-fused)[:CANDIDATES]:
        doc = int(rows[i]) // CHUNKS_PER_DOC
        best[doc] = max(best.get(doc, -np.inf), float(fused[i]))
    return sorted(best, key=lambda d: -best[d])[:keep_docs]


def run_faiss(size: int, n_queries: int, folder: Path) -> dict:
    from treerag_core.index.bm25 import BM25Stats, LeafBM25
    from treerag_core.index.vectors.faiss_store import FlatGroup
    from treerag_core.search.fusion import fuse

    vectors = np.zeros((size, DIM), dtype=np.float32)
    tokens: list[list[str]] = []
    paths: list[list[str]] = []
    for start, v, t, p in batches(size):
        vectors[start : start + len(v)] = v
        tokens += t
        paths += p
    started = time.perf_counter()
    group = FlatGroup(vectors, DIM)
    passage = LeafBM25.from_tokens(tokens, BM25Stats.from_tokens(tokens))
    with_path = [p + t for p, t in zip(paths, tokens, strict=True)]
    path_bm25 = LeafBM25.from_tokens(with_path, BM25Stats.from_tokens(with_path))
    build_s = time.perf_counter() - started
    np.save(folder / "embeddings.npy", vectors)  # what an index folder holds for them
    (folder / "tokens.json").write_text(json.dumps(tokens))
    disk = disk_mb(folder)
    del with_path
    rows = np.arange(size)
    times: dict[str, list[float]] = {FLAT: [], TREE: []}
    for qvec, qtokens in questions(size, n_queries):
        t0 = time.perf_counter()
        dense = group.scores(qvec)
        fused = fuse(dense, passage.scores(qtokens), "weighted", 0.5, 60).fused
        np.argsort(-fused)[:CANDIDATES]
        times[FLAT].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        dense = group.scores(qvec)
        fused = fuse(dense, path_bm25.scores(qtokens), "weighted", 0.5, 60).fused
        docs = route(fused, rows)
        mask = np.isin(rows // CHUNKS_PER_DOC, docs)
        np.argsort(-np.where(mask, fused, -np.inf))[:CANDIDATES]
        times[TREE].append(time.perf_counter() - t0)
    return {"build_s": build_s, "disk_mb": disk, "times": times, "engine_rss_mb": 0.0}


def run_milvus(size: int, n_queries: int, folder: Path, window: int) -> dict:
    from treerag_core.index.vectors.milvus_store import MilvusStore
    from treerag_core.search.fusion import fuse

    db = folder / "scale.db"
    # A loaded machine can take longer than the default 10 s to start the Lite engine.
    store = MilvusStore.open(str(db), DIM, "scale", window=window, timeout=120)
    started = time.perf_counter()
    store.create()
    for start, vectors, tokens, paths in batches(size):
        for first in range(0, len(vectors), INSERT_ROWS):  # row dicts for one slice at a time
            store.insert_chunks(_rows(start, first, vectors, tokens, paths))
    store.client.flush(store.chunks)
    build_s = time.perf_counter() - started
    disk = disk_mb(db)
    index = SyntheticIndex()
    all_rows = np.arange(size)
    times: dict[str, list[float]] = {FLAT: [], TREE: []}
    engine_rss = children_rss_mb()
    for qvec, qtokens in questions(size, n_queries):
        t0 = time.perf_counter()
        dense, bm25 = store.score_chunks(index, all_rows, qvec, qtokens)
        fused = fuse(dense, bm25, "weighted", 0.5, 60).fused
        np.argsort(-fused)[:CANDIDATES]
        times[FLAT].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        dense, bm25 = store.score_chunks(index, all_rows, qvec, qtokens, with_path=True)
        fused = fuse(dense, bm25, "weighted", 0.5, 60).fused
        docs = sorted(route(fused, all_rows))
        rows = np.concatenate(
            [np.arange(d * CHUNKS_PER_DOC, min((d + 1) * CHUNKS_PER_DOC, size)) for d in docs]
        )
        dense, bm25 = store.score_chunks(
            index, rows, qvec, qtokens, doc_ids=[f"d{d}" for d in docs], with_path=True
        )
        np.argsort(-fuse(dense, bm25, "weighted", 0.5, 60).fused)[:CANDIDATES]
        times[TREE].append(time.perf_counter() - t0)
        engine_rss = max(engine_rss, children_rss_mb())
    store.drop()
    return {"build_s": build_s, "disk_mb": disk, "times": times, "engine_rss_mb": engine_rss}


def _rows(start: int, first: int, vectors, tokens, paths) -> list[dict]:
    """Rows of the chunks collection for one slice of a generated batch."""
    from treerag_core.index.vectors.milvus_expr import terms

    return [
        {
            "id": f"c{start + i}",
            "kind": "child",
            "doc_id": f"d{(start + i) // CHUNKS_PER_DOC}",
            "item_id": f"c{start + i}",
            "parent_id": f"l{(start + i) // CHUNKS_PER_LEAF}",
            "heading_path": "",
            "language": "en",
            "content": "",
            "row": start + i,
            "start": 0,
            "end": 0,
            "page_start": -1,
            "page_end": -1,
            "dense": vectors[i].tolist(),
            "terms": terms(tokens[i]),
            "path_terms": terms(paths[i] + tokens[i]),
        }
        for i in range(first, min(first + INSERT_ROWS, len(vectors)))
    ]


def child(backend: str, size: int, n_queries: int, window: int) -> int:
    """One (size, backend) in this process; prints one JSON line."""
    folder = Path(tempfile.mkdtemp(prefix=f"scale-{backend}-"))
    try:
        if backend == "faiss":
            got = run_faiss(size, n_queries, folder)
        else:
            got = run_milvus(size, n_queries, folder, window)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out = {
        "chunks": size,
        "backend": backend,
        "build_s": round(got["build_s"], 1),
        "disk_mb": round(got["disk_mb"], 1),
        "peak_rss_mb": round(peak_rss_mb()),
        "engine_rss_mb": round(got["engine_rss_mb"]),
        "queries": n_queries,
    }
    for strategy, values in got["times"].items():
        ms = np.asarray(values) * 1000
        out[f"{strategy}_p50_ms"] = round(float(np.percentile(ms, 50)), 1)
        out[f"{strategy}_p95_ms"] = round(float(np.percentile(ms, 95)), 1)
    print(json.dumps(out))
    return 0


def run_all(
    sizes: list[int],
    n_queries: int,
    window: int,
    json_out: str | None,
    backends: tuple[str, ...] = ("faiss", "milvus"),
) -> list[dict]:
    rows: list[dict] = []
    for size in sizes:
        for backend in backends:
            cmd = [
                sys.executable,
                str(Path(__file__).with_name("bench_scale.py")),
                "--synthetic-child",
                backend,
                "--size",
                str(size),
                "--queries",
                str(n_queries),
                "--window",
                str(window),
            ]
            started = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                reason = (done.stderr.strip().splitlines() or ["killed"])[-1]
                row = {"chunks": size, "backend": backend, "failed": reason[:200]}
            else:
                row = json.loads(done.stdout.strip().splitlines()[-1])
            row["wall_s"] = round(time.perf_counter() - started, 1)
            rows.append(row)
            print(f"  {json.dumps(row)}", file=sys.stderr)
            if json_out:  # partial results survive an interrupted run
                Path(json_out).write_text(json.dumps(rows, indent=1))
    return rows


def table(rows: list[dict]) -> str:
    head = [
        "chunks",
        "backend",
        "build s",
        "disk MB",
        "peak RSS MB (ours)",
        "engine RSS MB",
        f"{FLAT} p50 / p95 ms",
        f"{TREE} p50 / p95 ms",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for r in rows:
        if "failed" in r:
            lines.append(f"| {r['chunks']:,} | {r['backend']} | failed: {r['failed']} |")
            continue
        lines.append(
            f"| {r['chunks']:,} | {r['backend']} | {r['build_s']:.1f} | {r['disk_mb']:.0f} | "
            f"{r['peak_rss_mb']:.0f} | {r['engine_rss_mb']:.0f} | "
            f"{r[f'{FLAT}_p50_ms']:.0f} / {r[f'{FLAT}_p95_ms']:.0f} | "
            f"{r[f'{TREE}_p50_ms']:.0f} / {r[f'{TREE}_p95_ms']:.0f} |"
        )
    return "\n".join(lines)
