"""Loading, checking, splitting and scaling series: what a user sees for good and for bad CSV files."""

import numpy as np
import pandas as pd
import pytest

from forecaster.config import ForecasterConfig
from forecaster.data.read import SeriesError, load_panel, load_series
from forecaster.features.transforms import MinMaxScaler
from forecaster.training.parts import FIT_PARTS_FIELDS, fit_parts


def write_csv(tmp_path, text, name="series.csv"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def monthly_csv(tmp_path, rows=48, start="2000-01", name="monthly.csv"):
    dates = pd.date_range(start, periods=rows, freq="MS")
    lines = ["month,sales"] + [f"{d:%Y-%m},{100 + i}" for i, d in enumerate(dates)]
    return write_csv(tmp_path, "\n".join(lines) + "\n", name)


def test_air_passengers_ships_with_the_package():
    series = load_series("air_passengers")
    assert len(series) == 144
    assert series.index.freqstr == "MS"
    assert series.index[0] == pd.Timestamp("1949-01-01") and series.index[-1] == pd.Timestamp("1960-12-01")
    assert series.iloc[0] == 112 and series.iloc[-1] == 432
    assert series.name == "#Passengers"


def split(split_after="1959-01-01"):
    """Air Passengers' training and validation parts, as a fit cuts them."""
    parts = fit_parts(ForecasterConfig(), load_panel("air_passengers"), split_after=split_after)
    return parts.train.series(0), parts.val.series(0)


def test_split_after_is_inclusive_like_darts():
    train, val = split("1959-01-01")
    assert (len(train), len(val)) == (121, 23)
    assert train.index[-1] == pd.Timestamp("1959-01-01")
    assert val.index[0] == pd.Timestamp("1959-02-01")


def test_split_outside_the_series_is_refused():
    with pytest.raises(SeriesError, match="before the first date"):
        split("1900-01-01")
    with pytest.raises(SeriesError, match="nothing is left to validate"):
        split("1960-12-01")
    with pytest.raises(SeriesError, match="not a date"):
        split("someday")


def test_scaler_maps_training_part_to_unit_interval_and_inverts_exactly():
    train, val = split()
    scaler = MinMaxScaler.fit(train)
    scaled = scaler.transform(train.to_numpy())
    assert scaled.min() == 0.0 and scaled.max() == 1.0
    assert scaler.transform(val.to_numpy()).max() > 1.0  # fit on the training part only
    np.testing.assert_allclose(scaler.inverse_transform(scaled), train.to_numpy(), rtol=0, atol=1e-12)


def test_constant_series_scales_without_dividing_by_zero():
    scaler = MinMaxScaler.fit([5.0, 5.0, 5.0])
    assert scaler.transform(np.array([5.0])).tolist() == [0.0]
    assert scaler.inverse_transform(np.array([0.0])).tolist() == [5.0]


def test_two_column_csv_is_detected_even_with_the_value_column_first(tmp_path):
    path = write_csv(tmp_path, "units,day\n" + "\n".join(f"{i + 1},2024-01-{i + 1:02d}" for i in range(20)) + "\n")
    series = load_series(path)
    assert series.name == "units" and series.index.freqstr == "D" and series.iloc[-1] == 20


def test_named_columns_pick_from_a_wider_csv(tmp_path):
    rows = "\n".join(f"2024-01-{i + 1:02d},{i},{i * 10}" for i in range(10))
    path = write_csv(tmp_path, "day,a,b\n" + rows + "\n")
    assert load_series(path, date_column="day", value_column="b").iloc[-1] == 90
    with pytest.raises(SeriesError, match=r"has 3 columns \(day, a, b\): name the date and value columns"):
        load_series(path)
    with pytest.raises(SeriesError, match="no value column 'c'; the columns are: day, a, b"):
        load_series(path, date_column="day", value_column="c")


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "2000-01,1\n2000-02,2\nnot a date,3\n2000-04,4\n",
            r"line 4: cannot read 'not a date' in column 'month' as a date",
        ),
        (
            "2000-01,1\n2000-02,2\n2000-02,3\n2000-03,4\n",
            r"line 4: date 2000-02-01 00:00:00 already appears on line 3; keep one row per date",
        ),
        (
            "2000-01,1\n2000-03,2\n2000-02,3\n2000-04,4\n",
            r"line 4: date 2000-02-01 00:00:00 comes after 2000-03-01 00:00:00 \(line 3\); sort the rows by date",
        ),
        (
            "2000-01,1\n2000-02,2\n2000-03,3\n2000-05,5\n2000-06,6\n2000-07,7\n",
            r"line 5: gap in the 'MS' series, 1 date\(s\) missing, the first being 2000-04-01",
        ),
        (
            "2000-01,1\n2000-02,2\n2000-03,three\n2000-04,4\n",
            r"line 4: 'three' in column 'sales' is not a finite number",
        ),
        ("2000-01,1\n2000-02,\n2000-03,3\n2000-04,4\n", r"line 3: the value in column 'sales' is missing"),
        ("2000-01,1\n2000-02,NaN\n2000-03,3\n2000-04,4\n", r"line 3: the value in column 'sales' is missing \('NaN'\)"),
        ("2000-01,1\n,2\n2000-03,3\n2000-04,4\n", r"line 3: the date in column 'month' is missing"),
        ("2000-01,1\n2000-02,2\n", r"only 2 rows"),
    ],
    ids=[
        "bad-date",
        "duplicate",
        "unsorted",
        "gap",
        "non-numeric",
        "empty-value",
        "nan-value",
        "empty-date",
        "too-short",
    ],
)
def test_bad_csv_is_refused_naming_file_line_and_fix(tmp_path, body, message):
    path = write_csv(tmp_path, "month,sales\n" + body)
    with pytest.raises(SeriesError, match=message) as error:
        load_series(path)
    assert str(error.value).startswith(path)


def test_trailing_blank_lines_are_ignored(tmp_path):
    path = monthly_csv(tmp_path, rows=12)
    with open(path, "a") as handle:
        handle.write("\n\n")
    assert len(load_series(path)) == 12


def test_missing_file_and_unknown_dataset(tmp_path):
    with pytest.raises(SeriesError, match="no such file"):
        load_series(str(tmp_path / "absent.csv"))
    with pytest.raises(SeriesError, match="neither a CSV or Parquet file nor a built-in dataset"):
        load_series("air_pasengers")


def test_explicit_frequency_is_checked(tmp_path):
    path = monthly_csv(tmp_path, rows=12)
    assert load_series(path, freq="MS").index.freqstr == "MS"
    with pytest.raises(SeriesError, match="does not fall on the series' frequency 'QS'"):
        load_series(path, freq="QS")


def test_dates_with_offsets_that_change_are_refused_with_the_fix(tmp_path):
    rows = ["2024-03-30T12:00+01:00,1", "2024-03-31T12:00+02:00,2", "2024-04-01T12:00+02:00,3"]
    path = write_csv(tmp_path, "day,visits\n" + "\n".join(rows) + "\n")
    with pytest.raises(SeriesError, match="write every date in one time zone, for example in UTC") as error:
        load_series(path)
    assert str(error.value).startswith(path)


def test_monthly_dates_off_the_first_or_last_day_say_so(tmp_path):
    rows = [f"2000-{month:02d}-15,{month}" for month in range(1, 13)]
    path = write_csv(tmp_path, "day,units\n" + "\n".join(rows) + "\n")
    with pytest.raises(SeriesError, match="monthly dates must all fall on the first day of their month"):
        load_series(path)


def test_a_gap_in_an_hourly_series_names_the_hours(tmp_path):
    hours = pd.date_range("2000-01-01", periods=30, freq="h").delete(10)
    path = write_csv(
        tmp_path, "time,load\n" + "\n".join(f"{h:%Y-%m-%d %H:%M},{i + 1}" for i, h in enumerate(hours)) + "\n"
    )
    with pytest.raises(
        SeriesError, match=r"the first being 2000-01-01 10:00:00 \(between line 11, 2000-01-01 09:00:00"
    ):
        load_series(path)


def test_fit_parts_reads_only_the_fields_it_names():
    """A sweep checks each corner of its space once per distinct value of FIT_PARTS_FIELDS and of the shape's
    settings (sweeps.plan.sweep_plan): a field read here and not named there would let a corner that cannot train
    pass unchecked."""
    from forecaster.shapes.recurrent import RecurrentSettings

    read = set()

    class Recorded:
        def __init__(self, config):
            self.config = config

        def __getattr__(self, name):
            read.add(name)
            return getattr(self.config, name)

    dates = pd.date_range("2000-01-01", periods=60, freq="MS")
    frame = pd.DataFrame(
        {"unique_id": ["long"] * 60 + ["short"] * 20, "ds": [*dates, *dates[:20]], "y": np.arange(1.0, 81.0)}
    )
    panel = load_panel(frame)
    seasonal = ForecasterConfig(target_transform="log_seasonal_diff", calendar=True, val_origins=2)
    divided = ForecasterConfig(target_transform="none", window_norm="divide")
    for config in (seasonal, divided):
        fit_parts(Recorded(config), panel, val_size=6, test_size=6, drop_short=True)  # drops "short"
        with pytest.raises(SeriesError, match="too short"):
            fit_parts(Recorded(config), panel, val_size=6, test_size=6)
    own = {"settings", *RecurrentSettings.names()}  # the shape's settings: the sweep checks per distinct settings
    assert set(FIT_PARTS_FIELDS) <= read <= set(FIT_PARTS_FIELDS) | own
