"""What a baseline is: one small interface that the sweep, the ensemble, the saved answer and the summary ask instead of
comparing baseline names (forecaster/baselines/__init__.py keeps the registry).

A baseline says
- on which data it runs (`runs_on`: itself, a variant made for the data's seasons, or why not);
- the seasons and covariates it reads (`seasons_read`, `reads_futr`) and on how many of each series' last points it
  fits (`fit_points`);
- its fit and forecast, with its own prediction intervals (`fit`, `forecast`), and its forecast after newer points
  without fitting again (`forward`);
- what its fits cost (`seconds_per_series`), which a sweep's --time-limit and its budget per series read.

Forecasts are (steps, S): one column per series of the history, `steps` points after each series' end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from forecaster.data.panel import Panel

FIT_POINTS = 2500
"""A statistical baseline fits each series' last FIT_POINTS points at least, as AutoGluon-TimeSeries' local models
(`default_max_ts_length = 2500`): the whole of any monthly or quarterly series, a few months of hourly data."""
FIT_CYCLES = 10
"""...and at least FIT_CYCLES cycles of the longest season it reads (10 weeks for MSTL on half-hourly data). On the
inner windows of a year of hourly data and of taylor, fits on these many points scored as well as fits on the whole
history at a fraction of the cost (docs/design-notes.md, "Long series")."""

Bounds = dict[float, tuple[np.ndarray, np.ndarray]]
"""{level: (lower, upper)}, each (steps, S)."""


class BaselineUnavailable(RuntimeError):
    """A baseline that cannot run here, or on this series; the message says why."""


@dataclasses.dataclass
class BaselineForecast:
    values: np.ndarray
    """(steps, S) in original units."""
    fell_back: list[str] = dataclasses.field(default_factory=list)
    """Ids of the series the model could not fit, forecast by seasonal naive instead (a panel of several only)."""
    bounds: Bounds = dataclasses.field(default_factory=dict)
    """{level: (lower, upper)}, each (steps, S): the model's own prediction intervals at the levels asked for."""


@dataclasses.dataclass
class FittedBaseline:
    """A baseline fit on each series of a history, which forecasts after the same series grown by newer points without
    fitting again (`Baseline.forward`): for statsforecast's models their `forward` (form and parameters kept, states
    run on over the newer points), as statsforecast's cross-validation does with refit=False."""

    method: str
    ids: np.ndarray
    """The series, in the history's order."""
    models: list[Any] | None
    """Per series, the fitted model; None where it could not fit (seasonal naive stands in). None for a baseline that
    fits nothing."""
    season: int | None = None
    """The season of the seasonal naive that forecasts or stands in; None: the panel's."""
    left_out: np.ndarray | None = None
    """(S,) the points at the start of each series that the fit did not read (`Baseline.fit_points`): a forward over
    newer points starts where the fit did. None: none."""


@dataclasses.dataclass(frozen=True)
class Baseline:
    """The interface of a baseline. Instances are small, frozen and picklable: a sweep sends them to its Ray tasks."""

    name: str
    seasons: tuple[int, ...] = ()
    """Seasons of its own it was made for (MSTL's, decided on the data by `runs_on`); (): the data's."""

    fits: ClassVar[bool] = True
    """It fits a model per series, whose cost a sweep plans and --time-limit may cut; False: it costs nothing (seasonal
    naive), and a sweep always waits for it."""
    combined: ClassVar[bool] = False
    """One of the statistical combination's members (sweeps.answer.combination), on a panel of several series."""
    reads_futr: ClassVar[bool] = False
    """It reads the known-ahead covariates as regressors: every one of a sweep's, whose future a forecast then needs."""
    prior_seconds_per_series: ClassVar[float] = 0.0
    """Seconds per series on one CPU of one fit and its run on, intervals included, before a sweep has timed any."""
    seconds_per_point: ClassVar[float] = 0.0
    """On long series: seconds per point and fit on one CPU, intervals included."""

    # --- the data it runs on ----------------------------------------------------------------------------------------
    def runs_on(self, history: Panel, shortest: int) -> list[Baseline] | str:
        """The baselines it gives on data like `history`, whose shortest series holds `shortest` points: itself by
        default, more than one (seasonal naive at another season) or none; a str: why it cannot run there, which a
        sweep's summary says."""
        return [self]

    def seasons_read(self, season: int) -> tuple[int, ...]:
        """The seasons it reads, of data whose models' season is `season`: its own, else the data's (none where 1)."""
        if self.seasons:
            return self.seasons
        return (season,) if season > 1 else ()

    def fit_points(self, season: int) -> int:
        """How many of each series' last points it fits on: FIT_POINTS, or FIT_CYCLES cycles of the longest season it
        reads where that is more."""
        return max(FIT_POINTS, FIT_CYCLES * max(self.seasons_read(season), default=1))

    def how_fit(self, history: Panel) -> str | None:
        """How it is fit on `history` where not on its series as they are, for a sweep's summary; None: as they are."""
        return None

    def seconds_per_series(self, panel: Panel, points: int | None = None, fits: int = 2) -> float:
        """What it is expected to take per series of `panel` on one CPU: `fits` fits (and runs on) of each series'
        last `points` points (default: all of them)."""
        mean_length = len(panel.values) / max(len(panel), 1)
        read = mean_length if points is None else min(mean_length, points)
        prior = self.prior_seconds_per_series * fits / 2  # measured on a fit and its run on
        return max(prior, fits * self.seconds_per_point * read)

    # --- fitting and forecasting ------------------------------------------------------------------------------------
    def forecast(self, history: Panel, steps: int, n_jobs: int = -1, levels: Sequence[float] = ()) -> BaselineForecast:
        """Its forecast of `steps` points after every series of `history`, with its intervals at `levels` (`n_jobs`:
        processes to fit the series in, -1 every CPU, where it fits them in parallel)."""
        return self.fit(history, steps, levels)[0]

    def fit(
        self, history: Panel, steps: int, levels: Sequence[float] = (), points: int | None = None
    ) -> tuple[BaselineForecast, FittedBaseline | None]:
        """Fit on each series of `history` in turn, on its last `points` points (default: `fit_points`), forecasting
        `steps` points after it with its intervals at `levels`; the series it cannot fit take seasonal naive's
        forecast (named in `fell_back`). The fitted models go with it, for `forward`; None where it fits nothing."""
        raise NotImplementedError

    def forward(
        self, fitted: FittedBaseline | None, newer: Panel, steps: int, levels: Sequence[float] = ()
    ) -> BaselineForecast:
        """The forecast of `steps` points after each series of `newer` (the series `fitted` was fit on, grown by newer
        points) by the models fit before, without fitting again."""
        return self.fit(newer, steps, levels)[0]
