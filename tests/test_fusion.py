"""Tests for score normalisation and the three fusion methods, against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from treerag_core.search.fusion import dbsf_normalize, fuse, minmax, rank_positions

DENSE = np.array([0.2, 0.6, 0.4])
BM25 = np.array([0.0, 2.0, 4.0])


def test_minmax_scales_to_unit_interval() -> None:
    np.testing.assert_allclose(minmax(np.array([1.0, 3.0, 2.0])), [0.0, 1.0, 0.5])
    np.testing.assert_allclose(minmax(np.array([-2.0, 0.0, 2.0])), [0.0, 0.5, 1.0])


@pytest.mark.parametrize(
    ("scores", "expected"),
    [([2.0, 2.0], [1.0, 1.0]), ([0.3], [1.0]), ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]), ([-1.0], [0.0])],
)
def test_minmax_equal_scores_are_one_if_positive_else_zero(
    scores: list[float], expected: list[float]
) -> None:
    with np.errstate(all="raise"):  # no 0/0 anywhere
        np.testing.assert_array_equal(minmax(np.array(scores)), expected)


def test_minmax_empty_and_input_untouched() -> None:
    assert minmax(np.array([])).shape == (0,)
    scores = np.array([5.0, 1.0])
    minmax(scores)
    np.testing.assert_array_equal(scores, [5.0, 1.0])


def test_rank_positions_are_one_based_with_stable_ties() -> None:
    np.testing.assert_array_equal(rank_positions(np.array([0.5, 0.9, 0.5, 0.1])), [2, 1, 3, 4])
    np.testing.assert_array_equal(rank_positions(np.array([1.0, 1.0, 1.0])), [1, 2, 3])
    assert rank_positions(np.array([])).shape == (0,)


def test_weighted_fusion_hand_computed() -> None:
    result = fuse(DENSE, BM25, "weighted", 0.7)
    np.testing.assert_allclose(result.dense_norm, [0.0, 1.0, 0.5])
    np.testing.assert_allclose(result.bm25_norm, [0.0, 0.5, 1.0])
    # 0.7 * dense_norm + 0.3 * bm25_norm
    np.testing.assert_allclose(result.fused, [0.0, 0.85, 0.65])
    assert not result.minmax_forced.any()  # three chunks: no warning


def test_weighted_fusion_extreme_weights_keep_one_signal() -> None:
    np.testing.assert_allclose(fuse(DENSE, BM25, "weighted", 1.0).fused, [0.0, 1.0, 0.5])
    np.testing.assert_allclose(fuse(DENSE, BM25, "weighted", 0.0).fused, [0.0, 0.5, 1.0])


def test_rrf_hand_computed_and_bm25_zero_adds_nothing() -> None:
    result = fuse(DENSE, BM25, "rrf", 0.6, rrf_k=60)
    # dense ranks 3, 1, 2; BM25 ranks 3 (score 0: no match), 2, 1.
    expected = [0.6 / 63, 0.6 / 61 + 0.4 / 62, 0.6 / 62 + 0.4 / 61]
    np.testing.assert_allclose(result.fused, expected)
    # The normalised columns are the min-max values, for display.
    np.testing.assert_allclose(result.dense_norm, [0.0, 1.0, 0.5])
    np.testing.assert_allclose(result.bm25_norm, [0.0, 0.5, 1.0])


def test_rrf_k_changes_the_constant() -> None:
    result = fuse(np.array([0.9, 0.1]), np.array([0.0, 0.0]), "rrf", 0.5, rrf_k=1)
    np.testing.assert_allclose(result.fused, [0.5 / 2, 0.5 / 3])


def test_dbsf_hand_computed() -> None:
    # mean 2, population std sqrt(2/3): (s - mean) / (6 std) + 0.5
    step = 1.0 / (6.0 * math.sqrt(2.0 / 3.0))
    np.testing.assert_allclose(
        dbsf_normalize(np.array([1.0, 2.0, 3.0])), [0.5 - step, 0.5, 0.5 + step]
    )
    result = fuse(np.array([1.0, 2.0, 3.0]), np.array([3.0, 3.0, 3.0]), "dbsf", 0.5)
    np.testing.assert_allclose(result.bm25_norm, [1.0, 1.0, 1.0])  # std 0, value > 0
    np.testing.assert_allclose(result.fused, [0.75 - step / 2, 0.75, 0.75 + step / 2])


def test_dbsf_clips_outliers() -> None:
    # 99 zeros and one 100: mean 1, std sqrt(99); 100 lies beyond mean + 3 std.
    scores = np.array([0.0] * 99 + [100.0])
    norm = dbsf_normalize(scores)
    assert norm[-1] == 1.0
    std = math.sqrt(99.0)
    np.testing.assert_allclose(norm[:-1], (0.0 - (1.0 - 3.0 * std)) / (6.0 * std))


def test_single_chunk_is_forced_to_one() -> None:
    result = fuse(np.array([0.1]), np.array([0.0]), "weighted", 0.5)
    np.testing.assert_allclose(result.dense_norm, [1.0])  # a weak cosine still becomes 1.0
    np.testing.assert_allclose(result.bm25_norm, [0.0])  # no BM25 match stays 0
    np.testing.assert_allclose(result.fused, [0.5])
    np.testing.assert_array_equal(result.minmax_forced, [True])


def test_two_chunk_leaf_flags_each_top_component() -> None:
    dense, bm25 = np.array([0.3, 0.2]), np.array([0.0, 1.5])
    np.testing.assert_array_equal(fuse(dense, bm25, "weighted", 0.5).minmax_forced, [True, True])
    # With BM25 weighted 0, only the dense 1.0 matters.
    np.testing.assert_array_equal(fuse(dense, bm25, "weighted", 1.0).minmax_forced, [True, False])
    # RRF shows min-max values too, so the same warning applies to its display.
    np.testing.assert_array_equal(fuse(dense, bm25, "rrf", 0.5).minmax_forced, [True, True])
    # DBSF maps two distinct scores to 1/3 and 2/3: nothing is forced to 1.0.
    dbsf = fuse(dense, bm25, "dbsf", 0.5)
    np.testing.assert_allclose(dbsf.dense_norm, [2 / 3, 1 / 3])
    assert not dbsf.minmax_forced.any()


def test_two_chunks_with_no_match_anywhere_are_not_flagged() -> None:
    result = fuse(np.array([0.0, 0.0]), np.array([0.0, 0.0]), "weighted", 0.5)
    np.testing.assert_array_equal(result.fused, [0.0, 0.0])
    assert not result.minmax_forced.any()


@pytest.mark.parametrize("method", ["weighted", "rrf", "dbsf", "union"])
def test_empty_group(method: str) -> None:
    result = fuse(np.array([]), np.array([]), method, 0.5)
    for arr in (result.dense_norm, result.bm25_norm, result.fused, result.minmax_forced):
        assert arr.shape == (0,)
    assert result.minmax_forced.dtype == bool


@pytest.mark.parametrize("method", ["weighted", "rrf", "dbsf", "union"])
def test_permuting_chunks_permutes_scores(method: str) -> None:
    rng = np.random.default_rng(7)
    dense, bm25 = rng.random(8), rng.random(8) * 5
    bm25[[1, 4]] = 0.0
    perm = rng.permutation(8)
    base = fuse(dense, bm25, method, 0.4)
    moved = fuse(dense[perm], bm25[perm], method, 0.4)
    np.testing.assert_allclose(moved.fused, base.fused[perm])


def test_results_are_read_only() -> None:
    result = fuse(DENSE, BM25, "weighted", 0.5)
    with pytest.raises(ValueError, match="read-only"):
        result.fused[0] = 1.0


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"method": "max"}, "'max'"),
        ({"dense_weight": 1.5}, "1.5"),
        ({"dense_weight": -0.1}, "-0.1"),
        ({"dense_weight": float("nan")}, "nan"),
        ({"rrf_k": 0}, "rrf_k must be > 0, but got 0"),
    ],
)
def test_bad_arguments_name_the_value(kwargs: dict, needle: str) -> None:
    args = {"method": "weighted", "dense_weight": 0.5, "rrf_k": 60} | kwargs
    with pytest.raises(ValueError) as info:
        fuse(DENSE, BM25, args["method"], args["dense_weight"], args["rrf_k"])
    assert needle in str(info.value)


def test_bad_scores_are_rejected() -> None:
    with pytest.raises(ValueError, match="one score per chunk, but got 3 and 2"):
        fuse(DENSE, np.array([1.0, 2.0]), "weighted", 0.5)
    with pytest.raises(ValueError, match="dense scores must be finite, but got nan at position 1"):
        fuse(np.array([0.1, np.nan, 0.3]), BM25, "weighted", 0.5)


def test_union_fusion_hand_computed_and_deduplicated_by_chunk() -> None:
    # minmax(DENSE) = [0, 1, 0.5]; minmax(BM25) = [0, 0.5, 1]; BM25 0 adds nothing.
    result = fuse(DENSE, BM25, "union", 0.5)
    np.testing.assert_allclose(result.fused, [0.0, 1.0, 1.0])
    assert result.fused.shape == DENSE.shape  # one score per chunk: a union without duplicates
    # A retriever with weight 0 takes no part.
    np.testing.assert_allclose(fuse(DENSE, BM25, "union", 1.0).fused, [0.0, 1.0, 0.5])
    np.testing.assert_allclose(fuse(DENSE, BM25, "union", 0.0).fused, [0.0, 0.5, 1.0])


def test_union_is_a_fusion_name() -> None:
    from treerag_core.base.names import Fusion

    assert Fusion.parse("union") == Fusion.UNION
