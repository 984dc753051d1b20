"""Step 2 primitives: hybrid search of one group of chunks, and pooling groups into one order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from treerag_core.base.settings import FusionArgs, RetrieveSettings
from treerag_core.base.types import RetrievalGroup, RetrievedChunk
from treerag_core.index.corpus import CorpusIndex
from treerag_core.search.fusion import fuse, rank_positions

QueryVector = Callable[[str], np.ndarray]
Tokenize = Callable[[str], list[str]]


def fused_hits(
    index: CorpusIndex,
    rows: np.ndarray,
    dense: np.ndarray,
    bm25: np.ndarray,
    *,
    fusion: FusionArgs,
    sub_query: str,
    keep: int | None = None,
    given_order: bool = False,
    pooled: bool = False,
) -> tuple[RetrievedChunk, ...]:
    """Fuse the dense and BM25 scores of chunk `rows` into hits, best first, the top `keep`.

    Each hit carries every score, its rank and the tiny-group min-max flag. `given_order`
    ranks the rows in the order they came in instead of by fused score. `pooled`: these
    rows are the whole pool (one fusion over every candidate), so each hit's pooled rank
    and pool-fused score are its own rank and fused score.
    """
    if not len(rows):
        return ()
    result = fuse(dense, bm25, *fusion)
    ranks = np.arange(1, len(rows) + 1) if given_order else rank_positions(result.fused)
    order = np.argsort(ranks, kind="stable")[:keep]  # ranks are 1..n: the order is unique
    return tuple(
        RetrievedChunk(
            chunk=index.chunks[int(rows[i])],
            dense=float(dense[i]),
            bm25=float(bm25[i]),
            dense_norm=float(result.dense_norm[i]),
            bm25_norm=float(result.bm25_norm[i]),
            fused=float(result.fused[i]),
            leaf_rank=int(ranks[i]),
            pooled_rank=int(ranks[i]) if pooled else 0,
            pool_fused=float(result.fused[i]) if pooled else None,
            minmax_forced=bool(result.minmax_forced[i]),
            sub_query=sub_query,
        )
        for i in order
    )


def _group_hits(
    index: CorpusIndex,
    scored: tuple[np.ndarray, np.ndarray, np.ndarray],
    retrieve: RetrieveSettings,
    keep: int,
    sub_query: str,
) -> tuple[RetrievedChunk, ...]:
    rows, dense, bm25 = scored
    return fused_hits(
        index,
        rows,
        dense,
        bm25,
        fusion=retrieve.fusion_args,
        sub_query=sub_query,
        keep=keep,
    )


def search_leaf(
    index: CorpusIndex,
    leaf_id: str,
    sub_query: str,
    retrieve: RetrieveSettings,
    query_vector: QueryVector,
    tokenize: Tokenize,
) -> RetrievalGroup:
    """Dense + BM25 over one leaf's chunks with its sub-query; its top `top_k_per_leaf`."""
    scored = index.score_leaf(leaf_id, query_vector(sub_query), tokenize(sub_query))
    hits = _group_hits(index, scored, retrieve, retrieve.top_k_per_leaf, sub_query)
    path = index.nodes[leaf_id].heading_path
    return RetrievalGroup(path, hits, leaf_id=leaf_id, sub_query=sub_query, kind="leaf")


def search_scope(
    index: CorpusIndex,
    question: str,
    scope: Sequence[str] | None,
    retrieve: RetrieveSettings,
    query_vector: QueryVector,
    tokenize: Tokenize,
) -> RetrievalGroup:
    """Dense + BM25 over every chunk in scope (flat search): its top `candidate_window`."""
    scored = index.score_scope(scope, query_vector(question), tokenize(question))
    hits = _group_hits(index, scored, retrieve, retrieve.candidate_window, question)
    label = "all sections" if scope is None else f"all sections of {len(scope)} document(s)"
    return RetrievalGroup(label, hits, leaf_id=None, sub_query=question, kind="scope")


def pool(
    groups: Sequence[RetrievalGroup], retrieve: RetrieveSettings
) -> tuple[RetrievedChunk, ...]:
    """Every group's hits in one list, one per chunk, ranked and cut to the candidate window.

    Per-leaf min-max makes every leaf's best chunk 1.0, so per-leaf fused scores cannot
    order chunks from different leaves. Raw cosine and BM25 (with document-wide IDF) can:
    re-normalising them over the pool gives the cross-leaf order used when no reranker runs.
    A chunk found by two groups keeps its better-fused copy.
    """
    best: dict[str, RetrievedChunk] = {}
    for group in groups:
        for hit in group.hits:
            kept = best.get(hit.chunk.chunk_id)
            if kept is None or hit.fused > kept.fused:
                best[hit.chunk.chunk_id] = hit
    hits = list(best.values())
    if not hits:
        return ()
    if len(groups) == 1:  # one group (a flat search): its own fused order already holds
        ranked = sorted(hits, key=lambda h: h.leaf_rank)
        return tuple(
            replace(hit, pooled_rank=rank, pool_fused=hit.fused)
            for rank, hit in enumerate(ranked[: retrieve.candidate_window], start=1)
        )
    dense = np.asarray([h.dense for h in hits], dtype=np.float64)
    bm25 = np.asarray([h.bm25 for h in hits], dtype=np.float64)
    fused = fuse(dense, bm25, *retrieve.fusion_args).fused
    ranks = rank_positions(fused)
    order = sorted(range(len(hits)), key=lambda i: ranks[i])[: retrieve.candidate_window]
    return tuple(
        replace(hits[i], pooled_rank=int(ranks[i]), pool_fused=float(fused[i])) for i in order
    )
