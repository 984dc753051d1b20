"""The hub check: max node degree of each leaf graph vs one graph built the same way per document.

Also counts how much leaf text the graph threshold covers and times the offline extractor.
No embedder is loaded: graphs are built from the parse and chunks alone.
Run: `python benchmarks/bench_graphs.py --data ../shared/eval/qasper [--min-chars 3000]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import parse_source
from treerag_core.base.config import IndexSettings
from treerag_core.base.text_rules import detect_language
from treerag_core.ingest.chunking import chunk_leaf
from treerag_core.strategies.graph.extract import build_leaf_graph


def measure_document(name: str, text: str, min_chars: int) -> dict[str, Any]:
    """Per-leaf graphs over the long leaves vs one graph over all the document's chunks."""
    settings = IndexSettings()
    language = detect_language(text)
    nodes = parse_source(text, name, settings)
    leaves = [n for n in nodes if n.is_leaf]
    chunks = {
        leaf.node_id: chunk_leaf(
            leaf, text, settings.chunk_size, settings.chunk_overlap, settings.min_chunk_chars
        )
        for leaf in leaves
    }
    long_leaves = [n for n in leaves if n.end - n.start >= min_chars and chunks[n.node_id]]
    leaf_graphs = [
        build_leaf_graph(n.node_id, name, chunks[n.node_id], language) for n in long_leaves
    ]
    began = time.perf_counter()
    everything = [c for leaf in leaves for c in chunks[leaf.node_id]]
    whole = build_leaf_graph("doc", name, everything, language) if everything else None
    whole_seconds = time.perf_counter() - began
    hub = ""
    if whole is not None and whole.concepts:
        degrees = whole.degrees()
        top = max(degrees, key=lambda k: (degrees[k], k))
        hub = next(c.name for c in whole.concepts if c.node_id == top)
    return {
        "doc": name,
        "language": language,
        "chars": len(text),
        "leaf_chars": sum(n.end - n.start for n in leaves),
        "long_leaf_chars": sum(n.end - n.start for n in long_leaves),
        "long_leaves": len(long_leaves),
        "leaf_max_degree": max((g.max_degree for g in leaf_graphs), default=0),
        "leaf_nodes_max": max((len(g.concepts) for g in leaf_graphs), default=0),
        "leaf_seconds": sum(g.build_seconds for g in leaf_graphs),
        "doc_nodes": len(whole.concepts) if whole else 0,
        "doc_edges": len(whole.relations) if whole else 0,
        "doc_max_degree": whole.max_degree if whole else 0,
        "doc_hub": hub,
        "doc_seconds": whole_seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="an eval folder with docs/*.md")
    parser.add_argument("--min-chars", type=int, default=3000)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    docs = sorted((Path(args.data) / "docs").glob("*.md"))
    rows = [measure_document(p.name, p.read_text(encoding="utf-8"), args.min_chars) for p in docs]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    with_graphs = [r for r in rows if r["long_leaves"]]
    share = sum(r["long_leaf_chars"] for r in rows) / max(1, sum(r["leaf_chars"] for r in rows))
    print(f"{len(docs)} documents; leaves >= {args.min_chars} chars hold {share:.0%} of leaf text")
    print("| doc | long leaves | max degree, leaf graphs | max degree, whole-doc graph | hub |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['doc'][:40]} | {r['long_leaves']} | {r['leaf_max_degree']} | "
            f"{r['doc_max_degree']} | {r['doc_hub']} |"
        )
    if with_graphs:
        print(
            f"median max degree: leaf graphs "
            f"{statistics.median(r['leaf_max_degree'] for r in with_graphs)}, whole-doc graphs "
            f"{statistics.median(r['doc_max_degree'] for r in with_graphs)} "
            f"(documents with a long leaf: {len(with_graphs)})"
        )
        print(
            f"offline extraction: {sum(r['leaf_seconds'] for r in rows):.1f} s for the leaf "
            f"graphs, {sum(r['doc_seconds'] for r in rows):.1f} s for the whole-doc graphs"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
