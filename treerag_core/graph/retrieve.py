"""Graph search as a third retriever: a leaf's dense, BM25 and graph scores fused into hits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from treerag_core.errors import IndexFormatError
from treerag_core.fusion import fuse, rank_positions
from treerag_core.graph.context import graph_sections
from treerag_core.graph.search import GraphResult, GraphSearchOptions, search_graph
from treerag_core.graph.types import LeafGraph
from treerag_core.index import CorpusIndex
from treerag_core.types import ContextSection, LocatedLeaf, RetrievedChunk


@dataclass(frozen=True)
class FusionParams:
    """The dense/BM25 fusion a strategy runs with, and the graph column's weight."""

    method: str = "weighted"
    dense_weight: float = 0.5
    rrf_k: int = 60
    graph_weight: float = 0.3


def graph_column(rows: np.ndarray, index: CorpusIndex, result: GraphResult | None) -> np.ndarray:
    """Each row's graph score divided by the leaf's best (0..1); zeros when no graph ran."""
    column = np.zeros(len(rows), dtype=np.float64)
    if result is None or not result.chunk_scores:
        return column
    scores = dict(result.chunk_scores)
    for i, row in enumerate(rows):
        column[i] = scores.get(index.chunks[int(row)].chunk_id, 0.0)
    best = column.max()
    return column / best if best > 0 else column


def add_graph(fused: np.ndarray, graph: np.ndarray, params: FusionParams) -> np.ndarray:
    """The graph column added to a fused dense+BM25 score.

    weighted/dbsf: fused + w * graph (graph already 0..1). rrf: fused + w / (k + rank) for
    rows with a graph score. Added, not mixed: a leaf without a graph keeps its own scores,
    so hits from leaves with and without graphs stay comparable in the pool.
    """
    if params.method == "rrf":
        bonus = np.where(graph > 0, params.graph_weight / (params.rrf_k + rank_positions(graph)), 0)
        return fused + bonus
    return fused + params.graph_weight * graph


def leaf_hits(
    index: CorpusIndex,
    leaf_id: str,
    query_vector: np.ndarray,
    query_tokens: list[str],
    result: GraphResult | None,
    params: FusionParams,
    top_k: int,
    sub_query: str,
) -> list[RetrievedChunk]:
    """One leaf's top-k by dense + BM25 + graph; every hit keeps all three scores."""
    rows, dense, bm25 = index.score_leaf(leaf_id, query_vector, query_tokens)
    if not len(rows):
        return []
    base = fuse(dense, bm25, params.method, params.dense_weight, params.rrf_k)
    graph = graph_column(rows, index, result)
    fused = add_graph(np.asarray(base.fused), graph, params)
    ranks = rank_positions(fused)
    order = np.argsort(ranks, kind="stable")[:top_k]
    ran = result is not None
    return [
        RetrievedChunk(
            chunk=index.chunks[int(rows[i])],
            dense=float(dense[i]),
            bm25=float(bm25[i]),
            dense_norm=float(base.dense_norm[i]),
            bm25_norm=float(base.bm25_norm[i]),
            fused=float(fused[i]),
            leaf_rank=int(ranks[i]),
            minmax_forced=bool(base.minmax_forced[i]),
            sub_query=sub_query,
            graph=float(graph[i]) if ran else None,
        )
        for i in order
    ]


def pool_with_graph(
    groups: Sequence[Sequence[RetrievedChunk]], params: FusionParams, window: int | None = None
) -> list[RetrievedChunk]:
    """All groups' hits (one per chunk, the better-fused copy) ranked by dense + BM25 fused
    over the pool plus the graph column, cut to `window`.

    Raw cosine and BM25 (document-wide IDF) compare across leaves; the graph column is
    already 0..1 per leaf (its best chunk 1.0), so it is added as it is. One group keeps its
    own order, as `retrieval.pool` does.
    """
    best: dict[str, RetrievedChunk] = {}
    for group in groups:
        for hit in group:
            kept = best.get(hit.chunk.chunk_id)
            if kept is None or hit.fused > kept.fused:
                best[hit.chunk.chunk_id] = hit
    hits = list(best.values())
    if not hits:
        return []
    if len(groups) == 1:
        ranked = sorted(hits, key=lambda h: h.leaf_rank)[:window]
        return [replace(h, pooled_rank=r, pool_fused=h.fused) for r, h in enumerate(ranked, 1)]
    dense = np.asarray([h.dense for h in hits], dtype=np.float64)
    bm25 = np.asarray([h.bm25 for h in hits], dtype=np.float64)
    graph = np.asarray([h.graph or 0.0 for h in hits], dtype=np.float64)
    base = fuse(dense, bm25, params.method, params.dense_weight, params.rrf_k).fused
    fused = add_graph(np.asarray(base), graph, params)
    ranks = rank_positions(fused)
    ranked = sorted(range(len(hits)), key=lambda i: ranks[i])[:window]
    return [replace(hits[i], pooled_rank=int(ranks[i]), pool_fused=float(fused[i])) for i in ranked]


@dataclass(frozen=True)
class GraphRetrieval:
    """Step 2 of `treerag-kg`: per-leaf hits, each graph leaf's search, and their context."""

    hits: dict[str, list[RetrievedChunk]]  # leaf id -> top-k hits (graph column where a graph)
    results: dict[str, GraphResult]  # leaf id -> graph search, for leaves that have a graph
    sections: tuple[ContextSection, ...]  # per graph leaf: its paths, then its stage record


def require_graphs(index: CorpusIndex) -> dict[str, LeafGraph]:
    """The index's leaf graphs, or a clear error for an index built without them."""
    if index.graphs is None:
        raise IndexFormatError(
            "this index has no knowledge graphs (built before graphs existed, or with "
            "graph_min_leaf_chars=0); rebuild it to add graphs, e.g. `python -m treerag_core "
            "index --input DOCS --output INDEX --graph-min-leaf-chars 3000`"
        )
    return index.graphs


def retrieve_with_graphs(
    index: CorpusIndex,
    leaves: Sequence[LocatedLeaf],
    question: str,
    query_vector: Callable[[str], np.ndarray],
    tokenize: Callable[[str], list[str]],
    params: FusionParams,
    top_k: int,
    options: GraphSearchOptions | None = None,
) -> GraphRetrieval:
    """Dense + BM25 in every picked leaf, plus graph search in those that have a graph.

    The graph is searched with the question and the leaf's sub-query together (the
    sub-query may name the leaf's own terms, the question the link between them).
    """
    graphs = require_graphs(index)
    options = GraphSearchOptions() if options is None else options
    hits: dict[str, list[RetrievedChunk]] = {}
    results: dict[str, GraphResult] = {}
    sections: list[ContextSection] = []
    for leaf in leaves:
        qvec = query_vector(leaf.sub_query)
        graph = graphs.get(leaf.node_id)
        result = None
        if graph is not None:
            text = (
                question
                if leaf.sub_query.strip() == question.strip()
                else (f"{question} {leaf.sub_query}")
            )
            result = search_graph(
                graph,
                text,
                graph.language,  # type: ignore[arg-type]
                tokenize,
                query_vector(text),
                index.graph_vectors.get(leaf.node_id),
                options,
            )
            results[leaf.node_id] = result
            node = index.nodes[leaf.node_id]
            sections.extend(
                graph_sections(graph, result, index.texts[node.doc_id], node.heading_path)
            )
        hits[leaf.node_id] = leaf_hits(
            index,
            leaf.node_id,
            qvec,
            tokenize(leaf.sub_query),
            result,
            params,
            top_k,
            leaf.sub_query,
        )
    return GraphRetrieval(hits, results, tuple(sections))
