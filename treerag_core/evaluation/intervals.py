"""Bootstrap intervals: how wide the uncertainty of a mean, or of a paired difference, is.

Percentile bootstrap over questions, with a fixed seed so a report is reproducible. The
paired form resamples the same questions for both sides, which is what makes a difference
of one strategy from another on the same questions meaningful.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap interval."""

    mean: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0.0 or self.high < 0.0

    def text(self, digits: int = 3) -> str:
        return f"{self.mean:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"


def _check(values: np.ndarray, resamples: int, level: float) -> None:
    if values.size == 0:
        raise ValueError("a bootstrap interval needs at least one value")
    if not np.all(np.isfinite(values)):
        raise ValueError("a bootstrap interval needs finite values")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")


def mean_interval(
    values: Sequence[float], *, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = 0
) -> Interval:
    """The mean of per-question values with its percentile bootstrap interval."""
    array = np.asarray(values, dtype=np.float64)
    _check(array, resamples, level)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, array.size, size=(resamples, array.size))
    means = array[picks].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(float(array.mean()), float(low), float(high))


def paired_difference_interval(
    values: Sequence[float],
    baseline: Sequence[float],
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> Interval:
    """Mean of `values - baseline` over the same questions, with a paired bootstrap interval."""
    a = np.asarray(values, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired values need the same questions: {a.size} vs {b.size} values")
    return mean_interval(a - b, resamples=resamples, level=level, seed=seed)
