"""What a forecaster would use instead of a neural net: the yardsticks a sweep's answer is judged against, for every
series of a panel at once.

- seasonal naive: each point is the same point of the last season seen (the month a year before, for monthly
  data); where the data has no season, or a series is shorter than one, the last value (naive). It costs nothing,
  and a model that does not beat it has learned nothing worth deploying.
- statsforecast's AutoETS (exponential smoothing, its form chosen automatically), Theta (the standard Theta method,
  the winner of the M3 competition; not AutoTheta, which chooses among variants and scores worse on M3 monthly:
  docs/benchmarks.md, "M3 monthly") and AutoCES (complex exponential smoothing), untuned, fit on every
  series in parallel (StatsForecast with n_jobs processes). statsforecast is an optional extra (`pip install
  '.[baselines]'`, with statsmodels and scipy; docs/benchmarks.md says what it costs to install);
  without it these say so. AutoCES's intervals are its simulation's quantiles in closed form (`_ces_bounds`).

Forecasts are (steps, S): one column per series of the history, `steps` points after each series' end.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from forecaster.panel import Panel

STATISTICAL = ("AutoETS", "Theta", "AutoCES")
BASELINES = ("seasonal naive", *STATISTICAL)


class BaselineUnavailable(RuntimeError):
    """A baseline that cannot run here, or on this series; the message says why."""


@dataclasses.dataclass
class BaselineForecast:
    values: np.ndarray
    """(steps, S) in original units."""
    fell_back: list[str] = dataclasses.field(default_factory=list)
    """Ids of the series the model could not fit, forecast by seasonal naive instead (a panel of several only)."""
    bounds: dict[float, tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=dict)
    """{level: (lower, upper)}, each (steps, S): the model's own prediction intervals at the levels asked for."""


def seasonal_naive(history: Panel, steps: int) -> np.ndarray:
    """(steps, S): every series' last season repeated (its last value, where there is no season or the series is
    shorter than one)."""
    season = history.season
    ends = history.offsets[1:]
    period = np.where(history.lengths >= season, season, 1)
    ahead = np.arange(steps)[:, None]
    return history.values[ends[None, :] - period[None, :] + ahead % period[None, :]]


def seasonal_naive_bounds(
    history: Panel, steps: int, levels: Sequence[float]
) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """Seasonal naive's prediction intervals from its residuals (Hyndman and Athanasopoulos, Forecasting: Principles
    and Practice, 5.5): the forecast plus and minus z times the standard deviation of each series' in-sample
    seasonal differences, times the square root of the seasons ahead, k + 1 for step h = k m + 1 ... (k + 1) m."""
    season = history.season
    period = np.where(history.lengths >= season, season, 1)
    rows = np.repeat(np.arange(len(history)), history.lengths)
    positions = history.positions
    later = np.flatnonzero(positions >= period[rows])
    residuals = history.values[later] - history.values[later - period[rows[later]]]
    sums = np.bincount(rows[later], weights=residuals**2, minlength=len(history))
    counts = np.bincount(rows[later], minlength=len(history))
    sigma = np.sqrt(sums / np.maximum(counts, 1))
    ahead = np.sqrt(np.arange(steps)[:, None] // period[None, :] + 1)
    forecast = seasonal_naive(history, steps)
    found = {}
    for level in levels:
        width = statistics.NormalDist().inv_cdf(0.5 + level / 200) * sigma[None, :] * ahead
        found[level] = (forecast - width, forecast + width)
    return found


def statistical(
    method: str, history: Panel, steps: int, n_jobs: int = -1, levels: Sequence[float] = ()
) -> BaselineForecast:
    """statsforecast's `method` (AutoETS, Theta or AutoCES) with the data's season, fit on each series' whole
    history, every series in parallel; with `levels`, its own prediction intervals at them."""
    try:
        import statsforecast
        from statsforecast import models
    except ImportError:
        raise BaselineUnavailable(f"{method} needs statsforecast: pip install '.[baselines]'") from None
    model = getattr(models, method)(season_length=history.season)
    frame = history.to_frame()
    engine = statsforecast.StatsForecast(models=[model], freq=history.freq or 1, n_jobs=n_jobs)
    named = {level: int(level) if float(level).is_integer() else level for level in levels}  # statsforecast's names
    try:
        predicted = engine.forecast(df=frame, h=steps, level=cast(Any, list(named.values())) or None)
    except Exception as error:  # statsforecast raises bare Exceptions on series it cannot fit (a noiseless one)
        if len(history) == 1:
            raise BaselineUnavailable(f"{method} could not fit this series ({error})") from None
        return _series_by_series(method, history, steps, levels)
    column = getattr(model, "alias", method)
    bounds = {
        level: (
            _columns(predicted, history, f"{column}-lo-{name}", steps),
            _columns(predicted, history, f"{column}-hi-{name}", steps),
        )
        for level, name in named.items()
    }
    return BaselineForecast(_columns(predicted, history, column, steps), bounds=bounds)


def _columns(predicted, history: Panel, column: str, steps: int) -> np.ndarray:
    """statsforecast's long forecast (unique_id, ds, model) as (steps, S) in the history's series order."""
    predicted = predicted.reset_index() if "unique_id" not in predicted.columns else predicted
    order = {series_id: index for index, series_id in enumerate(history.ids)}
    positions = predicted.groupby("unique_id", sort=False).cumcount().to_numpy()
    series = predicted["unique_id"].map(order).to_numpy()
    values = np.full((steps, len(history)), np.nan)
    values[positions, series] = predicted[column].to_numpy(dtype=np.float64)
    return values


def _series_by_series(method: str, history: Panel, steps: int, levels: Sequence[float] = ()) -> BaselineForecast:
    """The slow path where the parallel fit failed: each series on its own, seasonal naive (and its intervals) for
    those that fail."""
    return fit_baseline(method, history, steps, levels)[0]


@dataclasses.dataclass
class FittedBaseline:
    """A statistical baseline fit on each series of a history, which forecasts after the same series grown by newer
    points without fitting again: statsforecast's `forward` (its form and parameters kept, its states run on over the
    newer points), as statsforecast's cross-validation does with refit=False."""

    method: str
    ids: np.ndarray
    """The series, in the history's order."""
    models: list
    """Per series, the fitted statsforecast model; None where it could not fit (seasonal naive stands in)."""


def fit_baseline(
    method: str, history: Panel, steps: int, levels: Sequence[float] = ()
) -> tuple[BaselineForecast, FittedBaseline | None]:
    """Baseline `method` fit on each series of `history` in turn, forecasting `steps` points after it (with its
    intervals at `levels`); seasonal naive, which fits nothing, and the series a model cannot fit take seasonal naive's
    forecast (those named in `fell_back`). The fitted models go with it, for `forward_baseline`."""
    values = seasonal_naive(history, steps)
    bounds = {
        level: (pair[0].copy(), pair[1].copy()) for level, pair in seasonal_naive_bounds(history, steps, levels).items()
    }
    if method == "seasonal naive":
        return BaselineForecast(values, bounds=bounds), None
    model = _statistical_model(method, history.season)
    fitted, fell_back = [], []
    for index, series_id in enumerate(history.ids):
        try:
            found = model.new().fit(y=history.series(index).to_numpy(np.float64))
            _fill(_predicted(found, steps, levels), index, values, bounds, levels)
        except Exception:  # statsforecast raises bare Exceptions on series it cannot fit: seasonal naive stands in
            found = None
            fell_back.append(str(series_id))
        fitted.append(found)
    if len(history) == 1 and fell_back:
        raise BaselineUnavailable(f"{method} could not fit this series")
    return BaselineForecast(values, fell_back, bounds), FittedBaseline(method, history.ids, fitted)


def forward_baseline(
    fitted: FittedBaseline | None, newer: Panel, steps: int, levels: Sequence[float] = ()
) -> BaselineForecast:
    """The forecast of `steps` points after each series of `newer` (the series `fitted` was fit on, grown by newer
    points; None: seasonal naive) by the models fit before, without fitting again (`FittedBaseline`)."""
    values = seasonal_naive(newer, steps)
    bounds = {
        level: (pair[0].copy(), pair[1].copy()) for level, pair in seasonal_naive_bounds(newer, steps, levels).items()
    }
    if fitted is None:
        return BaselineForecast(values, bounds=bounds)
    if list(map(str, fitted.ids)) != list(map(str, newer.ids)):
        raise ValueError(f"{fitted.method} was fit on other series than these: forward it over the same series")
    fell_back = []
    for index, model in enumerate(fitted.models):
        try:
            if model is None:
                raise ValueError("not fit")
            found = _predicted(model, steps, levels, newer.series(index).to_numpy(np.float64))
            _fill(found, index, values, bounds, levels)
        except Exception:  # not fit before, or its states do not run on over these points: seasonal naive stands in
            fell_back.append(str(newer.ids[index]))
    return BaselineForecast(values, fell_back, bounds)


def _predicted(model, steps: int, levels: Sequence[float], newer: np.ndarray | None = None) -> dict:
    """A fitted statsforecast model's forecast of `steps` points (after `newer`, the series it was fit on grown by
    newer points: its `forward`), with its intervals at `levels`: AutoCES's in closed form (`_ces_bounds`)."""
    ces = type(model).__name__ == "AutoCES"
    closed = bool(levels) and ces and model.model_.get("distribution", "normal") == "normal"
    named = None if closed else _named(levels)
    found = model.predict(h=steps, level=named) if newer is None else model.forward(y=newer, h=steps, level=named)
    if closed:
        from statsforecast.ces import forward_ces

        state = model.model_ if newer is None else forward_ces(model.model_, y=newer)
        found.update(_ces_bounds(state, np.asarray(found["mean"], dtype=np.float64), steps, levels))
    return found


def _ces_bounds(state: dict, mean: np.ndarray, steps: int, levels: Sequence[float]) -> dict[str, np.ndarray]:
    """AutoCES's prediction intervals without its simulation. statsforecast draws 5,000 paths in a Python loop, each
    the forecast from the fitted states plus independent normal noise of the residuals' sigma on every state, and takes
    their quantiles. The forecast is linear in the states, so the paths are normal: the mean forecast, and sigma
    squared times the sum over the states of the squared change of the forecast per unit change of each. The same
    quantiles, less the simulation's noise (tests/test_baselines.py compares the two)."""
    from statsforecast.ces import cesforecast, switch_ces

    states = np.asarray(state["states"], dtype=np.float64)
    season = switch_ces(state["seasontype"])

    def forecast_from(perturbed: np.ndarray) -> np.ndarray:
        out = np.zeros(steps, dtype=np.float64)
        cesforecast(perturbed, state["n"], state["m"], season, out, steps, **state["par"])
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


def _statistical_model(method: str, season: int):
    if method not in STATISTICAL:
        raise ValueError(f"unknown baseline {method!r}; the baselines are: {', '.join(BASELINES)}")
    try:
        from statsforecast import models
    except ImportError:
        raise BaselineUnavailable(f"{method} needs statsforecast: pip install '.[baselines]'") from None
    return getattr(models, method)(season_length=season)


def _named(levels: Sequence[float]) -> list | None:
    """Levels as statsforecast names them (80, not 80.0), or None."""
    return [int(level) if float(level).is_integer() else level for level in levels] or None


def _fill(found: dict, index: int, values: np.ndarray, bounds: dict, levels: Sequence[float]) -> None:
    """Series `index`'s column of `values` and `bounds` from statsforecast's answer for it (mean, lo-80, hi-80, ...)."""
    mean = np.asarray(found["mean"], dtype=np.float64)
    if not np.isfinite(mean).all():
        raise ValueError("a forecast that is not finite")
    columns = {level: (found[f"lo-{name}"], found[f"hi-{name}"]) for level, name in zip(levels, _named(levels) or [])}
    values[:, index] = mean
    for level, (lower, upper) in columns.items():
        bounds[level][0][:, index], bounds[level][1][:, index] = lower, upper


def forecast(name: str, history: Panel, steps: int, n_jobs: int = -1, levels: Sequence[float] = ()) -> BaselineForecast:
    """A baseline's forecast after every series of `history`.

    Args:
        name: One of BASELINES: seasonal naive, AutoETS, Theta, AutoCES.
        history: The series the baseline fits.
        steps: Points to forecast after each series' end.
        n_jobs: Processes statsforecast fits the series in (-1: every CPU).
        levels: Prediction intervals at these levels, in percent.

    Returns:
        The forecast, (steps, S), the series it could not fit (seasonal naive's forecast stands in) and its bounds.

    Raises:
        BaselineUnavailable: statsforecast is not installed, or a single series it cannot fit.
        ValueError: An unknown baseline."""
    if name == "seasonal naive":
        return BaselineForecast(seasonal_naive(history, steps), bounds=seasonal_naive_bounds(history, steps, levels))
    if name in STATISTICAL:
        return statistical(name, history, steps, n_jobs, levels)
    raise ValueError(f"unknown baseline {name!r}; the baselines are: {', '.join(BASELINES)}")
