"""What the net sees instead of the raw series, and the exact way back to original units.

The mission's plain path is min-max scaling fit on the training part. A growing series (Air Passengers
grows about 10 % a year) then puts the months to forecast at 1.2-1.3, beyond anything a tanh net saw in
training. The options here keep the net's inputs in the range it trained on; each is a hyperparameter
(`ForecasterConfig.target_transform`, `window_norm`, `calendar`):

    y --log (target_transform log*)--> z --differences at lag 1 or the season (*diff)--> d
      --min-max, fit on the training part--> s --per window, minus its level (window_norm subtract)--> net

`window_norm="divide"` takes the place of the min-max step: each window is divided by its level, and 1
subtracted, as DeepAR scales by the mean of its context. A window's level is the mean of its first
input_chunk_length points, the part the net reads before it forecasts; in a forecast, the context's.

With `calendar`, every input also carries where the *next* point falls in the season (month of year for
monthly data) as a sine and a cosine, so the net knows which month it is predicting, also when it feeds its
own forecasts back.

Every step inverts exactly (the tests check it): a forecast in the net's units goes back through the level,
the scaler, the differences (from the last known values, then from the forecast's own) and the log.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from forecaster.config import ForecasterConfig
from forecaster.data import MinMaxScaler

CALENDAR_FEATURES = 2
"""sin and cos of the position in the season."""


@dataclasses.dataclass(frozen=True)
class TargetTransform:
    log: bool
    lag: int
    """0: no differences; 1: first differences; the season: seasonal differences."""
    window_norm: str
    scaler: MinMaxScaler
    season: int
    """Points per season (12 for monthly data, 1 where the frequency has none): lag, calendar, baselines."""

    @classmethod
    def of(cls, config: ForecasterConfig, season: int, scaler: MinMaxScaler) -> TargetTransform:
        """The transform of `config` with a fitted scaler (a checkpoint stores the scaler and the season)."""
        kind = config.target_transform
        lag = season if kind.endswith("seasonal_diff") else 1 if kind.endswith("diff") else 0
        return cls(kind.startswith("log"), lag, config.window_norm, scaler, season)

    @classmethod
    def fit(cls, config: ForecasterConfig, train: np.ndarray, season: int) -> TargetTransform:
        """Fit the scaler on the training part only, so that nothing after it leaks into the inputs."""
        unscaled = cls.of(config, season, MinMaxScaler(0.0, 1.0))
        if config.window_norm == "divide":  # each window is scaled by its own level instead
            return unscaled
        return dataclasses.replace(unscaled, scaler=MinMaxScaler.fit(unscaled.differenced(train)))

    def level_space(self, values: np.ndarray) -> np.ndarray:
        """y -> z: the log, or the values themselves."""
        values = np.asarray(values, dtype=np.float64)
        return np.log(values) if self.log else values

    def differenced(self, values: np.ndarray) -> np.ndarray:
        """y -> d, `lag` points shorter: d[i] belongs to y[i + lag]."""
        z = self.level_space(values)
        return z[self.lag :] - z[: -self.lag] if self.lag else z

    def to_model(self, values: np.ndarray) -> np.ndarray:
        """y -> s, before any per-window normalisation; s[i] belongs to y[i + lag]."""
        return self.scaler.transform(self.differenced(values))

    def normalise(self, windows, input_chunk_length: int):
        """Windows (time first, any further axes) in the net's units, and the level of each."""
        level = windows[:input_chunk_length].mean(0)
        if self.window_norm == "subtract":
            return windows - level, level
        if self.window_norm == "divide":
            return windows / level - 1.0, level
        return windows, level * 0.0

    def from_model(self, predictions: Tensor, level: Tensor, history: Tensor) -> Tensor:
        """Forecasts in the net's units (steps, B) -> original units, each continuing its `history`, the last
        `lag` values of z before it (lag, B)."""
        if self.window_norm == "subtract":
            predictions = predictions + level
        elif self.window_norm == "divide":
            predictions = (predictions + 1.0) * level
        z = self.scaler.inverse_transform(predictions)
        if self.lag == 1:
            z = history[-1] + torch.cumsum(z, 0)
        elif self.lag > 1:
            blocks, previous = [], history
            for start in range(0, len(z), self.lag):
                previous = z[start : start + self.lag] + previous[: len(z[start : start + self.lag])]
                blocks.append(previous)
            z = torch.cat(blocks)
        return torch.exp(z) if self.log else z


def calendar_features(positions: np.ndarray, season: int) -> np.ndarray:
    """(n, 2): sin and cos of each position's place in the season."""
    angle = 2 * math.pi * (np.asarray(positions) % season) / season
    return np.stack([np.sin(angle), np.cos(angle)], axis=-1)


@dataclasses.dataclass
class ForecastInputs:
    """What the net needs to forecast from B origins at once (B=1 for one forecast)."""

    context: Tensor
    """(input_chunk_length, B, 1 + C): the normalised values before each origin, with the next point's calendar."""
    level: Tensor
    """(B,): each context's level (float64, as `history`)."""
    history: Tensor
    """(lag, B): the last lag values of z up to each origin, from which the differences are undone."""
    future: Tensor | None
    """(steps - 1, B, C): the calendar of the point after each forecast one, or None without calendar inputs."""


def forecast_inputs(
    transform: TargetTransform,
    values: np.ndarray,
    ends: Sequence[int],
    input_chunk_length: int,
    steps: int,
    first_phase: int | None,
) -> ForecastInputs:
    """The inputs of forecasts of `steps` points after each index in `ends` (the last known point) of `values`.

    `first_phase` is the season position of values[0], or None without calendar inputs."""
    scaled = transform.to_model(values)
    lag, length = transform.lag, input_chunk_length
    contexts = np.stack([scaled[end - lag - length + 1 : end - lag + 1] for end in ends], axis=1)
    normalised, level = transform.normalise(contexts, length)
    z = transform.level_space(values)
    history = np.stack([z[end - lag + 1 : end + 1] for end in ends], axis=1) if lag else np.zeros((0, len(ends)))
    context, future = normalised[..., None], None
    if first_phase is not None:
        # Row j of a context holds the point at end - length + 1 + j, and the calendar of the point after it.
        rows = np.stack([np.arange(end - length + 2, end + 2) for end in ends], axis=1) + first_phase
        calendar = calendar_features(rows, transform.season)
        context = np.concatenate([context, calendar], axis=-1)
        after = np.stack([np.arange(end + 2, end + steps + 1) for end in ends], axis=1) + first_phase
        future = torch.as_tensor(calendar_features(after, transform.season), dtype=torch.float32)
    return ForecastInputs(
        context=torch.as_tensor(context, dtype=torch.float32),
        level=torch.as_tensor(level, dtype=torch.float64),  # float64: a caller that wants float32 converts
        history=torch.as_tensor(history, dtype=torch.float64),
        future=future,
    )


def training_windows(
    transform: TargetTransform, values: np.ndarray, config: ForecasterConfig, first_phase: int | None
) -> Tensor:
    """Every window of training_length + 1 points of the training part, normalised, time-major:
    (training_length + 1, n_windows, 1 + C), the calendar of each row being that of the point after it."""
    scaled = transform.to_model(values)
    span = config.training_length + 1
    starts = np.arange(len(scaled) - span + 1)
    rows = starts[None, :] + np.arange(span)[:, None]  # (span, n_windows): indices into scaled
    windows, _ = transform.normalise(scaled[rows], config.input_chunk_length)
    windows = windows[..., None]
    if first_phase is not None:
        calendar = calendar_features(rows + transform.lag + 1 + first_phase, transform.season)
        windows = np.concatenate([windows, calendar], axis=-1)
    return torch.as_tensor(windows, dtype=torch.float32).contiguous()
