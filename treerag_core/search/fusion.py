"""Score normalisation and dense + BM25 fusion for one group of chunks (pure numpy)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from treerag_core.base.names import Fusion

FUSION_METHODS = Fusion.values()
SMALL_LEAF = 2  # a leaf of at most this many chunks gets the minmax_forced warning


@dataclass(frozen=True, eq=False)
class FusionResult:
    """Per-chunk normalised scores, fused score and the tiny-leaf flag (read-only arrays).

    `dense_norm` / `bm25_norm` are the values the method fused (min-max for "weighted" and,
    for display only, "rrf"; distribution-based for "dbsf"). `minmax_forced[i]` is True when
    the group has 1-2 chunks and normalisation gave chunk i a 1.0 in a component with a
    non-zero weight: that 1.0 says nothing about real relevance, so fused scores of such a
    leaf are not comparable with other leaves' until the rerank stage.
    """

    dense_norm: np.ndarray
    bm25_norm: np.ndarray
    fused: np.ndarray
    minmax_forced: np.ndarray


def _as_scores(scores: np.ndarray | list[float], name: str) -> np.ndarray:
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} scores must be a 1-d array, but got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name} scores must be finite, but got {arr[i]} at position {i}")
    return arr


def _equal_case(arr: np.ndarray) -> np.ndarray:
    # All scores tie: they are all the best if the common value is a real signal (> 0), and
    # all nothing if it is 0 or below (e.g. BM25 0 = no chunk matches), never a 0/0.
    return np.full(arr.shape, 1.0 if arr[0] > 0 else 0.0)


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scale to [0, 1] by (s - min) / (max - min).

    All-equal scores become all 1.0 when the value is > 0 and all 0.0 otherwise (so one
    chunk with a positive score gets 1.0, and a leaf where BM25 matched nothing stays 0);
    an empty array gives an empty array.
    """
    arr = _as_scores(scores, "input")
    if arr.size == 0:
        return arr.copy()
    low, high = float(arr.min()), float(arr.max())
    if high == low:
        return _equal_case(arr)
    return (arr - low) / (high - low)


def dbsf_normalize(scores: np.ndarray) -> np.ndarray:
    """Distribution-based scaling: (s - (mean - 3 std)) / (6 std), clipped to [0, 1].

    Uses the population std (ddof=0), as LlamaIndex's `dist_based_score` and Qdrant's DBSF
    do. A zero std falls back to the all-equal rule of `minmax`.
    """
    arr = _as_scores(scores, "input")
    if arr.size == 0:
        return arr.copy()
    mean, std = float(arr.mean()), float(arr.std())
    if std == 0.0:
        return _equal_case(arr)
    return np.clip((arr - (mean - 3.0 * std)) / (6.0 * std), 0.0, 1.0)


def rank_positions(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each score, highest first; ties keep their original order (NaN last)."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"scores must be a 1-d array, but got shape {arr.shape}")
    order = np.argsort(-arr, kind="stable")
    ranks = np.empty(arr.shape[0], dtype=np.int64)
    ranks[order] = np.arange(1, arr.shape[0] + 1)
    return ranks


def _check_args(method: str, dense_weight: float, rrf_k: float) -> None:
    if method not in FUSION_METHODS:
        raise ValueError(f"fusion method must be one of {FUSION_METHODS}, but got {method!r}")
    if not _is_real(dense_weight) or not 0.0 <= float(dense_weight) <= 1.0:
        raise ValueError(f"dense_weight must be in [0, 1], but got {dense_weight!r}")
    if not _is_real(rrf_k) or float(rrf_k) <= 0.0:
        raise ValueError(f"rrf_k must be > 0, but got {rrf_k!r}")


def _is_real(value: object) -> bool:
    return (
        isinstance(value, int | float | np.integer | np.floating)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def fuse(
    dense: np.ndarray,
    bm25: np.ndarray,
    method: str,
    dense_weight: float,
    rrf_k: int = 60,
) -> FusionResult:
    """Fuse one group's dense and BM25 scores; the BM25 weight is `1 - dense_weight`.

    - "weighted": dense_weight * minmax(dense) + (1 - dense_weight) * minmax(bm25).
    - "rrf": sum of w / (rrf_k + rank), ranks 1-based; a BM25 score of exactly 0 means "no
      match" and adds nothing. The normalised columns are the min-max values, for display.
    - "dbsf": the weighted sum of `dbsf_normalize` values.
    - "union": every chunk found by either retriever, once (the group is already one entry
      per chunk: deduplicated by chunk), scored by the better of its min-max values
      (CombMAX), so a chunk one retriever ranks first is never pushed down by the other. A
      retriever with weight 0 takes no part; a BM25 score of 0 (no match) contributes nothing.
    """
    _check_args(method, dense_weight, rrf_k)
    d = _as_scores(dense, "dense")
    b = _as_scores(bm25, "bm25")
    if d.shape != b.shape:
        raise ValueError(
            f"dense and bm25 must have one score per chunk, but got {d.size} and {b.size}"
        )
    w_dense, w_bm25 = float(dense_weight), 1.0 - float(dense_weight)
    if method == "dbsf":
        d_norm, b_norm = dbsf_normalize(d), dbsf_normalize(b)
    else:
        d_norm, b_norm = minmax(d), minmax(b)
    if method == "rrf":
        fused = w_dense / (rrf_k + rank_positions(d)) + np.where(
            b != 0.0, w_bm25 / (rrf_k + rank_positions(b)), 0.0
        )
    elif method == "union":
        fused = np.maximum(
            d_norm if w_dense > 0 else 0.0, np.where(b != 0.0, b_norm, 0.0) if w_bm25 > 0 else 0.0
        )
    else:
        fused = w_dense * d_norm + w_bm25 * b_norm
    fused = np.asarray(fused, dtype=np.float64).reshape(d.shape)
    if 0 < d.size <= SMALL_LEAF:
        forced = ((d_norm == 1.0) & (w_dense > 0)) | ((b_norm == 1.0) & (w_bm25 > 0))
    else:
        forced = np.zeros(d.shape, dtype=bool)
    return FusionResult(_readonly(d_norm), _readonly(b_norm), _readonly(fused), _readonly(forced))
