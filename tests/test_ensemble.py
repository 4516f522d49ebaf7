"""Greedy selection with replacement (forecaster.ensemble), worked by hand."""

import numpy as np
import pytest

from forecaster.ensemble import greedy_weights, series_errors


def test_series_errors_pool_each_series_points_as_the_sweep_scores_them():
    actual = np.array([10.0, 20.0, 5.0])
    forecasts = np.array([[11.0, 18.0, 5.0]])
    offsets = np.array([0, 2, 3])
    mape = series_errors(actual, forecasts, offsets, "mape")
    np.testing.assert_allclose(mape, [[(10 + 10) / 2, 0.0]])
    smape = series_errors(actual, forecasts, offsets, "smape")
    np.testing.assert_allclose(smape, [[(200 / 21 + 400 / 38) / 2, 0.0]])
    mase = series_errors(actual, forecasts, offsets, "mase", scales=np.array([2.0, 1.0]))
    np.testing.assert_allclose(mase, [[(0.5 + 1.0) / 2, 0.0]])


def test_greedy_selection_worked_by_hand():
    """One series, truth 10 at two points. A is 2 too high at both, B 2 too low at both, C 3 too high at the first and
    right at the second. MAE-like MASE (scale 1): C alone 1.5 is the best member, the first step takes it; then
    C+B gives |((13+8)/2 - 10)| = 0.5 and |(10+8)/2 - 10| = 1, mean 0.75, the best second step; the third adds A:
    (13+8+12)/3 = 11 and (10+8+12)/3 = 10, mean 0.5; the fourth, C again: (46/4, 40/4) -> 1.5 and 0, mean 0.75, or B:
    (41/4, 38/4) -> 0.25, 0.5, mean 0.375, which it takes. Weights are the shares of the steps, of the best one."""
    actual = np.array([10.0, 10.0])
    a, b, c = np.array([12.0, 12.0]), np.array([8.0, 8.0]), np.array([13.0, 10.0])
    offsets = np.array([0, 2])
    scales = np.array([1.0])
    one = greedy_weights(actual, np.stack([a, b, c]), offsets, "mase", scales, steps=1)
    np.testing.assert_array_equal(one, [0.0, 0.0, 1.0])
    four = greedy_weights(actual, np.stack([a, b, c]), offsets, "mase", scales, steps=4)
    np.testing.assert_allclose(four, [0.25, 0.5, 0.25])
    mixed = four @ np.stack([a, b, c])
    assert series_errors(actual, mixed[None, :], offsets, "mase", scales)[0, 0] == pytest.approx(0.375)


def test_the_kept_ensemble_is_never_worse_than_its_best_member_where_it_was_chosen():
    """Where every later step would add harm (one candidate exact, the others far off), the weights stay on it."""
    actual = np.linspace(1.0, 2.0, 12)
    exact, high, low = actual, actual + 5, actual * 3
    offsets = np.array([0, 6, 12])
    weights = greedy_weights(actual, np.stack([high, exact, low]), offsets, "smape")
    np.testing.assert_array_equal(weights, [0.0, 1.0, 0.0])
    generator = np.random.default_rng(0)
    candidates = actual[None, :] + generator.normal(0, 0.3, (6, 12))
    weights = greedy_weights(actual, candidates, offsets, "smape")
    assert weights.sum() == pytest.approx(1.0) and (weights >= 0).all()
    ensemble = series_errors(actual, (weights @ candidates)[None, :], offsets, "smape").mean()
    assert ensemble <= series_errors(actual, candidates, offsets, "smape").mean(axis=1).min()
