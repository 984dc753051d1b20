"""Graph search as a third retriever: a graph column added to treerag's heading-aware order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from treerag_core.base.config import GRAPH_LEAF_CHARS
from treerag_core.base.errors import MissingGraphsError
from treerag_core.base.types import ContextSection, LocatedLeaf, RetrievedChunk
from treerag_core.index.corpus import CorpusIndex
from treerag_core.search.fusion import rank_positions
from treerag_core.search.structure import StructuredScores, window_hits
from treerag_core.strategies.graph.context import graph_sections
from treerag_core.strategies.graph.part import graph_vectors_of, graphs_of
from treerag_core.strategies.graph.search import GraphResult, GraphSearchOptions, search_graph
from treerag_core.strategies.graph.types import LeafGraph


@dataclass(frozen=True)
class FusionParams:
    """The fusion the scope was scored with, and the graph column's weight."""

    method: str = "weighted"
    rrf_k: int = 60
    graph_weight: float = 0.3


def add_graph(fused: np.ndarray, graph: np.ndarray, params: FusionParams) -> np.ndarray:
    """The graph column added to a fused score.

    weighted/dbsf: fused + w * graph (graph already 0..1). rrf: fused + w / (k + rank) for
    rows with a graph score. Added, not mixed: a chunk outside the searched graphs keeps its
    own score, so chunks with and without a graph stay comparable in one order.
    """
    if params.method == "rrf":
        bonus = np.where(graph > 0, params.graph_weight / (params.rrf_k + rank_positions(graph)), 0)
        return fused + bonus
    return fused + params.graph_weight * graph


def graph_column(
    index: CorpusIndex, rows: np.ndarray, results: Mapping[str, GraphResult]
) -> np.ndarray:
    """Each row's graph score divided by its leaf's best (0..1 per leaf); 0 outside the
    searched graphs."""
    column = np.zeros(len(rows), dtype=np.float64)
    scores: dict[str, float] = {}
    for result in results.values():
        best = max((s for _, s in result.chunk_scores), default=0.0)
        if best > 0:
            scores.update((c, s / best) for c, s in result.chunk_scores)
    if not scores:
        return column
    for i, row in enumerate(rows.tolist()):
        column[i] = scores.get(index.chunks[int(row)].chunk_id, 0.0)
    return column


def require_graphs(index: CorpusIndex) -> dict[str, LeafGraph]:
    """The index's leaf graphs, or a clear error for an index built without them."""
    graphs = graphs_of(index)
    if graphs is None:
        raise MissingGraphsError(
            "this index has no knowledge graphs (built before graphs existed, or with "
            "graph_min_leaf_chars=0); rebuild it to add graphs, e.g. `python -m treerag_core "
            f"index --input DOCS --output INDEX --graph-min-leaf-chars {GRAPH_LEAF_CHARS}`"
        )
    return graphs


def search_text(question: str, sub_query: str) -> str:
    """What a leaf's graph is searched with: the question, plus the leaf's sub-query when it
    differs (the sub-query may name the leaf's own terms, the question the link between them)."""
    if not sub_query.strip() or sub_query.strip() == question.strip():
        return question
    return f"{question} {sub_query}"


@dataclass(frozen=True)
class GraphSearches:
    """Graph search in the picked leaves that have a graph, and the context it adds."""

    results: dict[str, GraphResult]  # leaf id -> its search
    sections: tuple[ContextSection, ...]  # per graph leaf: its paths, then its stage record


def search_leaves(
    index: CorpusIndex,
    leaves: Sequence[LocatedLeaf],
    question: str,
    query_vector: Callable[[str], np.ndarray],
    tokenize: Callable[[str], list[str]],
    options: GraphSearchOptions | None = None,
) -> GraphSearches:
    """Search the graph of every picked leaf that has one (the long leaves)."""
    graphs = require_graphs(index)
    options = GraphSearchOptions() if options is None else options
    results: dict[str, GraphResult] = {}
    sections: list[ContextSection] = []
    for leaf in leaves:
        graph = graphs.get(leaf.node_id)
        if graph is None or leaf.node_id in results:
            continue
        text = search_text(question, leaf.sub_query)
        result = search_graph(
            graph,
            text,
            graph.language,  # type: ignore[arg-type]
            tokenize,
            query_vector(text),
            graph_vectors_of(index).get(leaf.node_id),
            options,
        )
        results[leaf.node_id] = result
        node = index.nodes[leaf.node_id]
        sections.extend(graph_sections(graph, result, index.texts[node.doc_id], node.heading_path))
    return GraphSearches(results, tuple(sections))


def with_graph(
    index: CorpusIndex,
    scores: StructuredScores,
    results: Mapping[str, GraphResult],
    params: FusionParams,
    within_leaf: bool = False,
) -> tuple[StructuredScores, np.ndarray]:
    """The scope's scores with the graph column in the order (`score`), and the column.

    Added (the default): a graph-supported chunk can overtake chunks of any leaf. Within
    leaf: each searched leaf keeps its own set of scores, and the graph only decides which
    of its chunks holds which (a leaf's k-th slot keeps its k-th best score), so the graph
    never moves a leaf against the others.
    """
    column = graph_column(index, scores.rows, results)
    boosted = add_graph(scores.score, column, params)
    if not within_leaf:
        return replace(scores, score=boosted), column
    score = scores.score.copy()
    position = {leaf: i for i, leaf in enumerate(scores.leaf_ids)}
    for leaf_id in results:
        if leaf_id not in position:
            continue  # the leaf is outside this scope
        rows = np.flatnonzero(scores.leaf_of_row == position[leaf_id])
        slots = np.sort(scores.score[rows])[::-1]
        holders = rows[np.argsort(-boosted[rows], kind="stable")]
        score[holders] = slots
    return replace(scores, score=score), column


def graph_hits(
    index: CorpusIndex,
    scores: StructuredScores,
    column: np.ndarray,
    results: Mapping[str, GraphResult],
    size: int,
    question: str,
    documents: Sequence[str] = (),
    leaves: Sequence[str] = (),
) -> list[RetrievedChunk]:
    """`window_hits` with each hit's graph score set: 0..1 for chunks of a searched graph,
    None for the others (no graph ran there)."""
    hits = window_hits(index, scores, size, question, documents, leaves)
    by_chunk = {
        index.chunks[int(scores.rows[i])].chunk_id: float(column[i]) for i in np.flatnonzero(column)
    }
    searched = set(results)
    return [
        replace(h, graph=by_chunk.get(h.chunk.chunk_id, 0.0))
        if h.chunk.source_node_id in searched
        else h
        for h in hits
    ]
