"""In-leaf retrieval and the cross-leaf pool order."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from treerag_core.base.settings import FusionArgs, RetrieveSettings
from treerag_core.base.types import Chunk, RetrievalGroup, RetrievedChunk
from treerag_core.search.retrieval import fused_hits, pool


def hit(chunk_id: str, leaf: str, dense: float, bm25: float, fused: float, rank: int = 1):
    chunk = Chunk(chunk_id, "text", leaf, leaf, "doc", 0, 4)
    return RetrievedChunk(chunk, dense, bm25, 0.0, 0.0, fused, leaf_rank=rank)


def group(label: str, *hits: RetrievedChunk) -> RetrievalGroup:
    return RetrievalGroup(label, tuple(hits), leaf_id=label)


def test_pool_orders_by_raw_scores_not_per_leaf_normalised_ones():
    # Each leaf's best chunk has fused 1.0 after per-leaf min-max; only raw scores differ.
    a = group("A", hit("a1", "A", dense=0.20, bm25=0.5, fused=1.0))
    b = group("B", hit("b1", "B", 0.80, 6.0, 1.0), hit("b2", "B", 0.5, 2.0, 0.3, rank=2))
    pooled = pool([a, b], RetrieveSettings())
    assert [h.chunk.chunk_id for h in pooled] == ["b1", "b2", "a1"]
    assert [h.pooled_rank for h in pooled] == [1, 2, 3]
    scores = [h.pool_fused for h in pooled]
    assert scores == sorted(scores, reverse=True)  # the shown score explains the order
    assert a.hits[0].pooled_rank == 0  # inputs are not mutated


def test_single_group_keeps_its_fused_order():
    flat = RetrievalGroup("all", (hit("x", "L", 0.1, 9.0, 0.9), hit("y", "L", 0.9, 0.0, 0.5, 2)))
    pooled = pool([flat], RetrieveSettings())
    assert [h.chunk.chunk_id for h in pooled] == ["x", "y"]


def test_pool_is_cut_to_the_candidate_window():
    hits = [hit(f"c{i}", "L", 0.1, 1.0, 1.0 - i / 100, rank=i + 1) for i in range(10)]
    pooled = pool([RetrievalGroup("all", tuple(hits))], RetrieveSettings(candidate_window=4))
    assert [h.chunk.chunk_id for h in pooled] == ["c0", "c1", "c2", "c3"]


def test_a_chunk_found_by_two_groups_is_pooled_once_with_its_better_copy():
    weak = hit("same", "A", 0.1, 0.0, 0.2)
    strong = replace(weak, fused=0.9)
    pooled = pool(
        [group("A", weak), group("B", strong, hit("b", "B", 0.5, 1.0, 0.5, 2))], RetrieveSettings()
    )
    same = [h for h in pooled if h.chunk.chunk_id == "same"]
    assert len(same) == 1 and same[0].fused == 0.9  # group B's copy, not A's 0.2
    # Listing the groups the other way round keeps the same copy.
    swapped = pool(
        [group("B", strong, hit("b", "B", 0.5, 1.0, 0.5, 2)), group("A", weak)], RetrieveSettings()
    )
    assert [h.fused for h in swapped if h.chunk.chunk_id == "same"] == [0.9]


def test_empty_pool():
    assert pool([], RetrieveSettings()) == ()
    assert pool([group("A")], RetrieveSettings()) == ()


def test_fused_hits_ranks_cuts_and_flags_tiny_groups(hashing_index):
    rows = np.asarray([3, 1, 2])
    dense = np.asarray([0.1, 0.9, 0.5])
    bm25 = np.asarray([0.0, 2.0, 1.0])
    fusion = {"fusion": FusionArgs("weighted", 0.5, 60), "sub_query": "q"}
    hits = fused_hits(hashing_index, rows, dense, bm25, keep=2, **fusion)
    assert [h.chunk for h in hits] == [hashing_index.chunks[1], hashing_index.chunks[2]]
    assert [(h.leaf_rank, h.pooled_rank, h.pool_fused) for h in hits] == [
        (1, 0, None),
        (2, 0, None),
    ]
    assert [h.fused for h in hits] == [1.0, 0.5] and not any(h.minmax_forced for h in hits)
    given = fused_hits(hashing_index, rows, dense, bm25, given_order=True, pooled=True, **fusion)
    assert [h.chunk for h in given] == [hashing_index.chunks[r] for r in rows]
    assert [(h.leaf_rank, h.pooled_rank) for h in given] == [(1, 1), (2, 2), (3, 3)]
    assert [h.pool_fused for h in given] == [h.fused for h in given]
    tiny = fused_hits(hashing_index, rows[:2], dense[:2], bm25[:2], **fusion)
    assert [h.minmax_forced for h in tiny] == [True, False]  # min-max's 1.0 on a 2-chunk group
    assert fused_hits(hashing_index, rows[:0], dense[:0], bm25[:0], **fusion) == ()
