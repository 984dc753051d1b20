"""The graph family's index part: a graph per long leaf and the vectors of its concept names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from treerag_core.base.artifacts import read_npy
from treerag_core.index.embedders import Embedder
from treerag_core.index.parts import BuildCost, PartBuild
from treerag_core.strategies.graph.build import (
    LeafExtractor,
    build_graphs,
    concept_names,
    long_leaves,
    split_vectors,
)
from treerag_core.strategies.graph.extract import EXTRACTOR_VERSION
from treerag_core.strategies.graph.store import GRAPHS_FILE, check_graphs, load_graphs, save_graphs
from treerag_core.strategies.graph.types import LeafGraph

if TYPE_CHECKING:
    from treerag_core.index.corpus import CorpusIndex

PART = "graph"  # the family's key in CorpusIndex.parts
GRAPH_VECTORS = "graph_vectors.npy"  # beside graphs.json, only in indexes built with graphs


@dataclass(frozen=True)
class LeafGraphs:
    """Long leaf id -> its graph, and -> the vectors of its concept names (one row each)."""

    graphs: dict[str, LeafGraph]
    vectors: dict[str, np.ndarray]


def graphs_of(index: CorpusIndex) -> dict[str, LeafGraph] | None:
    """The index's leaf graphs (None: built without graphs)."""
    part = index.parts.get(PART)
    return part.graphs if part is not None else None


def graph_vectors_of(index: CorpusIndex) -> dict[str, np.ndarray]:
    """Each graph's concept name vectors (matched to a question by meaning); {} without."""
    part = index.parts.get(PART)
    return part.vectors if part is not None else {}


def graph_stage(
    index: CorpusIndex,
    embedder: Embedder,
    previous: dict[str, LeafGraph] | None = None,
    extractor: LeafExtractor | None = None,
    notify: Callable[[str, int, int], None] | None = None,
) -> LeafGraphs:
    """Leaf graphs and the vectors of their concept names; graphs in `previous` whose leaf is
    unchanged are reused."""
    graphs = build_graphs(
        index.nodes,
        index.chunks,
        {d.doc_id: d.language for d in index.documents},
        index.settings.graph_min_leaf_chars,
        previous=previous,
        extractor=extractor,
        extractor_version=getattr(extractor, "version", EXTRACTOR_VERSION),
        progress=None if notify is None else lambda done, total: notify("graph", done, total),
    )
    names = concept_names(graphs)
    matrix = embedder.embed(names) if names else np.zeros((0, embedder.dim), dtype=np.float32)
    return LeafGraphs(graphs, split_vectors(graphs, np.asarray(matrix, dtype=np.float32)))


class GraphPart:
    """Built when `graph_min_leaf_chars` > 0 (offline extractor, or the LLM's when given a
    `graph_extractor`); graphs of unchanged leaves are reused from the previous index."""

    key = PART
    files = (GRAPHS_FILE, GRAPH_VECTORS)
    kept_on_rebuild: tuple[str, ...] = ()
    inputs = ("graph_extractor",)  # the LLM extractor (graph.extract_llm)
    # benchmarks/bench_parts.py, 8 QASPER papers: 10.6 CPU s for 17 leaves of >= 3,000 chars
    # (offline extraction + embedding the concept names)
    cost = BuildCost("long leaf (>= graph_min_leaf_chars)", 0.62)

    def build(self, index: CorpusIndex, ctx: PartBuild) -> LeafGraphs | None:
        if index.settings.graph_min_leaf_chars <= 0:
            return None
        previous = ctx.previous.graphs if ctx.previous is not None else None
        extractor = ctx.inputs.get("graph_extractor")
        return graph_stage(index, ctx.embedder, previous, extractor, ctx.notify)

    def save(self, part: LeafGraphs, folder: Path, index: CorpusIndex) -> None:
        save_graphs(part.graphs.values(), folder)
        vectors = [part.vectors[k] for k in sorted(part.graphs)]
        matrix = np.concatenate(vectors) if vectors else np.zeros((0, index.dim), np.float32)
        # float16 halves the file; a concept name only needs to match a question's vector.
        np.save(folder / GRAPH_VECTORS, matrix.astype(np.float16), allow_pickle=False)

    def load(self, folder: Path, index: CorpusIndex, hint: str) -> LeafGraphs | None:
        """The graphs (checked against the chunks and texts) and their concept vectors."""
        graphs = load_graphs(folder)
        if graphs is None:
            return None
        check_graphs(graphs, index.chunks, index.texts, str(folder / GRAPHS_FILE), hint)
        rows = sum(len(g.concepts) for g in graphs.values())
        # float16 since graphs were added; float32 is accepted as written by hand or older tools
        matrix = read_npy(folder / GRAPH_VECTORS, index.dim, rows, (np.float16, np.float32), hint)
        return LeafGraphs(graphs, split_vectors(graphs, matrix))

    def stats(self, part: LeafGraphs | None) -> dict[str, int]:
        graphs = part.graphs if part is not None else {}
        return {
            "graphs": len(graphs),
            "graph_max_degree": max((g.max_degree for g in graphs.values()), default=0),
        }

    def units(self, index: CorpusIndex) -> int:
        return len(long_leaves(index.nodes, index.settings.graph_min_leaf_chars))
