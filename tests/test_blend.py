"""The blend's weight: the lowest-scoring tenth on the window it is given, as a hand computation finds it."""

import numpy as np
import pytest

from forecaster.blend import WEIGHTS, blend_weight


def test_the_weight_is_the_tenth_whose_blend_scores_lowest_by_the_metric_asked_for():
    actual = np.array([[100.0, 10.0], [100.0, 10.0]])
    answer, statistical = actual * 1.1, actual * 0.9  # every point: the mean of the two is the truth
    weight, metric, scored = blend_weight(actual, answer, statistical, np.ones(2), "smape")
    assert (weight, metric) == (0.5, "smape") and scored[0.5] == pytest.approx(0.0, abs=1e-12)
    assert scored[1.0] == pytest.approx(200 * 0.1 / 2.1) and scored[0.0] == pytest.approx(200 * 0.1 / 1.9)
    assert list(scored) == list(WEIGHTS)
    weight, metric, scored = blend_weight(actual, answer, actual * 1.5, np.array([2.0, 4.0]), "mase")
    assert (weight, metric) == (1.0, "mase")  # both too high: the answer by 10 %, the other by 50 %
    assert scored[1.0] == pytest.approx(np.mean([10 / 2, 1 / 4]))


def test_a_missing_point_is_left_out_a_tie_goes_to_the_lower_weight_and_smape_stands_in_for_an_undefined_mape():
    actual = np.array([[100.0, 0.0], [np.nan, 20.0]])  # the first series has one point, the second a zero
    answer = np.array([[100.0, 1.0], [1e9, 20.0]])
    weight, metric, _ = blend_weight(actual, answer, answer.copy(), np.ones(2), "mape")
    assert (weight, metric) == (0.0, "smape")  # every weight ties; MAPE is undefined on the zero
    weight, _, scored = blend_weight(actual, answer, np.array([[50.0, 1.0], [1.0, 10.0]]), np.ones(2), "smape")
    assert weight == 1.0 and np.isfinite(list(scored.values())).all()  # the NaN point's 1e9 never counts
