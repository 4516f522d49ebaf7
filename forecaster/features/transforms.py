"""What the net sees instead of the raw series, and the exact way back to original units, for every series of a
panel at once.

By default the net sees min-max scaling fit on the training part alone, which puts the points to forecast of a
growing series above the training range, beyond anything a tanh net saw in training (docs/design-notes.md, "The
`air_rnn` sweep", shows it on Air Passengers). The options here keep the net's inputs in the
range it trained on; each is a hyperparameter (`ForecasterConfig.target_transform`, `window_norm`, `calendar`):

    y --less its seasonal shifts, over its seasonal indices (deseasonalise)--> a --log (target_transform log*)--> z
      --differences at lag 1 or the season (*diff)--> d --min-max, fit on each series' training part--> s
      --per window, minus its level (window_norm subtract)--> net

Every step is per series: each series has its own scaler (fit on its own training part only), its own
differences and its own windows, so one global model sees every series on the same footing whatever its units.
`window_norm="divide"` takes the place of the min-max step: each window is divided by its level, and 1
subtracted, as DeepAR scales by the mean of its context. A window's level is the mean of its first
input_chunk_length points, the part the net reads before it forecasts; in a forecast, the context's.

With `deseasonalise`, each series is first divided by its seasonal indices: a classical multiplicative
decomposition of its training part (a centred moving average of a season's length as the trend, each point's
ratio to it averaged by place in the season), where the Theta method's test finds a season (the autocorrelation
at the season beyond 1.645 of its standard error, over at least 3 seasons of values at or above 0 whose trend is
above 0, as visitors or sales that stop some months). A seasonal series that this cannot divide (a value below 0, a
trend at or below 0, a place in the season with an index of 0: profits, flows, anomalies that cross 0) gets an
additive decomposition instead: each point's difference from the trend averaged by place, centred, subtracted as its
seasonal shifts, so that such a series too leaves its season to the decomposition rather than to the net
(docs/design-notes.md, "The `panel` sweep", measures what the shifts gain).
Other series keep indices of 1 and shifts of 0. Where the data's frequency has a longer season that is a whole
number of the first (the week of hourly or half-hourly data), it is taken next, from what the day's indices left,
where the part holds 3 weeks: one table of a week's places then holds both. Daily data's year, not a whole number of
weeks, is a smooth profile of the time of year beside the week's table, where the part holds two years
(forecaster/features/seasonal_adjustment.py). A window shows the net one or two seasons; the indices come from the whole
training part.

With `calendar`, every input also carries where the *next* point falls in time (the month of the year for monthly
data, the hour of the day and the day of the week for hourly; on a plain time index, points since the series'
start), and with covariates their scaled values: forecaster/features/step_inputs.py says what each step reads beside the
value.

Every step inverts exactly (the tests check it, series by series): a forecast in the net's units goes back
through the level, the series' scaler, the differences (from the last known values, then from the forecast's
own), the log and the seasonal indices.

Arrays of many series are flat, series after series, with offsets (forecaster/data/panel.py); a forecast's inputs
and outputs are time-major, (steps, B), one column per forecast.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

from forecaster.config import ORIGINAL_UNIT_LOSSES, ForecasterConfig
from forecaster.data.panel import Panel
from forecaster.features.seasonal_adjustment import seasonal_components, year_at, year_components
from forecaster.features.step_inputs import StepInputs, calendar_features, step_ns
from forecaster.metrics import mase_scales
from forecaster.shapes import shape_of

if TYPE_CHECKING:
    from forecaster.shapes.base import Shape

_Values = TypeVar("_Values", npt.NDArray[np.float64], Tensor)


@dataclasses.dataclass(frozen=True, eq=False)
class MinMaxScaler:
    """Maps each series' training part onto [0, 1]; fit on the training part only, so validation stays unseen."""

    minimum: np.ndarray
    """(S,) per series."""
    scale: np.ndarray

    @classmethod
    def fit(cls, values: npt.ArrayLike, offsets: np.ndarray | None = None) -> MinMaxScaler:
        """One scaler per segment values[offsets[i]:offsets[i + 1]] (every one non-empty); one for all without."""
        values = np.asarray(values, dtype=np.float64)
        starts = np.array([0]) if offsets is None else np.asarray(offsets[:-1])
        low, high = np.minimum.reduceat(values, starts), np.maximum.reduceat(values, starts)
        scale = high - low
        return cls(minimum=low, scale=np.where(scale == 0, 1.0, scale))  # a constant series maps to 0, as in sklearn

    @classmethod
    def identity(cls, series: int) -> MinMaxScaler:
        return cls(np.zeros(series), np.ones(series))

    def transform(self, values: np.ndarray, series: np.ndarray | None = None) -> np.ndarray:
        """values scaled by the scaler of their series (`series`: the index of each; none: the first scaler)."""
        rows = 0 if series is None else series
        return cast(np.ndarray, (values - self.minimum[rows]) / self.scale[rows])

    def inverse_transform(self, values: np.ndarray, series: np.ndarray | None = None) -> np.ndarray:
        rows = 0 if series is None else series
        return cast(np.ndarray, values * self.scale[rows] + self.minimum[rows])

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MinMaxScaler)
            and np.array_equal(self.minimum, other.minimum)
            and np.array_equal(self.scale, other.scale)
        )

    __hash__ = None  # type: ignore[assignment]  # equal by value, and mutable arrays: not hashable


@dataclasses.dataclass(frozen=True)
class TargetTransform:
    log: bool
    lag: int
    """0: no differences; 1: first differences; the season: seasonal differences."""
    window_norm: str
    scaler: MinMaxScaler
    """One row per series of the panel it was fit on (a checkpoint stores them with the series' ids)."""
    season: int
    """Points per season (12 for monthly data, 1 where there is none): lag, calendar, baselines."""
    seasonal: np.ndarray | None = None
    """(S, P): each series' seasonal index at each place in the longest nested season (seasonal_components;
    deseasonalise), else None."""
    logged: np.ndarray | None = None
    """(S,) bool, log_if_positive: the series whose log is taken; None where `log` says it for every series."""
    shifts: np.ndarray | None = None
    """(S, season): each series' additive seasonal shift at each place (0 where it is divided instead), or None where
    no series is additive."""
    inputs: StepInputs | None = None
    """What each step reads beside the value (forecaster/features/step_inputs.py), its covariates scaled per series;
    None: the
    place in the season alone, where the config reads the calendar."""
    year: np.ndarray | None = None
    """(S, 2, 2K): each series' year beside the seasonal table, daily data only (year_components: its log factors'
    and its shifts' harmonics), or None."""

    @classmethod
    def of(
        cls,
        config: ForecasterConfig,
        season: int,
        scaler: MinMaxScaler,
        seasonal: np.ndarray | None = None,
        logged: np.ndarray | None = None,
        shifts: np.ndarray | None = None,
        inputs: StepInputs | None = None,
        year: np.ndarray | None = None,
    ) -> TargetTransform:
        """The transform of `config` with fitted scalers, seasonal indices, shifts and year, the series it logs and
        the inputs beside the value (a checkpoint stores them and the season)."""
        kind = config.target_transform
        lag = season if kind.endswith("seasonal_diff") else 1 if kind.endswith("diff") else 0
        every = kind.startswith("log") and kind != "log_if_positive"
        return cls(every, lag, config.window_norm, scaler, season, seasonal, logged, shifts, inputs, year)

    @property
    def seasonal_period(self) -> int:
        """The points the seasonal tables span: the longest nested season (168 hourly), or the season."""
        return self.season if self.seasonal is None else self.seasonal.shape[1]

    def step_inputs(self, calendar: bool) -> StepInputs:
        """What each step reads beside the value (with `calendar` where the transform holds no inputs)."""
        return self.inputs if self.inputs is not None else StepInputs(calendar, self.season)

    @classmethod
    def fit(cls, config: ForecasterConfig, train: Panel, seen: Panel | None = None) -> TargetTransform:
        """Fit each series' seasonal indices and scaler on its training part only, so that nothing after it leaks
        into the inputs. log_if_positive logs the series whose every value the model reads is above 0: those of
        `seen` (each series' training part and the points after it that forecasts read; default: `train`)."""
        seasonal, shifts = seasonal_components(train) if config.deseasonalise and train.season > 1 else (None, None)
        year = None if seasonal is None else year_components(train, seasonal, shifts)
        logged = None
        if config.target_transform == "log_if_positive":
            read = seen if seen is not None else train
            logged = np.minimum.reduceat(read.values, read.offsets[:-1]) > 0 if len(read.values) else None
        shape = shape_of(config.shape)
        path = config.covariate_path
        read = train if path != "none" else dataclasses.replace(train, covariates=None)
        inputs = (
            StepInputs.fit(
                config.calendar,
                read,
                shape.reads_hist and path == "net",  # a linear term reads what is known ahead only
                config.covariate_scaling == "shared",
                config.seasonal_lag,
                own_known=path == "linear",  # what its linear term takes out of each value the net reads
            )
            if shape.reads_covariates
            else StepInputs(config.calendar, train.season)
        )
        identity = MinMaxScaler.identity(len(train))
        unscaled = cls.of(config, train.season, identity, seasonal, logged, shifts, inputs, year)
        if config.window_norm == "divide" or not shape.scaled:  # scaled by a level of their own
            return unscaled
        differenced, offsets = unscaled.differenced(train)
        return dataclasses.replace(unscaled, scaler=MinMaxScaler.fit(differenced, offsets))

    def level_space(self, panel: Panel, rows: np.ndarray | None = None) -> np.ndarray:
        """y -> z for every point of `panel`: less its seasonal shift and divided by its seasonal index, then the log
        (`rows`: each series' row of the indices; default: the panel they were fit on)."""
        values = np.asarray(panel.values, dtype=np.float64)
        rows = np.arange(len(panel)) if rows is None else np.asarray(rows)
        if self.seasonal is not None:
            where = np.repeat(rows, panel.lengths), panel.phases(np.arange(len(values)), self.seasonal_period)
            indices, shifts = self.seasonal[where], 0.0 if self.shifts is None else self.shifts[where]
            if self.year is not None:
                factors, more = year_at(self.year, where[0], panel.times.astype("datetime64[ns]").astype(np.int64))
                indices, shifts = indices * factors, shifts + more
            values = (values - shifts) / indices
        if self.logged is not None:
            logged = np.repeat(self.logged[rows], panel.lengths)
            return np.where(logged, np.log(np.where(logged, values, 1.0)), values)
        return np.log(values) if self.log else values

    def differenced(self, panel: Panel, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """y -> d for every series, each `lag` points shorter (d's element k of a series belongs to its point
        k + lag), and d's offsets."""
        z = self.level_space(panel, rows)
        offsets = panel.offsets - self.lag * np.arange(len(panel) + 1)
        if not self.lag:
            return z, offsets
        later = np.flatnonzero(panel.positions >= self.lag)
        return z[later] - z[later - self.lag], offsets

    def to_model(self, panel: Panel, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """y -> s, before any per-window normalisation, each series scaled by its scaler (`rows`: the scaler row of
        each of the panel's series; default: the panel is the one the scalers were fit on)."""
        rows = np.arange(len(panel)) if rows is None else np.asarray(rows)
        differenced, offsets = self.differenced(panel, rows)
        return self.scaler.transform(differenced, np.repeat(rows, np.diff(offsets))), offsets

    def normalise(
        self, windows: _Values, input_chunk_length: int, real: _Values | None = None
    ) -> tuple[_Values, _Values]:
        """Windows (time first, any further axes) in the net's units, and the level of each. `real` (the windows'
        shape, 1 or 0, NumPy or torch as the windows): where a window holds a point of its series, and 0 where it is
        padding; the level is then the mean of its real input points, and the padding stays 0."""
        if real is None:
            level = windows[:input_chunk_length].mean(0)
        else:
            level = (windows[:input_chunk_length] * real[:input_chunk_length]).sum(0) / real[:input_chunk_length].sum(0)
        if self.window_norm == "subtract":
            normalised = windows - level
        elif self.window_norm == "divide":
            normalised = windows / level - 1.0
        else:
            return windows, level * 0.0
        return (normalised if real is None else normalised * real), level

    def normalised_with(self, values: _Values, level: _Values) -> _Values:
        """Values in a window's units (normalise) by that window's `level`: what the value a season back, read
        beside each point, is normalised by."""
        if self.window_norm == "subtract":
            return values - level
        if self.window_norm == "divide":
            return values / level - 1.0
        return values

    def from_model(self, predictions: Tensor, inputs: ForecastInputs) -> Tensor:
        """Forecasts in the net's units (steps, B) -> original units, each column continuing its series with the
        level, scaler, history (the last `lag` values of z before it) and seasonal indices that `inputs` holds for
        it."""
        if self.window_norm == "subtract":
            predictions = predictions + inputs.level
        elif self.window_norm == "divide":
            predictions = (predictions + 1.0) * inputs.level
        z = predictions * inputs.scale + inputs.minimum
        if self.lag == 1:
            z = inputs.history[-1] + torch.cumsum(z, 0)
        elif self.lag > 1:
            blocks, previous = [], inputs.history
            for start in range(0, len(z), self.lag):
                previous = z[start : start + self.lag] + previous[: len(z[start : start + self.lag])]
                blocks.append(previous)
            z = torch.cat(blocks)
        if inputs.logged is not None:  # exp of 0 where unused: an overflow there would give NaN gradients
            adjusted = torch.where(inputs.logged, torch.exp(torch.where(inputs.logged, z, 0.0)), z)
        else:
            adjusted = torch.exp(z) if self.log else z
        if inputs.seasonal is not None:
            adjusted = adjusted * inputs.seasonal[: len(adjusted)]
        return adjusted if inputs.shifts is None else adjusted + inputs.shifts[: len(adjusted)]


@dataclasses.dataclass
class ForecastInputs:
    """What the net needs to forecast from B origins at once (one column per series and origin)."""

    context: Tensor
    """(input_chunk_length, B, 1 + C): the normalised values before each origin, with what each step reads beside
    them (forecaster/features/step_inputs.py: the next point's calendar and known-ahead covariates, ...)."""
    level: Tensor
    """(B,): each context's level (float64, as `history`)."""
    history: Tensor
    """(lag, B): the last lag values of z up to each origin, from which the differences are undone."""
    minimum: Tensor
    """(B,): the minimum of the scaler of each column's series."""
    scale: Tensor
    """(B,): the scale of the scaler of each column's series."""
    future: Tensor | None
    """(steps - 1, B, C): what each fed-back forecast point reads beside it (the calendar and the known-ahead
    covariates of the point after it, ...), or None where a step reads nothing else."""
    seasonal: Tensor | None = None
    """(steps, B): the seasonal index of each forecast point (float64), or None without deseasonalise."""
    logged: Tensor | None = None
    """(B,) bool: whether each column's series is logged (log_if_positive), or None."""
    shifts: Tensor | None = None
    """(steps, B): the seasonal shift of each forecast point (float64), or None where no series is additive."""

    def columns(self, chosen: slice) -> ForecastInputs:
        """The inputs of some of the forecasts (a slice of the B columns)."""
        return ForecastInputs(
            context=self.context[:, chosen],
            level=self.level[chosen],
            history=self.history[:, chosen],
            minimum=self.minimum[chosen],
            scale=self.scale[chosen],
            future=None if self.future is None else self.future[:, chosen],
            seasonal=None if self.seasonal is None else self.seasonal[:, chosen],
            logged=None if self.logged is None else self.logged[chosen],
            shifts=None if self.shifts is None else self.shifts[:, chosen],
        )

    def to(self, device: torch.device | str, dtype: torch.dtype = torch.float32) -> ForecastInputs:
        """On `device`, the float64 parts (level, history, scaler) in `dtype`."""
        return ForecastInputs(
            context=self.context.to(device),
            level=self.level.to(device, dtype),
            history=self.history.to(device, dtype),
            minimum=self.minimum.to(device, dtype),
            scale=self.scale.to(device, dtype),
            future=None if self.future is None else self.future.to(device),
            seasonal=None if self.seasonal is None else self.seasonal.to(device, dtype),
            logged=None if self.logged is None else self.logged.to(device),
            shifts=None if self.shifts is None else self.shifts.to(device, dtype),
        )


def forecast_inputs(
    transform: TargetTransform,
    panel: Panel,
    ends: np.ndarray,
    input_chunk_length: int,
    steps: int,
    calendar: bool,
    rows: np.ndarray | None = None,
    padded: bool = False,
) -> ForecastInputs:
    """The inputs of forecasts of `steps` points after each row in `ends` (the last known point of each forecast,
    a row of `panel`; several may lie in one series). `rows`: the scaler row of each of the panel's series.
    `padded` (the direct shape): a context reaching before its series' start is padded with zeros, and a last input
    says which points are real (1) and which padding (0); otherwise every context lies inside its series."""
    ends = np.asarray(ends, dtype=np.int64)
    series = np.searchsorted(panel.offsets, ends, side="right") - 1
    scaled, _ = transform.to_model(panel, rows)
    lag, length = transform.lag, input_chunk_length
    points = ends[None, :] + np.arange(1 - length, 1)[:, None]  # (length, B): rows of the context
    real = None
    if padded:  # s begins lag points into each series
        first = (panel.offsets[series] + lag)[None, :]
        real = (points >= first).astype(np.float64)
        points = np.maximum(points, first)
    contexts = scaled[points - lag * (series[None, :] + 1)]  # s's element for a point: lag fewer per series so far
    if padded:
        contexts = contexts * real
    normalised, level = transform.normalise(contexts, length, real)
    scaler_rows = (np.arange(len(panel)) if rows is None else np.asarray(rows))[series]
    z = transform.level_space(panel, rows)
    history = z[ends[None, :] + np.arange(1 - lag, 1)[:, None]] if lag else np.zeros((0, len(ends)))
    context, future = normalised[..., None], None
    step_inputs = transform.step_inputs(calendar)
    if step_inputs.count:
        # Row j of a context holds the point at end - length + 1 + j, and what is known of the point after it.
        origin = ends - panel.offsets[series]  # each forecast's last known point, within its series
        step_inputs.check_known_ahead(panel, series, origin, steps)
        read = origin[None, :] + np.arange(1 - length, 1)[:, None]
        ahead = origin[None, :] + np.arange(1, steps)[:, None]
        beside = [
            _beside(step_inputs, panel, series, read, origin, scaler_rows, real),
            _beside(step_inputs, panel, series, ahead, origin, scaler_rows),
        ]
        if step_inputs.seasonal_lag:  # the value a season before each row's next point, in the context's units
            for part, rows in enumerate((read, ahead)):
                lagged = _season_back(transform, panel, scaled, series, rows, origin, step_inputs.seasonal_lag, level)
                beside[part] = np.concatenate([beside[part], lagged[..., None]], -1)
        context = np.concatenate([context, beside[0]], -1)
        future = torch.as_tensor(beside[1], dtype=torch.float32)
    if real is not None:  # padded
        context = np.concatenate([context, real[..., None]], axis=-1)
    seasonal = shifts = None
    if transform.seasonal is not None:
        period = transform.seasonal_period
        places = (panel.phases(ends, period)[None, :] + np.arange(1, steps + 1)[:, None]) % period
        indices = transform.seasonal[scaler_rows[None, :], places]
        more = None if transform.shifts is None else transform.shifts[scaler_rows[None, :], places]
        if transform.year is not None:  # the forecast points' times: the data's step after each origin's
            last = panel.times[ends].astype("datetime64[ns]").astype(np.int64)
            times = last[None, :] + np.arange(1, steps + 1)[:, None] * step_ns(panel.freq)  # type: ignore[operator]
            factors, shifted = year_at(transform.year, scaler_rows[None, :], times)
            indices, more = indices * factors, shifted if more is None else more + shifted
        seasonal = torch.as_tensor(indices, dtype=torch.float64)
        if more is not None:
            shifts = torch.as_tensor(more, dtype=torch.float64)
    return ForecastInputs(
        context=torch.as_tensor(context, dtype=torch.float32),
        level=torch.as_tensor(level, dtype=torch.float64),  # float64: a caller that wants float32 converts
        history=torch.as_tensor(history, dtype=torch.float64),
        minimum=torch.as_tensor(transform.scaler.minimum[scaler_rows], dtype=torch.float64),
        scale=torch.as_tensor(transform.scaler.scale[scaler_rows], dtype=torch.float64),
        future=future,
        seasonal=seasonal,
        logged=None if transform.logged is None else torch.as_tensor(transform.logged[scaler_rows]),
        shifts=shifts,
    )


def _beside(
    inputs: StepInputs,
    panel: Panel,
    series: np.ndarray,
    positions: np.ndarray,
    origin: np.ndarray,
    rows: np.ndarray,
    real: np.ndarray | None = None,
) -> np.ndarray:
    """(T, B, C): what the rows at `positions` (T, B) of each forecast's series read beside the value: the calendar
    (of the point after, before a series' start too, as its count goes) and the covariates (0 on padding, `real`);
    not the value a season back (_season_back)."""
    parts = [np.zeros((*np.shape(positions), 0))]
    if inputs.calendar_count:
        parts.append(inputs.calendar_of_next(panel, series[None, :], positions))
    if inputs.covariate_count or inputs.static_names:
        covariates = inputs.covariates_of(panel, series[None, :], np.maximum(positions, 0), origin[None, :], rows)
        parts.append(covariates if real is None else covariates * real[..., None])
    return np.concatenate(parts, axis=-1)


def covariate_regression(transform: TargetTransform, train: Panel) -> np.ndarray:
    """(F,) the least-squares coefficients of the values the net reads (s) on their own points' known-ahead values,
    each less its series' mean over the training part: where covariate_path linear's term starts, so that the net
    learns the regression's errors from its first epoch instead of the covariates' whole effect."""
    inputs = transform.step_inputs(False)
    count = len(inputs.futr_names)
    scaled, offsets = transform.to_model(train)
    later = np.flatnonzero(train.positions >= transform.lag)  # the points of s, in its order
    series = np.searchsorted(train.offsets, later, side="right") - 1
    positions = train.positions[later]
    known = inputs.covariates_of(train, series, positions, positions, series)[:, -count:] if count else None
    if known is None or not len(scaled):
        return np.zeros(count)
    starts, lengths = offsets[:-1], np.maximum(np.diff(offsets), 1)

    def centred(values: np.ndarray) -> np.ndarray:
        means = np.add.reduceat(values, starts, axis=0) / lengths.reshape(-1, *([1] * (values.ndim - 1)))
        return values - np.repeat(means, np.diff(offsets), axis=0)

    solution, *_ = np.linalg.lstsq(centred(known), centred(scaled), rcond=None)
    return np.asarray(solution, dtype=np.float64)


def _season_back(
    transform: TargetTransform,
    panel: Panel,
    scaled: np.ndarray,
    series: np.ndarray,
    positions: np.ndarray,
    origin: np.ndarray,
    lag: int,
    level: np.ndarray,
) -> np.ndarray:
    """(T, B): for the rows at `positions` (T, B) of each forecast's series, the value `lag` points before the point
    after each, or where that lies after the forecast's `origin`, the same place a season further back: the last
    value known there; normalised by the context's `level` as the values are, 0 where the series has none."""
    after = positions + 1
    back = after - lag * np.maximum(1, -(-(after - origin[None, :]) // lag))  # ceil((after - origin) / lag), at least 1
    known = back >= transform.lag  # a point of s: the differences take a series' first `lag` points
    index = panel.offsets[series][None, :] + np.where(known, back, transform.lag) - transform.lag * (series + 1)
    return np.where(known, transform.normalised_with(scaled[index], level), 0.0)


class ShapeWindows(Protocol):
    """What the epochs (forecaster.training.train.EpochBatches) read of the training windows a shape lays out:
    TrainingWindows,
    or a shape's own (the hybrid's HybridWindows)."""

    counts: Tensor
    """(S,) int64: how many windows each series has."""

    @property
    def device(self) -> torch.device: ...

    def to(self, device: torch.device | str) -> ShapeWindows: ...

    def cut(self, series: Tensor, positions: Tensor) -> Tensor:
        """What the shape's loss reads of the windows at `positions` of `series`."""
        ...

    def in_original_units(
        self, series: Tensor, positions: Tensor, windows: Tensor
    ) -> tuple[ForecastInputs, Tensor] | None:
        """What takes those windows' scored points back to original units; None without a loss in original units."""
        ...


class ShapeInputs(Protocol):
    """The inputs of a shape's forecasts (ForecastInputs, or a shape's own: the hybrid's HybridInputs), which only that
    shape reads: the epochs and the net move them to the device and pass them along."""

    def to(self, device: torch.device | str, dtype: torch.dtype = torch.float32) -> ShapeInputs: ...


@dataclasses.dataclass
class TrainingWindows:
    """Every series' training part in the net's units, back to back on one device, from which any of its windows is
    cut when an epoch asks for it: memory grows with the points of the panel, not with its windows (a window of
    every point would take training_length times more).

    A window of series i at position k holds `span` points of s from k on (s's element k belongs to the series' point
    k + lag), normalised, with the calendar of the point after each. Its origin, k + input_chunk_length, is the first
    point it forecasts after reading its input chunk. The recurrent shape's windows are training_length + 1 points,
    every one inside the series. The direct shape's are input_chunk_length + output_chunk_length points, from every
    origin with at least one point before it and one at it (N-BEATS' sampling): a window reaching before the series'
    start or past its end is padded with zeros there, and carries a last input that is 1 on real points and 0 on
    padding, which the loss reads too. With windows_from_last = N, only origins among each series' last N points."""

    values: Tensor
    """(M,) float64: s of every series, back to back (float64, so that the windows round once, to float32)."""
    starts: Tensor
    """(S,) int64: where each series starts in `values`."""
    lengths: Tensor
    """(S,) int64: how many points of s each series has."""
    first: Tensor
    """(S,) int64: the position k of each series' first window (negative where the direct shape pads it)."""
    counts: Tensor
    """(S,) int64: how many windows each series has."""
    phases: Tensor
    """(S,) int64: the position in the seasonal tables' period (a whole number of seasons) of the point after row 0
    of each series' window at k = 0."""
    calendar: Tensor | None
    """(season, 2) float32: sin and cos of each season position, where the calendar is the place in the season; else
    None."""
    transform: TargetTransform
    span: int
    input_chunk_length: int
    padded: bool
    """The direct shape's layout: padding where a window leaves its series, and the mask input."""
    originals: OriginalUnits | None = None
    """What a loss in original units needs of each series (smape and mase); None otherwise."""
    first_scored: int = 0
    """The first row of a window that such a loss scores: the direct shape's block, or the recurrent shape's first
    next-step target (after its input chunk with loss_after_context, else row 1)."""
    clock: Tensor | None = None
    """(S,) int64: the time (ns) of the point after row 0 of each series' window at k = 0, where the calendar is
    the time's place in its periods (forecaster/features/step_inputs.py); else None."""
    periods: tuple[int, ...] = ()
    step: int = 0
    """The data's step in ns, with `clock`."""
    covariates: Tensor | None = None
    """(M,) x (F + G + K) float32 beside `values`: the scaled known-ahead covariates of the point after each, its
    historic ones and its series' statics; None without covariates."""
    seasonal_lag: int = 0
    """L: each row also reads the value L points before the point after it (its window's first position is then at
    least L - 1, so that every row has one); 0: none."""

    @classmethod
    def of(
        cls, transform: TargetTransform, train: Panel, config: ForecasterConfig, shape: Shape | None = None
    ) -> TrainingWindows:
        """The windows of `train` as the config's shape lays them out (Shape.window_layout)."""
        shape = shape or shape_of(config.shape)
        scaled, offsets = transform.to_model(train)
        lengths = np.diff(offsets)
        span, earliest, last, first_scored = shape.window_layout(config, lengths)
        inputs = transform.step_inputs(config.calendar)
        if inputs.seasonal_lag:  # every row's value a season back lies inside its series
            earliest = np.maximum(earliest, config.input_chunk_length + inputs.seasonal_lag - 1)
        earliest = np.broadcast_to(earliest, lengths.shape)
        calendar = clock = covariates = None
        if inputs.calendar_count and not inputs.periods:
            calendar = torch.as_tensor(calendar_features(np.arange(transform.season), transform.season))
        elif inputs.calendar_count:
            first = train.first_times().astype("datetime64[ns]").astype(np.int64)
            clock = torch.as_tensor(first + (transform.lag + 1) * step_ns(train.freq))  # type: ignore[operator]
        if inputs.covariate_count or inputs.static_names:
            later = np.flatnonzero(train.positions >= transform.lag)  # the points of s, in its order
            series = np.searchsorted(train.offsets, later, side="right") - 1
            positions = train.positions[later]
            covariates = torch.as_tensor(inputs.covariates_of(train, series, positions, positions, series)).float()
        originals = None
        if config.loss in ORIGINAL_UNIT_LOSSES:
            originals = OriginalUnits.of(transform, train)
        return cls(
            values=torch.as_tensor(scaled, dtype=torch.float64),
            starts=torch.as_tensor(offsets[:-1]),
            lengths=torch.as_tensor(lengths),
            first=torch.as_tensor(earliest - config.input_chunk_length),
            counts=torch.as_tensor(np.maximum(last - earliest + 1, 0)),
            phases=torch.as_tensor(train.phases(period=transform.seasonal_period) + transform.lag + 1),
            calendar=None if calendar is None else calendar.float(),
            transform=transform,
            span=span,
            input_chunk_length=config.input_chunk_length,
            padded=shape.padded,
            originals=originals,
            first_scored=first_scored,
            clock=clock,
            periods=inputs.periods,
            step=step_ns(train.freq) or 0,
            covariates=covariates,
            seasonal_lag=inputs.seasonal_lag,
        )

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def device(self) -> torch.device:
        return self.values.device

    def to(self, device: torch.device | str) -> TrainingWindows:
        # Apple's MPS holds no float64: there the windows are cut from float32 values.
        values = self.values.float() if torch.device(device).type == "mps" else self.values
        return dataclasses.replace(
            self,
            values=values.to(device),
            starts=self.starts.to(device),
            lengths=self.lengths.to(device),
            first=self.first.to(device),
            counts=self.counts.to(device),
            phases=self.phases.to(device),
            calendar=None if self.calendar is None else self.calendar.to(device),
            originals=None if self.originals is None else self.originals.to(device),
            clock=None if self.clock is None else self.clock.to(device),
            covariates=None if self.covariates is None else self.covariates.to(device),
        )

    def _points(self, series: Tensor, positions: Tensor) -> tuple[Tensor, Tensor | None, Tensor, Tensor]:
        """(values (span, E) float64, real (span, E) float64 or None where nothing is padded, positions k (E,), and
        the element of `values` each point is (span, E), clamped into its series)."""
        steps = torch.arange(self.span, device=self.values.device)[:, None]
        positions = self.first[series] + positions
        inside = positions[None, :] + steps  # (span, E): each point's place in its series' s
        if not self.padded:
            index = self.starts[series][None, :] + inside
            return self.values[index], None, positions, index
        lengths = self.lengths[series][None, :]
        real = (inside >= 0) & (inside < lengths)
        index = self.starts[series][None, :] + torch.minimum(inside.clamp(min=0), lengths - 1)
        real = real.to(self.values.dtype)
        return self.values[index] * real, real, positions, index

    def cut(self, series: Tensor, positions: Tensor) -> Tensor:
        """The windows at `positions` of `series` (both (E,), on the device): (span, E, 1 + C (+ 1)) float32,
        time-major, each row with what it reads beside its value (forecaster/features/step_inputs.py: the calendar and
        known-ahead covariates of the point after it, ...), and the direct shape's mask last."""
        values, real, positions, index = self._points(series, positions)
        windows, level = self.transform.normalise(values, self.input_chunk_length, real)
        windows = windows.float()[..., None]
        parts = [windows]
        steps = torch.arange(self.span, device=self.values.device)[:, None]
        if self.calendar is not None:
            phase = (self.phases[series] + positions)[None, :] + steps
            parts.append(self.calendar[phase % self.transform.season])
        elif self.clock is not None:
            times = self.clock[series][None, :] + (positions[None, :] + steps) * self.step
            parts.append(_time_features(times, self.periods))
        if self.covariates is not None:
            beside = self.covariates[index]
            parts.append(beside if real is None else beside * real.float()[..., None])
        if self.seasonal_lag:  # of the point after each row, inside its series (the windows start late enough)
            lagged = self.transform.normalised_with(self.values[index + 1 - self.seasonal_lag], level)
            parts.append(lagged.float()[..., None])
        if real is not None:
            parts.append(real.float()[..., None])
        return parts[0] if len(parts) == 1 else torch.cat(parts, -1)

    def in_original_units(
        self, series: Tensor, positions: Tensor, windows: Tensor
    ) -> tuple[ForecastInputs, Tensor] | None:
        """What takes the scored rows of `windows` (cut at these positions of these series: from `first_scored` on)
        back to original units (the inputs of `TargetTransform.from_model`, as for a forecast from each window's
        input chunk), and the MASE scale of each window's series (E,); None without a loss in original units."""
        if self.originals is None:
            return None
        values, real, positions, index = self._points(series, positions)
        _, level = self.transform.normalise(values, self.input_chunk_length, real)
        originals, icl = self.originals, self.input_chunk_length
        seasonal = shifts = None
        if originals.seasonal is not None:  # scored point j is y's point k + first_scored + j + lag of its series
            rows = torch.arange(self.first_scored, self.span, device=level.device)[:, None]
            place = (self.phases[series] - 1 + positions)[None, :] + rows
            where = series[None, :], place % self.transform.seasonal_period
            seasonal = originals.seasonal[where]
            if originals.shifts is not None:
                shifts = originals.shifts[where]
            if originals.year_factors is not None and originals.year_shifts is not None:  # of each element's point
                scored = index[self.first_scored :]
                seasonal = seasonal * originals.year_factors[scored]
                more = originals.year_shifts[scored]
                shifts = more if shifts is None else shifts + more
        inputs = ForecastInputs(
            context=windows[:icl],
            level=level.float(),
            history=windows.new_zeros(0, len(level)),
            minimum=originals.minimum[series],
            scale=originals.scale[series],
            future=None,
            seasonal=seasonal,
            logged=None if originals.logged is None else originals.logged[series],
            shifts=shifts,
        )
        return inputs, originals.error_scale[series]


def _time_features(times: Tensor, periods: tuple[int, ...]) -> Tensor:
    """forecaster.features.step_inputs.time_features on the device: (..., 2 * len(periods)) float32."""
    parts = []
    for period in periods:
        angle = torch.remainder(times, period).double() * (2 * math.pi / period)
        parts.extend([angle.sin(), angle.cos()])
    return torch.stack(parts, -1).float()


@dataclasses.dataclass
class OriginalUnits:
    """Per series, what a loss in original units needs beside each window (float32, on the training device): its
    scaler, its seasonal indices, and the scale of its MASE."""

    minimum: Tensor
    scale: Tensor
    seasonal: Tensor | None
    """(S, season), or None without deseasonalise."""
    error_scale: Tensor
    """(S,): each series' in-sample seasonal naive error (its MASE scale), where it is positive; else its naive
    error at lag 1, else its mean absolute value, else 1 (a constant series of zeros)."""
    logged: Tensor | None = None
    """(S,) bool: the series log_if_positive logs, or None."""
    shifts: Tensor | None = None
    """(S, season): the additive seasonal shifts, or None where no series is additive."""
    year_factors: Tensor | None = None
    """(M,): what the year divides the point of each element of s by (TargetTransform.year), or None without it."""
    year_shifts: Tensor | None = None
    """(M,): what the year subtracts from it first."""

    @classmethod
    def of(cls, transform: TargetTransform, train: Panel) -> OriginalUnits:
        as_tensor: Callable[[np.ndarray], Tensor] = lambda array: (  # noqa: E731
            torch.as_tensor(array, dtype=torch.float32)
        )
        factors = shifts = None
        if transform.year is not None:  # s's elements are the points from each series' lag-th on
            later = np.flatnonzero(train.positions >= transform.lag)
            series = np.searchsorted(train.offsets, later, side="right") - 1
            times = train.times[later].astype("datetime64[ns]").astype(np.int64)
            factors, shifts = (as_tensor(part) for part in year_at(transform.year, series, times))
        return cls(
            minimum=as_tensor(transform.scaler.minimum),
            scale=as_tensor(transform.scaler.scale),
            seasonal=None if transform.seasonal is None else as_tensor(transform.seasonal),
            error_scale=as_tensor(error_scales(train)),
            logged=None if transform.logged is None else torch.as_tensor(transform.logged),
            shifts=None if transform.shifts is None else as_tensor(transform.shifts),
            year_factors=factors,
            year_shifts=shifts,
        )

    def to(self, device: torch.device | str) -> OriginalUnits:
        move: Callable[[Tensor | None], Tensor | None] = lambda tensor: (  # noqa: E731
            None if tensor is None else tensor.to(device)
        )
        return OriginalUnits(
            self.minimum.to(device),
            self.scale.to(device),
            move(self.seasonal),
            self.error_scale.to(device),
            move(self.logged),
            move(self.shifts),
            move(self.year_factors),
            move(self.year_shifts),
        )


def error_scales(train: Panel) -> np.ndarray:
    """(S,) what the MASE loss divides each series' errors by: its MASE scale (forecaster.metrics.mase_scales), and
    where that is not positive (a series a season long, or repeating itself), the first of its naive error at lag 1,
    its mean absolute value and 1 that is."""
    scales = mase_scales(train)
    lag_one = mase_scales(dataclasses.replace(train, season=1))
    size = np.abs(train.values)
    means = np.add.reduceat(size, train.offsets[:-1]) / np.maximum(train.lengths, 1) if len(size) else scales
    for fallback in (lag_one, means, np.ones_like(scales)):
        scales = np.where(scales > 0, scales, fallback)
    return scales
