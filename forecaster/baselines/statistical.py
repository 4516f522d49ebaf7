"""statsforecast's models as baselines, fit on every series of a panel: AutoETS (exponential smoothing, its form chosen
automatically), Theta (the standard Theta method, the winner of the M3 competition; not AutoTheta, which chooses among
variants and scores worse on M3 monthly: docs/benchmarks.md, "M3 monthly") and AutoCES (complex exponential
smoothing), untuned; where the data have more than one season (a day and a week of hourly data:
forecaster.data.seasons.season_lengths), MSTL (each season taken off by STL, the rest forecast by AutoETS without a
season)
where every series holds two cycles of at least two seasons; and on panels with known-ahead covariates, AutoARIMA given
them as regressors.

statsforecast is an optional extra (`pip install '.[baselines]'`, with statsmodels and scipy; docs/benchmarks.md says
what it costs to install); without it these say so. AutoCES's intervals are its simulation's quantiles in closed form
(`_ces_bounds`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, cast

import numpy as np
import pandas as pd

from forecaster.baselines.base import Baseline, BaselineForecast, BaselineUnavailable, Bounds, FittedBaseline
from forecaster.baselines.naive import stand_in
from forecaster.data.panel import Panel

MSTL_TREND = "ZZN"
"""AutoETS's form for MSTL's seasonally adjusted series: chosen automatically, without a season (MSTL took them)."""
ARIMA_EXACT_SEASON = 12
"""AutoARIMA chooses its orders by the exact likelihood up to this season, by its approximation (CSS) above it, as R's
auto.arima (`approximation = length(x) > 150 | frequency(x) > 12`; statsforecast's default is exact): on a year of
hourly data, 5-12 times faster at the same inner-window sMAPE (docs/design-notes.md, "Long series")."""
ETS_LONGEST_SEASON = 24
"""The longest season statsforecast's AutoETS fits, as R's ets: its forecast of a seasonal model of a longer one is
empty (statsforecast/ets.py, `etsforecast`: `if m > 24 and season != Nothing: return`), and on half-hourly data it
forecast a flat line. Beyond it AutoETS forecasts the series less its season, which STL takes off and adds back (R's
stlf; statsforecast's MSTL with that one season)."""


@dataclasses.dataclass(frozen=True)
class Statistical(Baseline):
    """A statsforecast model fit on each series: in parallel by StatsForecast for a forecast alone (`forecast`), series
    by series where the fitted models are kept (`fit`), seasonal naive standing in for the series it cannot fit."""

    def model(self, history: Panel) -> Any:
        """An unfit statsforecast model for `history`'s series."""
        raise NotImplementedError

    def _statsforecast(self) -> Any:
        try:
            from statsforecast import models
        except ImportError:
            raise BaselineUnavailable(f"{self.name} needs statsforecast: pip install '.[baselines]'") from None
        return models

    def regressors(self, history: Panel, index: int, steps: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Series `index`'s regressors over its history and over the `steps` points after it: none by default."""
        return None, None

    def forecast(self, history: Panel, steps: int, n_jobs: int = -1, levels: Sequence[float] = ()) -> BaselineForecast:
        """Every series fit in parallel (StatsForecast with `n_jobs` processes), on each series' last `fit_points`."""
        model = self.model(history)
        import statsforecast

        frame = history.last(self.fit_points(history.season)).to_frame()
        engine = statsforecast.StatsForecast(models=[model], freq=history.freq or 1, n_jobs=n_jobs)
        named = {level: int(level) if float(level).is_integer() else level for level in levels}  # statsforecast's names
        try:
            predicted = engine.forecast(df=frame, h=steps, level=cast(Any, list(named.values())) or None)
        except Exception as error:  # statsforecast raises bare Exceptions on series it cannot fit (a noiseless one)
            if len(history) == 1:
                raise BaselineUnavailable(f"{self.name} could not fit this series ({error})") from None
            return self.fit(history, steps, levels)[0]  # the slow path: each series on its own
        column = getattr(model, "alias", self.name)
        bounds = {
            level: (
                _columns(predicted, history, f"{column}-lo-{name}", steps),
                _columns(predicted, history, f"{column}-hi-{name}", steps),
            )
            for level, name in named.items()
        }
        return BaselineForecast(_columns(predicted, history, column, steps), bounds=bounds)

    def fit(
        self, history: Panel, steps: int, levels: Sequence[float] = (), points: int | None = None
    ) -> tuple[BaselineForecast, FittedBaseline | None]:
        found = stand_in(history, steps, levels)
        model = self.model(history)
        fit_on = history.last(self.fit_points(history.season) if points is None else points)
        fitted, fell_back = [], []
        for index, series_id in enumerate(history.ids):
            try:
                known, ahead = self.regressors(fit_on, index, steps)
                with _doubts_unsaid():
                    one = model.new().fit(y=fit_on.series(index).to_numpy(np.float64), X=known)
                    _fill(_predicted(one, steps, levels, ahead=ahead), index, found.values, found.bounds, levels)
            except Exception:  # statsforecast raises bare Exceptions on series it cannot fit: seasonal naive stands in
                one = None
                fell_back.append(str(series_id))
            fitted.append(one)
        if len(history) == 1 and fell_back:
            raise BaselineUnavailable(f"{self.name} could not fit this series")
        left_out = history.lengths - fit_on.lengths
        found.fell_back = fell_back
        return found, FittedBaseline(self.name, history.ids, fitted, left_out=left_out)

    def forward(
        self, fitted: FittedBaseline | None, newer: Panel, steps: int, levels: Sequence[float] = ()
    ) -> BaselineForecast:
        found = stand_in(newer, steps, levels)
        if fitted is None or fitted.models is None:
            return found
        if list(map(str, fitted.ids)) != list(map(str, newer.ids)):
            raise ValueError(f"{fitted.method} was fit on other series than these: forward it over the same series")
        if fitted.left_out is not None:
            newer = newer.split_at(np.minimum(fitted.left_out, newer.lengths))[1]
        for index, model in enumerate(fitted.models):
            try:
                if model is None:
                    raise ValueError("not fit")
                known, ahead = self.regressors(newer, index, steps)
                with _doubts_unsaid():
                    one = _predicted(model, steps, levels, newer.series(index).to_numpy(np.float64), known, ahead)
                _fill(one, index, found.values, found.bounds, levels)
            except Exception:  # not fit before, or its states do not run on over these points: seasonal naive stands in
                found.fell_back.append(str(newer.ids[index]))
        return found


@dataclasses.dataclass(frozen=True)
class AutoETS(Statistical):
    """statsforecast's AutoETS at the data's season; beyond ETS_LONGEST_SEASON, the series less its season (STL)."""

    name: str = "AutoETS"

    combined = True
    prior_seconds_per_series = 0.07
    seconds_per_point = 0.0004

    def deseasonalised(self, season: int) -> bool:
        """Whether it forecasts the series less its season rather than reading the season itself."""
        return season > ETS_LONGEST_SEASON

    def how_fit(self, history: Panel) -> str | None:
        if not self.deseasonalised(history.season):
            return None
        return (
            f"the series less its season of {history.season} (STL), added back: statsforecast's AutoETS takes seasons "
            f"of up to {ETS_LONGEST_SEASON}"
        )

    def model(self, history: Panel) -> Any:
        models = self._statsforecast()
        if self.deseasonalised(history.season):
            trend = models.AutoETS(model=MSTL_TREND)
            return models.MSTL(season_length=[history.season], trend_forecaster=trend, alias=self.name)
        return models.AutoETS(season_length=history.season)


@dataclasses.dataclass(frozen=True)
class Theta(Statistical):
    name: str = "Theta"

    combined = True
    prior_seconds_per_series = 0.003
    seconds_per_point = 0.00011

    def model(self, history: Panel) -> Any:
        return self._statsforecast().Theta(season_length=history.season)


@dataclasses.dataclass(frozen=True)
class AutoCES(Statistical):
    name: str = "AutoCES"

    combined = True
    prior_seconds_per_series = 0.015
    seconds_per_point = 0.00011

    def model(self, history: Panel) -> Any:
        return self._statsforecast().AutoCES(season_length=history.season)


@dataclasses.dataclass(frozen=True)
class AutoARIMAWithCovariates(Statistical):
    """statsforecast's AutoARIMA given the known-ahead covariates as regressors (its X and X_future), on panels that
    have any: the statistical peer of a net told of them. Its cost grows with the series and their season."""

    name: str = "AutoARIMA with covariates"

    reads_futr = True
    seconds_per_point = 0.0035
    """Seconds per point of a series of season 7 or less, on one CPU; times (season / 7) ** 1.5 above: its seasonal
    orders cost more the longer the season (generated series with a 0/1 covariate, 2026-12-05: daily, 0.0035 s a
    point at 160 points and 0.0032 at 730)."""
    approximate_seconds_per_point: ClassVar[float] = 0.0105
    """The same where its orders are chosen by the approximation (seasons over ARIMA_EXACT_SEASON), at a season of 24,
    times (season / 24) ** 1.5 (bench/long_series.py's year of hourly data with two covariates, 2026-12-06: 26 s a fit
    of 2,500 points, 6.4 s of 900, 2.1 s of 500)."""

    def runs_on(self, history: Panel, shortest: int) -> list[Baseline] | str:
        """Only on data with known-ahead covariates: without them it is not this baseline (and says nothing)."""
        covariates = history.covariates
        return [self] if covariates is not None and covariates.futr_count else []

    def seconds_per_series(self, panel: Panel, points: int | None = None, fits: int = 2) -> float:
        mean_length = len(panel.values) / max(len(panel), 1)
        read = mean_length if points is None else min(mean_length, points)
        if panel.season > ARIMA_EXACT_SEASON:
            return cast(float, fits * self.approximate_seconds_per_point * read * (panel.season / 24) ** 1.5)
        return cast(float, fits * self.seconds_per_point * read * max(1.0, panel.season / 7) ** 1.5)

    def model(self, history: Panel) -> Any:
        models = self._statsforecast()
        return models.AutoARIMA(season_length=history.season, approximation=history.season > ARIMA_EXACT_SEASON)

    def forecast(self, history: Panel, steps: int, n_jobs: int = -1, levels: Sequence[float] = ()) -> BaselineForecast:
        return self.fit(history, steps, levels)[0]  # series by series: each with its own regressors

    def regressors(self, history: Panel, index: int, steps: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Series `index`'s known-ahead covariates over its history and over the `steps` points after it (raw)."""
        covariates = history.covariates
        if covariates is None or not covariates.futr_count:
            raise BaselineUnavailable(f"{self.name} needs known-ahead covariates (--futr-exog)")
        start, length = int(covariates.starts[index]), int(history.lengths[index])
        if covariates.stops[index] - start - length < steps:
            raise BaselineUnavailable(
                f"{self.name}: the known-ahead covariates stop before the {steps} points it forecasts"
            )
        futr = covariates.futr()
        return futr[start : start + length], futr[start + length : start + length + steps]


@dataclasses.dataclass(frozen=True)
class MSTL(Statistical):
    """statsforecast's MSTL at its `seasons` (shortest first), each taken off by STL, the rest forecast by AutoETS
    without a season; it runs where every series holds two cycles of at least two seasons."""

    name: str = "MSTL"

    prior_seconds_per_series = 1.4
    seconds_per_point = 0.0003

    def runs_on(self, history: Panel, shortest: int) -> list[Baseline] | str:
        from forecaster.data.seasons import usable_seasons

        every = usable_seasons(history.freq, shortest, history.season, cycles=0)  # however short
        two_cycles = usable_seasons(history.freq, shortest, history.season, cycles=2)
        if len(two_cycles) >= 2:
            return [dataclasses.replace(self, seasons=tuple(two_cycles))]
        if len(every) < 2:
            return []  # data of one season: not a baseline of theirs
        held = f"two cycles of its season of {two_cycles[0]} points alone" if two_cycles else "two of none"
        return (
            f"it needs two cycles of at least two seasons ({', '.join(map(str, every))} points), and the shortest "
            f"series' {shortest} points hold {held}"
        )

    def made_for(self, history: Panel) -> MSTL:
        """Itself at the seasons `runs_on` gives `history`, where it was made without them."""
        if self.seasons:
            return self
        found = self.runs_on(history, int(history.lengths.min()))
        if isinstance(found, str):
            raise BaselineUnavailable(f"{self.name}: {found}")
        if not found:
            raise BaselineUnavailable(f"{self.name} needs two seasons or more: use AutoETS for one")
        return cast(MSTL, found[0])

    def model(self, history: Panel) -> Any:
        seasons = self.made_for(history).seasons
        if len(seasons) < 2:
            raise BaselineUnavailable(
                f"{self.name} needs two seasons or more, not {list(seasons)}: use AutoETS for one"
            )
        models = self._statsforecast()
        trend = models.AutoETS(model=MSTL_TREND)
        return models.MSTL(season_length=[int(season) for season in seasons], trend_forecaster=trend)

    def forecast(self, history: Panel, steps: int, n_jobs: int = -1, levels: Sequence[float] = ()) -> BaselineForecast:
        return Statistical.forecast(self.made_for(history), history, steps, n_jobs, levels)

    def fit(
        self, history: Panel, steps: int, levels: Sequence[float] = (), points: int | None = None
    ) -> tuple[BaselineForecast, FittedBaseline | None]:
        return Statistical.fit(self.made_for(history), history, steps, levels, points)


def _columns(predicted: pd.DataFrame, history: Panel, column: str, steps: int) -> np.ndarray:
    """statsforecast's long forecast (unique_id, ds, model) as (steps, S) in the history's series order."""
    predicted = predicted.reset_index() if "unique_id" not in predicted.columns else predicted
    order = {series_id: index for index, series_id in enumerate(history.ids)}
    positions = predicted.groupby("unique_id", sort=False).cumcount().to_numpy()
    series = predicted["unique_id"].map(order).to_numpy()
    values = np.full((steps, len(history)), np.nan)
    values[positions, series] = predicted[column].to_numpy(dtype=np.float64)
    return values


@contextlib.contextmanager
def _doubts_unsaid() -> Iterator[None]:
    """statsforecast's AutoARIMA warns of every optimisation it doubts ("possible convergence problem"), hundreds of
    lines on a long series, in the sweep's console: the fit it gives is what it is, scored like any other."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="possible convergence problem")
        yield


def _predicted(
    model: Any,
    steps: int,
    levels: Sequence[float],
    newer: np.ndarray | None = None,
    known: np.ndarray | None = None,
    ahead: np.ndarray | None = None,
) -> dict[str, Any]:
    """A fitted statsforecast model's forecast of `steps` points (after `newer`, the series it was fit on grown by
    newer points: its `forward`, given the regressors `known` of those points), with its intervals at `levels`:
    AutoCES's in closed form (`_ces_bounds`); `ahead`, the regressors of the points it forecasts."""
    ces = type(model).__name__ == "AutoCES"
    closed = bool(levels) and ces and model.model_.get("distribution", "normal") == "normal"
    named = None if closed else _named(levels)
    if newer is None:
        found: dict[str, Any] = model.predict(h=steps, X=ahead, level=named)
    else:
        found = model.forward(y=newer, h=steps, X=known, X_future=ahead, level=named)
    if closed:
        from statsforecast.ces import forward_ces

        forward: Callable[..., dict[str, Any]] = forward_ces
        state = model.model_ if newer is None else forward(model.model_, y=newer)
        found.update(_ces_bounds(state, np.asarray(found["mean"], dtype=np.float64), steps, levels))
    return found


def _ces_bounds(state: dict[str, Any], mean: np.ndarray, steps: int, levels: Sequence[float]) -> dict[str, np.ndarray]:
    """AutoCES's prediction intervals without its simulation. statsforecast draws 5,000 paths in a Python loop, each
    the forecast from the fitted states plus independent normal noise of the residuals' sigma on every state, and takes
    their quantiles. The forecast is linear in the states, so the paths are normal: the mean forecast, and sigma
    squared times the sum over the states of the squared change of the forecast per unit change of each. The same
    quantiles, less the simulation's noise (tests/test_baselines.py compares the two)."""
    from statsforecast.ces import cesforecast, switch_ces

    run_forecast: Callable[..., None] = cesforecast

    states = np.asarray(state["states"], dtype=np.float64)
    season = switch_ces(state["seasontype"])

    def forecast_from(perturbed: np.ndarray) -> np.ndarray:
        out = np.zeros(steps, dtype=np.float64)
        run_forecast(perturbed, state["n"], state["m"], season, out, steps, **state["par"])
        return out

    base = forecast_from(states)
    squares = np.zeros(steps)
    for row in range(state["n"], len(states)):  # the forecast reads the states from row n on
        for column in range(states.shape[1]):
            nudged = states.copy()
            nudged[row, column] += 1.0
            squares += (forecast_from(nudged) - base) ** 2
    spread = np.sqrt(state["sigma2"] * squares)
    found = {}
    for level, name in zip(levels, _named(levels) or []):
        width = statistics.NormalDist().inv_cdf(0.5 + level / 200) * spread
        found[f"lo-{name}"], found[f"hi-{name}"] = mean - width, mean + width
    return found


def _named(levels: Sequence[float]) -> list[float] | None:
    """Levels as statsforecast names them (80, not 80.0), or None."""
    return [int(level) if float(level).is_integer() else level for level in levels] or None


def _fill(found: dict[str, Any], index: int, values: np.ndarray, bounds: Bounds, levels: Sequence[float]) -> None:
    """Series `index`'s column of `values` and `bounds` from statsforecast's answer for it (mean, lo-80, hi-80, ...)."""
    mean = np.asarray(found["mean"], dtype=np.float64)
    if not np.isfinite(mean).all():
        raise ValueError("a forecast that is not finite")
    columns = {level: (found[f"lo-{name}"], found[f"hi-{name}"]) for level, name in zip(levels, _named(levels) or [])}
    values[:, index] = mean
    for level, (lower, upper) in columns.items():
        bounds[level][0][:, index], bounds[level][1][:, index] = lower, upper
