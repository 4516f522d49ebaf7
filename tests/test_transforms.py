"""What the net sees instead of the series, and the way back: every transform inverts exactly, the windows and the
forecasts' inputs hold what they say, and the options work in a real fit and in a checkpoint."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch

from forecaster.config import TARGET_TRANSFORMS, WINDOW_NORMS, ConfigError, ForecasterConfig
from forecaster.data.datasets import AIR_PASSENGERS_SPLIT_AFTER
from forecaster.data.read import SeriesError, load_panel, load_series
from forecaster.data.seasons import season_length, season_phase
from forecaster.features.seasonal_adjustment import seasonal_components, year_at, year_components
from forecaster.features.transforms import TargetTransform, TrainingWindows, calendar_features, forecast_inputs
from forecaster.training.model import RNNForecaster
from forecaster.training.parts import fit_parts
from forecaster.training.train import PanelDataModule, fit, validation_origins
from tests.test_panel import monthly_panel_frame

SERIES = load_series("air_passengers")
TRAIN, VAL = (part.series(0) for part in load_panel("air_passengers").cut_after("1959-01-01"))
PANEL = load_panel("air_passengers")  # the same series, as the panel of one that a fit takes
TRAIN_PART, VAL_PART = PANEL.split_at([len(TRAIN)])


def all_windows(target, config, train=TRAIN_PART):
    """Every training window, in order: (training_length + 1, n_windows, 1 + C)."""
    windows = TrainingWindows.of(target, train, config)
    counts = windows.counts
    series = torch.repeat_interleave(torch.arange(len(counts)), counts)
    positions = torch.cat([torch.arange(int(n)) for n in counts])
    return windows.cut(series, positions)


VALID = [
    (transform, norm)
    for transform, norm in itertools.product(TARGET_TRANSFORMS, WINDOW_NORMS)
    if not (norm == "divide" and (transform.endswith("diff") or transform == "log_if_positive"))
]


@pytest.mark.parametrize("deseasonalise", [False, True], ids=["", "deseasonalised"])
@pytest.mark.parametrize("transform, norm", VALID)
def test_every_transform_inverts_exactly(transform, norm, deseasonalise):
    """Encode the validation part the way a forecast is encoded, decode it from the history before it: the same
    values come back, whatever the seasonal indices, the log, the differences, the scaler and the window's level
    did."""
    config = ForecasterConfig(
        target_transform=transform, window_norm=norm, input_chunk_length=14, deseasonalise=deseasonalise
    )
    target = TargetTransform.fit(config, TRAIN_PART)
    assert (target.seasonal is not None) == deseasonalise  # Air Passengers is seasonal by Theta's test
    end = len(TRAIN) - 1
    inputs = forecast_inputs(target, PANEL, [end], 14, len(VAL), calendar=False)
    # The val part in the net's units, normalised by the context's level as the net's forecast would be.
    scaled = target.to_model(PANEL)[0][end - target.lag + 1 :]
    if norm == "subtract":
        scaled = scaled - inputs.level.item()
    elif norm == "divide":
        scaled = scaled / inputs.level.item() - 1
    decoded = target.from_model(torch.as_tensor(scaled[:, None]), inputs)[:, 0]
    np.testing.assert_allclose(decoded.numpy(), VAL.to_numpy(), rtol=1e-12)


def test_seasonal_components_are_the_classical_decompositions_where_theta_finds_a_season():
    """A level times a pattern gives the pattern back as indices (its ratio to the centred moving average), and nearly
    so with a 0 in one month (visitors that stopped once). A trend plus a pattern that crosses 0 gives the pattern back
    as shifts (its difference from the moving average); so do, near enough, a series with a value below 0 and one that
    is 0 in every first quarter (whose index would be 0). White noise and a series of under 3 seasons keep indices of 1
    and shifts of 0."""
    pattern = np.array([0.8, 1.1, 1.3, 0.8])
    noise = 50 + np.random.default_rng(0).standard_normal(40)
    seasonal = 100 * np.tile(pattern, 10)
    with_zero, below_zero, closed = seasonal.copy(), seasonal.copy(), seasonal.copy()
    with_zero[7], below_zero[7], closed[::4] = 0.0, -5.0, 0.0
    swings = np.array([-20.0, 5.0, 30.0, -15.0])  # around 0: centred already
    crossing = np.linspace(-5.0, 15.0, 40) + np.tile(swings, 10)
    series = {"seasonal": seasonal, "noise": noise, "short": seasonal[:11], "with a zero": with_zero}
    series |= {"below zero": below_zero, "closed": closed, "crossing": crossing}
    frame = pd.DataFrame(
        [(name, time, value) for name, values in series.items() for time, value in enumerate(values)],
        columns=["unique_id", "ds", "y"],
    )
    panel = load_panel(frame, season_length=4)
    indices, shifts = (dict(zip(panel.ids, part)) for part in seasonal_components(panel))
    np.testing.assert_allclose(indices["seasonal"], pattern, rtol=1e-12)
    np.testing.assert_allclose(indices["with a zero"], pattern, atol=0.1)
    assert indices["with a zero"][3] < pattern[3]  # its 0 fell in the fourth quarter
    np.testing.assert_allclose(shifts["crossing"], swings, atol=1e-12)
    np.testing.assert_allclose(shifts["below zero"], 100 * (pattern - 1), atol=8)  # 100 x pattern, one point off
    np.testing.assert_allclose(shifts["closed"], [-80, 30, 50, 0], atol=1e-9)  # 0, 110, 130, 80 less their mean
    for name in ("noise", "short", "below zero", "closed", "crossing"):
        np.testing.assert_array_equal(indices[name], np.ones(4))
    for name in ("seasonal", "noise", "short", "with a zero"):
        np.testing.assert_array_equal(shifts[name], np.zeros(4))
    # By place in the season, which a plain time index counts from each series' first point (as the calendar does).
    later = load_panel(frame[frame.unique_id == "seasonal"].iloc[1:], season_length=4)
    later_indices, no_shifts = seasonal_components(later)
    np.testing.assert_allclose(later_indices[0], np.roll(pattern, -1), rtol=1e-12)
    assert no_shifts is None


def test_the_plain_path_is_min_max_scaling_fit_on_the_training_part():
    target = TargetTransform.fit(ForecasterConfig(), TRAIN_PART)
    assert (target.log, target.lag, target.window_norm) == (False, 0, "none")
    scaled, _ = target.to_model(TRAIN_PART)
    assert scaled.min() == 0.0 and scaled.max() == 1.0


def test_window_normalisation_keeps_a_growing_series_in_the_range_it_trained_on():
    """Min-max scaling puts Air Passengers' last validation peak far above anything seen in training; divided by
    each window's level, the windows of the validation part look like those of the training part."""
    plain = TargetTransform.fit(ForecasterConfig(), TRAIN_PART)
    assert plain.to_model(VAL_PART)[0].max() > 1.25  # 622 passengers, where training ended at 505
    config = ForecasterConfig(target_transform="log", window_norm="subtract")
    target = TargetTransform.fit(config, TRAIN_PART)
    trained = all_windows(target, config)
    later = all_windows(target, config, PANEL.split_last(40)[1])
    assert later.abs().max() < 1.5 * trained.abs().max()


def test_training_windows_carry_the_next_points_month():
    config = ForecasterConfig(calendar=True, training_length=20, input_chunk_length=14)
    target = TargetTransform.fit(config, TRAIN_PART)
    windows = all_windows(target, config)  # the series starts in January
    assert windows.shape == (21, 101, 3)
    # Row 0 of window 0 is January 1949, and carries February's place in the year: month index 1 of 12.
    torch.testing.assert_close(windows[0, 0, 1:], torch.tensor([math.sin(math.pi / 6), math.cos(math.pi / 6)]))
    torch.testing.assert_close(windows[11, 0, 1:], torch.tensor([0.0, 1.0]), atol=1e-6, rtol=0)  # Dec -> January


def hourly_frame(days: dict[str, tuple[str, int]]) -> tuple[pd.DataFrame, np.ndarray]:
    """Hourly series (name: (first hour, days)) of a level times a day's pattern times a week's (weekends lower), and
    that (168,) week of indices, Monday 00:00 first."""
    day = 1 + 0.4 * np.sin(np.arange(24) * 2 * np.pi / 24)
    week = np.repeat([1.0, 1.05, 1.1, 1.05, 1.0, 0.7, 0.6], 24)
    week = week / week.mean()
    pattern = np.tile(day, 7) * week
    rows = []
    for name, (start, length) in days.items():
        times = pd.date_range(start, periods=24 * length, freq="h")
        places = times.dayofweek * 24 + times.hour
        rows += [(name, time, 100 * pattern[place]) for time, place in zip(times, places)]
    return pd.DataFrame(rows, columns=["unique_id", "ds", "y"]), pattern


def test_hourly_series_are_adjusted_for_the_day_and_the_week_where_they_hold_3_weeks():
    """The week's indices (a day's pattern times the weekdays' levels) come back as one table of the week's 168 hours,
    whichever hour a series starts at; a series of 4 days keeps the day's pattern alone, the same every day, and so
    does one whose days differ by noise only (X-11's test finds no week in it)."""
    frame, pattern = hourly_frame(
        {"long": ("2024-01-03 05:00", 35), "short": ("2024-01-01", 4), "daily": ("2024-01-01", 35)}
    )
    day = pattern.reshape(7, 24).mean(0)
    daily = frame["unique_id"] == "daily"
    noise = 1 + 0.05 * np.random.default_rng(0).standard_normal(daily.sum())
    frame.loc[daily, "y"] = 100 * np.tile(day, 35) * noise
    panel = load_panel(frame)
    assert panel.season == 24
    table, shifts = seasonal_components(panel)
    indices = dict(zip(panel.ids, table))
    assert table.shape == (3, 168) and shifts is None
    np.testing.assert_allclose(indices["long"], pattern / pattern.mean(), rtol=1e-3)
    np.testing.assert_allclose(indices["short"], np.tile(day / day.mean(), 7), rtol=0.05)
    np.testing.assert_array_equal(indices["daily"].reshape(7, 24), np.tile(indices["daily"][:24], (7, 1)))
    np.testing.assert_allclose(indices["daily"][:24], day / day.mean(), rtol=0.04)


def year_factor(times: pd.DatetimeIndex) -> np.ndarray:
    """A year of daily data: high in January, low in July, by a fifth either way."""
    return 1 + 0.2 * np.cos(2 * np.pi * (times.dayofyear.to_numpy() - 15) / 365.25)


def daily_frame(days: dict[str, tuple[str, int]], noise: float = 0.02) -> pd.DataFrame:
    """Daily series (name: (first day, days)) of a level times a week (weekends lower) times a year, with noise."""
    week = np.array([1.0, 1.05, 1.1, 1.05, 1.0, 0.8, 0.7])
    generator = np.random.default_rng(0)
    rows = []
    for name, (start, length) in days.items():
        times = pd.date_range(start, periods=length, freq="D")
        values = 100 * week[times.dayofweek] * year_factor(times) * (1 + noise * generator.standard_normal(length))
        rows.append(pd.DataFrame({"unique_id": name, "ds": times, "y": values}))
    return pd.concat(rows, ignore_index=True)


def test_daily_series_are_adjusted_for_the_year_where_they_hold_two_years():
    """Beside the week's table, a daily series of two years or more gets its year as a smooth profile of the time of
    year, close to the one it was made with, whatever day it starts; a series of a year and a half gets none, nor does
    one whose year is noise alone; a series that crosses 0 has the year's shifts subtracted instead of dividing."""
    frame = daily_frame({"long": ("2021-03-17", 900), "short": ("2021-01-01", 540), "flat": ("2021-01-01", 900)})
    flat = frame["unique_id"] == "flat"
    frame.loc[flat, "y"] /= year_factor(pd.DatetimeIndex(frame.loc[flat, "ds"]))
    crossing = pd.date_range("2021-01-01", periods=800, freq="D")
    additive = 40 * np.cos(2 * np.pi * (crossing.dayofyear.to_numpy() - 15) / 365.25) + np.linspace(-5, 5, 800)
    frame = pd.concat([frame, pd.DataFrame({"unique_id": "crossing", "ds": crossing, "y": additive})])
    panel = load_panel(frame)
    indices, shifts = seasonal_components(panel)
    assert indices.shape == (4, 7)
    year = year_components(panel, indices, shifts)
    found = dict(zip(panel.ids, year))
    assert not found["short"].any() and not found["flat"].any()
    days = pd.date_range("2022-01-01", periods=365, freq="D")
    times = days.to_numpy().astype("datetime64[ns]").astype(np.int64)
    factors, no_shift = year_at(year, np.full(365, list(panel.ids).index("long")), times)
    np.testing.assert_allclose(factors, year_factor(days) / np.exp(np.log(year_factor(days)).mean()), rtol=0.03)
    assert not no_shift.any()
    no_factor, subtracted = year_at(year, np.full(365, list(panel.ids).index("crossing")), times)
    assert (no_factor == 1).all() and not found["crossing"][0].any()
    expected = 40 * np.cos(2 * np.pi * (days.dayofyear.to_numpy() - 15) / 365.25)
    np.testing.assert_allclose(subtracted, expected - expected.mean(), atol=2.0)


@pytest.mark.parametrize("transform, norm", [("log_if_positive", "subtract"), ("none", "subtract"), ("log", "divide")])
def test_a_daily_forecast_inverts_through_the_week_and_the_year(transform, norm):
    """A forecast of the next 60 days decodes to the series' own values, each day through its week's index and its
    time of year, and through the year's shifts for a series that crosses 0."""
    frame = daily_frame({"a": ("2021-03-17", 900), "b": ("2021-01-05", 800)})
    if transform == "none":
        frame.loc[frame["unique_id"] == "b", "y"] -= 95  # below 0 at times: less its shifts
    panel = load_panel(frame)
    train, _ = panel.split_at(panel.lengths - 60)
    config = ForecasterConfig(
        target_transform=transform, window_norm=norm, input_chunk_length=28, training_length=40, deseasonalise=True
    )
    target = TargetTransform.fit(config, train)
    assert target.year[0, 0].any() and target.year[1, int(transform == "none")].any()  # b's shifts where it crosses 0
    ends = panel.offsets[:-1] + train.lengths - 1
    inputs = forecast_inputs(target, panel, ends, 28, 60, calendar=True)
    scaled, offsets = target.to_model(panel)
    rows = np.stack([offsets[series] + train.lengths[series] - target.lag + np.arange(60) for series in range(2)], 1)
    net_units = scaled[rows]
    net_units = net_units - inputs.level.numpy() if norm == "subtract" else net_units / inputs.level.numpy() - 1
    decoded = target.from_model(torch.as_tensor(net_units), inputs).numpy()
    expected = np.stack([panel.values[ends[series] + 1 : ends[series] + 61] for series in range(2)], 1)
    np.testing.assert_allclose(decoded, expected, rtol=1e-10)


@pytest.mark.parametrize("transform, norm", [("log_if_positive", "subtract"), ("none", "subtract"), ("log", "divide")])
def test_an_hourly_forecast_inverts_through_the_weeks_indices(transform, norm):
    """A forecast of the next 48 hours, from a Saturday afternoon, decodes to the series' own values: each hour with
    its own place in the week's table."""
    frame, _ = hourly_frame({"a": ("2024-01-03 05:00", 30), "b": ("2024-01-01 17:00", 28)})
    frame["y"] *= 1 + 0.001 * frame.groupby("unique_id").cumcount()  # a trend, so that the level moves
    panel = load_panel(frame)
    train, _ = panel.split_at(panel.lengths - 48)
    config = ForecasterConfig(
        target_transform=transform, window_norm=norm, input_chunk_length=48, training_length=60, deseasonalise=True
    )
    target = TargetTransform.fit(config, train)
    assert target.seasonal.shape == (2, 168) and target.seasonal_period == 168
    ends = panel.offsets[:-1] + train.lengths - 1
    inputs = forecast_inputs(target, panel, ends, 48, 48, calendar=True)
    scaled, offsets = target.to_model(panel)
    rows = np.stack([offsets[series] + train.lengths[series] - target.lag + np.arange(48) for series in range(2)], 1)
    net_units = scaled[rows]
    net_units = net_units - inputs.level.numpy() if norm == "subtract" else net_units / inputs.level.numpy() - 1
    decoded = target.from_model(torch.as_tensor(net_units), inputs).numpy()
    expected = np.stack([panel.values[ends[series] + 1 : ends[series] + 49] for series in range(2)], 1)
    np.testing.assert_allclose(decoded, expected, rtol=1e-10)


def test_each_row_reads_the_value_a_season_before_the_point_after_it_in_training_and_in_forecasts():
    """seasonal_lag: a training window's row holding point p reads point p + 1 - 168 beside it, in the window's units
    (so, with the window less its level, the two differ as the points do); a forecast's context rows read the same,
    and its fed-back rows the last value known at the same hour of the week: a week back within the first week
    ahead, two weeks back in the second."""
    frame, _ = hourly_frame({"a": ("2024-01-03 05:00", 30), "b": ("2024-01-01 17:00", 28)})
    frame["y"] *= 1 + 0.05 * np.random.default_rng(0).standard_normal(len(frame))
    panel = load_panel(frame)
    train, _ = panel.split_at(panel.lengths - 48)
    config = ForecasterConfig(
        target_transform="log",
        window_norm="subtract",
        input_chunk_length=24,
        training_length=36,
        deseasonalise=True,
        calendar=True,
        seasonal_lag=168,
    )
    target = TargetTransform.fit(config, train)
    scaled, _ = target.to_model(train)
    windows = TrainingWindows.of(target, train, config)
    assert (windows.first >= 167).all()  # every row's week back inside its series
    series = torch.repeat_interleave(torch.arange(2), windows.counts)
    positions = torch.cat([torch.arange(int(n)) for n in windows.counts])
    cut = windows.cut(series, positions).double()
    elements = (windows.starts[series] + windows.first[series] + positions)[None, :] + torch.arange(37)[:, None]
    s = torch.as_tensor(scaled)
    torch.testing.assert_close(cut[..., -1] - cut[..., 0], (s[elements + 1 - 168] - s[elements]), atol=1e-6, rtol=0)

    ends = panel.offsets[:-1] + train.lengths - 1
    inputs = forecast_inputs(target, panel, ends, 24, 200, calendar=True)
    whole, _ = target.to_model(panel)
    level = inputs.level.numpy()
    context_points = ends[None, :] + np.arange(-23, 1)[:, None]
    np.testing.assert_allclose(inputs.context[..., -1].numpy(), whole[context_points + 1 - 168] - level, atol=1e-6)
    ahead = np.arange(1, 200)[:, None]  # fed-back row t holds forecast point t (after the origin, point 0)
    back = np.where(ahead + 1 <= 168, ahead + 1 - 168, ahead + 1 - 336)
    np.testing.assert_allclose(inputs.future[..., -1].numpy(), whole[ends[None, :] + back] - level, atol=1e-6)


def test_a_net_reading_the_value_a_week_back_forecasts_weeks_that_repeat_with_drift_and_its_checkpoint_too(tmp_path):
    """Hourly series whose every week is the last one with noise, from a random first week: a recurrent net told
    the value a week before each point it predicts learns to lean on it, and errs a fraction of what the same net
    does without it, whose lookback of a day cannot tell; a checkpoint forecasts the same."""
    generator = np.random.default_rng(0)
    frames = []
    for name in range(6):
        weeks = [100 * np.exp(0.3 * generator.standard_normal(168))]
        for _ in range(7):
            weeks.append(weeks[-1] * np.exp(0.08 * generator.standard_normal(168)))
        y = np.concatenate(weeks)
        frames.append(
            pd.DataFrame({"unique_id": f"s{name}", "ds": pd.date_range("2024-01-01", periods=len(y), freq="h"), "y": y})
        )
    panel = load_panel(pd.concat(frames))
    config = ForecasterConfig(
        model="GRU",
        hidden_dim=16,
        n_epochs=10,
        input_chunk_length=24,
        training_length=36,
        target_transform="log",
        window_norm="subtract",
        calendar=True,
        windows_per_epoch=1024,
        batch_size=64,
        lr=3e-3,
    )
    told = fit(config.replace(seasonal_lag=168), panel, val_size=24)
    untold = fit(config, panel, val_size=24)
    assert told.history[-1]["val_smape"] < 0.5 * untold.history[-1]["val_smape"]
    history, _ = panel.split_at(panel.lengths - 24)
    restored = saved_and_loaded(told.model, tmp_path)
    pd.testing.assert_frame_equal(restored.forecast(history, 24), told.model.forecast(history, 24), rtol=1e-6)


@pytest.mark.parametrize(
    "shape, after_context, data",
    [
        ("direct", True, "monthly"),
        ("recurrent", True, "monthly"),
        ("recurrent", False, "monthly"),
        ("direct", True, "hourly"),
        ("direct", True, "daily"),
        ("recurrent", True, "daily"),
    ],
    ids=["direct", "recurrent", "recurrent-every-position", "direct-hourly", "direct-daily", "recurrent-daily"],
)
def test_a_loss_in_original_units_reads_each_window_back_as_its_own_points(shape, after_context, data):
    """The points a loss in original units scores (the direct shape's block, the recurrent shape's next-step
    targets), taken back through what `in_original_units` gives each window, are the series' own values there: each
    with its own place's seasonal index or shift (in the week's table of hourly data), its time of year's (daily
    data), its series' scaler and log, the window's level."""
    hourly = data == "hourly"
    if data == "daily":
        frame = daily_frame({"s0": ("2021-03-17", 800), "s1": ("2021-01-05", 760), "s2": ("2021-02-01", 740)})
    elif hourly:
        frame, _ = hourly_frame(
            {"s0": ("2024-01-03 05:00", 24), "s1": ("2024-01-01 17:00", 28), "s2": ("2024-01-02", 22)}
        )
        frame["y"] *= 1 + 0.001 * frame.groupby("unique_id").cumcount()
    else:
        frame = monthly_panel_frame(lengths=(60, 72, 66), start=("2001-01", "2000-03", "2000-07"))
    crossing = frame["unique_id"] == "s2"  # a seasonal series below 0 at times: not logged, less its shifts
    frame.loc[crossing, "y"] = 50 * np.sin(np.arange(crossing.sum()) * np.pi / 6) + np.arange(crossing.sum()) - 20
    if data != "monthly":  # and a week of its own: lower at the weekend
        frame.loc[crossing, "y"] -= 30 * (pd.DatetimeIndex(frame.loc[crossing, "ds"]).dayofweek >= 5)
    if data == "daily":  # and a year: the week's shifts alone over a year's swing
        frame.loc[crossing, "y"] = frame.loc[crossing, "y"] / 20 + 40 * np.cos(np.arange(crossing.sum()) / 58.1)
    train = load_panel(frame)
    config = ForecasterConfig(
        shape=shape,
        input_chunk_length=6,
        training_length=10,
        output_chunk_length=0 if shape == "recurrent" else 6,
        loss="mase",
        loss_after_context=after_context,
        target_transform="log_if_positive",
        deseasonalise=True,
        calendar=True,
    )
    target = TargetTransform.fit(config, train)
    assert target.logged.tolist() == [True, True, False] and (target.shifts[2] != 0).all()
    assert (np.abs(target.seasonal[1] - 1) > 0.05).any()  # s1's indices: a misplaced one would show
    if hourly:  # the weeks' tables, not the day's repeated
        assert target.seasonal.shape == (3, 168) and np.ptp(target.seasonal[1].reshape(7, 24).mean(1)) > 0.2
        assert np.ptp(target.shifts[2].reshape(7, 24).mean(1)) > 20
    if data == "daily":  # the year's factors and shifts
        assert target.year[:2, 0].any(axis=1).all() and target.year[2, 1].any()
    windows = TrainingWindows.of(target, train, config)
    series = torch.repeat_interleave(torch.arange(len(windows.counts)), windows.counts)
    positions = torch.cat([torch.arange(int(n)) for n in windows.counts])
    cut = windows.cut(series, positions)
    inputs, _ = windows.in_original_units(series, positions, cut)
    first = windows.first_scored
    assert first == (6 if after_context else 1)
    got = target.from_model(cut[first:, :, 0].double(), inputs).numpy()
    # Row r of the window of series i at position p is the series' point first[i] + p + r.
    points = (windows.first[series] + positions)[None, :] + torch.arange(first, windows.span)[:, None]
    real = (points >= 0) & (points < windows.lengths[series][None, :])
    inside = torch.minimum(points.clamp(min=0), windows.lengths[series][None, :] - 1)
    expected = train.values[(windows.starts[series][None, :] + inside).numpy()]
    assert real.all() if shape == "recurrent" else real.any(0).all()
    np.testing.assert_allclose(got[real.numpy()], expected[real.numpy()], rtol=1e-4, atol=1e-3)


def test_forecast_inputs_give_each_origin_its_own_context_and_history():
    config = ForecasterConfig(target_transform="log_seasonal_diff", calendar=True, input_chunk_length=14)
    target = TargetTransform.fit(config, TRAIN_PART)
    values = SERIES.to_numpy(np.float64)
    ends = [120, 126]
    inputs = forecast_inputs(target, PANEL, ends, 14, 10, calendar=True)
    assert inputs.context.shape == (14, 2, 3) and inputs.history.shape == (12, 2) and inputs.future.shape == (9, 2, 2)
    np.testing.assert_allclose(inputs.history[:, 1].numpy(), np.log(values[115:127]))
    # The first future row is the calendar of the point two after the origin (the second forecast step's input).
    np.testing.assert_allclose(inputs.future[0, 0].numpy(), calendar_features(np.array([122]), 12)[0], rtol=1e-6)


def test_validation_origins_are_evenly_spaced_from_the_end_of_training():
    assert validation_origins([23], 1).tolist() == [[0]]
    assert validation_origins([24, 8], 4).tolist() == [[0, 0], [6, 2], [12, 4], [18, 6]]  # per series
    config = ForecasterConfig(val_origins=4)
    parts = fit_parts(config, PANEL, split_after=AIR_PASSENGERS_SPLIT_AFTER)
    data = PanelDataModule(config, parts, TargetTransform.fit(config, parts.train))
    weights = data.validation.weights
    assert weights.shape == (23, 4) and weights.sum(0).tolist() == [23.0, 17.0, 11.0, 6.0]


def test_seasons_and_phases_come_from_the_frequency():
    assert [season_length(f) for f in ("MS", "QS-JAN", "W-SUN", "D", "B", "h", "YS-JAN")] == [12, 4, 52, 7, 5, 24, 1]
    assert season_phase(pd.Timestamp("1959-03-01"), "MS") == 2
    assert season_phase(pd.Timestamp("2024-01-03 13:00"), "h") == 13


@pytest.mark.parametrize(
    "options, message",
    [
        ({"target_transform": "cube"}, "target_transform='cube' is not one of"),
        ({"window_norm": "divide", "target_transform": "diff"}, "differences cross zero"),
        ({"ema_decay": 1.0}, "ema_decay=1.0 must be in"),
        ({"val_origins": 0}, "val_origins=0 must be at least 1"),
    ],
)
def test_impossible_options_are_refused(options, message):
    with pytest.raises(ConfigError, match=message):
        ForecasterConfig(**options)


def test_options_the_data_cannot_take_are_refused_before_training():
    shifted = SERIES - 200.0  # negative values in the training part
    shifted.attrs = {}
    with pytest.raises(SeriesError, match=r"target_transform='log' needs values above 0, and the value at 1949-01-01"):
        fit(ForecasterConfig(target_transform="log", n_epochs=1), shifted, split_after=AIR_PASSENGERS_SPLIT_AFTER)
    yearly = pd.Series(np.arange(1.0, 41.0), index=pd.date_range("1960-01-01", periods=40, freq="YS"))
    with pytest.raises(SeriesError, match="calendar=True needs a series with a season"):
        fit(
            ForecasterConfig(calendar=True, n_epochs=1, training_length=5, input_chunk_length=3),
            yearly,
            split_after="1995",
        )
    with pytest.raises(SeriesError, match="val_origins=30 is more than the 23 points of the validation part"):
        fit(ForecasterConfig(val_origins=30, n_epochs=1))


def saved_and_loaded(model, folder) -> RNNForecaster:
    """The model through a Lightning checkpoint of its weights and hyperparameters, as a trial saves it."""
    path = folder / "model.ckpt"
    torch.save(
        {"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams), "pytorch-lightning_version": "2.6"},
        path,
    )
    return RNNForecaster.load_from_checkpoint(path)


def test_a_fit_with_every_option_forecasts_in_original_units_and_its_checkpoint_too(tmp_path):
    config = ForecasterConfig(
        model="GRU",
        hidden_dim=12,
        n_epochs=30,
        target_transform="log_diff",
        window_norm="subtract",
        calendar=True,
        deseasonalise=True,
        ema_decay=0.9,
        val_origins=3,
    )
    result = fit(config)
    assert all(math.isfinite(row["val_mape"]) for row in result.history)
    forecast = result.forecast_series()
    assert forecast.min() > 100 and forecast.max() < 1000  # passengers, not the net's units
    restored = saved_and_loaded(result.model, tmp_path)
    np.testing.assert_allclose(restored.forecast(TRAIN, len(VAL)), forecast.to_numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="give the history as a pandas Series with its dates"):
        restored.forecast(TRAIN.to_numpy(), 3)


def seasonal_config(lookback: int, training_length: int) -> ForecasterConfig:
    """A two-epoch fit that reads the calendar and divides by the seasonal adjustment, as the panel sweep's trials."""
    return ForecasterConfig(
        model="GRU",
        hidden_dim=8,
        n_epochs=2,
        input_chunk_length=lookback,
        training_length=training_length,
        calendar=True,
        deseasonalise=True,
        target_transform="log_if_positive",
        windows_per_epoch=256,
    )


def test_a_fit_on_hourly_data_forecasts_the_weekends_dip_and_its_checkpoint_too(tmp_path):
    """The week's indices are the model's: a short fit forecasts Saturday below Friday at the same hours, as the data
    are, and a checkpoint (which stores the week's table) forecasts the same."""
    frame, pattern = hourly_frame({"a": ("2024-01-01", 28), "b": ("2024-01-03 05:00", 26)})
    panel = load_panel(frame)
    result = fit(seasonal_config(lookback=24, training_length=36), panel, val_size=48)
    history, _ = panel.split_at(panel.lengths - 48)
    assert result.model.transform.seasonal.shape == (2, 168)
    ahead = result.model.forecast(history, 168)  # a week after each series' training part
    ahead["place"] = pd.DatetimeIndex(ahead["ds"]).dayofweek * 24 + pd.DatetimeIndex(ahead["ds"]).hour
    by_place = ahead.groupby("place")["forecast"].mean()
    friday, saturday = by_place.loc[4 * 24 : 5 * 24 - 1].mean(), by_place.loc[5 * 24 : 6 * 24 - 1].mean()
    assert saturday / friday == pytest.approx(
        pattern[5 * 24 : 6 * 24].mean() / pattern[4 * 24 : 5 * 24].mean(), rel=0.1
    )
    restored = saved_and_loaded(result.model, tmp_path)
    pd.testing.assert_frame_equal(restored.forecast(history, 168), ahead.drop(columns="place"), rtol=1e-6)


def test_a_fit_on_daily_data_forecasts_the_turn_of_the_year_and_its_checkpoint_too(tmp_path):
    """The year's profile is the model's: a short fit forecasts January above September as the data are, which a
    lookback of four weeks could not tell it, and a checkpoint (which stores the year's harmonics) forecasts the
    same."""
    frame = daily_frame({"a": ("2020-01-10", 1000), "b": ("2020-03-01", 950)})  # both end on 4 October 2022
    panel = load_panel(frame)
    result = fit(seasonal_config(lookback=28, training_length=40), panel, val_size=30)
    history, _ = panel.split_at(panel.lengths - 30)
    assert result.model.transform.year[:, 0].any(axis=1).all()
    ahead = result.model.forecast(history, 120)  # 4 September 2022 to 1 January 2023
    days = pd.DatetimeIndex(ahead["ds"])
    september, winter = ahead[days.month == 9]["forecast"].mean(), ahead[days >= "2022-12-15"]["forecast"].mean()
    truth = year_factor(days)
    assert winter / september == pytest.approx(
        truth[days >= "2022-12-15"].mean() / truth[days.month == 9].mean(), rel=0.1
    )
    restored = saved_and_loaded(result.model, tmp_path)
    pd.testing.assert_frame_equal(restored.forecast(history, 120), ahead, rtol=1e-6)


def test_the_moving_average_is_what_forecasts():
    config = ForecasterConfig(hidden_dim=8, n_epochs=20, ema_decay=0.9)
    model = fit(config).model
    averaged = model.forecast(TRAIN, 5)
    with torch.no_grad():
        for parameter, average in zip(model.parameters(), model._averages()):
            assert not torch.equal(parameter, average)  # the average lags the latest weights
            parameter.copy_(average)
    no_average = RNNForecaster(config.replace(ema_decay=0.0), model.scaler.minimum, model.scaler.scale, 12)
    no_average.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("average_")})
    np.testing.assert_allclose(no_average.forecast(TRAIN, 5), averaged, rtol=1e-6)


def test_the_cli_takes_every_option():
    from forecaster.fit import main

    assert (
        main(
            [
                "--n-epochs",
                "3",
                "--target-transform",
                "log",
                "--window-norm",
                "subtract",
                "--calendar",
                "true",
                "--ema-decay",
                "0.5",
                "--val-origins",
                "2",
                "--json",
            ]
        )
        == 0
    )


def test_the_cli_refuses_a_bad_option_value():
    from forecaster.fit import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--calendar", "maybe"])
    assert exit_info.value.code == 2
    assert main(["--target-transform", "sqrt"]) == 2
