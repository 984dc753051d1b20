"""Index build time and size with and without leaf graphs, as ratios from one run.

Builds the index without graphs, then runs the graph stage on that same index with the same
embedder (so the chunk embeddings are paid once), saves both and compares the folders.
Run: `python benchmarks/bench_graph_cost.py --data ../shared/eval/qasper [--embedder minilm]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core import SourceDocument, build_index, get_embedder, graphs_of, save_index
from treerag_core.base.config import IndexSettings
from treerag_core.strategies.graph.part import GRAPH_VECTORS, graph_stage
from treerag_core.strategies.graph.part import PART as GRAPH_PART


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="an eval folder with docs/*.md")
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    parser.add_argument("--min-chars", type=int, default=3000)
    args = parser.parse_args(argv)
    docs = sorted((Path(args.data) / "docs").glob("*.md"))
    sources = [SourceDocument(p.name, p.read_text(encoding="utf-8")) for p in docs]
    embedder = get_embedder(args.embedder)
    embedder.embed(["warm up"])  # the model load is not part of either build
    plain = IndexSettings(embedder=args.embedder, graph_min_leaf_chars=0)
    began = time.perf_counter()
    base = build_index(sources, plain, embedder)
    base_seconds = time.perf_counter() - began
    graphed = replace(base, settings=replace(plain, graph_min_leaf_chars=args.min_chars))
    began = time.perf_counter()
    graphed.parts[GRAPH_PART] = graph_stage(graphed, embedder)
    graph_seconds = time.perf_counter() - began
    extraction = sum(g.build_seconds for g in graphs_of(graphed).values())
    concepts = sum(len(g.concepts) for g in graphs_of(graphed).values())
    with tempfile.TemporaryDirectory() as tmp:
        without = _size(save_index(base, Path(tmp) / "without"))
        folder = save_index(graphed, Path(tmp) / "with")
        with_graphs = _size(folder)
        graphs_json = (folder / "graphs.json").stat().st_size
        vectors = (folder / GRAPH_VECTORS).stat().st_size
    print(
        f"{len(docs)} documents, {len(graphs_of(graphed))} leaves >= {args.min_chars} chars, "
        f"{concepts} concepts"
    )
    print(
        f"build: {base_seconds:.1f} s without graphs; the graph stage adds {graph_seconds:.1f} s "
        f"(extraction {extraction:.1f} s, concept-name vectors {graph_seconds - extraction:.1f} s)"
        f"; ratio {(base_seconds + graph_seconds) / base_seconds:.2f}x"
    )
    print(
        f"size: {without / 1e6:.1f} MB without graphs, {with_graphs / 1e6:.1f} MB with "
        f"(graphs.json {graphs_json / 1e6:.1f} MB, {GRAPH_VECTORS} {vectors / 1e6:.1f} MB); "
        f"ratio {with_graphs / without:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
