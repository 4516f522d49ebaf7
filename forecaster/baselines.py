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
- where the data have more than one season (a day and a week of hourly data: forecaster.seasons.season_lengths),
  `panel_baselines` adds the ones that read them: seasonal naive at the longest season every series holds a cycle of
  (named by it: "seasonal naive (168)"), and statsforecast's MSTL (each season taken off by STL, the rest forecast by
  AutoETS without a season) where every series holds two cycles of at least two seasons. Data of one season (the
  monthly and quarterly competition panels) get the four above alone.

Forecasts are (steps, S): one column per series of the history, `steps` points after each series' end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, cast

import numpy as np

from forecaster.panel import Panel

SEASONAL_NAIVE = "seasonal naive"
STATISTICAL = ("AutoETS", "Theta", "AutoCES")
BASELINES = (SEASONAL_NAIVE, *STATISTICAL)
"""The baselines of every panel; `panel_baselines` adds those of data with several seasons."""
MSTL = "MSTL"
MSTL_TREND = "ZZN"
"""AutoETS's form for MSTL's seasonally adjusted series: chosen automatically, without a season (MSTL took them)."""
ARIMA_COVARIATES = "AutoARIMA with covariates"
"""statsforecast's AutoARIMA given the known-ahead covariates as regressors (its X and X_future), on panels that have
any: the statistical peer of a net told of them."""
ARIMA_EXACT_SEASON = 12
"""AutoARIMA chooses its orders by the exact likelihood up to this season, by its approximation (CSS) above it, as R's
auto.arima (`approximation = length(x) > 150 | frequency(x) > 12`; statsforecast's default is exact): on a year of
hourly data, 5-12 times faster at the same inner-window sMAPE (docs/design-notes.md, "Long series")."""
ETS_LONGEST_SEASON = 24
"""The longest season statsforecast's AutoETS fits, as R's ets: its forecast of a seasonal model of a longer one is
empty (statsforecast/ets.py, `etsforecast`: `if m > 24 and season != Nothing: return`), and on half-hourly data it
forecast a flat line. Beyond it AutoETS forecasts the series less its season, which STL takes off and adds back (R's
stlf; statsforecast's MSTL with that one season)."""
FIT_POINTS = 2500
"""A statistical baseline fits each series' last FIT_POINTS points at least, as AutoGluon-TimeSeries' local models
(`default_max_ts_length = 2500`): the whole of any monthly or quarterly series, a few months of hourly data."""
FIT_CYCLES = 10
"""...and at least FIT_CYCLES cycles of the longest season it reads (10 weeks for MSTL on half-hourly data). On the
inner windows of a year of hourly data and of taylor, fits on these many points scored as well as fits on the whole
history at a fraction of the cost (docs/design-notes.md, "Long series")."""


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


@dataclasses.dataclass(frozen=True)
class PanelBaselines:
    """The baselines that fit a panel's seasons and lengths."""

    names: tuple[str, ...]
    mstl_seasons: tuple[int, ...] = ()
    """The seasons MSTL takes off, shortest first; () where it does not run."""
    not_run: dict[str, str] = dataclasses.field(default_factory=dict)
    """Baselines of the data's seasons that its series are too short for, and why."""
    fit_points: dict[str, int] = dataclasses.field(default_factory=dict)
    """Per statistical baseline: how many of each series' last points it fits on (`fit_points`)."""
    notes: dict[str, str] = dataclasses.field(default_factory=dict)
    """Per baseline fit otherwise than on its series as they are: how, for the summary."""


def panel_baselines(history: Panel, shortest_length: int | None = None) -> PanelBaselines:
    """BASELINES, and where the series hold cycles of a longer season than the panel's, those that read it: seasonal
    naive at the longest season every series holds a full cycle of, MSTL at every season they hold two of (where
    there are two). `shortest_length`: the shortest history the baselines will be fit on (default: `history`'s),
    so that every chunk and part of a sweep gets the same ones."""
    from forecaster.seasons import usable_seasons

    shortest = int(history.lengths.min()) if shortest_length is None else shortest_length
    every = usable_seasons(history.freq, shortest, history.season, cycles=0)  # however short
    one_cycle = usable_seasons(history.freq, shortest, history.season, cycles=1)
    two_cycles = usable_seasons(history.freq, shortest, history.season, cycles=2)
    names = [SEASONAL_NAIVE]
    if one_cycle and one_cycle[-1] > history.season:
        names.append(seasonal_naive_name(one_cycle[-1]))
    names += STATISTICAL
    if history.covariates is not None and history.covariates.futr_count:
        names.append(ARIMA_COVARIATES)
    not_run = {}
    if len(two_cycles) >= 2:
        names.append(MSTL)
    elif len(every) >= 2:
        held = f"two cycles of its season of {two_cycles[0]} points alone" if two_cycles else "two of none"
        not_run[MSTL] = (
            f"it needs two cycles of at least two seasons ({', '.join(map(str, every))} points), and the shortest "
            f"series' {shortest} points hold {held}"
        )
    mstl_seasons = two_cycles if MSTL in names else ()
    fitted = [name for name in names if name in (*STATISTICAL, MSTL, ARIMA_COVARIATES)]
    points = {name: fit_points(name, history.season, mstl_seasons) for name in fitted}
    longest = int(history.lengths.max()) if len(history) else 0
    notes = {
        name: f"fit on each series' last {count:,} points (of up to {longest:,})"
        for name, count in points.items()
        if count < longest
    }
    if "AutoETS" in names and deseasonalised("AutoETS", history.season):
        notes["AutoETS"] = "; ".join(
            [
                f"the series less its season of {history.season} (STL), added back: statsforecast's AutoETS takes "
                f"seasons of up to {ETS_LONGEST_SEASON}",
                *([notes["AutoETS"]] if "AutoETS" in notes else []),
            ]
        )
    return PanelBaselines(tuple(names), mstl_seasons, not_run, points, notes)


def seasons_read(method: str, season: int, mstl_seasons: Sequence[int] = ()) -> tuple[int, ...]:
    """The seasons a baseline reads, of data whose models' season is `season`: MSTL's own, seasonal naive's at
    another season its own, the others the data's (none where it is 1)."""
    if method == MSTL:
        return tuple(mstl_seasons)
    other = naive_season(method)
    if other is not None:
        return (other,)
    return (season,) if season > 1 else ()


def fit_points(method: str, season: int, mstl_seasons: Sequence[int] = ()) -> int:
    """How many of each series' last points baseline `method` fits on: FIT_POINTS, or FIT_CYCLES cycles of the
    longest season it reads where that is more."""
    return max(FIT_POINTS, FIT_CYCLES * max(seasons_read(method, season, mstl_seasons), default=1))


def deseasonalised(method: str, season: int) -> bool:
    """Whether `method` forecasts the series less its season rather than reading the season itself (AutoETS beyond
    ETS_LONGEST_SEASON)."""
    return method == "AutoETS" and season > ETS_LONGEST_SEASON


def seasonal_naive_name(season: int) -> str:
    """Seasonal naive at a season longer than the panel's, named by it: the panel's own keeps the plain name."""
    return f"{SEASONAL_NAIVE} ({season})"


def naive_season(name: str) -> int | None:
    """The season of a baseline named by `seasonal_naive_name`; None for any other."""
    prefix = f"{SEASONAL_NAIVE} ("
    if name.startswith(prefix) and name.endswith(")") and name[len(prefix) : -1].isdigit():
        return int(name[len(prefix) : -1])
    return None


def seasonal_naive(history: Panel, steps: int, season: int | None = None) -> np.ndarray:
    """(steps, S): every series' last season repeated (its last value, where there is no season or the series is
    shorter than one). `season`: another than the panel's (a week of hourly data)."""
    season = history.season if season is None else season
    ends = history.offsets[1:]
    period = np.where(history.lengths >= season, season, 1)
    ahead = np.arange(steps)[:, None]
    return history.values[ends[None, :] - period[None, :] + ahead % period[None, :]]


def seasonal_naive_bounds(
    history: Panel, steps: int, levels: Sequence[float], season: int | None = None
) -> dict[float, tuple[np.ndarray, np.ndarray]]:
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


def statistical(
    method: str,
    history: Panel,
    steps: int,
    n_jobs: int = -1,
    levels: Sequence[float] = (),
    seasons: Sequence[int] | None = None,
) -> BaselineForecast:
    """statsforecast's `method` (AutoETS, Theta or AutoCES with the data's season; MSTL with `seasons`, by default
    those of `panel_baselines`), fit on each series' last `fit_points` points, every series in parallel; with
    `levels`, its own prediction intervals at them."""
    model = _statistical_model(method, history, seasons)
    import statsforecast

    frame = history.last(_points(method, history, seasons, None)).to_frame()
    engine = statsforecast.StatsForecast(models=[model], freq=history.freq or 1, n_jobs=n_jobs)
    named = {level: int(level) if float(level).is_integer() else level for level in levels}  # statsforecast's names
    try:
        predicted = engine.forecast(df=frame, h=steps, level=cast(Any, list(named.values())) or None)
    except Exception as error:  # statsforecast raises bare Exceptions on series it cannot fit (a noiseless one)
        if len(history) == 1:
            raise BaselineUnavailable(f"{method} could not fit this series ({error})") from None
        return _series_by_series(method, history, steps, levels, seasons)
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


def _series_by_series(
    method: str, history: Panel, steps: int, levels: Sequence[float] = (), seasons: Sequence[int] | None = None
) -> BaselineForecast:
    """The slow path where the parallel fit failed: each series on its own, seasonal naive (and its intervals) for
    those that fail."""
    return fit_baseline(method, history, steps, levels, seasons)[0]


@dataclasses.dataclass
class FittedBaseline:
    """A statistical baseline fit on each series of a history, which forecasts after the same series grown by newer
    points without fitting again: statsforecast's `forward` (its form and parameters kept, its states run on over the
    newer points), as statsforecast's cross-validation does with refit=False."""

    method: str
    ids: np.ndarray
    """The series, in the history's order."""
    models: list | None
    """Per series, the fitted statsforecast model; None where it could not fit (seasonal naive stands in). None for
    a seasonal naive, which fits nothing."""
    season: int | None = None
    """The season of the seasonal naive that forecasts or stands in; None: the panel's."""
    left_out: np.ndarray | None = None
    """(S,) the points at the start of each series that the fit did not read (`fit_points`): a forward over newer
    points starts where the fit did. None: none."""


def fit_baseline(
    method: str,
    history: Panel,
    steps: int,
    levels: Sequence[float] = (),
    seasons: Sequence[int] | None = None,
    points: int | None = None,
) -> tuple[BaselineForecast, FittedBaseline | None]:
    """Baseline `method` fit on each series of `history` in turn, on its last `points` points (default: `fit_points`),
    forecasting `steps` points after it (with its intervals at `levels`; MSTL at `seasons`, by default those of
    `panel_baselines`); seasonal naive, which fits nothing, and the series a model cannot fit take seasonal naive's
    forecast (those named in `fell_back`). The fitted models go with it, for `forward_baseline`."""
    season = naive_season(method)
    values = seasonal_naive(history, steps, season)
    bounds = {
        level: (pair[0].copy(), pair[1].copy())
        for level, pair in seasonal_naive_bounds(history, steps, levels, season).items()
    }
    if method == SEASONAL_NAIVE:
        return BaselineForecast(values, bounds=bounds), None
    if season is not None:
        return BaselineForecast(values, bounds=bounds), FittedBaseline(method, history.ids, None, season)
    model = _statistical_model(method, history, seasons)
    fit_on = history.last(_points(method, history, seasons, points))
    fitted, fell_back = [], []
    regressors = method == ARIMA_COVARIATES
    for index, series_id in enumerate(history.ids):
        try:
            known, ahead = _known_ahead(fit_on, index, steps) if regressors else (None, None)
            with _doubts_unsaid():
                found = model.new().fit(y=fit_on.series(index).to_numpy(np.float64), X=known)
                _fill(_predicted(found, steps, levels, ahead=ahead), index, values, bounds, levels)
        except Exception:  # statsforecast raises bare Exceptions on series it cannot fit: seasonal naive stands in
            found = None
            fell_back.append(str(series_id))
        fitted.append(found)
    if len(history) == 1 and fell_back:
        raise BaselineUnavailable(f"{method} could not fit this series")
    left_out = history.lengths - fit_on.lengths
    return BaselineForecast(values, fell_back, bounds), FittedBaseline(method, history.ids, fitted, left_out=left_out)


@contextlib.contextmanager
def _doubts_unsaid() -> Iterator[None]:
    """statsforecast's AutoARIMA warns of every optimisation it doubts ("possible convergence problem"), hundreds of
    lines on a long series, in the sweep's console: the fit it gives is what it is, scored like any other."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="possible convergence problem")
        yield


def _points(method: str, history: Panel, seasons: Sequence[int] | None, points: int | None) -> int:
    """`points`, or by default `fit_points` of `method` on `history` (MSTL at `seasons` or those it would take)."""
    if points is not None:
        return points
    if method == MSTL and seasons is None:
        seasons = panel_baselines(history).mstl_seasons
    return fit_points(method, history.season, seasons or ())


def forward_baseline(
    fitted: FittedBaseline | None, newer: Panel, steps: int, levels: Sequence[float] = ()
) -> BaselineForecast:
    """The forecast of `steps` points after each series of `newer` (the series `fitted` was fit on, grown by newer
    points; None: seasonal naive) by the models fit before, without fitting again (`FittedBaseline`)."""
    season = None if fitted is None else fitted.season
    values = seasonal_naive(newer, steps, season)
    bounds = {
        level: (pair[0].copy(), pair[1].copy())
        for level, pair in seasonal_naive_bounds(newer, steps, levels, season).items()
    }
    if fitted is None or fitted.models is None:
        return BaselineForecast(values, bounds=bounds)
    if list(map(str, fitted.ids)) != list(map(str, newer.ids)):
        raise ValueError(f"{fitted.method} was fit on other series than these: forward it over the same series")
    fell_back = []
    if fitted.left_out is not None:
        newer = newer.split_at(np.minimum(fitted.left_out, newer.lengths))[1]
    regressors = fitted.method == ARIMA_COVARIATES
    for index, model in enumerate(fitted.models):
        try:
            if model is None:
                raise ValueError("not fit")
            known, ahead = _known_ahead(newer, index, steps) if regressors else (None, None)
            with _doubts_unsaid():
                found = _predicted(model, steps, levels, newer.series(index).to_numpy(np.float64), known, ahead)
            _fill(found, index, values, bounds, levels)
        except Exception:  # not fit before, or its states do not run on over these points: seasonal naive stands in
            fell_back.append(str(newer.ids[index]))
    return BaselineForecast(values, fell_back, bounds)


def _predicted(
    model,
    steps: int,
    levels: Sequence[float],
    newer: np.ndarray | None = None,
    known: np.ndarray | None = None,
    ahead: np.ndarray | None = None,
) -> dict:
    """A fitted statsforecast model's forecast of `steps` points (after `newer`, the series it was fit on grown by
    newer points: its `forward`, given the regressors `known` of those points), with its intervals at `levels`:
    AutoCES's in closed form (`_ces_bounds`); `ahead`, the regressors of the points it forecasts."""
    ces = type(model).__name__ == "AutoCES"
    closed = bool(levels) and ces and model.model_.get("distribution", "normal") == "normal"
    named = None if closed else _named(levels)
    if newer is None:
        found = model.predict(h=steps, X=ahead, level=named)
    else:
        found = model.forward(y=newer, h=steps, X=known, X_future=ahead, level=named)
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


def _known_ahead(history: Panel, index: int, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Series `index`'s known-ahead covariates over its history and over the `steps` points after it (raw: ARIMA's
    regressors)."""
    covariates = history.covariates
    if covariates is None or not covariates.futr_count:
        raise BaselineUnavailable(f"{ARIMA_COVARIATES} needs known-ahead covariates (--futr-exog)")
    start, length = int(covariates.starts[index]), int(history.lengths[index])
    if covariates.stops[index] - start - length < steps:
        raise BaselineUnavailable(
            f"{ARIMA_COVARIATES}: the known-ahead covariates stop before the {steps} points it forecasts"
        )
    futr = covariates.futr()
    return futr[start : start + length], futr[start + length : start + length + steps]


def _statistical_model(method: str, history: Panel, seasons: Sequence[int] | None = None):
    """An unfit statsforecast model: AutoETS, Theta or AutoCES at the panel's season, or MSTL at `seasons` (by
    default those of `panel_baselines`; BaselineUnavailable with fewer than two)."""
    if method not in (*STATISTICAL, MSTL, ARIMA_COVARIATES):
        raise ValueError(f"unknown baseline {method!r}; the baselines are: {', '.join(BASELINES)}{_SEASONAL_ONES}")
    try:
        from statsforecast import models
    except ImportError:
        raise BaselineUnavailable(f"{method} needs statsforecast: pip install '.[baselines]'") from None
    if method == ARIMA_COVARIATES:
        return models.AutoARIMA(season_length=history.season, approximation=history.season > ARIMA_EXACT_SEASON)
    if deseasonalised(method, history.season):
        trend = models.AutoETS(model=MSTL_TREND)
        return models.MSTL(season_length=[history.season], trend_forecaster=trend, alias=method)
    if method != MSTL:
        return getattr(models, method)(season_length=history.season)
    if seasons is None:
        found = panel_baselines(history)
        if MSTL in found.not_run:
            raise BaselineUnavailable(f"{MSTL}: {found.not_run[MSTL]}")
        seasons = found.mstl_seasons
    if len(seasons) < 2:
        raise BaselineUnavailable(f"{MSTL} needs two seasons or more, not {list(seasons)}: use AutoETS for one")
    trend = models.AutoETS(model=MSTL_TREND)
    return models.MSTL(season_length=[int(season) for season in seasons], trend_forecaster=trend)


_SEASONAL_ONES = f"; of data with several seasons also {seasonal_naive_name(168)} (its season) and {MSTL}"


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


def forecast(
    name: str,
    history: Panel,
    steps: int,
    n_jobs: int = -1,
    levels: Sequence[float] = (),
    seasons: Sequence[int] | None = None,
) -> BaselineForecast:
    """A baseline's forecast after every series of `history`.

    Args:
        name: One of BASELINES (seasonal naive, AutoETS, Theta, AutoCES) or of `panel_baselines` (seasonal naive at
            another season, "seasonal naive (168)"; MSTL).
        history: The series the baseline fits.
        steps: Points to forecast after each series' end.
        n_jobs: Processes statsforecast fits the series in (-1: every CPU).
        levels: Prediction intervals at these levels, in percent.
        seasons: MSTL's seasons (default: those of `panel_baselines`).

    Returns:
        The forecast, (steps, S), the series it could not fit (seasonal naive's forecast stands in) and its bounds.

    Raises:
        BaselineUnavailable: statsforecast is not installed, a single series it cannot fit, or MSTL on data that do
            not hold two cycles of two seasons.
        ValueError: An unknown baseline."""
    season = naive_season(name)
    if name == SEASONAL_NAIVE or season is not None:
        values = seasonal_naive(history, steps, season)
        return BaselineForecast(values, bounds=seasonal_naive_bounds(history, steps, levels, season))
    if name == ARIMA_COVARIATES:  # series by series: each with its own regressors
        return fit_baseline(name, history, steps, levels)[0]
    return statistical(name, history, steps, n_jobs, levels, seasons)
