"""Prediction intervals and forecast distributions: levels and quantiles checked, quantiles read from intervals and
WQL by hand and as utilsforecast computes it, conformal quantiles and bounds as a hand computation gives them, coverage,
width and MSIS as written out here and as utilsforecast computes them, the baselines' own intervals, and the nets'
error on the last horizon they trained on."""

import math

import numpy as np
import pandas as pd
import pytest

from forecaster.answer.intervals import (
    bands,
    check_levels,
    check_quantiles,
    conformal_quantiles,
    fitted_error,
    interval_scales,
    interval_scores,
    member_spread,
    quantile_levels,
    quantiles_of,
    spread_floor,
    spread_units,
)
from forecaster.baselines import forecast as baseline_forecast
from forecaster.baselines import seasonal_naive
from forecaster.config import ForecasterConfig
from forecaster.data.panel import Panel
from forecaster.data.read import load_panel
from forecaster.features.transforms import TargetTransform
from forecaster.metrics import WQL_QUANTILES, series_weighted_quantile_loss, weighted_quantile_loss
from forecaster.training.net import RNNNet
from tests.test_panel import monthly_panel_frame


@pytest.mark.parametrize("level", [0, 100, -5, 120, "95", True])
def test_a_level_outside_0_to_100_is_refused(level):
    with pytest.raises(ValueError, match="must be a percentage strictly between 0 and 100"):
        check_levels([80, level])


def test_levels_are_sorted_once_each():
    assert check_levels([95, 80, 95.0, 50]) == (50.0, 80.0, 95.0)


@pytest.mark.parametrize("quantile", [0, 1, -0.1, 1.5, "0.5", True])
def test_a_quantile_outside_0_to_1_is_refused(quantile):
    with pytest.raises(ValueError, match="must be strictly between 0 and 1"):
        check_quantiles([0.1, quantile])


def test_quantiles_are_sorted_once_each_and_bounded_by_central_intervals():
    assert check_quantiles([0.9, 0.1, 0.5, 0.9]) == (0.1, 0.5, 0.9)
    assert quantile_levels(WQL_QUANTILES) == (20.0, 40.0, 60.0, 80.0)
    assert quantile_levels([0.025, 0.5, 0.975]) == (95.0,)


def test_quantiles_are_read_from_the_intervals_and_never_cross():
    point = np.array([10.0, 20.0])
    bounds = {
        80.0: (np.array([6.0, 12.0]), np.array([14.0, 28.0])),
        20.0: (np.array([9.0, 19.0]), np.array([11.0, 19.5])),  # its upper bound below the point at the 2nd
    }
    found = quantiles_of(point, bounds, (0.1, 0.4, 0.5, 0.6, 0.9))
    assert found is not None and list(found) == [0.1, 0.4, 0.5, 0.6, 0.9]
    assert found[0.1].tolist() == [6.0, 12.0] and found[0.9].tolist() == [14.0, 28.0]
    assert found[0.4].tolist() == [9.0, 19.0] and found[0.5].tolist() == [10.0, 19.5]  # sorted at the 2nd point
    assert found[0.6].tolist() == [11.0, 20.0]
    assert quantiles_of(point, bounds, (0.05, 0.5)) is None  # no 90 % interval to read 0.05 from


def test_weighted_quantile_loss_by_hand_and_as_utilsforecast_computes_it():
    from utilsforecast.losses import scaled_crps

    actual = np.array([10.0, 20.0, 4.0, np.nan])  # a NaN where a shorter series has no point
    forecasts = {0.1: np.array([8.0, 22.0, 4.0, 1.0]), 0.9: np.array([12.0, 25.0, 3.0, 1.0])}
    # 2 * pinball: q = 0.1: 2*0.1*2, 2*0.9*2, 0 = 0.4 + 3.6 = 4.0; q = 0.9: 2*0.1*2, 2*0.1*5, 2*0.9*1 = 0.4+1+1.8 = 3.2
    assert weighted_quantile_loss(actual, forecasts) == pytest.approx((4.0 / 34 + 3.2 / 34) / 2)
    assert math.isnan(weighted_quantile_loss(np.zeros(3), {0.5: np.ones(3)}))
    offsets = np.array([0, 2, 3])
    per_series = series_weighted_quantile_loss(actual[:3], {q: f[:3] for q, f in forecasts.items()}, offsets)
    frame = pd.DataFrame(
        {
            "unique_id": ["a", "a", "b"],
            "y": actual[:3],
            **{f"m_ql{q:g}": forecast[:3] for q, forecast in forecasts.items()},
        }
    )
    theirs = scaled_crps(frame, {"m": ["m_ql0.1", "m_ql0.9"]}, np.array([0.1, 0.9])).set_index("unique_id")["m"]
    assert per_series.tolist() == pytest.approx(theirs.tolist())
    assert per_series.tolist() == pytest.approx([(4.0 / 30 + 1.4 / 30) / 2, (0 + 1.8 / 4) / 2])


def test_conformal_quantiles_per_step_and_pooled_where_few_series_calibrate():
    scores = np.vstack([np.arange(1.0, 21.0), np.arange(1.0, 21.0) * 2])  # 2 steps, 20 series
    found = conformal_quantiles(scores, [80, 95])
    # ceil(21 * 0.8) = 17th and ceil(21 * 0.95) = 20th smallest of 20
    assert found[80].tolist() == [17.0, 34.0] and found[95].tolist() == [20.0, 40.0]
    few = conformal_quantiles(scores[:, :10], [80])  # 10 series: every step's 20 errors pool
    assert few[80].tolist() == [14.0, 14.0]  # 1..10 with 2, 4, ..., 20: the 17th smallest of the 20 is 14
    assert math.isinf(conformal_quantiles(np.ones((1, 3)), [95])[95][0])  # 3 errors cannot bound 95 %


def test_a_series_interval_scale_is_how_hard_it_is_by_its_history_its_last_horizon_and_the_nets_error():
    calm_then_wild = [10.0, 11.0] * 6 + [10.0, 14.0, 10.0, 16.0, 10.0, 12.0, 10.0, 18.0]  # season 2
    flat_lately = [1.0, 3.0, 2.0, 5.0] + [4.0] * 16
    short = [5.0, 7.0]  # a season long: no seasonal difference at all
    train = Panel(
        ids=np.array(["wild", "flat", "short"], dtype=object),
        offsets=np.array([0, 20, 40, 42]),
        times=np.concatenate([np.arange(20), np.arange(20), np.arange(2)]),
        values=np.array(calm_then_wild + flat_lately + short),
        freq=None,
        season=2,
        origins=np.zeros(3, dtype=np.int64),
    )
    scales = interval_scales(train, 4, np.array([2.0, 0.0, np.nan]))
    # "wild": 18 differences at lag 2 over the whole part, 3 + 2 + 4 + 6 of them not 0; its last 4 (10, 16, 10, 12,
    # 10, 18): 0, 4, 0, 6; the nets missed its last horizon by 2 on average
    assert scales[0] == pytest.approx((15 / 18 * 10 / 4 * 2.0) ** (1 / 3))
    # "flat": no move over its last horizon and a perfect fit of it: its whole part's scale stands in
    assert scales[1] == pytest.approx((1 + 2 + 2 + 1) / 18)
    assert scales[2] == pytest.approx(2.0)  # no longer than a season: lag 1's error for all three


def test_bands_scale_with_each_series_and_keep_a_floor():
    forecast = np.array([[10.0, 100.0], [12.0, 110.0]])
    found = bands(forecast, np.array([1.0, 10.0]), {80: np.array([2.0, 3.0])}, floor=np.array([9.0, -np.inf]))
    lower, upper = found[80]
    assert lower.tolist() == [[9.0, 80.0], [9.0, 80.0]] and upper.tolist() == [[12.0, 120.0], [15.0, 140.0]]


def test_each_point_is_as_wide_as_its_unit_the_members_spread_there_plus_a_floor():
    members = np.array([[[10.0, 100.0], [12.0, 110.0]], [[12.0, 100.0], [12.0, np.nan]]])  # 2 members, 2 steps
    spread = member_spread(members, np.array([1.0, 10.0]))
    np.testing.assert_array_equal(spread, [[1.0, 0.0], [0.0, np.nan]])  # one member alone at a point: unknown
    assert spread_floor(spread) == 0.0  # the median spread is 0: every unit 1
    assert spread_units(spread, 0.0).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert spread_floor(np.array([[1.0, 3.0], [0.5, np.nan]])) == 2.0  # twice the median of 0.5, 1 and 3
    units = spread_units(spread, 2.0)
    assert units.tolist() == [[3.0, 2.0], [2.0, 3.0]]  # an unknown spread taken as the median, 1
    lower, upper = bands(members.mean(0), np.array([1.0, 10.0]), {80: np.array([1.0, 1.0])}, units=units)[80]
    forecast = members.mean(0)  # half-width: the step's 1, times the series' scale, times the point's unit
    assert (upper - forecast)[0].tolist() == (forecast - lower)[0].tolist() == [3.0, 20.0]


def test_coverage_width_and_msis_by_hand_and_as_utilsforecast_computes_them():
    from utilsforecast.losses import coverage, winkler_score

    actual = np.array([[10.0, 5.0], [14.0, 7.0], [11.0, 9.0]])  # 3 steps, 2 series
    lower = np.array([[9.0, 4.0], [9.0, 8.0], [9.0, 4.0]])
    upper = np.array([[12.0, 6.0], [12.0, 10.0], [12.0, 6.0]])
    scale = np.array([2.0, 0.5])
    found = interval_scores(actual, lower, upper, scale, 95)
    # series 0: 14 is 2 above; series 1: 7 is 1 below, 9 is 3 above. Widths 3, 3, 3 and 2, 2, 2.
    assert found["coverage"].tolist() == pytest.approx([2 / 3, 1 / 3])
    assert found["width"].tolist() == pytest.approx([3 / 2, 2 / 0.5])
    assert found["msis"].tolist() == pytest.approx([(9 + 40 * 2) / 3 / 2, (6 + 40 * (1 + 3)) / 3 / 0.5])
    frame = pd.DataFrame(
        {
            "unique_id": np.repeat(["a", "b"], 3),
            "y": actual.T.reshape(-1),
            "m-lo-95": lower.T.reshape(-1),
            "m-hi-95": upper.T.reshape(-1),
        }
    )
    theirs = coverage(frame, ["m"], 95).set_index("unique_id")["m"]
    assert theirs.tolist() == pytest.approx(found["coverage"].tolist())
    winkler = winkler_score(frame, ["m"], 95).set_index("unique_id")["m"]
    assert (winkler / scale).tolist() == pytest.approx(found["msis"].tolist())


def test_the_baselines_give_ordered_intervals_around_their_forecasts():
    panel = load_panel(monthly_panel_frame(lengths=(40, 52, 46)))
    for name in ("seasonal naive", "AutoETS"):
        result = baseline_forecast(name, panel, 6, levels=(80, 95))
        (lo80, hi80), (lo95, hi95) = result.bounds[80], result.bounds[95]
        assert (lo95 <= lo80).all() and (lo80 <= result.values).all() and (result.values <= hi80).all()
        assert (hi80 <= hi95).all() and (lo95 < hi95).all()


def test_seasonal_naive_intervals_widen_each_season_by_its_residuals():
    values = np.array([1.0, 2.0, 3.0, 2.0, 3.0, 4.0])  # season 2: differences 2, 0, 0, 2 (rms sqrt(2))
    history = Panel(
        ids=np.array(["a"], dtype=object),
        offsets=np.array([0, 6]),
        times=np.arange(6),
        values=values,
        freq=None,
        season=2,
        origins=np.zeros(1, dtype=np.int64),
    )
    lower, upper = baseline_forecast("seasonal naive", history, 4, levels=(95,)).bounds[95]
    z = 1.959963984540054
    expected = np.sqrt(2.0) * z * np.sqrt([1, 1, 2, 2])
    np.testing.assert_allclose(upper[:, 0] - seasonal_naive(history, 4)[:, 0], expected)
    np.testing.assert_allclose(seasonal_naive(history, 4)[:, 0] - lower[:, 0], expected)


def test_the_nets_error_on_their_last_horizon_is_their_forecast_of_it_from_before_it():
    """The error is the net's forecast of each series' last 6 points from the points before them, against them; a
    series whose points before them are fewer than the net reads is NaN (its MASE scale stands in)."""
    clean = load_panel(monthly_panel_frame(lengths=(48, 60, 40)))
    config = ForecasterConfig(hidden_dim=8, input_chunk_length=12, target_transform="log", window_norm="subtract")
    transform = TargetTransform.fit(config, clean)
    net = RNNNet(config, transform.scaler.minimum, transform.scaler.scale, clean.season, series_ids=clean.ids)
    found = fitted_error(net, clean, 6)
    history, last = clean.split_at(clean.lengths - 6)
    forecast = net.forecast_part(history, last).reshape(3, 6)
    by_hand = np.abs(last.values.reshape(3, 6) - forecast).mean(axis=1)
    np.testing.assert_allclose(found, by_hand)
    short = clean.split_at(np.array([48, 60, 17]))[0]  # s2 keeps 11 points before its last 6: the net reads 12
    partly = fitted_error(net, short, 6)
    assert np.isnan(partly[2]) and np.allclose(partly[:2], by_hand[:2])


def test_conformal_intervals_cover_a_generated_panel_at_their_levels_and_lower_its_wql():
    """300 series of noise around levels from 10 to 1,000, forecast by their true level: calibrated on a validation
    horizon, the bands hold 80 % and 95 % of the next horizon's points within 3 points, and the distribution read
    from them scores a lower WQL than the point forecast alone (a distribution of one value)."""
    rng = np.random.default_rng(0)
    series, history_length, horizon = 300, 48, 6
    levels = np.exp(rng.uniform(np.log(10), np.log(1000), series))
    noise = levels * (1 + 0.1 * rng.standard_normal((history_length + 2 * horizon, series)))
    history = Panel(
        ids=np.array([f"s{k}" for k in range(series)], dtype=object),
        offsets=np.arange(series + 1) * history_length,
        times=np.tile(np.arange(history_length), series),
        values=noise[:history_length].T.reshape(-1),
        freq=None,
        season=12,
        origins=np.zeros(series, dtype=np.int64),
    )
    validation, test = noise[history_length : history_length + horizon], noise[history_length + horizon :]
    forecast = np.broadcast_to(levels, (horizon, series))
    scale = interval_scales(history, horizon, np.full(series, np.nan))
    quantiles = conformal_quantiles(np.abs(validation - forecast) / scale, [20, 40, 60, 80, 95])
    found = bands(forecast, scale, quantiles, floor=np.full(series, -np.inf))
    for level in (80, 95):
        lower, upper = found[level]
        assert np.mean((test >= lower) & (test <= upper)) == pytest.approx(level / 100, abs=0.03)
    distribution = quantiles_of(forecast, found, WQL_QUANTILES)
    assert distribution is not None
    point_only = {q: forecast for q in WQL_QUANTILES}
    assert weighted_quantile_loss(test, distribution) < 0.8 * weighted_quantile_loss(test, point_only)


def test_units_from_the_members_spread_widen_the_points_they_disagree_on_and_keep_the_coverage():
    """300 series whose noise at each point is anywhere from 2 % to 30 % of their level, and five members whose
    forecasts scatter around the level as much as the truth does: divided by each point's unit, the validation
    horizon's errors calibrate bands that hold 80 % and 95 % of the next horizon's points within 3 points, and score a
    lower WQL than bands as wide at every point of a step and series."""
    rng = np.random.default_rng(1)
    series, history_length, horizon, count = 300, 48, 6, 5
    levels = np.exp(rng.uniform(np.log(10), np.log(1000), series))
    history = Panel(
        ids=np.array([f"s{k}" for k in range(series)], dtype=object),
        offsets=np.arange(series + 1) * history_length,
        times=np.tile(np.arange(history_length), series),
        values=(levels * (1 + 0.1 * rng.standard_normal((history_length, series)))).T.reshape(-1),
        freq=None,
        season=12,
        origins=np.zeros(series, dtype=np.int64),
    )
    scale = interval_scales(history, horizon, np.full(series, np.nan))

    def part() -> tuple[np.ndarray, np.ndarray]:
        noise = levels * rng.uniform(0.02, 0.3, (horizon, series))
        members = levels + noise * rng.standard_normal((count, horizon, series))
        return levels + noise * rng.standard_normal((horizon, series)), members

    (validation, calibrating), (test, bounded) = part(), part()
    spread = member_spread(calibrating, scale)
    floor = spread_floor(spread)
    errors = np.abs(validation - calibrating.mean(0)) / scale
    forecast = bounded.mean(0)
    units = spread_units(member_spread(bounded, scale), floor)
    by_point = bands(
        forecast, scale, conformal_quantiles(errors / spread_units(spread, floor), [20, 40, 60, 80, 95]), units=units
    )
    alike = bands(forecast, scale, conformal_quantiles(errors, [20, 40, 60, 80, 95]))
    for level in (80, 95):
        lower, upper = by_point[level]
        assert np.mean((test >= lower) & (test <= upper)) == pytest.approx(level / 100, abs=0.03)
    wql = {
        name: weighted_quantile_loss(test, quantiles_of(forecast, found, WQL_QUANTILES))
        for name, found in (("point", by_point), ("alike", alike))
    }
    assert wql["point"] < 0.985 * wql["alike"]  # 0.97 here; the same units shuffled across points: 1.01
