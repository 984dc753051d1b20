"""In-leaf retrieval and the cross-leaf pool order."""

from __future__ import annotations

from treerag_core.config import QuerySettings
from treerag_core.retrieval import pool_across_leaves
from treerag_core.types import Chunk, RetrievedChunk


def hit(chunk_id: str, leaf: str, dense: float, bm25: float, fused: float) -> RetrievedChunk:
    chunk = Chunk(chunk_id, "text", leaf, leaf, "doc", 0, 4)
    return RetrievedChunk(chunk, dense, bm25, 0.0, 0.0, fused, leaf_rank=1)


def test_pool_orders_by_raw_scores_not_per_leaf_normalised_ones():
    # Each leaf's best chunk has fused 1.0 after per-leaf min-max; only raw scores differ.
    retrieved = {
        "A": [hit("a1", "A", dense=0.20, bm25=0.5, fused=1.0)],
        "B": [hit("b1", "B", dense=0.80, bm25=6.0, fused=1.0), hit("b2", "B", 0.5, 2.0, 0.3)],
    }
    pooled = pool_across_leaves(retrieved, QuerySettings())
    assert [h.chunk.chunk_id for h in pooled] == ["b1", "b2", "a1"]
    assert [h.pooled_rank for h in pooled] == [1, 2, 3]
    scores = [h.pool_fused for h in pooled]
    assert scores == sorted(scores, reverse=True)  # the shown score explains the order
    assert retrieved["A"][0].pooled_rank == 0  # inputs are not mutated


def test_single_group_keeps_its_fused_order():
    group = [hit("x", "*", 0.1, 9.0, 0.9), hit("y", "*", 0.9, 0.0, 0.5)]
    pooled = pool_across_leaves({"*": group}, QuerySettings())
    assert [h.chunk.chunk_id for h in pooled] == ["x", "y"]


def test_empty_pool():
    assert pool_across_leaves({}, QuerySettings()) == []
    assert pool_across_leaves({"A": []}, QuerySettings()) == []
