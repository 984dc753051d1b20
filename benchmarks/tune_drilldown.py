"""Choose drill-down defaults by measurement: per-layer limits and signals on the dev sets.

Corpus scope, retrieval order (no cross-encoder, no LLM), the README's metrics, plus the
share of questions whose gold document the document layer chose (`doc_hit`). The flat-hybrid
retrieval order over the whole corpus is printed beside it as the baseline.

    python benchmarks/tune_drilldown.py --data ../shared/eval --dataset qasper [--small]
        [--limit N] [--json OUT]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from benchmarks._common import EVAL, EVAL_CACHE
from treerag_core import (
    dataset_index,
    index_cache_key,
    index_embedder,
    layers_of,
    save_index,
    tokenize,
)
from treerag_core.base.config import IndexSettings
from treerag_core.base.names import StrategyName
from treerag_core.base.settings import FusionArgs
from treerag_core.evaluation import Passage, aggregate, load_dataset, question_metrics
from treerag_core.search.fusion import fuse
from treerag_core.strategies.drilldown.layers import PART as LAYERS_PART
from treerag_core.strategies.drilldown.layers import build_layers
from treerag_core.strategies.drilldown.search import (
    child_hits,
    document_scores,
    parent_scores,
)

FLAT_TOP = 40  # the flat-hybrid baseline's candidate window
KEYS = ("doc_hit", "section_hit@1", "hit@5", "recall@5", "recall@1000c", "recall@2000c", "mrr@10")


def with_layers(index, embedder, cache_dir: Path, dataset) -> object:
    """An eval-cache index built before layers existed gets them (and the cache is updated)."""
    if layers_of(index) is None or layers_of(index).vectors_from != "embedded":
        index.parts[LAYERS_PART] = build_layers(index, embedder.embed)
        save_index(index, cache_dir / index_cache_key(dataset, index.settings))
    return index


def _passages(hits) -> list[Passage]:
    return [Passage(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in hits]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="qasper")
    parser.add_argument("--data", default=str(EVAL))
    parser.add_argument("--cache", default=str(EVAL_CACHE))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--small", action="store_true", help="8 configurations, not 108")
    args = parser.parse_args(argv)

    dataset = load_dataset(Path(args.data) / args.dataset)
    settings = IndexSettings()
    index = dataset_index(dataset, settings, Path(args.cache))
    embedder = index_embedder(index.embedder_name)
    index = with_layers(index, embedder, Path(args.cache), dataset)
    params = FusionArgs()
    questions = list(dataset.usable_questions)[: args.limit]

    grid = {
        "doc_signal": ("summary", "passages", "both"),
        "parent_signal": ("summary", "both"),
        "documents": (1, 2, 3),
        "parents": (1, 3, 5),
        "children": (3, 10),
    }
    configs = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    if args.small:  # the seed's limits and a wider funnel, by each signal
        limits = ((1, 1, 3), (3, 5, 10))
        configs = [
            {"doc_signal": d, "parent_signal": p, "documents": n, "parents": m, "children": k}
            for d in ("summary", "passages")
            for p in ("summary", "both")
            for n, m, k in limits
        ]
    per: dict[str, list[dict[str, float]]] = {}
    flat: list[dict[str, float]] = []
    for question in questions:
        qvec = embedder.embed_query(question.question)
        tokens = tokenize(question.question)
        gold_docs = set(question.docs)
        rows, dense, bm25 = index.score_scope(None, qvec, tokens)
        fused = fuse(dense, bm25, params.fusion, params.dense_weight, params.rrf_k).fused
        top = np.argsort(-fused, kind="stable")[:FLAT_TOP]
        flat_passages = [
            Passage(
                index.chunks[rows[i]].doc_id, index.chunks[rows[i]].start, index.chunks[rows[i]].end
            )
            for i in top
        ]
        flat.append(question_metrics(question, flat_passages, None))
        doc_cache = {
            s: document_scores(index, qvec, tokens, params, None, s, 3)
            for s in {c["doc_signal"] for c in configs}
        }
        for cfg in configs:
            docs = [c.item_id for c in doc_cache[cfg["doc_signal"]][: cfg["documents"]]]
            parents = parent_scores(
                index, qvec, tokens, docs, params, cfg["parent_signal"], cfg["parents"]
            )
            chosen = [c.item_id for c in parents if c.chosen]
            hits = child_hits(index, qvec, tokens, chosen, params, cfg["children"])
            paths = [index.nodes[p].heading_path for p in chosen]
            metrics = question_metrics(question, _passages(hits), paths)
            metrics["doc_hit"] = float(bool(gold_docs & set(docs)))
            key = json.dumps(cfg)
            per.setdefault(key, []).append(metrics)

    results = {key: aggregate(rows, {}) for key, rows in per.items()}
    baseline = aggregate(flat, {})
    header = "| config | " + " | ".join(KEYS) + " |"
    print(f"{dataset.name}: {len(questions)} questions, corpus scope, retrieval order (no rerank)")
    print(header)
    print("|" + "---|" * (len(KEYS) + 1))
    cells = " | ".join(f"{baseline.get(k, 0):.3f}" for k in KEYS)
    print(f"| {StrategyName.FLAT_HYBRID} (top {FLAT_TOP}) | {cells} |")
    ranked = sorted(results.items(), key=lambda kv: -kv[1]["recall@2000c"])
    for key, agg in ranked:
        cfg = json.loads(key)
        label = "{doc_signal}/{parent_signal} {documents}/{parents}/{children}".format(**cfg)
        print(f"| {label} | " + " | ".join(f"{agg.get(k, float('nan')):.3f}" for k in KEYS) + " |")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"dataset": dataset.name, "flat": baseline, "configs": results}, indent=1),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
