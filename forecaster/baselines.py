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
  without it these say so.

Forecasts are (steps, S): one column per series of the history, `steps` points after each series' end.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence

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
        predicted = engine.forecast(df=frame, h=steps, level=list(named.values()) or None)
    except Exception as error:  # statsforecast raises bare Exceptions on series it cannot fit (a noiseless one)
        if len(history) == 1:
            raise BaselineUnavailable(f"{method} could not fit this series ({error})") from None
        return _series_by_series(method, history, steps, levels)
    column = getattr(model, "alias", method)
    bounds = {
        level: tuple(_columns(predicted, history, f"{column}-{side}-{name}", steps) for side in ("lo", "hi"))
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
    from statsforecast import models

    values = seasonal_naive(history, steps)
    bounds = {
        level: tuple(side.copy() for side in pair)
        for level, pair in seasonal_naive_bounds(history, steps, levels).items()
    }
    fell_back = []
    for index, series_id in enumerate(history.ids):
        model = getattr(models, method)(season_length=history.season)
        try:
            found = model.forecast(y=history.series(index).to_numpy(np.float64), h=steps, level=list(levels) or None)
        except Exception:  # the series keeps seasonal naive's forecast, and is counted
            fell_back.append(str(series_id))
            continue
        values[:, index] = found["mean"]
        for level in levels:
            name = f"{int(level) if float(level).is_integer() else level}"
            bounds[level][0][:, index], bounds[level][1][:, index] = found[f"lo-{name}"], found[f"hi-{name}"]
    return BaselineForecast(values, fell_back, bounds)


def forecast(name: str, history: Panel, steps: int, n_jobs: int = -1, levels: Sequence[float] = ()) -> BaselineForecast:
    """The forecast of baseline `name` (one of BASELINES): `steps` points after every series of `history`, with its
    prediction intervals at `levels` (percent)."""
    if name == "seasonal naive":
        return BaselineForecast(seasonal_naive(history, steps), bounds=seasonal_naive_bounds(history, steps, levels))
    if name in STATISTICAL:
        return statistical(name, history, steps, n_jobs, levels)
    raise ValueError(f"unknown baseline {name!r}; the baselines are: {', '.join(BASELINES)}")
