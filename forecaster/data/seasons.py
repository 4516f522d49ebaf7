"""The season of a frequency and where a time falls in it: what the calendar inputs, seasonal differences, MASE and
seasonal naive read; and every season of it (a day and a week of hourly data), for the baselines that read several.
A plain time index has no calendar: its season is given, and its place counted from a start."""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

_PER_CYCLE = {"M": 12, "MS": 12, "ME": 12, "Q": 4, "QS": 4, "QE": 4, "W": 52, "B": 5, "D": 7}


def season_length(freq: str) -> int:
    """Points per natural season of a frequency: 12 for monthly, 4 quarterly, 52 weekly, 7 daily, 5 business-daily,
    24 hourly (periods per day below a day); 1 where there is none (yearly, or a step that does not divide it)."""
    offset = pd.tseries.frequencies.to_offset(freq)
    per_cycle: float | None = _PER_CYCLE.get(_base_name(offset))
    if per_cycle is None:
        try:
            per_cycle = pd.Timedelta(days=1) / pd.Timedelta(offset.nanos, "ns") if offset.n else None
        except ValueError:  # not a fixed step: yearly and the like
            return 1
        if per_cycle is None or not float(per_cycle).is_integer() or per_cycle < 2:
            return 1
        return int(per_cycle)
    step = offset.n
    return int(per_cycle // step) if per_cycle % step == 0 and per_cycle // step > 1 else 1


def season_phase(date: pd.Timestamp, freq: str) -> int:
    """Where a date falls in its season (season_length points): the month of year for monthly data, the day of
    the week for daily, the hour of the day for hourly, and so on."""
    return int(season_phases(pd.DatetimeIndex([date]), freq)[0])


def season_phases(dates: pd.DatetimeIndex, freq: str, period: int | None = None) -> np.ndarray:
    """season_phase of many dates at once (int64); with `period`, a whole number of seasons (nested_seasons: the
    week of half-hourly data, 336 points), the place in that longer period (the day of the week's steps before
    the day's)."""
    season = season_length(freq)
    if season == 1:
        return np.zeros(len(dates), dtype=np.int64)
    offset = pd.tseries.frequencies.to_offset(freq)
    name = _base_name(offset)
    if period is not None and period != season:
        days = np.asarray(dates.dayofweek, dtype=np.int64)
        return cast(np.ndarray, (days * season + season_phases(dates, freq)) % period)
    if name in ("M", "MS", "ME"):
        position = dates.month.to_numpy() - 1
    elif name in ("Q", "QS", "QE"):
        position = dates.quarter.to_numpy() - 1
    elif name == "W":
        position = dates.isocalendar().week.to_numpy().astype(np.int64) - 1
    elif name in ("B", "D"):
        position = dates.dayofweek.to_numpy()
    else:  # a step of less than a day: steps since midnight
        steps = (dates - dates.normalize()) // pd.Timedelta(offset.nanos, "ns")
        return np.asarray(steps, dtype=np.int64) % season
    return (np.asarray(position, dtype=np.int64) // offset.n) % season


def _base_name(offset: pd.offsets.BaseOffset) -> str:
    return offset.rule_code.split("-")[0].upper()


_DAYS_PER_YEAR = 365.25
_PER_YEAR = {"M": 12, "MS": 12, "ME": 12, "Q": 4, "QS": 4, "QE": 4, "W": _DAYS_PER_YEAR / 7}
_PER_WEEK = {"B": (5,), "D": (7, _DAYS_PER_YEAR)}


def season_lengths(freq: str) -> tuple[float, ...]:
    """Every natural season of a frequency in points, shortest first, for the baselines that read more than one
    (MSTL, and seasonal naive at the longest the data cover): a day and a week below a day (24 and 168 hourly), a
    week and a year daily, a year from weekly data on (52.18 weekly, 12 monthly, 4 quarterly); none yearly. A whole
    number where the step divides the season, else a fraction (365.25 days a year), which the baselines round.
    season_length stays the models' season: the first, whole (52 weeks a year; 1 where a step does not divide it)."""
    offset = pd.tseries.frequencies.to_offset(freq)
    name = _base_name(offset)
    if name in _PER_YEAR or name in _PER_WEEK:
        cycles = (_PER_YEAR[name],) if name in _PER_YEAR else _PER_WEEK[name]
        points = [cycle / offset.n for cycle in cycles]
    else:
        try:
            step = pd.Timedelta(offset.nanos, "ns")
        except ValueError:  # not a fixed step: yearly and the like
            return ()
        if step <= pd.Timedelta(0) or step >= pd.Timedelta(days=1):
            return ()
        points = [pd.Timedelta(days=1) / step, pd.Timedelta(days=7) / step]
    return tuple(int(length) if float(length).is_integer() else float(length) for length in points if length >= 2)


def usable_seasons(freq: str | None, shortest_length: int, season: int = 1, cycles: int = 2) -> tuple[int, ...]:
    """The seasons of `freq` (of a plain time index: its given `season` alone), rounded to whole points, of which the
    shortest series, `shortest_length` points, holds `cycles` full cycles: two for MSTL to tell a season from the
    trend (R's forecast::mstl drops the others), one for seasonal naive to repeat it, 0 for every one."""
    seasons = season_lengths(freq) if freq is not None else ((season,) if season > 1 else ())
    # MSTL (statsmodels' STL) and seasonal naive take whole periods: a year of days is 365, of weeks 52.
    whole = sorted({round(length) for length in seasons})
    return tuple(length for length in whole if cycles * length <= shortest_length)


def nested_seasons(freq: str | None, season: int) -> tuple[int, ...]:
    """The models' season and every longer season of `freq` that is a whole number of it, shortest first: (48, 336)
    for half-hourly data, the day and the week; (season,) where there is no such longer one (a year of days is not
    a whole number of weeks) or on a plain time index. The seasonal adjustment takes them one after the other
    (forecaster.features.transforms.seasonal_components)."""
    if freq is None or season < 2:
        return (season,)
    longer = [length for length in season_lengths(freq) if float(length).is_integer() and length > season]
    return (season, *(int(length) for length in longer if length % season == 0))
