"""`Panel`: the one data type of the forecaster. Many series in one long table (`unique_id, ds, y`, the convention of
neuralforecast, statsforecast and utilsforecast); a single series is a panel of one.

It is held as flat arrays, series after series, with the offset where each starts (as neuralforecast's
TimeSeriesDataset does): every per-series operation (a split, a scaler, a window's place) is then a NumPy
expression over all series at once, so a panel of 100,000 series costs no Python loop over them.

Time is either dates (a pandas frequency, the season from it) or a plain integer index (the season given by the
user, each series' place in the season counted from its own first point, as loaded: `origins`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from forecaster.data.covariates import Covariates
from forecaster.data.seasons import season_phases


@dataclasses.dataclass(frozen=True, eq=False)
class Panel:
    """Many series back to back, each with its id and times (a single series is a panel of one): the one data type
    of the forecaster. Read one with forecaster.data.read.load_panel."""

    ids: np.ndarray
    """(S,) the series' ids, as text, in the order of their first row."""
    offsets: np.ndarray
    """(S + 1,) int64: series i holds rows offsets[i]:offsets[i + 1]."""
    times: np.ndarray
    """(N,) datetime64[ns] for dated panels, int64 for a plain time index; increasing within each series."""
    values: np.ndarray
    """(N,) float64."""
    freq: str | None
    """The pandas frequency of dated panels (e.g. 'MS'); None for a plain time index."""
    season: int
    """Points per season: 12 for monthly data; 1 where there is none."""
    origins: np.ndarray | None = None
    """(S,) int64, plain time index only: the time at which each series' season count starts (its first point as
    loaded), so that a part cut from it keeps its place in the season."""
    source: str | None = None
    """The file or built-in dataset it came from: errors found later name it."""
    value_name: str | None = None
    """The value column's name, for labels."""
    horizon: int | None = None
    """The official hold-out of a benchmark panel (points at the end of every series), None otherwise."""
    dropped: tuple[str, ...] = ()
    """Ids of series dropped as too short for the fit asked of them (drop_short)."""
    lines: np.ndarray | None = None
    """(N,) int64: where each point is in its file (a CSV's line, a Parquet file's or a table's row), for messages
    about a value found later (a log of 0); None for data built in code."""
    line_kind: str = "line"
    """What `lines` count: 'line' (a CSV file, the header being line 1) or 'row'."""
    covariates: Covariates | None = None
    """The series' known-ahead, historic and static covariates (forecaster/data/covariates.py), or None without any."""
    unused_columns: tuple[str, ...] = ()
    """Columns of the data that no option names: the banner lists them, so that nothing is dropped in silence."""

    # --- shape --------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ids)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def dated(self) -> bool:
        return self.freq is not None

    @property
    def positions(self) -> np.ndarray:
        """(N,) each row's position within its series, from 0."""
        positions: np.ndarray = np.arange(len(self.values)) - np.repeat(self.offsets[:-1], self.lengths)
        return positions

    @property
    def cells(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions, series): where each row sits in a (steps, S) grid of the panel, one column per series."""
        return self.positions, np.repeat(np.arange(len(self)), self.lengths)

    @property
    def label(self) -> str:
        return self.source or "the data"

    def describe_time(self, time: Any) -> str:
        """A time as a message shows it: a date (with the hour where it has one), or the integer."""
        if not self.dated:
            return str(int(time))
        stamp = pd.Timestamp(time)
        return str(stamp.date()) if stamp == stamp.normalize() else str(stamp)

    # --- parts --------------------------------------------------------------------------------------------------
    def take(self, keep: np.ndarray) -> Panel:
        """The series where `keep` (a boolean mask over series) is true, in order."""
        keep = np.asarray(keep, dtype=bool)
        rows = np.repeat(keep, self.lengths)
        return dataclasses.replace(
            self,
            ids=self.ids[keep],
            offsets=np.concatenate([[0], np.cumsum(self.lengths[keep])]).astype(np.int64),
            times=self.times[rows],
            values=self.values[rows],
            origins=None if self.origins is None else self.origins[keep],
            lines=None if self.lines is None else self.lines[rows],
            covariates=None if self.covariates is None else self.covariates.take(keep),
        )

    def split_at(self, head_lengths: np.ndarray) -> tuple[Panel, Panel]:
        """Each series cut in two after its first head_lengths[i] points: (heads, tails). Both parts keep the
        series' ids and their place in the season."""
        head_lengths = np.asarray(head_lengths, dtype=np.int64)
        in_head = self.positions < np.repeat(head_lengths, self.lengths)

        def part(rows: np.ndarray, lengths: np.ndarray, covariates: Covariates | None) -> Panel:
            return dataclasses.replace(
                self,
                offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                times=self.times[rows],
                values=self.values[rows],
                lines=None if self.lines is None else self.lines[rows],
                covariates=covariates,
            )

        covariates = self.covariates
        tail_covariates = None if covariates is None else covariates.after(head_lengths)
        return part(in_head, head_lengths, covariates), part(~in_head, self.lengths - head_lengths, tail_covariates)

    def split_last(self, points: int) -> tuple[Panel, Panel]:
        """Each series' last `points` points apart: (the rest, the last points)."""
        return self.split_at(self.lengths - points)

    def last(self, points: int) -> Panel:
        """Each series' last `points` points (all of a shorter one), with their covariates and place in the season."""
        return self.split_at(np.maximum(self.lengths - points, 0))[1]

    def points_up_to(self, when: Any) -> np.ndarray:
        """(S,) how many points of each series lie at or before `when` (a date, or an integer time)."""
        at_or_before = (self.times <= when).astype(np.int64)
        counts = np.add.reduceat(at_or_before, self.offsets[:-1]) if len(self.times) else np.zeros(len(self), np.int64)
        return np.where(self.lengths > 0, counts, 0)

    def cut_after(self, when: Any) -> tuple[Panel, Panel]:
        """Each series cut after `when` (a date, or a time of a plain index), inclusive as Darts' split_after:
        (the points up to it, the points after it)."""
        time = np.datetime64(pd.Timestamp(when).tz_localize(None), "ns") if self.dated else int(when)
        return self.split_at(self.points_up_to(time))

    def first_times(self) -> np.ndarray:
        first: np.ndarray = self.times[self.offsets[:-1]]
        return first

    def last_times(self) -> np.ndarray:
        last: np.ndarray = self.times[self.offsets[1:] - 1]
        return last

    def phases(self, row_index: np.ndarray | None = None, period: int | None = None) -> np.ndarray:
        """The place in the season of the given rows (default: each series' first point), counted from the place of
        its series' first point: the month of the year for monthly dates (the first point's, plus the points
        since), and on a plain time index the points since the series' start as loaded, modulo the season. Every
        window, forecast and checkpoint counts the same way, also where a calendar's own count drifts (a 53-week
        year). `period`: a whole number of seasons to count in instead (the week of hourly data: 168)."""
        if row_index is None:
            rows, series = self.offsets[:-1], np.arange(len(self))
        else:
            rows = np.asarray(row_index)
            series = np.searchsorted(self.offsets, rows, side="right") - 1
        period = self.season if period is None else period
        if period == 1:
            return np.zeros(len(rows), dtype=np.int64)
        first = self.offsets[:-1]
        if self.dated:
            start = season_phases(pd.DatetimeIndex(self.times[first]), str(self.freq), period)
        else:
            start = (self.times[first] - self.origins) % period
        phases: np.ndarray = (start[series] + rows - first[series]) % period
        return phases

    def future_times(self, steps: int) -> np.ndarray:
        """(S, steps): the times of the `steps` points after each series' end."""
        last = self.last_times()
        if not self.dated:
            return last[:, None] + np.arange(1, steps + 1)[None, :]
        offset = pd.tseries.frequencies.to_offset(str(self.freq))
        return np.stack([pd.DatetimeIndex(last) + offset * step for step in range(1, steps + 1)], axis=1).astype(
            "datetime64[ns]"
        )

    # --- views --------------------------------------------------------------------------------------------------
    def series(self, index: int = 0) -> pd.Series:
        """Series `index` as a pandas Series (dates with their frequency, or the integer times)."""
        rows = slice(self.offsets[index], self.offsets[index + 1])
        time_index: pd.Index
        if self.dated:
            time_index = pd.DatetimeIndex(self.times[rows], freq=str(self.freq))
        else:
            time_index = pd.Index(self.times[rows], name="ds")
        series = pd.Series(self.values[rows], index=time_index, name=self.value_name)
        series.attrs["unique_id"] = str(self.ids[index])
        if self.source:
            series.attrs["source"] = self.source
        return series

    def to_frame(self) -> pd.DataFrame:
        """The long table: unique_id, ds, y."""
        return pd.DataFrame({"unique_id": np.repeat(self.ids, self.lengths), "ds": self.times, "y": self.values})

    def where(self, row: int) -> str:
        """A point for a message: its series (in a panel of several) and its line, where they are known."""
        series = int(np.searchsorted(self.offsets, row, side="right") - 1)
        place = f"{self.line_kind} {self.lines[row]}" if self.lines is not None else ""
        named = f"series {self.ids[series]!r}" if len(self) > 1 else ""
        return ", ".join(part for part in (named, place) if part)

    def id_list(self, ids: Sequence[str] | np.ndarray, limit: int = 5) -> str:
        """The first `limit` of `ids` for a message, with how many more."""
        shown = ", ".join(repr(str(i)) for i in list(ids)[:limit])
        return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
