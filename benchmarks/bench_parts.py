"""Seconds per unit of each family's index part build: the figures `IndexPart.cost` quotes.

Builds the core index of a dev set once, then times each registered part's build over it
(the graph part with leaf graphs on, HiRAG's offline build apart) and divides by the part's
own unit count. Run: `python benchmarks/bench_parts.py --data ../shared/eval/qasper`.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import EVAL
from treerag_core import CorpusIndex, Embedder, build_index, get_embedder
from treerag_core.base.config import GRAPH_LEAF_CHARS, IndexSettings
from treerag_core.base.types import SourceDocument
from treerag_core.evaluation import load_dataset
from treerag_core.index.parts import IndexPart, PartBuild, index_parts
from treerag_core.strategies.hirag.build import build_hirag
from treerag_core.strategies.hirag.part import HiragPart


def time_part(part: IndexPart, index: CorpusIndex, embedder: Embedder) -> tuple[float, float]:
    """Wall and CPU seconds of one build of `part` over `index` (a part built apart: its own
    build). On a shared machine the wall time waits for other work; CPU time does not."""
    wall, cpu = time.perf_counter(), time.process_time()
    if isinstance(part, HiragPart):
        build_hirag(index, embedder)
    else:
        part.build(index, PartBuild(embedder))
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=EVAL / "qasper")
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    parser.add_argument("--docs", type=int, default=8, help="documents to index (default 8)")
    args = parser.parse_args(argv)
    dataset = load_dataset(args.data)
    sources = [
        SourceDocument(name, (dataset.docs_dir / name).read_text(encoding="utf-8"))
        for name in dataset.doc_names[: args.docs]
    ]
    embedder = get_embedder(args.embedder)
    getattr(embedder, "warm_up", lambda: None)()
    settings = IndexSettings(embedder=args.embedder, graph_min_leaf_chars=GRAPH_LEAF_CHARS)
    plain = build_index(sources, replace(settings, graph_min_leaf_chars=0), embedder)
    index = replace(plain, settings=settings, parts={})
    print(f"{dataset.name}: {len(sources)} documents, {len(index.chunks)} chunks, {args.embedder}")
    print("| part | unit | units | wall s | CPU s | CPU s/unit | quoted s/unit |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for part in index_parts():
        units = part.units(index)
        wall, cpu = time_part(part, index, embedder)
        per = cpu / units if units else 0.0
        print(
            f"| {part.key} | {part.cost.unit} | {units} | {wall:.2f} | {cpu:.2f} | {per:.4f} | "
            f"{part.cost.seconds_per_unit:.4f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
