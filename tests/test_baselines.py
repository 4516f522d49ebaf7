"""The yardsticks: seasonal naive checked by hand on a panel, the statistical models on series whose forecast is
known, fit on every series of a panel at once as on each alone, and the published figures on Air Passengers; the
seasons of each frequency, and the baselines of data with two (MSTL, seasonal naive at a week of hourly data)."""

import dataclasses
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from forecaster.baselines import (
    FIT_POINTS,
    Baseline,
    BaselineForecast,
    BaselineUnavailable,
    baseline_names,
    baseline_of,
    fit_baseline,
    forecast,
    panel_baselines,
    seasonal_naive,
)
from forecaster.data.panel import Panel
from forecaster.data.read import as_panel, load_panel
from forecaster.data.seasons import season_length, season_lengths, usable_seasons
from forecaster.metrics import mape

ARIMA_COVARIATES = "AutoARIMA with covariates"
STATISTICAL = ("AutoETS", "Theta", "AutoCES")
BASELINES = ("seasonal naive", *STATISTICAL)
"""The baselines of every panel."""
PATTERN = 100 + 20 * np.sin(2 * np.pi * np.arange(12) / 12)


def monthly(values, start="2020-01-01") -> Panel:
    index = pd.date_range(start, periods=len(values), freq="MS")
    return as_panel(pd.Series(np.asarray(values, dtype=float), index=index))


def panel(*series: np.ndarray, season: int = 12) -> Panel:
    frame = pd.concat(
        [pd.DataFrame({"unique_id": f"s{i}", "ds": np.arange(1, len(v) + 1), "y": v}) for i, v in enumerate(series)]
    )
    return load_panel(frame, season_length=season)


def test_seasonal_naive_repeats_the_last_season_by_hand():
    history = monthly(range(1, 25))  # two years: the last one is 13..24
    assert seasonal_naive(history, 3)[:, 0].tolist() == [13.0, 14.0, 15.0]
    assert seasonal_naive(history, 14)[:, 0].tolist() == [*range(13, 25), 13, 14]


def test_seasonal_naive_is_naive_without_a_season():
    yearly = as_panel(pd.Series([5.0, 7.0, 9.0], index=pd.date_range("2000-01-01", periods=3, freq="YS")))
    assert seasonal_naive(yearly, 2)[:, 0].tolist() == [9.0, 9.0]
    assert seasonal_naive(monthly([1.0, 2.0, 3.0]), 2)[:, 0].tolist() == [3.0, 3.0]  # shorter than a season


def test_seasonal_naive_of_a_panel_is_each_series_own():
    # Season 3: s0 ends with 7, 8, 9; s1 (two points, shorter than a season) ends with 50; s2 with 4, 5, 6.
    history = panel(np.arange(1.0, 10.0), np.array([40.0, 50.0]), np.arange(1.0, 7.0), season=3)
    expected = [[7.0, 50.0, 4.0], [8.0, 50.0, 5.0], [9.0, 50.0, 6.0], [7.0, 50.0, 4.0]]
    assert seasonal_naive(history, 4).tolist() == expected


@pytest.mark.parametrize("method", ["AutoETS", "Theta", "AutoCES"])
def test_statistical_models_continue_a_pure_seasonal_pattern(method):
    pytest.importorskip("statsforecast")
    noise = np.random.default_rng(0).normal(0, 0.5, 72)  # AutoCES cannot fit a series without any
    history = monthly(np.tile(PATTERN, 6) + noise)
    assert mape(PATTERN, forecast(method, history, 12).values[:, 0]) < 1.5


def test_a_panel_is_fit_series_by_series_in_parallel_as_each_alone():
    pytest.importorskip("statsforecast")
    generator = np.random.default_rng(1)
    series = [np.tile(PATTERN * scale, 5) + generator.normal(0, 1, 60) for scale in (1.0, 3.0, 10.0)]
    together = forecast("Theta", panel(*series), 6, n_jobs=2).values
    for index, values in enumerate(series):
        alone = forecast("Theta", panel(values), 6).values[:, 0]
        np.testing.assert_allclose(together[:, index], alone, rtol=1e-9)


def test_a_series_a_statistical_model_cannot_fit_says_so():
    pytest.importorskip("statsforecast")
    noiseless = np.tile(PATTERN, 6)
    with pytest.raises(BaselineUnavailable, match="AutoCES could not fit this series"):
        forecast("AutoCES", monthly(noiseless), 12)
    # In a panel, that series alone is forecast by seasonal naive instead, and named.
    noisy = np.tile(PATTERN, 6) + np.random.default_rng(0).normal(0, 0.5, 72)
    result = forecast("AutoCES", panel(noisy, noiseless), 12)
    assert result.fell_back == ["s1"]
    np.testing.assert_allclose(result.values[:, 1], PATTERN)
    assert mape(PATTERN, result.values[:, 0]) < 1.5


def test_seasonal_naive_gives_the_published_figure_and_the_statistical_models_statsforecasts_own_forecast():
    """Seasonal naive's 15.75 % on Air Passengers (../shared/README.md) is ours to compute; the statistical models'
    figures are statsforecast's: what is ours is handing it each series with its season and reading its forecast
    back in the panel's order, which must give what statsforecast gives on the series alone."""
    train, val = load_panel("air_passengers").cut_after("1959-01-01")
    truth = val.values
    assert mape(truth, forecast("seasonal naive", train, len(truth)).values[:, 0]) == pytest.approx(15.75, abs=0.005)
    pytest.importorskip("statsforecast")
    from statsforecast import models

    y = train.values
    for name in ("AutoETS", "Theta", "AutoCES"):
        own = getattr(models, name)(season_length=12).forecast(y=y, h=len(truth))["mean"]
        np.testing.assert_allclose(forecast(name, train, len(truth)).values[:, 0], own, rtol=1e-12)


def test_an_unknown_baseline_names_the_known_ones():
    with pytest.raises(ValueError, match=", ".join(baseline_names())):
        forecast("prophet", monthly(range(24)), 3)


@pytest.mark.parametrize("seasontype", ["N", "S", "P", "F"])
def test_autoces_intervals_in_closed_form_are_statsforecasts_simulated_ones_less_their_noise(seasontype):
    """AutoCES's intervals come from the normal distribution its simulation samples (forecaster.baselines._ces_bounds):
    for each of its seasonal types, fit and run on over newer points, they are as wide as statsforecast's own within
    its 5,000 paths' sampling error (here 5 % at any step, 2.5 % on average; 0.6 % against 40,000 paths of our own),
    around the same forecast."""
    pytest.importorskip("statsforecast")
    from statsforecast.models import AutoCES

    from forecaster.baselines.statistical import _predicted

    generator = np.random.default_rng(3)
    values = np.tile(PATTERN, 8) + np.linspace(0, 30, 96) + generator.normal(0, 4.0, 96)
    model = AutoCES(season_length=12, model=seasontype).fit(y=values[:72])
    assert model.model_["seasontype"] == seasontype
    for found, simulated in (
        (_predicted(model, 12, (80.0, 95.0)), model.predict(h=12, level=[80, 95])),
        (_predicted(model, 12, (80.0, 95.0), values), model.forward(y=values, h=12, level=[80, 95])),
    ):
        np.testing.assert_allclose(found["mean"], simulated["mean"])
        for level in (80, 95):
            np.testing.assert_allclose(found[f"hi-{level}"] - found["mean"], found["mean"] - found[f"lo-{level}"])
            width = found[f"hi-{level}"] - found[f"lo-{level}"]
            ratio = width / (simulated[f"hi-{level}"] - simulated[f"lo-{level}"])
            assert np.abs(ratio - 1).max() <= 0.05 and abs(ratio.mean() - 1) <= 0.025, (level, ratio)


@pytest.mark.parametrize(
    "freq, seasons",
    [
        ("h", (24, 168)),
        ("30min", (48, 336)),
        ("D", (7, 365.25)),
        ("B", (5,)),
        ("W-SUN", (365.25 / 7,)),
        ("MS", (12,)),
        ("QS", (4,)),
        ("YS", ()),
    ],
)
def test_season_lengths_are_every_season_of_a_frequency_shortest_first(freq, seasons):
    found = season_lengths(freq)
    assert found == pytest.approx(seasons)
    assert all(isinstance(length, int) for length in found if float(length).is_integer())
    assert season_length(freq) == (round(found[0]) if found else 1)  # the models' season: the first


def test_usable_seasons_are_those_the_shortest_series_holds_whole_cycles_of():
    assert usable_seasons("h", 3 * 168) == (24, 168)
    assert usable_seasons("h", 2 * 168 - 1) == (24,)  # a week and 167 hours: two cycles of a day only
    assert usable_seasons("h", 168, cycles=1) == (24, 168)
    assert usable_seasons("D", 730) == (7, 365)  # 365.25 days rounded: MSTL and seasonal naive take whole ones
    assert usable_seasons("MS", 23) == ()
    assert usable_seasons(None, 30, season=12) == (12,)  # a plain time index: its given season alone


def hourly(series: int, hours: int, seed: int = 0) -> Panel:
    """Series with a daily cycle and quieter weekends, and a little noise."""
    generator = np.random.default_rng(seed)
    hour = np.arange(hours)
    frames = []
    for index in range(series):
        level = generator.uniform(50, 200)
        daily = 0.15 * np.sin(2 * np.pi * hour / 24 + generator.uniform(0, 2 * np.pi))
        weekend = np.where((hour // 24) % 7 >= 5, -0.2, 0.05)
        values = level * (1 + daily + weekend) + generator.normal(0, 0.02 * level, hours)
        dates = pd.date_range("2024-01-01", periods=hours, freq="h")
        frames.append(pd.DataFrame({"unique_id": f"s{index}", "ds": dates, "y": values}))
    return load_panel(pd.concat(frames))


def test_three_weeks_of_hourly_data_get_mstl_and_seasonal_naive_at_a_week():
    pytest.importorskip("statsforecast")
    history, future = hourly(3, 3 * 168 + 48).split_last(48)
    found = panel_baselines(history)
    assert found.names == ("seasonal naive", "seasonal naive (168)", *STATISTICAL, "MSTL")
    assert found.of("MSTL").seasons == (24, 168) and found.not_run == {}
    truth = future.values.reshape(3, 48).T
    weekly = forecast("seasonal naive (168)", history, 48)
    np.testing.assert_array_equal(weekly.values, history.values.reshape(3, -1).T[-168:-120])  # a week ago
    mstl = forecast("MSTL", history, 48, n_jobs=1, levels=(80,))
    lower, upper = mstl.bounds[80]
    assert (lower < mstl.values).all() and (mstl.values < upper).all()
    daily = forecast("seasonal naive", history, 48).values
    assert mape(truth, mstl.values) < 0.5 * mape(truth, daily), (mape(truth, mstl.values), mape(truth, daily))
    # As the sweep's tasks run it: fit on the history, run on over newer points without fitting again.
    fitted_forecast, fitted = found.of("MSTL").fit(history, 48, (80,))
    np.testing.assert_allclose(fitted_forecast.values, mstl.values, rtol=1e-9)
    grown = hourly(3, 3 * 168 + 48)
    onward = found.of("MSTL").forward(fitted, grown, 24)
    assert onward.fell_back == [] and np.isfinite(onward.values).all()
    naive_forecast, naive = fit_baseline("seasonal naive (168)", history, 48)
    np.testing.assert_array_equal(naive_forecast.values, weekly.values)
    later = grown.values.reshape(3, -1).T[-168:-144]
    np.testing.assert_array_equal(found.of("seasonal naive (168)").forward(naive, grown, 24).values, later)


def test_data_of_one_season_in_two_cycles_get_no_mstl_and_say_why():
    days = hourly(2, 5 * 24)  # five days: two cycles of a day, not one of a week
    found = panel_baselines(days)
    assert found.names == BASELINES
    assert "two cycles of its season of 24 points alone" in found.not_run["MSTL"]
    with pytest.raises(BaselineUnavailable, match="MSTL"):
        forecast("MSTL", days, 24)
    # Daily data shorter than two years: a year once (seasonal naive at 365 days), but two cycles of a week alone.
    dates = pd.date_range("2023-01-01", periods=500, freq="D")
    daily = as_panel(pd.Series(100 + np.sin(np.arange(500)), index=dates))
    found = panel_baselines(daily)
    assert found.names == ("seasonal naive", "seasonal naive (365)", *STATISTICAL)
    assert "MSTL" in found.not_run


def test_data_of_one_season_get_the_baselines_they_always_had():
    """The competition panels (a plain time index of season 12 or 4, or none) and monthly dates: nothing added,
    nothing said about MSTL, so their answers stay as they were."""
    plain = (panel(np.arange(1.0, 60.0), season=4), panel(np.arange(1.0, 9.0), season=1))
    for history in (monthly(range(1, 100)), *plain):
        found = panel_baselines(history)
        assert (found.names, found.not_run, found.notes) == (BASELINES, {}, {})
        assert found.fit_points == dict.fromkeys(STATISTICAL, FIT_POINTS)  # more than any of these series holds


@pytest.mark.parametrize("weeks, ran", [(2, ("seasonal naive (168)", "MSTL")), (0, ())])
def test_a_sweeps_baselines_on_hourly_data_are_those_its_shortest_history_holds(tmp_path, monkeypatch, weeks, ran):
    """As a sweep submits and gathers them (sweeps/answer/baselines.py): seasonal naive at a week and MSTL where the
    history before the test window holds their cycles, each fit and run on over the future like the others; where
    it does not, MSTL is not run and says why. Theta alone of the statistical models, to keep it fast."""
    pytest.importorskip("statsforecast")
    import forecaster.baselines
    from forecaster.baselines.naive import SeasonalNaive
    from forecaster.baselines.statistical import MSTL, Theta
    from sweeps.answer.baselines import gather_baselines, submit_baselines
    from sweeps.answer.tasks import Runner
    from sweeps.plan.sweep_plan import make_plan

    monkeypatch.setattr(forecaster.baselines, "BUILT_IN", (SeasonalNaive(), Theta(), MSTL()))
    path = tmp_path / "hourly.csv"
    hourly(2, weeks * 168 + 6 * 24).to_frame().to_csv(path, index=False)
    plan = make_plan("panel", data=str(path), horizon=24, storage_path=str(tmp_path / "sweeps"), levels=(80,))
    runner = Runner(plan.resources, on_ray=False)
    found = gather_baselines(plan, runner, submit_baselines(plan, runner, future_steps=24))
    assert list(found.forecasts["test"]) == ["seasonal naive", *ran[:1], "Theta", *ran[1:]]
    assert set(found.bounds) == set(found.future) == set(found.forecasts["test"])
    assert all(np.isfinite(found.future[name].values).all() for name in ran)
    assert ("MSTL" in found.unavailable) == (not ran)


@pytest.mark.slow  # statsforecast compiles AutoARIMA's code on its first fit in a process
def test_autoarima_given_the_promotions_ahead_forecasts_them_and_runs_on_with_newer_ones():
    """On a panel with a known-ahead covariate, AutoARIMA takes it as its regressor, over the history and over the
    points it forecasts: it foresees the promotion days that AutoETS cannot, and runs on over newer points with
    theirs, without fitting again."""
    pytest.importorskip("statsforecast")
    generator = np.random.default_rng(0)
    frames = []
    for store in range(3):
        promo = (generator.random(100) < 0.2).astype(float)
        y = (50 + 10 * store) * (1 + promo) + generator.standard_normal(100)
        frames.append(pd.DataFrame({"unique_id": f"s{store}", "ds": np.arange(1, 101), "y": y, "promo": promo}))
    frame = pd.concat(frames, ignore_index=True)
    whole = load_panel(frame, season_length=1, futr_exog=["promo"])  # no season: a quick ARIMA
    assert ARIMA_COVARIATES in panel_baselines(whole).names
    assert ARIMA_COVARIATES not in panel_baselines(load_panel(frame.drop(columns="promo"), season_length=1)).names
    history, test = whole.split_last(10)
    told, _ = fit_baseline(ARIMA_COVARIATES, history, 10, levels=(80,))
    untold = forecast("AutoETS", history, 10)
    truth = test.values.reshape(3, 10).T
    assert mape(truth, told.values) < 0.3 * mape(truth, untold.values)
    shorter, _ = whole.split_last(20)
    _, refit = fit_baseline(ARIMA_COVARIATES, shorter, 10)
    again = baseline_of(ARIMA_COVARIATES).forward(
        refit, history, 10
    )  # run on over 10 newer points and their promotions
    assert not again.fell_back and mape(truth, again.values) < 0.3 * mape(truth, untold.values)


def half_hourly(points: int, seed: int = 0) -> Panel:
    """One series of half-hourly demand: a daily profile, lower at weekends, a slow drift, noise."""
    generator = np.random.default_rng(seed)
    step = np.arange(points)
    day = 1 + 0.3 * np.sin(2 * np.pi * step / 48) * np.where((step // 48) % 7 >= 5, 0.5, 1.0)
    values = 1000 * day * (1 + 0.05 * np.sin(2 * np.pi * step / 4000)) + generator.normal(0, 10, points)
    dates = pd.date_range("2024-01-01", periods=points, freq="30min")
    return load_panel(pd.DataFrame({"unique_id": "demand", "ds": dates, "y": values}))


def test_a_long_series_baselines_fit_on_the_points_their_seasons_need_and_run_on_from_there():
    """12 weeks of half-hourly points (seasons 48 and 336): each statistical model fits the last FIT_POINTS, MSTL ten
    weeks (its longest season ten times), AutoETS the series less its day (it takes seasons up to 24), and a run on
    over newer points starts where its fit did: the forecast of a fit on those points alone."""
    pytest.importorskip("statsforecast")
    from statsforecast.models import Theta

    whole = half_hourly(12 * 336)
    history = whole.split_last(48)[0]
    found = panel_baselines(history)
    assert found.fit_points == {"AutoETS": FIT_POINTS, "Theta": FIT_POINTS, "AutoCES": FIT_POINTS, "MSTL": 3360}
    assert found.notes["MSTL"] == f"fit on each series' last 3,360 points (of up to {len(history.values):,})"
    assert found.notes["AutoETS"].startswith("the series less its season of 48 (STL)")

    theta, fitted = fit_baseline("Theta", history, 48)
    assert fitted.left_out.tolist() == [len(history.values) - FIT_POINTS]
    alone = Theta(season_length=48).fit(history.values[-FIT_POINTS:]).predict(48)["mean"]
    np.testing.assert_allclose(theta.values[:, 0], alone, rtol=1e-9)
    onward = baseline_of("Theta").forward(fitted, whole, 24)  # 48 newer points: run on from the fit's first point
    model = Theta(season_length=48).fit(history.values[-FIT_POINTS:])
    np.testing.assert_allclose(onward.values[:, 0], model.forward(whole.values[-FIT_POINTS - 48 :], h=24)["mean"])

    _, mstl = found.of("MSTL").fit(history, 48)
    assert mstl.left_out.tolist() == [len(history.values) - 3360]
    ets = forecast("AutoETS", history, 48).values[:, 0]
    last_day = history.values[-48:]
    assert np.corrcoef(ets, last_day)[0, 1] > 0.9  # its season added back: not the flat line of AutoETS at 48
    flat = forecast("Theta", history.last(40), 48, n_jobs=1)  # a series shorter than FIT_POINTS is fit whole
    np.testing.assert_allclose(flat.values[:, 0], Theta(season_length=48).fit(history.values[-40:]).predict(48)["mean"])


def test_a_sweeps_baseline_whose_fits_would_outlast_its_budget_fits_on_fewer_points_or_does_not_run(tmp_path):
    """AutoARIMA with covariates on a year of hourly points: at the 2,500 points its seasons need, its fits would take
    minutes a series, so the sweep fits it on as many as a minute allows; under a tight --time-limit, on fewer; and
    one whose least would still take too long is not run, the summary saying why with the estimate."""
    from sweeps.answer.baselines import SERIES_SECONDS, plan_baselines
    from sweeps.plan.sweep_plan import make_plan

    hours = 365 * 24
    dates = pd.date_range("2025-01-06", periods=hours + 48, freq="h")
    generator = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "unique_id": "demand",
            "ds": dates,
            "y": 100 + 10 * np.sin(2 * np.pi * np.arange(hours + 48) / 24) + generator.normal(0, 1, hours + 48),
            "workday": (dates.dayofweek < 5).astype(float),
        }
    )
    frame.iloc[:hours].to_csv(tmp_path / "hourly.csv", index=False)
    frame.iloc[hours:].drop(columns="y").to_csv(tmp_path / "future.csv", index=False)

    def planned(**options):
        plan = make_plan(
            "panel",
            data=str(tmp_path / "hourly.csv"),
            horizon=48,
            futr_exog=("workday",),
            futr_data=str(tmp_path / "future.csv"),
            storage_path=str(tmp_path / "sweeps"),
            **options,
        )
        return plan, plan_baselines(plan)

    plan, fitting = planned()
    assert fitting.fit_points["AutoETS"] == fitting.fit_points["MSTL"] == FIT_POINTS  # a minute's work or less
    points = fitting.fit_points[ARIMA_COVARIATES]
    assert 48 * 2 < points < FIT_POINTS
    assert fitting.of(ARIMA_COVARIATES).seconds_per_series(plan.panel, points, 3) <= SERIES_SECONDS
    assert fitting.notes[ARIMA_COVARIATES].startswith(f"fit on each series' last {points:,} points, not the 2,500")
    _, tight = planned(time_limit=300.0)  # 5 % of it: 15 s a series
    assert tight.fit_points[ARIMA_COVARIATES] < points
    _, tightest = planned(time_limit=60.0)
    assert ARIMA_COVARIATES not in tightest.names
    assert "too few for it" in tightest.not_run[ARIMA_COVARIATES]


@dataclasses.dataclass(frozen=True)
class Drift(Baseline):
    """A baseline of a test's own: each series' last value plus its mean step so far, per step ahead (a random walk
    with drift), its intervals from the steps' spread. It fits nothing, so it costs nothing."""

    name: str = "drift"

    fits = False

    def fit(self, history, steps, levels=(), points=None):
        starts, ends = history.offsets[:-1], history.offsets[1:] - 1
        steps_seen = np.diff(history.values)
        slope = (history.values[ends] - history.values[starts]) / np.maximum(history.lengths - 1, 1)
        ahead = np.arange(1, steps + 1)[:, None]
        values = history.values[ends][None, :] + slope[None, :] * ahead
        spread = np.array([steps_seen[start:end].std() for start, end in zip(starts, ends)])
        bounds = {}
        for level in levels:
            width = statistics.NormalDist().inv_cdf(0.5 + level / 200) * spread[None, :] * np.sqrt(ahead)
            bounds[level] = (values - width, values + width)
        return BaselineForecast(values, bounds=bounds), None


def straight_lines(length: int = 48) -> pd.DataFrame:
    """Five monthly series, each a straight line of its own slope: the drift forecasts every point right."""
    dates = pd.date_range("2018-01-01", periods=length, freq="MS")
    return pd.concat(
        pd.DataFrame(
            {"unique_id": f"line{number}", "ds": dates, "y": 100.0 * (number + 1) + (number + 2) * np.arange(length)}
        )
        for number in range(5)
    )


FIT_WITH_DRIFT = """
import json, sys
from forecaster.baselines import register
from sweeps import SweepForecaster
from tests.test_baselines import Drift, straight_lines

register(Drift())
forecaster = SweepForecaster(h=6, level=[80], smoke_test=True, storage_path=sys.argv[1], name="lines")
forecaster.fit(straight_lines())
board = forecaster.leaderboard().set_index("model").loc["drift"]
print(json.dumps({
    "kind": board["kind"], "weight": float(board["weight"]), "validation_smape": float(board["validation_smape"]),
    "test_smape": forecaster.run.scores.baselines["drift"]["test_smape"],
    "answer": forecaster.predict()["answer"].tolist(),
}))
"""
"""A user's script: the toy registered with one line, then a sweep from Python (in a process of its own: a sweep's Ray
in this one would outlive it for the tests after)."""


@pytest.mark.slow
def test_a_baseline_of_ones_own_registered_in_one_line_runs_in_the_sweep_and_forecasts_from_its_saved_model(
    tmp_path, capsys
):
    """The toy baseline above, registered with one line, is run by the sweep's tasks beside the built-in ones: the
    summary scores it (as sweeps.report prints it again), the ensemble weighs it (it is right on every validation
    point), the leaderboard lists it, future.parquet holds its forecast, and the saved model forecasts with it, once
    it is registered in the process that loads the model."""
    import json
    import subprocess
    import sys

    from forecaster.answer.model import AnswerModel
    from forecaster.baselines import register, unregister
    from sweeps.report import main as report
    from tests.test_sweep_cli import ENV

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", FIT_WITH_DRIFT, str(tmp_path)], cwd=root, env=ENV, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    fitted = json.loads(done.stdout.strip().splitlines()[-1])
    assert fitted["kind"] == "statistical" and fitted["weight"] >= 0.8
    assert fitted["validation_smape"] == pytest.approx(0.0, abs=1e-9)
    assert fitted["test_smape"] == pytest.approx(0.0, abs=1e-9)
    folder, data = tmp_path / "lines", straight_lines()
    register(Drift())
    try:
        assert report([str(folder)]) == 0  # the summary `python -m sweeps.run` ends with, from the sweep's folder
        printed = capsys.readouterr().out
        assert any(line.lstrip().startswith("drift") for line in printed.splitlines()), printed
        future = pd.read_parquet(folder / "future.parquet")
        ends = data.groupby("unique_id")["y"].agg(["last", lambda y: y.iloc[1] - y.iloc[0]])
        expected = ends["last"].to_numpy()[:, None] + ends.iloc[:, 1].to_numpy()[:, None] * np.arange(1, 7)
        np.testing.assert_allclose(future["drift"].to_numpy(), expected.ravel(), rtol=1e-9)
        model = AnswerModel.load(folder)
        assert "drift" in [member.name for member in model.statistical]
        np.testing.assert_allclose(fitted["answer"], future["answer"], rtol=1e-9)
        np.testing.assert_allclose(model.forecast(data)["answer"], future["answer"], rtol=1e-9)
    finally:
        unregister("drift")
    with pytest.raises(ValueError, match=r"unknown baseline 'drift'.*register"):
        AnswerModel.load(folder).forecast(data)
