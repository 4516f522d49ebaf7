"""Covariates read with a panel (forecaster.data.read.load_panel, by neuralforecast's names): the table series after
series,
each series' data points then its future's; statics one-hot; unused columns named; every bad input refused with its
file, line, series and column; and the plan that checks, stores and shows them. None of it starts Ray."""

import numpy as np
import pandas as pd
import pytest

from forecaster.data.read import SeriesError, load_panel
from sweeps.plan.space import Choice
from sweeps.plan.sweep_plan import PlanError, make_plan

SERIES = {"a": ("2024-01-01", 60), "b": ("2024-01-04", 50), "c": ("2024-01-02", 55)}
"""Daily series of different starts and lengths: a ends 2024-02-29, b 2024-02-22, c 2024-02-25."""
KNOWN = 7


def data_frame() -> pd.DataFrame:
    """The data with its rows interleaved by date, as an export from a database lists them."""
    frames = []
    for number, (series, (start, length)) in enumerate(SERIES.items()):
        t = np.arange(length)
        frames.append(
            pd.DataFrame(
                {
                    "unique_id": series,
                    "ds": pd.date_range(start, periods=length, freq="D").strftime("%Y-%m-%d"),
                    "y": 100.0 * (number + 1) + t,
                    "promo": (t + number) % 3 == 0,
                    "temp": 10.0 + number + 0.5 * t,
                    "note": "as exported",
                }
            )
        )
    frame = pd.concat(frames).sort_values(["ds", "unique_id"], kind="stable").reset_index(drop=True)
    frame["promo"] = frame["promo"].astype(int)
    return frame


def futr_frame(known: int = KNOWN) -> pd.DataFrame:
    rows = [
        {"unique_id": series, "ds": day.strftime("%Y-%m-%d"), "promo": 10 * number + step}
        for number, (series, (start, length)) in enumerate(SERIES.items())
        for step, day in enumerate(pd.date_range(start, periods=length + known, freq="D")[length:])
    ]
    return pd.DataFrame(rows)


def static_frame() -> pd.DataFrame:
    return pd.DataFrame({"unique_id": ["c", "a", "b"], "size": [3.5, 1.0, 2.0], "region": ["north", "east", "north"]})


def write(tmp_path, data=None, futr=None, static=None) -> dict[str, str]:
    paths = {}
    for name, frame in (("data", data), ("futr", futr), ("static", static)):
        frame = {"data": data_frame, "futr": futr_frame, "static": static_frame}[name]() if frame is None else frame
        paths[name] = str(tmp_path / f"{name}.csv")
        frame.to_csv(paths[name], index=False)
    return paths


def load(paths, **asked):
    options = {
        "futr_exog": ["promo"],
        "hist_exog": ["temp"],
        "static_data": paths["static"],
        "futr_data": paths["futr"],
        **asked,
    }
    return load_panel(paths["data"], **options)


def line_of(frame: pd.DataFrame, series: str, step: int = 0) -> int:
    """The CSV line of a series' row (its `step`-th, in file order): the header is line 1."""
    return int(np.flatnonzero(frame["unique_id"].to_numpy() == series)[step]) + 2


def test_covariates_are_one_table_of_every_series_data_then_its_future(tmp_path):
    paths = write(tmp_path)
    panel = load(paths)
    covariates = panel.covariates
    assert list(panel.ids) == ["a", "c", "b"]  # the order of their first rows
    assert panel.unused_columns == ("note",)
    lengths = np.array([60, 55, 50])
    assert np.array_equal(panel.lengths, lengths)
    assert np.array_equal(covariates.starts, [0, 67, 129]) and np.array_equal(covariates.stops, [67, 129, 186])
    assert np.array_equal(covariates.known_after(panel.lengths), [KNOWN] * 3)
    assert (covariates.futr_names, covariates.hist_names) == (("promo",), ("temp",))
    data, future = data_frame(), futr_frame()
    for index, series in enumerate(panel.ids):
        number = list(SERIES).index(series)
        block = covariates.table[covariates.starts[index] : covariates.stops[index]]
        own = data[data["unique_id"] == series]
        assert np.array_equal(block[: lengths[index], 0], own["promo"]) and np.array_equal(
            block[: lengths[index], 1], own["temp"]
        )
        assert np.array_equal(block[lengths[index] :, 0], 10 * number + np.arange(KNOWN))
        assert np.isnan(block[lengths[index] :, 1]).all()  # the historic columns are unknown after the end
        assert list(future[future["unique_id"] == series]["promo"]) == list(block[lengths[index] :, 0])
    assert covariates.static_columns == ("size", "region")
    assert covariates.static_names == ("size", "region=east", "region=north")
    assert np.array_equal(covariates.static, [[1.0, 1, 0], [3.5, 0, 1], [2.0, 0, 1]])


def test_a_panel_without_covariates_is_as_before_and_names_its_unused_columns(tmp_path):
    paths = write(tmp_path)
    panel = load_panel(paths["data"])
    assert panel.covariates is None and panel.unused_columns == ("promo", "temp", "note")
    static_only = load_panel(paths["data"], static_data=paths["static"])
    assert static_only.covariates.table.shape == (165, 0) and static_only.covariates.static.shape == (3, 3)


def test_a_plain_time_index_takes_integer_times_in_its_future(tmp_path):
    frame = pd.DataFrame({"unique_id": ["s"] * 12 + ["t"] * 10, "ds": [*range(1, 13), *range(5, 15)]})
    frame["y"], frame["promo"] = np.arange(22.0), np.arange(22) % 2
    future = pd.DataFrame({"unique_id": ["s", "s", "t", "t"], "ds": [13, 14, 15, 16], "promo": [1, 0, 0, 1]})
    panel = load_panel(frame, season_length=4, futr_exog=["promo"], futr_data=future)
    assert np.array_equal(panel.covariates.table[12:14, 0], [1, 0]) and np.array_equal(panel.covariates.stops, [14, 26])
    with pytest.raises(SeriesError, match=r"the futr_data table, row 3: series 't': 14 in column 'ds' is not after"):
        load_panel(frame, season_length=4, futr_exog=["promo"], futr_data=future.assign(ds=[13, 14, 14, 15]))


def bad_value(column, value, series="b", step=4):
    def change(frames):
        data = frames["data"]
        data[column] = data[column].astype(object)
        data.loc[line_of(data, series, step) - 2, column] = value
        return {}, ("data.csv", f"line {line_of(data, series, step)}", f"series {series!r}", f"column {column!r}")

    return change


def futr_change(change_rows, expected):
    def change(frames):
        frames["futr"] = change_rows(frames["futr"])
        return {}, ("futr.csv", *expected(frames["futr"]))

    return change


def futr_rows(series):
    return lambda frame: frame.index[frame["unique_id"] == series]


def drop_last_of_b(frame):
    return frame.drop(futr_rows("b")(frame)[-1]).reset_index(drop=True)


def gap_in_b(frame):
    return frame.drop(futr_rows("b")(frame)[2]).reset_index(drop=True)


def late_b(frame):
    rows = futr_rows("b")(frame)
    frame.loc[rows, "ds"] = (pd.to_datetime(frame.loc[rows, "ds"]) + pd.Timedelta(days=1)).dt.strftime("%Y-%m-%d")
    return frame


def b_at_its_end(frame):
    frame.loc[futr_rows("b")(frame)[0], "ds"] = "2024-02-22"
    return frame


def with_row(row):
    return lambda frame: pd.concat([frame, pd.DataFrame([row])], ignore_index=True)


def static_change(change_rows, *expected):
    def change(frames):
        frames["static"] = change_rows(frames["static"])
        return {}, ("static.csv", *expected)

    return change


def renamed_futr(frames):
    frames["futr"] = frames["futr"].rename(columns={"promo": "promotion"})
    return {}, ("futr.csv, line 1", "no column 'promo'", "--futr-exog", "unique_id, ds, promotion")


def asked(options, *expected):
    return lambda frames: (options, expected)


BAD_INPUTS = {
    "a column missing from the data": asked(
        {"hist_exog": ["temp", "price"]}, "data.csv, line 1", "no column 'price'", "--hist-exog", "note"
    ),
    "a column missing from the future": renamed_futr,
    "a category in a known-ahead column": bad_value("promo", "yes"),
    "a missing historic value": bad_value("temp", np.nan),
    "a value that is not finite": bad_value("temp", "inf", series="c", step=9),
    "a future with fewer points": futr_change(
        drop_last_of_b, lambda f: (f"line {line_of(f, 'b', 5)}", "series 'b'", "column 'ds'", "2024-02-29, is missing")
    ),
    "a future with a gap": futr_change(
        gap_in_b, lambda f: (f"line {line_of(f, 'b', 1)}", "series 'b'", "column 'ds'", "2024-02-25, is missing")
    ),
    "a future that starts late": futr_change(
        late_b, lambda f: (f"line {line_of(f, 'b')}", "series 'b'", "column 'ds'", "does not start right after")
    ),
    "a future date not after the end": futr_change(
        b_at_its_end, lambda f: (f"line {line_of(f, 'b')}", "series 'b'", "column 'ds'", "not after the series' end")
    ),
    "a future of a series not in the data": futr_change(
        with_row({"unique_id": "z", "ds": "2024-03-01", "promo": 1}),
        lambda f: (f"line {len(f) + 1}", "series 'z'", "column 'unique_id'", "is not in"),
    ),
    "a future with more points for one series": futr_change(
        with_row({"unique_id": "b", "ds": "2024-03-01", "promo": 1}),
        lambda f: (f"line {len(f) + 1}", "series 'b'", "column 'ds'", "point 8 after its end"),
    ),
    "a series without its static row": static_change(
        lambda frame: frame[frame["unique_id"] != "c"], "no row for series 'c'", "column 'unique_id'"
    ),
    "a static row repeated": static_change(
        with_row({"unique_id": "a", "size": 1.0, "region": "east"}),
        "line 5",
        "series 'a'",
        "column 'unique_id'",
        "on line 3",
    ),
    "a static number missing": static_change(
        lambda frame: frame.assign(size=[3.5, None, 2.0]), "line 3", "series 'a'", "column 'size'", "missing"
    ),
    "a future without known-ahead columns": asked({"futr_exog": []}, "--futr-data", "--futr-exog"),
    "a column named twice": asked({"futr_exog": ["promo", "promo"]}, "--futr-exog", "'promo'", "more than once"),
    "a column both known ahead and historic": asked(
        {"hist_exog": ["temp", "promo"]}, "'promo'", "--futr-exog and --hist-exog"
    ),
    "the value column as a covariate": asked(
        {"futr_exog": ["y"]}, "data.csv, line 1", "column 'y' is the value column", "--futr-exog"
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_each_bad_input_is_refused_naming_its_file_line_series_and_column(tmp_path, case):
    frames = {"data": data_frame(), "futr": futr_frame(), "static": static_frame()}
    options, expected = BAD_INPUTS[case](frames)
    with pytest.raises(SeriesError) as raised:
        load(write(tmp_path, **frames), **options)
    message = str(raised.value)
    assert all(piece in message for piece in expected), (message, expected)


def test_the_future_needs_the_known_ahead_values_or_no_future(tmp_path):
    paths = write(tmp_path)
    storage = str(tmp_path / "sweeps")
    with pytest.raises(PlanError, match=r"--futr-exog promo: .*--futr-data FILE.*--no-future"):
        make_plan("panel", data=paths["data"], horizon=7, futr_exog=["promo"], storage_path=storage)
    (tmp_path / "short").mkdir()
    short = write(tmp_path / "short", futr=futr_frame(known=5))
    with pytest.raises(PlanError, match=r"holds 5 point\(s\) after each series' end, .* reaches 7.*--no-future"):
        make_plan("panel", data=paths["data"], horizon=7, futr_exog="promo", futr_data=short["futr"])
    flags = make_plan("panel", data=paths["data"], horizon=7, futr_exog="promo", future=False)
    assert flags.panel.covariates and flags.sweep.space["covariate_scaling"] == "series"  # a 0/1 column: no choice
    numbers = make_plan("panel", data=paths["data"], horizon=7, futr_exog="promo", hist_exog="temp", future=False)
    assert numbers.sweep.space["covariate_scaling"] == Choice("series", "shared")


def test_the_plan_shows_stores_and_reads_back_its_covariates(tmp_path):
    from sweeps.driver import describe_data
    from sweeps.plan.record import read_plan, store_plan

    paths = write(tmp_path)
    plan = make_plan(
        "panel",
        data=paths["data"],
        horizon=7,
        futr_exog=["promo"],
        hist_exog=["temp"],
        static_data=paths["static"],
        futr_data=paths["futr"],
        storage_path=str(tmp_path / "sweeps"),
        name="covariates",
    )
    lines = describe_data(plan)
    assert lines[-2:] == [
        "  covariates known ahead: promo; historic: temp; static: size, region (3 columns)",
        "  not used   note (name them with --futr-exog, --hist-exog, or put per-series facts in --static-data)",
    ]
    described = plan.describe_data()
    assert described["unused_columns"] == ["note"]
    assert described["covariates"] == {
        "futr_exog": ["promo"],
        "hist_exog": ["temp"],
        "static": ["size", "region"],
        "static_inputs": ["size", "region=east", "region=north"],
        "known_ahead_points": 7,
    }
    store_plan(plan, ["test"])
    again = read_plan(plan.experiment_path)
    mine, theirs = plan.panel.covariates, again.panel.covariates
    assert again.panel.unused_columns == ("note",) and again.options.futr_exog == ("promo",)
    assert np.array_equal(again.panel.values, plan.panel.values) and np.array_equal(again.panel.lines, plan.panel.lines)
    for name in ("starts", "stops", "static"):
        assert np.array_equal(getattr(theirs, name), getattr(mine, name))
    assert np.array_equal(theirs.table, mine.table, equal_nan=True)
    assert (theirs.futr_names, theirs.hist_names, theirs.static_names, theirs.static_columns) == (
        mine.futr_names,
        mine.hist_names,
        mine.static_names,
        mine.static_columns,
    )
    assert np.array_equal(theirs.known_after(again.parts.train.lengths), mine.known_after(plan.parts.train.lengths))


def test_one_series_takes_covariates_without_ids(tmp_path):
    """A file of one series with a covariate beside its dates and values: the covariate is told apart from them."""
    days = pd.date_range("2024-01-01", periods=30, freq="D")
    pd.DataFrame({"day": days.strftime("%Y-%m-%d"), "sales": np.arange(30.0), "promo": np.arange(30) % 2}).to_csv(
        tmp_path / "one.csv", index=False
    )
    future = pd.DataFrame({"day": pd.date_range("2024-01-31", periods=3, freq="D"), "promo": [1, 1, 0]})
    panel = load_panel(
        str(tmp_path / "one.csv"), futr_exog=["promo"], futr_data=future, static_data=pd.DataFrame({"size": [2.0]})
    )
    assert panel.value_name == "sales" and panel.unused_columns == ()
    assert np.array_equal(panel.covariates.table[30:, 0], [1, 1, 0]) and panel.covariates.static_names == ("size",)
    with pytest.raises(SeriesError, match=r"the static_data table: holds 2 rows, and .*one.csv is one series"):
        load_panel(str(tmp_path / "one.csv"), hist_exog="promo", static_data=pd.DataFrame({"size": [2.0, 3.0]}))
