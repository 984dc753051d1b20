"""Bootstrap intervals: reproducible, centred on the mean, paired over the same questions."""

import pytest

from treerag_core.evaluation.intervals import Interval, mean_interval, paired_difference_interval


def test_mean_interval_brackets_the_mean_and_is_reproducible():
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.25]
    first = mean_interval(values)
    assert first == mean_interval(values)
    assert first.mean == pytest.approx(0.59375)
    assert first.low < first.mean < first.high
    assert first.low >= 0.0 and first.high <= 1.0


def test_constant_values_have_no_width():
    assert mean_interval([0.5] * 10) == Interval(0.5, 0.5, 0.5)


def test_paired_difference_of_a_uniform_gain_excludes_zero():
    base = [0.1, 0.4, 0.2, 0.9, 0.3, 0.5]
    better = [v + 0.1 for v in base]
    gain = paired_difference_interval(better, base)
    assert gain.mean == pytest.approx(0.1)
    assert gain.excludes_zero
    assert gain.text() == "+0.100 [+0.100, +0.100]"


def test_paired_difference_of_mixed_outcomes_is_noise():
    a = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    b = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    assert not paired_difference_interval(a, b).excludes_zero


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mean_interval([]), "at least one value"),
        (lambda: mean_interval([float("nan")]), "finite"),
        (lambda: mean_interval([1.0], level=1.5), "level must be"),
        (lambda: paired_difference_interval([1.0], [1.0, 2.0]), "same questions"),
    ],
)
def test_bad_input_is_refused_with_the_reason(call, message):
    with pytest.raises(ValueError, match=message):
        call()
