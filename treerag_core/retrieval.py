"""Step 2: hybrid retrieval inside each picked leaf (dense + BM25, normalised, fused, top-k)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from treerag_core.config import QuerySettings
from treerag_core.fusion import fuse, rank_positions
from treerag_core.index import CorpusIndex
from treerag_core.types import LocatedLeaf, RetrievedChunk

ALL_LEAVES = "*"  # the pseudo-leaf of flat strategies: every chunk in scope
QueryVector = Callable[[str], np.ndarray]


def hits_from_scores(
    index: CorpusIndex,
    rows: np.ndarray,
    dense: np.ndarray,
    bm25: np.ndarray,
    settings: QuerySettings,
    top_k: int,
    sub_query: str,
) -> list[RetrievedChunk]:
    """Fuse one group's scores and keep its top-k, each hit carrying every score and rank."""
    if not len(rows):
        return []
    result = fuse(dense, bm25, settings.fusion, settings.dense_weight, settings.rrf_k)
    ranks = rank_positions(result.fused)
    order = np.argsort(ranks)[:top_k]
    return [
        RetrievedChunk(
            chunk=index.chunks[int(rows[i])],
            dense=float(dense[i]),
            bm25=float(bm25[i]),
            dense_norm=float(result.dense_norm[i]),
            bm25_norm=float(result.bm25_norm[i]),
            fused=float(result.fused[i]),
            leaf_rank=int(ranks[i]),
            minmax_forced=bool(result.minmax_forced[i]),
            sub_query=sub_query,
        )
        for i in order
    ]


def retrieve_in_leaves(
    index: CorpusIndex,
    leaves: Sequence[LocatedLeaf],
    settings: QuerySettings,
    query_vector: QueryVector,
    tokenize: Callable[[str], list[str]],
    scope: Sequence[str] | None = None,
    top_k: int | None = None,
) -> dict[str, list[RetrievedChunk]]:
    """Search each picked leaf with its own sub-query; the pseudo-leaf `*` means every chunk."""
    k = settings.top_k_per_leaf if top_k is None else top_k
    out: dict[str, list[RetrievedChunk]] = {}
    for leaf in leaves:
        qvec = query_vector(leaf.sub_query)
        qtokens = tokenize(leaf.sub_query)
        if leaf.node_id == ALL_LEAVES:
            rows, dense, bm25 = index.score_scope(scope, qvec, qtokens)
        else:
            rows, dense, bm25 = index.score_leaf(leaf.node_id, qvec, qtokens)
        out[leaf.node_id] = hits_from_scores(index, rows, dense, bm25, settings, k, leaf.sub_query)
    return out


def pool_across_leaves(
    retrieved: dict[str, list[RetrievedChunk]], settings: QuerySettings
) -> list[RetrievedChunk]:
    """All leaves' hits in one list, ranked by a fusion recomputed over the whole pool.

    Per-leaf min-max makes every leaf's best chunk 1.0, so per-leaf fused scores cannot
    order chunks from different leaves. Raw cosine and BM25 (with document-wide IDF) can:
    re-normalising them over the pool gives the cross-leaf order used when no reranker runs.
    """
    hits = [hit for group in retrieved.values() for hit in group]
    if not hits:
        return []
    if len(retrieved) == 1:  # one group (a flat search): its own fused order already holds
        return [
            replace(hit, pooled_rank=rank, pool_fused=hit.fused)
            for rank, hit in enumerate(hits, start=1)
        ]
    dense = np.asarray([h.dense for h in hits], dtype=np.float64)
    bm25 = np.asarray([h.bm25 for h in hits], dtype=np.float64)
    fused = fuse(dense, bm25, settings.fusion, settings.dense_weight, settings.rrf_k).fused
    ranks = rank_positions(fused)
    ranked = sorted(range(len(hits)), key=lambda i: ranks[i])
    return [replace(hits[i], pooled_rank=int(ranks[i]), pool_fused=float(fused[i])) for i in ranked]
