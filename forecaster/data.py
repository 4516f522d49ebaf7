"""Time series in, checked and split: the Air Passengers series ships inside the package, any CSV works alike.

Every check runs before anything trains, and each error names the file, the line and what to do,
because a sweep that fails on bad data after an hour of queued trials is the costliest kind of failure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.resources
import os
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from forecaster.config import ForecasterConfig

BUILTIN_DATASETS = {
    "air_passengers": "air_passengers.csv",  # monthly airline passengers, 1949-1960 (Box & Jenkins)
    "wineind": "wineind.csv",  # monthly Australian wine sales, 1980-01 to 1994-08 (R package forecast)
}
DEFAULT_SPLIT_AFTER = "1959-01-01"


class SeriesError(ValueError):
    """The data cannot be used as given; the message says where and how to fix it."""


def load_series(
    source: str | os.PathLike = "air_passengers",
    date_column: str | None = None,
    value_column: str | None = None,
    freq: str | None = None,
) -> pd.Series:
    """A checked, regular time series: a float Series indexed by a DatetimeIndex with its frequency set.

    `source` is the name of a built-in dataset ("air_passengers") or the path of a CSV file with a date
    column and a value column. With exactly two columns they are found automatically; otherwise name them.
    `freq` (a pandas offset alias such as "MS") is inferred from the dates when not given.
    """
    path, label = _resolve(source)
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False)
    except FileNotFoundError:
        raise SeriesError(f"{label}: no such file; give a CSV path or one of {', '.join(BUILTIN_DATASETS)}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise SeriesError(f"{label}: not a readable CSV file ({error})") from None
    table = _drop_trailing_blank_rows(table)
    date_column, value_column = _pick_columns(table, label, date_column, value_column)
    dates = _parse_dates(table[date_column], label, date_column)
    values = _parse_values(table[value_column], label, value_column)
    _check_order(dates, label)
    freq = _check_frequency(dates, label, freq)
    series = pd.Series(values, index=pd.DatetimeIndex(dates, freq=freq, name=date_column), name=value_column)
    series.attrs["source"] = label  # errors found later (split, window lengths) name the file too
    return series


def check_series(series: pd.Series) -> None:
    """Refuse a series built in code, not read by `load_series`, that the forecaster cannot use as it is."""
    label = source_of(series) or "the series"
    if not isinstance(series, pd.Series) or not isinstance(series.index, pd.DatetimeIndex):
        raise SeriesError(
            f"{label}: needs a pandas Series indexed by dates (a DatetimeIndex); "
            "load a CSV with load_series, or set the index with pd.to_datetime"
        )
    dates = series.index
    if dates.has_duplicates:
        raise SeriesError(
            f"{label}: date {dates[dates.duplicated()][0]} appears more than once; keep one value per date"
        )
    if not dates.is_monotonic_increasing:
        raise SeriesError(f"{label}: the dates are not in order; sort them first (series.sort_index())")
    if dates.freq is None and _infer_freq(dates) is None:
        raise SeriesError(
            f"{label}: the dates are not evenly spaced (gaps, or no regular frequency); "
            "resample it to a regular frequency, e.g. series.asfreq('MS').interpolate()"
        )
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise SeriesError(
            f"{label}: the value at {series.index[bad[0]]} ({series.iloc[bad[0]]}) is not a finite "
            f"number ({len(bad)} such value(s)); fill them in, for example by interpolation"
        )


def with_frequency(series: pd.Series) -> pd.Series:
    """The series with its frequency set on its index (inferred from the dates if it is not): the season, the
    calendar and the dates of a forecast come from it."""
    if series.index.freq is not None:
        return series
    series = series.copy()
    series.index.freq = _infer_freq(series.index)
    return series


def source_of(series: pd.Series) -> str | None:
    """The file or dataset a series was loaded from, if `load_series` loaded it."""
    return getattr(series, "attrs", {}).get("source")


@contextlib.contextmanager
def naming(label: str | None):
    """Prefix the SeriesErrors raised inside with the data's name, unless they already start with it."""
    try:
        yield
    except SeriesError as error:
        message = str(error)
        if label and not message.startswith(label):
            raise SeriesError(f"{label}: {message}") from None
        raise


def cut_after(series: pd.Series, when: str | pd.Timestamp, option: str) -> tuple[pd.Series, pd.Series]:
    """The points up to `when` (inclusive) and those after it; `option` names the date in the error."""
    try:
        cut = pd.Timestamp(when)
    except (ValueError, TypeError):
        raise SeriesError(f"{option}={when!r} is not a date; use a date such as 1959-01-01") from None
    if series.index.tz is not None and cut.tz is None:
        cut = cut.tz_localize(series.index.tz)
    return series[series.index <= cut], series[series.index > cut]


def split_series(
    series: pd.Series, split_after: str | pd.Timestamp = DEFAULT_SPLIT_AFTER
) -> tuple[pd.Series, pd.Series]:
    """Split by time as Darts' `split_after`: the training part ends at `split_after`, inclusive."""
    train, val = cut_after(series, split_after, "split_after")
    first, last = series.index[0].date(), series.index[-1].date()
    if len(train) == 0:
        raise SeriesError(f"split_after={split_after} is before the first date ({first}): the training part is empty")
    if len(val) == 0:
        raise SeriesError(
            f"split_after={split_after} is at or after the last date ({last}): nothing is left to validate on"
        )
    return train, val


def hold_out(series: pd.Series, test_after: str | pd.Timestamp) -> tuple[pd.Series, pd.Series]:
    """Cut off the test window: the points after `test_after`, which nothing but the final score may see.

    The window must lie inside the series, hold at least one season (two points where there is none: a score of
    one point says little), and no zeros, where MAPE is undefined."""
    seen, test = cut_after(series, test_after, "test_after")
    first, last = series.index[0].date(), series.index[-1].date()
    if len(test) == 0:
        raise SeriesError(f"test_after={test_after} is at or after the last date ({last}): the test window is empty")
    if len(seen) == 0:
        raise SeriesError(f"test_after={test_after} is before the first date ({first}): nothing is left to train on")
    season = season_length(series.index.freqstr) if series.index.freqstr else 1
    needed = max(season, 2)
    if len(test) < needed:
        raise SeriesError(
            f"test_after={test_after} leaves {len(test)} test point(s) after it; a test window needs at least "
            f"{needed} (a whole season of this series) to say how the forecast holds: move test_after earlier"
        )
    zeros = test.index[test.to_numpy() == 0]
    if len(zeros):
        raise SeriesError(
            f"the test window after {test_after} has {len(zeros)} zero value(s) (first at {zeros[0].date()}), where "
            "MAPE is undefined; move test_after, or shift the series away from 0"
        )
    return seen, test


def check_mape_defined(val: pd.Series) -> None:
    """Refuse a validation part with zeros before any training: MAPE would divide by them."""
    zeros = val.index[val.to_numpy() == 0]
    if len(zeros):
        dates = ", ".join(str(d.date()) for d in zeros[:5]) + (" ..." if len(zeros) > 5 else "")
        raise SeriesError(
            f"the validation part has {len(zeros)} zero value(s) (at {dates}), where MAPE is undefined; "
            "move split_after so the validation months have no zeros, or shift the series away from 0"
        )


def check_fit_possible(config: ForecasterConfig, train: pd.Series, val: pd.Series) -> None:
    """Refuse, before training, data too short for the windows, a validation part where MAPE is undefined, and
    options the data cannot take (a log of values <= 0, seasonal options on a series without a season)."""
    season = season_length(train.index.freqstr) if train.index.freqstr else 1
    transform = config.target_transform
    lag = season if transform.endswith("seasonal_diff") else 1 if transform.endswith("diff") else 0
    if (transform.endswith("seasonal_diff") or config.calendar) and season == 1:
        option = f"target_transform={transform!r}" if transform.endswith("seasonal_diff") else "calendar=True"
        raise SeriesError(
            f"{option} needs a series with a season, and a {train.index.freqstr!r} series has none here; "
            "use another target_transform, or calendar=False"
        )
    if transform.startswith("log") or config.window_norm == "divide":
        # The log needs values above 0; a window's level after the log is above 0 only for values above 1.
        floor = 1.0 if transform.startswith("log") and config.window_norm == "divide" else 0.0
        options = " with ".join(
            option
            for option, used in (
                (f"target_transform={transform!r}", transform.startswith("log")),
                ("window_norm='divide'", config.window_norm == "divide"),
            )
            if used
        )
        values = pd.concat([train, val])
        low = values[values <= floor]
        if len(low):
            raise SeriesError(
                f"{options} needs values above {floor:g}, and the value at {low.index[0].date()} is {low.iloc[0]:g}; "
                "use target_transform='none' (or a difference) and window_norm='subtract' or 'none', or shift "
                "the series"
            )
    usable = len(train) - lag
    if usable <= config.training_length:
        differenced = f" ({len(train)} less the {lag} that {transform} takes)" if lag else ""
        raise SeriesError(
            f"the training part has {usable} points{differenced}, too few for training_length="
            f"{config.training_length}: one training window takes training_length + 1 = {config.training_length + 1} "
            "points; lower training_length or move split_after later"
        )
    if config.val_origins > len(val):
        raise SeriesError(
            f"val_origins={config.val_origins} is more than the {len(val)} points of the validation part: each origin "
            "is a point of it; lower val_origins"
        )
    check_mape_defined(val)


def season_length(freq: str) -> int:
    """Points per natural season of a frequency: 12 for monthly, 4 quarterly, 52 weekly, 7 daily, 5 business-daily,
    24 hourly (periods per day below a day); 1 where there is none (yearly, or a step that does not divide it)."""
    offset = pd.tseries.frequencies.to_offset(freq)
    name = offset.rule_code.split("-")[0].upper()
    per_cycle = {"M": 12, "MS": 12, "ME": 12, "Q": 4, "QS": 4, "QE": 4, "W": 52, "B": 5, "D": 7}.get(name)
    if per_cycle is None:
        try:
            per_cycle = pd.Timedelta(days=1) / pd.Timedelta(offset.nanos, "ns") if offset.n else None
        except ValueError:  # not a fixed step: yearly and the like
            return 1
        if per_cycle is None or not float(per_cycle).is_integer() or per_cycle < 2:
            return 1
        return int(per_cycle)
    step = offset.n
    return per_cycle // step if per_cycle % step == 0 and per_cycle // step > 1 else 1


def season_phase(date: pd.Timestamp, freq: str) -> int:
    """Where a date falls in its season (season_length points): the month of year for monthly data, the day of
    the week for daily, the hour of the day for hourly, and so on."""
    season = season_length(freq)
    if season == 1:
        return 0
    offset = pd.tseries.frequencies.to_offset(freq)
    name = offset.rule_code.split("-")[0].upper()
    if name in ("M", "MS", "ME"):
        position = date.month - 1
    elif name in ("Q", "QS", "QE"):
        position = date.quarter - 1
    elif name == "W":
        position = date.isocalendar().week - 1
    elif name in ("B", "D"):
        position = date.dayofweek
    else:  # a step of less than a day: steps since midnight
        return int((date - date.normalize()) / pd.Timedelta(offset.nanos, "ns")) % season
    return int(position // offset.n) % season


@dataclasses.dataclass(frozen=True)
class MinMaxScaler:
    """Maps the training part onto [0, 1]; fit on the training part only, so validation stays unseen."""

    minimum: float
    scale: float

    @classmethod
    def fit(cls, values: Iterable[float]) -> MinMaxScaler:
        values = np.asarray(values, dtype=np.float64)
        low, high = float(values.min()), float(values.max())
        return cls(minimum=low, scale=(high - low) or 1.0)  # a constant series maps to 0, as in scikit-learn

    def transform(self, values):
        return (values - self.minimum) / self.scale

    def inverse_transform(self, values):
        return values * self.scale + self.minimum


def _resolve(source: str | os.PathLike) -> tuple[object, str]:
    name = os.fspath(source)
    if name in BUILTIN_DATASETS:
        return importlib.resources.files("forecaster.datasets") / BUILTIN_DATASETS[name], name
    if not name.lower().endswith(".csv") and not os.path.exists(name):
        raise SeriesError(f"{name!r} is neither a CSV file nor a built-in dataset ({', '.join(BUILTIN_DATASETS)})")
    return name, name


def _line(row: int) -> int:
    """File line of a data row: the header is line 1."""
    return row + 2


def _drop_trailing_blank_rows(table: pd.DataFrame) -> pd.DataFrame:
    blank = (table == "").all(axis=1).to_numpy()
    end = len(table)
    while end and blank[end - 1]:
        end -= 1
    return table.iloc[:end]


def _pick_columns(
    table: pd.DataFrame, label: str, date_column: str | None, value_column: str | None
) -> tuple[str, str]:
    columns = [str(c) for c in table.columns]
    for role, name in (("date", date_column), ("value", value_column)):
        if name is not None and name not in columns:
            raise SeriesError(f"{label}: no {role} column {name!r}; the columns are: {', '.join(columns)}")
    if date_column and value_column:
        return date_column, value_column
    if len(columns) != 2:
        if len(columns) < 2:
            raise SeriesError(f"{label}: needs a date column and a value column, found only {columns}")
        raise SeriesError(
            f"{label} has {len(columns)} columns ({', '.join(columns)}): name the date and value columns "
            "(date_column=/value_column=, or --date-column/--value-column)"
        )
    if date_column or value_column:
        named = date_column or value_column
        other = columns[1 - columns.index(named)]
        return (named, other) if date_column else (other, named)
    first, second = columns
    if _mostly_dates(table[first]) or not _mostly_dates(table[second]):
        return first, second
    return second, first


def _mostly_dates(column: pd.Series) -> bool:
    return bool(pd.to_datetime(column.head(20), errors="coerce", format="mixed", utc=True).notna().mean() > 0.5)


def _parse_dates(column: pd.Series, label: str, name: str) -> pd.DatetimeIndex:
    text = column.str.strip()
    if (text == "").any():
        row = int(np.flatnonzero(text == "")[0])
        raise SeriesError(
            f"{label}, line {_line(row)}: the date in column {name!r} is missing; fill it in or delete the line"
        )
    try:
        with warnings.catch_warnings():  # pandas 2 warns of mixed offsets and returns objects; pandas 3 refuses them
            warnings.simplefilter("ignore", FutureWarning)
            dates = pd.to_datetime(text, errors="coerce")
        if dates.dtype == object:
            raise ValueError("the dates have different UTC offsets")
    except ValueError as error:  # e.g. offsets that change with daylight saving time
        raise SeriesError(
            f"{label}: cannot read column {name!r} as one kind of date ({error}); write every date in one time "
            "zone, for example in UTC, or without an offset"
        ) from None
    if dates.isna().any():
        row = int(np.flatnonzero(dates.isna())[0])
        raise SeriesError(
            f"{label}, line {_line(row)}: cannot read {text.iloc[row]!r} in column {name!r} as a date "
            f"in the format of line {_line(0)} ({text.iloc[0]!r}); write every date the same way, e.g. 1949-01-31"
        )
    return pd.DatetimeIndex(dates)


def _parse_values(column: pd.Series, label: str, name: str) -> np.ndarray:
    text = column.str.strip()
    missing = (text == "") | text.str.lower().isin(["nan", "na", "n/a", "null", "none"])
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise SeriesError(
            f"{label}, line {_line(row)}: the value in column {name!r} is missing ({text.iloc[row]!r}); "
            "fill it in (for example by interpolation): the model needs a value at every date"
        )
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise SeriesError(f"{label}, line {_line(row)}: {text.iloc[row]!r} in column {name!r} is not a finite number")
    return values


def _check_order(dates: pd.DatetimeIndex, label: str) -> None:
    duplicated = dates.duplicated()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0])
        first = int(np.flatnonzero(dates == dates[row])[0])
        raise SeriesError(
            f"{label}, line {_line(row)}: date {dates[row]} already appears on line {_line(first)}; "
            "keep one row per date (aggregate or delete the duplicates)"
        )
    if len(dates) > 1:
        backwards = np.flatnonzero(dates[1:] < dates[:-1])
        if len(backwards):
            row = int(backwards[0]) + 1
            raise SeriesError(
                f"{label}, line {_line(row)}: date {dates[row]} comes after {dates[row - 1]} (line {_line(row - 1)}); "
                "sort the rows by date"
            )


def _check_frequency(dates: pd.DatetimeIndex, label: str, freq: str | None) -> str:
    if len(dates) < 3:
        raise SeriesError(f"{label}: only {len(dates)} rows; a time series needs many more points than that")
    if freq is None:
        freq = _infer_freq(dates)
        if freq is not None:
            return freq
        freq = _coarsest_fitting_frequency(dates)
        if freq is None:
            steps = np.asarray((dates[1:] - dates[:-1]) / pd.Timedelta(days=1))
            monthly = len(steps) and steps.min() >= 28 and steps.max() <= 31
            hint = (
                "monthly dates must all fall on the first day of their month (freq 'MS') or on its last (freq 'ME'); "
                if monthly
                else ""
            )
            raise SeriesError(
                f"{label}: the dates are not evenly spaced and no regular frequency fits them; {hint}"
                "resample the series to a regular frequency, or pass freq= (e.g. 'MS', 'D')"
            )
    try:
        expected = pd.date_range(dates[0], dates[-1], freq=freq)
    except ValueError:
        raise SeriesError(
            f"freq={freq!r} is not a pandas frequency; use an alias such as 'D', 'W', 'MS' or 'h'"
        ) from None
    off_grid = dates.difference(expected)
    if len(off_grid):
        row = int(dates.get_loc(off_grid[0]))
        raise SeriesError(
            f"{label}, line {_line(row)}: date {off_grid[0]} does not fall on the series' frequency {freq!r}; "
            "resample the series to a regular frequency"
        )
    missing = expected.difference(dates)
    if len(missing):
        row = int(dates.searchsorted(missing[0]))
        show = (lambda d: str(d.date())) if (expected == expected.normalize()).all() else str
        raise SeriesError(
            f"{label}, line {_line(row)}: gap in the {freq!r} series, {len(missing)} date(s) missing, the first "
            f"being {show(missing[0])} (between line {_line(row - 1)}, {show(dates[row - 1])}, and line "
            f"{_line(row)}, {show(dates[row])}); add the missing rows (interpolated values are fine) or resample"
        )
    return freq


def _infer_freq(dates: pd.DatetimeIndex) -> str | None:
    """`pd.infer_freq` as a string on pandas 2 and 3 alike (pandas 3 is moving it to an offset object)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*infer_?freq")
        freq = pd.infer_freq(dates)
    return getattr(freq, "freqstr", freq)


_CANDIDATE_FREQUENCIES = (
    "YS",
    "YE",
    "QS",
    "QE",
    "MS",
    "ME",
    "W-SUN",
    "W-MON",
    "W-TUE",
    "W-WED",
    "W-THU",
    "W-FRI",
    "W-SAT",
    "B",
    "D",
    "h",
    "min",
    "s",
)


def _coarsest_fitting_frequency(dates: pd.DatetimeIndex) -> str | None:
    """The coarsest common frequency whose grid holds every date: the series' frequency, up to its gaps."""
    span = dates[-1] - dates[0]
    for freq in _CANDIDATE_FREQUENCIES:
        step = (pd.Timestamp("2000-01-01") + pd.tseries.frequencies.to_offset(freq)) - pd.Timestamp("2000-01-01")
        if span / step > 10 * len(dates) + 10:  # a grid this fine would be mostly gaps: not this series
            continue
        if dates.isin(pd.date_range(dates[0], dates[-1], freq=freq)).all():
            return freq
    return None
