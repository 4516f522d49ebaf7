"""Seasonal naive: each point is the same point of the last season seen (the month a year before, for monthly data);
where the data has no season, or a series is shorter than one, the last value (naive). It costs nothing, and a model
that does not beat it has learned nothing worth deploying. Where the series hold cycles of a longer season than the
panel's (a week of hourly data), a second one reads it, named by it: "seasonal naive (168)". It also stands in for any
statistical baseline on the series that baseline cannot fit.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence

import numpy as np

from forecaster.baselines.base import Baseline, BaselineForecast, Bounds, FittedBaseline
from forecaster.data.panel import Panel

SEASONAL_NAIVE = "seasonal naive"


def seasonal_naive(history: Panel, steps: int, season: int | None = None) -> np.ndarray:
    """(steps, S): every series' last season repeated (its last value, where there is no season or the series is
    shorter than one). `season`: another than the panel's (a week of hourly data)."""
    season = history.season if season is None else season
    ends = history.offsets[1:]
    period = np.where(history.lengths >= season, season, 1)
    ahead = np.arange(steps)[:, None]
    values: np.ndarray = history.values[ends[None, :] - period[None, :] + ahead % period[None, :]]
    return values


def seasonal_naive_bounds(history: Panel, steps: int, levels: Sequence[float], season: int | None = None) -> Bounds:
    """Seasonal naive's prediction intervals from its residuals (Hyndman and Athanasopoulos, Forecasting: Principles
    and Practice, 5.5): the forecast plus and minus z times the standard deviation of each series' in-sample
    seasonal differences, times the square root of the seasons ahead, k + 1 for step h = k m + 1 ... (k + 1) m."""
    season = history.season if season is None else season
    period = np.where(history.lengths >= season, season, 1)
    rows = np.repeat(np.arange(len(history)), history.lengths)
    positions = history.positions
    later = np.flatnonzero(positions >= period[rows])
    residuals = history.values[later] - history.values[later - period[rows[later]]]
    sums = np.bincount(rows[later], weights=residuals**2, minlength=len(history))
    counts = np.bincount(rows[later], minlength=len(history))
    sigma = np.sqrt(sums / np.maximum(counts, 1))
    ahead = np.sqrt(np.arange(steps)[:, None] // period[None, :] + 1)
    forecast = seasonal_naive(history, steps, season)
    found = {}
    for level in levels:
        width = statistics.NormalDist().inv_cdf(0.5 + level / 200) * sigma[None, :] * ahead
        found[level] = (forecast - width, forecast + width)
    return found


def stand_in(history: Panel, steps: int, levels: Sequence[float], season: int | None = None) -> BaselineForecast:
    """Seasonal naive's forecast and intervals, in arrays of their own: what a statistical baseline starts from and
    fills series by series, so that the series it cannot fit keep these."""
    bounds = {
        level: (pair[0].copy(), pair[1].copy())
        for level, pair in seasonal_naive_bounds(history, steps, levels, season).items()
    }
    return BaselineForecast(seasonal_naive(history, steps, season), bounds=bounds)


def naive_name(season: int) -> str:
    """Seasonal naive at a season longer than the panel's, named by it: the panel's own keeps the plain name."""
    return f"{SEASONAL_NAIVE} ({season})"


def naive_season(name: str) -> int | None:
    """The season of a baseline named by `naive_name`; None for any other."""
    prefix = f"{SEASONAL_NAIVE} ("
    if name.startswith(prefix) and name.endswith(")") and name[len(prefix) : -1].isdigit():
        return int(name[len(prefix) : -1])
    return None


@dataclasses.dataclass(frozen=True)
class SeasonalNaive(Baseline):
    """Seasonal naive at the panel's season (`season` None) or at a longer one of its own."""

    name: str = SEASONAL_NAIVE
    season: int | None = None

    fits = False

    @classmethod
    def at(cls, season: int) -> SeasonalNaive:
        return cls(naive_name(season), season=season)

    def runs_on(self, history: Panel, shortest: int) -> list[Baseline] | str:
        """The panel's seasonal naive, and where every series holds a cycle of a longer season, one at the longest."""
        from forecaster.data.seasons import usable_seasons

        one_cycle = usable_seasons(history.freq, shortest, history.season, cycles=1)
        if one_cycle and one_cycle[-1] > history.season:
            return [self, SeasonalNaive.at(one_cycle[-1])]
        return [self]

    def seasons_read(self, season: int) -> tuple[int, ...]:
        if self.season is not None:
            return (self.season,)
        return super().seasons_read(season)

    def forecast(self, history: Panel, steps: int, n_jobs: int = -1, levels: Sequence[float] = ()) -> BaselineForecast:
        values = seasonal_naive(history, steps, self.season)
        return BaselineForecast(values, bounds=seasonal_naive_bounds(history, steps, levels, self.season))

    def fit(
        self, history: Panel, steps: int, levels: Sequence[float] = (), points: int | None = None
    ) -> tuple[BaselineForecast, FittedBaseline | None]:
        found = stand_in(history, steps, levels, self.season)
        if self.season is None:
            return found, None
        return found, FittedBaseline(self.name, history.ids, None, self.season)

    def forward(
        self, fitted: FittedBaseline | None, newer: Panel, steps: int, levels: Sequence[float] = ()
    ) -> BaselineForecast:
        return stand_in(newer, steps, levels, self.season)
