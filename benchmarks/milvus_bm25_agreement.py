"""Chinese BM25 on Milvus against our in-process BM25, on the laws' dev questions.

Four BM25 rankings of the same chunks for each question, compared with the in-process one
(`treerag_core.index.bm25`, jieba tokens, k1 1.5, b 0.75), in corpus scope and in the question's
own document(s):

- `ours on Milvus`: our jieba tokens sent pre-tokenised (`MilvusStore`, the backend's way:
  the engine's BM25 over the corpus; in a narrower scope the engine serves the scope's term
  rows and they are scored with the scope's statistics, as in process);
- `engine BM25, collection statistics`: the same tokens, the engine's own BM25 in every
  scope (IDF and mean length over the whole collection: the backend before it scored narrow
  scopes with their own statistics);
- `Milvus chinese analyzer`: the raw text, cut by the engine's own `chinese` analyzer
  (jieba inside Milvus, with its own dictionary and filters).

Agreement: overlap of the top 10 (share of in-process top-10 chunks in the engine's top
10), Kendall tau-b of the two scores over the union of both top 10s, and the same top 1.

    python benchmarks/milvus_bm25_agreement.py --index data/eval-cache/lecoqa_laws-... \
        --data ../shared/eval/lecoqa_laws --milvus-uri data/milvus-agree.db [--limit 87]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks._common import EVAL

TOP = 10


def top(scores: np.ndarray, k: int = TOP) -> list[int]:
    """Positions of the best k positive scores (ties: lower position first, as in process)."""
    order = np.argsort(-scores, kind="stable")[:k]
    return [int(i) for i in order if scores[i] > 0]


def agreement(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, float, float]:
    from scipy.stats import kendalltau

    a, b = top(ours), top(theirs)
    if not a:
        return float("nan"), float("nan"), float("nan")
    overlap = len(set(a) & set(b)) / len(a)
    union = sorted(set(a) | set(b))
    tau = kendalltau(ours[union], theirs[union]).statistic if len(union) > 1 else 1.0
    return overlap, float(tau), float(bool(b) and a[0] == b[0])


def analyzer_collection(store, index, name: str) -> str:
    """A collection of the raw chunk texts, BM25 by Milvus' own `chinese` analyzer."""
    from pymilvus import DataType, Function, FunctionType

    client = store.client
    if client.has_collection(name):
        client.drop_collection(name)
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("row", DataType.INT64, is_primary=True)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=4096)
    schema.add_field(
        "text",
        DataType.VARCHAR,
        max_length=65535,
        enable_analyzer=True,
        analyzer_params={"type": "chinese"},
    )
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=2)  # Milvus needs a dense field
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["text"],
            output_field_names=["sparse"],
        )
    )
    params = client.prepare_index_params()
    params.add_index("dense", index_type="FLAT", metric_type="L2")
    params.add_index(
        "sparse",
        index_type="SPARSE_INVERTED_INDEX",
        metric_type="BM25",
        params={"bm25_k1": 1.5, "bm25_b": 0.75},
    )
    client.create_collection(name, schema=schema)
    client.create_index(name, params, sync=False)
    client.load_collection(name)
    rows = [
        {"row": i, "doc_id": c.doc_id, "text": c.text, "dense": [1.0, 0.0]}
        for i, c in enumerate(index.chunks)
    ]
    for start in range(0, len(rows), 500):
        client.insert(name, rows[start : start + 500])
    client.flush(name)
    return name


def engine_scores(client, name: str, question: str, rows: np.ndarray, flt: str) -> np.ndarray:
    out = np.zeros(len(rows), dtype=np.float64)
    hits = client.search(
        name, data=[question], anns_field="sparse", filter=flt, limit=min(len(rows), 16384)
    )
    for hit in hits[0]:
        pos = int(np.searchsorted(rows, int(hit["id"])))
        out[pos] = abs(float(hit["distance"]))
    return out


def main(argv: list[str] | None = None) -> int:
    from treerag_core import load_index, tokenize
    from treerag_core.index.vectors.attach import attach_store
    from treerag_core.index.vectors.milvus_expr import one_of
    from treerag_core.index.vectors.milvus_store import MilvusStore
    from treerag_core.strategies.drilldown.milvus_push import attach_milvus, push_milvus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True, help="the laws' index folder (eval cache)")
    parser.add_argument("--data", default=str(EVAL / "lecoqa_laws"))
    parser.add_argument("--milvus-uri", required=True)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    index = load_index(args.index)
    store = MilvusStore.open(args.milvus_uri, index.dim, "agree")
    push_milvus(index, store, replace=True)
    attach_milvus(index, store)
    raw = analyzer_collection(store, index, "agree_chinese_analyzer")
    lines = (Path(args.data) / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines][: args.limit]
    rng = np.random.default_rng(0)
    probe = rng.standard_normal(index.dim).astype(np.float32)  # the dense side is not compared
    results: dict[str, list[tuple[float, float, float]]] = {}
    for q in questions:
        tokens = tokenize(q["question"])
        for scope_name in ("corpus", "doc"):
            docs = None if scope_name == "corpus" else list(q.get("docs") or [q["doc"]])
            attach_store(index, None)
            rows, _, ours = index.score_scope(docs, probe, tokens)
            attach_store(index, store)
            _, _, served = index.score_scope(docs, probe, tokens)
            flt = "" if docs is None else one_of("doc_id", docs)
            analyzed = engine_scores(store.client, raw, q["question"], rows, flt)
            by_doc = None if docs is None else sorted(set(docs))
            collection = store.score_chunks(index, rows, probe, tokens, doc_ids=by_doc)[1]
            for name, theirs in (
                ("ours on Milvus", served),
                ("engine BM25, collection statistics", collection),
                ("Milvus chinese analyzer", analyzed),
            ):
                key = f"{scope_name} | {name}"
                results.setdefault(key, []).append(agreement(np.asarray(ours), theirs))
    attach_store(index, None)
    print(f"BM25 agreement with the in-process BM25, {len(questions)} laws dev questions")
    print("| scope | engine BM25 | top-10 overlap | Kendall tau-b (top-10 union) | same top 1 |")
    print("|---|---|---:|---:|---:|")
    summary = {}
    for key, values in results.items():
        arr = np.asarray(values, dtype=np.float64)
        means = np.nanmean(arr, axis=0)
        summary[key] = {"overlap": means[0], "tau": means[1], "top1": means[2], "n": len(arr)}
        scope, name = key.split(" | ")
        print(f"| {scope} | {name} | {means[0]:.3f} | {means[1]:.3f} | {means[2]:.3f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
