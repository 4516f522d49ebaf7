"""The recurrent net of the forecaster and its forecasts, in plain PyTorch.

forecaster/model.py trains it (RNNForecaster, its LightningModule); a sweep's driver loads the best models of its
trials into it to forecast its answer, without importing Lightning, whose import is a large part of a driver's CPU
time (docs/benchmarks.md, "Sweeps").
Forecasting: read the last input_chunk_length points, then feed each prediction back as the next input, carrying
the hidden state, for as many steps as asked, in original units (see the TargetTransform of
forecaster/transforms.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from forecaster import recurrence
from forecaster.config import ForecasterConfig
from forecaster.data import as_panel
from forecaster.panel import Panel
from forecaster.smoothing import (
    HybridInputs,
    SeasonalSmoothing,
    factors_ahead,
    hybrid_inputs,
    log_shifts,
    new_series_factors,
    smooth,
)
from forecaster.transforms import CALENDAR_FEATURES, ForecastInputs, MinMaxScaler, TargetTransform, forecast_inputs

_CELLS = {"RNN": nn.RNN, "LSTM": nn.LSTM, "GRU": nn.GRU}
CPU_FORECAST_COLUMNS = 2048
"""A CPU forecast of many series runs in blocks of this many: each block's states stay in the cache, so the time per
forecast stays the same however many series there are (docs/benchmarks.md, "One fit on a panel")."""


class RNNNet(nn.Module):
    """The net, with the transform of its training data, so that it forecasts in original units."""

    def __init__(
        self,
        config: ForecasterConfig | Mapping[str, Any],
        scaler_minimum: float | Sequence[float] = 0.0,
        scaler_scale: float | Sequence[float] = 1.0,
        season: int = 1,
        series_ids: Sequence[str] | None = None,
        time_origins: Sequence[int] | None = None,
        seasonal_indices: Sequence[Sequence[float]] | None = None,
        logged_series: Sequence[bool] | None = None,
        seasonal_shifts: Sequence[Sequence[float]] | None = None,
        log_shifts: Sequence[float] | None = None,
    ):
        """One scaler (minimum and scale) per series it is trained on, with their ids, so that it forecasts any of
        them from its history; `time_origins`, on a plain time index, where each series' season count starts;
        `seasonal_indices`, (series, season), where the config deseasonalises, and `seasonal_shifts` where a series is
        additive; `logged_series`, which series log_if_positive logs; `log_shifts`, the hybrid shape's, what each
        series gets added before its log."""
        super().__init__()
        config = config if isinstance(config, ForecasterConfig) else ForecasterConfig.from_dict(config)
        # Plain lists from here on: checkpoints store them, and Lightning's save_hyperparameters compares the values,
        # which arrays break.
        scaler_minimum = np.atleast_1d(np.asarray(scaler_minimum, dtype=np.float64)).tolist()
        scaler_scale = np.atleast_1d(np.asarray(scaler_scale, dtype=np.float64)).tolist()
        series_ids = None if series_ids is None else [str(i) for i in series_ids]
        time_origins = None if time_origins is None else np.asarray(time_origins, dtype=np.int64).tolist()
        if seasonal_indices is not None:
            seasonal_indices = np.asarray(seasonal_indices, dtype=np.float64).tolist()
        if logged_series is not None:
            logged_series = np.asarray(logged_series, dtype=bool).tolist()
        if seasonal_shifts is not None:
            seasonal_shifts = np.asarray(seasonal_shifts, dtype=np.float64).tolist()
        if log_shifts is not None:
            log_shifts = np.asarray(log_shifts, dtype=np.float64).tolist()
        self.hyperparameters = {
            "config": config.to_dict(),
            "scaler_minimum": scaler_minimum,
            "scaler_scale": scaler_scale,
            "season": int(season),
            "series_ids": series_ids,
            "time_origins": time_origins,
            "seasonal_indices": seasonal_indices,
            **({"logged_series": logged_series} if logged_series is not None else {}),
            **({"seasonal_shifts": seasonal_shifts} if seasonal_shifts is not None else {}),
            **({"log_shifts": log_shifts} if log_shifts is not None else {}),
        }
        """The arguments that build this net again, as plain values: what a checkpoint stores."""
        self.config = config
        self.scaler = MinMaxScaler(minimum=np.array(scaler_minimum), scale=np.array(scaler_scale))
        self.series_ids = series_ids
        self.time_origins = None if time_origins is None else np.array(time_origins, dtype=np.int64)
        self.transform = TargetTransform.of(
            config,
            int(season),
            self.scaler,
            None if seasonal_indices is None else np.array(seasonal_indices),
            None if logged_series is None else np.array(logged_series, dtype=bool),
            None if seasonal_shifts is None else np.array(seasonal_shifts),
        )
        between_layers = config.dropout if config.n_rnn_layers > 1 else 0.0  # PyTorch warns on dropout with 1 layer
        self.hybrid = config.shape == "hybrid"
        self.direct = config.shape == "direct" or self.hybrid  # the hybrid reads and emits as the direct shape does
        inputs = 1 + (CALENDAR_FEATURES if config.calendar else 0) + (1 if self.direct else 0)  # the mask, last
        self.rnn = _CELLS[config.model](inputs, config.hidden_dim, config.n_rnn_layers, dropout=between_layers)
        self.head = _block_head(config) if self.direct else nn.Linear(config.hidden_dim, 1)
        if self.hybrid:
            self.smoothing = SeasonalSmoothing(len(scaler_minimum), int(season))
            self.log_shifts = np.zeros(len(scaler_minimum)) if log_shifts is None else np.array(log_shifts)
        if config.ema_decay:
            # Buffers, so that checkpoints and the best model keep the average with the weights.
            for index, parameter in enumerate(self.parameters()):
                self.register_buffer(f"average_{index}", parameter.detach().clone())

    @classmethod
    def load_best_model(cls, path) -> Self:
        """A model saved as a sweep's trials save their best (its weights and hyperparameters), on the CPU.

        What `load_from_checkpoint` gives for the same file, without Lightning's guard around it, which walks the
        whole call stack with its source lines on every call (inspect.stack), a cost a sweep's driver would pay for
        every model it loads (docs/benchmarks.md, "Sweeps")."""
        saved = torch.load(path, map_location="cpu", weights_only=True)
        model = cls(**saved["hyper_parameters"])
        model.load_state_dict(saved["state_dict"])
        return model

    def forward(self, inputs: Tensor) -> Tensor:
        """Recurrent shape: next-step predictions at every position, (T, B, 1 + C) -> (T, B, 1). Direct shape: the
        block after each input chunk, (input_chunk_length, B, 1 + C + 1) -> (output_chunk_length, B)."""
        states = recurrence.hidden_states(self.rnn, inputs)  # (T, B, hidden_dim)
        if self.direct:
            return self.head(states[-1]).T  # the top layer's last state, as Darts' BlockRNNModel reads it
        return self.head(states)

    def _averages(self) -> list[Tensor]:
        return [getattr(self, f"average_{index}") for index in range(len(list(self.parameters())))]

    @torch.no_grad()
    def _update_average(self) -> None:
        if self.config.ema_decay:
            for average, parameter in zip(self._averages(), self.parameters()):
                average.lerp_(parameter, 1.0 - self.config.ema_decay)

    @contextlib.contextmanager
    def averaged_weights(self):
        """Inside, the parameters hold the moving average (with ema_decay), which is what forecasts."""
        if not self.config.ema_decay:
            yield
            return
        pairs = list(zip(self.parameters(), self._averages()))
        for parameter, average in pairs:  # swap the storages: no copy, and the optimizer keeps its parameters
            parameter.data, average.data = average.data, parameter.data
        try:
            yield
        finally:
            for parameter, average in pairs:
                parameter.data, average.data = average.data, parameter.data

    @torch.no_grad()
    def forecast_scaled(self, context: Tensor, steps: int, future: Tensor | None = None) -> Tensor:
        """Forecast `steps` points after `context` (T, B, 1 + C, and the direct shape's mask) in the net's units,
        feeding predictions back (with the calendar of the point after each, `future`, (steps - 1, B, C)): returns
        (steps, B). The recurrent shape feeds back each point, the direct shape each block (`_roll_blocks`).

        In the weights' own precision: mixed precision would round the fed-back predictions at every step. On the
        CPU, in blocks of CPU_FORECAST_COLUMNS forecasts, whose states stay in the cache.
        """
        columns = context.shape[1]
        if context.is_cpu and columns > CPU_FORECAST_COLUMNS:
            blocks = range(0, columns, CPU_FORECAST_COLUMNS)
            return torch.cat(
                [
                    self.forecast_scaled(
                        context[:, start : start + CPU_FORECAST_COLUMNS],
                        steps,
                        None if future is None else future[:, start : start + CPU_FORECAST_COLUMNS],
                    )
                    for start in blocks
                ],
                dim=1,
            )
        if self.direct:
            with torch.autocast(context.device.type, enabled=False):
                return self._roll_blocks(context, steps, future)
        with torch.autocast(context.device.type, enabled=False):
            state = recurrence.zero_state(self.rnn, context.shape[1], context)
            for point in context:
                hidden = recurrence.step(self.rnn, point, state)
            predictions = context.new_empty(steps, context.shape[1], 1)
            weight, bias = self.head.weight.t(), self.head.bias
            torch.addmm(bias, hidden, weight, out=predictions[0])
            for t in range(1, steps):
                fed_back = predictions[t - 1] if future is None else torch.cat([predictions[t - 1], future[t - 1]], -1)
                torch.addmm(bias, recurrence.step(self.rnn, fed_back, state), weight, out=predictions[t])
        return predictions[..., 0]

    def _roll_blocks(self, context: Tensor, steps: int, future: Tensor | None) -> Tensor:
        """Darts' BlockRNNModel beyond output_chunk_length: each block's outputs join the input chunk (as real
        points, with their calendar), whose last input_chunk_length points the next block reads, normalised by their
        own level as every training window was. Everything stays in the units of `context`'s own level."""
        length, size = len(context), self.config.output_chunk_length
        rows, blocks = context, [self(context)]
        for start in range(size, steps, size):
            appended = [blocks[-1][..., None]]
            if future is not None:  # the calendar of the point after each new one
                appended.append(future[start - size : start])
            appended.append(torch.ones_like(appended[0]))
            rows = torch.cat([rows, torch.cat(appended, -1)])[-length:]
            values, real = rows[:, :, 0], rows[:, :, -1]
            shift = (values * real).sum(0) / real.sum(0)  # the chunk's level, in the first chunk's units
            if self.transform.window_norm == "subtract":
                block = self(torch.cat([((values - shift) * real)[..., None], rows[:, :, 1:]], -1)) + shift
            elif (
                self.transform.window_norm == "divide"
            ):  # x = s / L - 1, so s / chunk's level - 1 = (x + 1) / (m + 1) - 1
                ratio = shift + 1.0
                block = self(torch.cat([(((values + 1.0) / ratio - 1.0) * real)[..., None], rows[:, :, 1:]], -1)) + 1.0
                block = block * ratio - 1.0
            else:
                block = self(rows)
            blocks.append(block)
        return torch.cat(blocks)[:steps]

    def predict(self, inputs: ForecastInputs | HybridInputs, steps: int) -> Tensor:
        """Forecasts of `steps` points from each origin of `inputs`, in original units: (steps, B)."""
        if self.hybrid:
            with self.averaged_weights(), torch.no_grad(), torch.autocast(inputs.z.device.type, enabled=False):
                return self.hybrid_forecast(inputs, steps)
        with self.averaged_weights():
            scaled = self.forecast_scaled(inputs.context, steps, inputs.future)
        return self.transform.from_model(scaled, inputs)

    def hybrid_window(
        self,
        z: Tensor,
        lengths: Tensor,
        ends: Tensor,
        rows: Tensor,
        phases: Tensor,
        new_factors: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The hybrid's view of windows ending at `ends` of the series z (B, T) with `lengths` points (smoothed
        through all of them; `rows`, `phases` and `new_factors` as in `SeasonalSmoothing.coefficients`): the net's
        inputs (input_chunk_length, B, 2), each window's last level (B,), the seasonal factors of the output block's
        points (B, output_chunk_length), and the levels (B, T)."""
        alpha, gamma, initial = self.smoothing.coefficients(rows, phases, new_factors)
        levels, factors = smooth(z, lengths, alpha, gamma, initial)
        last_level = levels.gather(1, ends[:, None])[:, 0]
        places = ends[:, None] + torch.arange(1 - self.config.input_chunk_length, 1, device=z.device)[None, :]
        real = places >= 0
        safe = places.clamp(min=0)
        values = z.gather(1, safe) - factors.gather(1, safe) - last_level[:, None]
        window = torch.stack([torch.where(real, values, 0.0), real.to(values.dtype)], -1).transpose(0, 1)
        ahead = factors_ahead(factors, ends + 1, self.config.output_chunk_length, self.smoothing.season)
        return window, last_level, ahead, levels

    def hybrid_forecast(self, inputs: HybridInputs, steps: int) -> Tensor:
        """(steps, B) in original units: each block of output_chunk_length points from the smoothing and the net
        after each column's end, fed back as points of its series (and smoothed) for the next block."""
        z, lengths, blocks = inputs.z, inputs.lengths, []
        size = self.config.output_chunk_length
        for done in range(0, steps, size):
            window, last_level, ahead, _ = self.hybrid_window(
                z, lengths, lengths - 1, inputs.rows, inputs.phases, inputs.new_factors
            )
            block = self(window).T + last_level[:, None] + ahead  # (B, size), logs
            blocks.append(block)
            if done + size < steps:
                places = (lengths[:, None] + torch.arange(size, device=z.device)[None, :]).clamp(max=z.shape[1] - 1)
                z, lengths = z.scatter(1, places, block.to(z.dtype)), lengths + size
        logs = torch.cat(blocks, 1)[:, :steps].to(inputs.shifts.dtype)
        return (torch.exp(logs) - inputs.shifts[:, None]).T

    def forecast(self, history, steps: int):
        """Forecast `steps` points after the end of every series of `history`, in original units.

        `history` is a Panel of series this model was trained on (matched by id; any one series for a model of
        one): the answer is a long table, unique_id, ds and forecast. A pandas Series with its dates (which
        calendar inputs need) or, without calendar inputs, any sequence of values is a panel of one: the answer is
        then an array of `steps` values."""
        panel = _as_history(history, self.config.calendar, self.transform.season)
        forecasts = self.forecast_columns(panel, steps)
        if not isinstance(history, Panel):
            return forecasts[:, 0]
        return pd.DataFrame(
            {
                "unique_id": np.repeat(panel.ids, steps),
                "ds": panel.future_times(steps).reshape(-1),
                "forecast": forecasts.T.reshape(-1),
            }
        )

    def forecast_part(self, history: Panel, part: Panel) -> np.ndarray:
        """The forecast of every point of `part`, the points that follow each series of `history` (the same series,
        in the same order): flat, one value per row of `part`."""
        forecasts = self.forecast_columns(history, int(part.lengths.max()))
        return forecasts[part.positions, np.repeat(np.arange(len(part)), part.lengths)]

    @property
    def points_read(self) -> int:
        """How many of a series' last points a forecast reads: the recurrent shape's input chunk (and the differences'
        lag); the direct shape pads a shorter history, and needs one point past the lag."""
        return (1 if self.direct else self.config.input_chunk_length) + self.transform.lag

    def forecast_columns(
        self, panel: Panel, steps: int, transform: TargetTransform | None = None, new_series: bool = False
    ) -> np.ndarray:
        """(steps, S): `steps` points after the end of every series of `panel`, in original units. `transform`: one
        row per series of `panel`, in its order (a global model forecasting series it never trained on, their scalers
        fit on their own history: forecaster.answer_model), with `panel.origins` then the caller's to set on a plain
        time index; default: the net's own rows, found by id, and the origins it trained with. The hybrid shape reads
        every point of each series (its smoothing starts at the first); with `new_series`, it forecasts series it
        never trained on too, with the fallback of `hybrid_columns`."""
        if self.hybrid:
            return self.hybrid_columns(panel, steps, new_series)
        rows = None
        if transform is None:
            rows, transform = self._scaler_rows(panel), self.transform
            if self.time_origins is not None and not panel.dated:  # the season count of training, whatever the start
                panel = dataclasses.replace(panel, origins=self.time_origins[rows])
        needed = self.points_read
        if panel.lengths.min() < needed:
            short = panel.ids[panel.lengths < needed]
            raise ValueError(
                f"history has {panel.lengths.min()} points"
                + (f" in series {panel.id_list(short)}" if len(panel) > 1 else "")
                + f"; the model reads the last {needed}"
            )
        inputs = forecast_inputs(
            transform,
            panel,
            panel.offsets[1:] - 1,
            self.config.input_chunk_length,
            steps,
            self.config.calendar,
            rows,
            padded=self.direct,
        )
        was_training = self.training
        self.eval()
        try:
            with self.averaged_weights():
                device = self.rnn.weight_hh_l0.device
                scaled = self.forecast_scaled(inputs.context.to(device), steps, _to(inputs.future, device))
            return transform.from_model(scaled.double().cpu(), inputs).numpy()
        finally:
            self.train(was_training)

    def hybrid_columns(self, panel: Panel, steps: int, new_series: bool = False) -> np.ndarray:
        """(steps, S), the hybrid's forecast after every series of `panel`. A series it trained on keeps what it
        learnt (its shift, coefficients and initial factors); with `new_series`, one it never saw gets the median
        coefficients of those it did, initial factors from its own classical seasonal indices and a shift from its
        own values."""
        rows = self._scaler_rows(panel, allow_new=new_series)
        if self.time_origins is not None and not panel.dated:  # the season count of training, whatever the start
            origins = np.array(panel.first_times() if panel.origins is None else panel.origins, dtype=np.int64)
            origins[rows >= 0] = self.time_origins[rows[rows >= 0]]
            panel = dataclasses.replace(panel, origins=origins)
        new = rows < 0
        shifts = self.log_shifts[np.maximum(rows, 0)]
        factors = None
        if new.any():
            fresh = panel.take(new)
            shifts[new] = log_shifts(fresh.values, fresh.offsets)
            factors = np.zeros((len(panel), self.smoothing.season))
            factors[new] = new_series_factors(fresh)
        inputs = hybrid_inputs(panel, panel.offsets[1:] - 1, steps, shifts, rows, factors)
        was_training = self.training
        self.eval()
        try:
            device = self.rnn.weight_hh_l0.device
            return self.predict(inputs.to(device, torch.float64), steps).cpu().numpy()
        finally:
            self.train(was_training)

    def _scaler_rows(self, panel: Panel, allow_new: bool = False) -> np.ndarray:
        """The scaler row of each series of `panel`: by id; a model of one series forecasts any one series."""
        if len(self.scaler.minimum) == 1 and len(panel) == 1:
            return np.zeros(1, dtype=np.int64)
        known = {series_id: row for row, series_id in enumerate(self.series_ids or [])}
        if allow_new:
            return np.array([known.get(series_id, -1) for series_id in panel.ids], dtype=np.int64)
        unknown = [series_id for series_id in panel.ids if series_id not in known]
        if unknown:
            raise ValueError(
                f"the model was trained on {len(self.scaler.minimum)} series and knows no series "
                f"{panel.id_list(unknown)}: it forecasts only series it was trained on (their scalers are fit on "
                "their training parts)"
            )
        return np.array([known[series_id] for series_id in panel.ids], dtype=np.int64)


_ACTIVATIONS = {"ReLU": nn.ReLU, "Tanh": nn.Tanh, "Sigmoid": nn.Sigmoid}


def _block_head(config: ForecasterConfig) -> nn.Sequential:
    """Darts' BlockRNNModel's decoder: fully connected layers of hidden_fc_sizes, the activation between them (not
    after the last), from the RNN's last state to output_chunk_length points."""
    if config.output_chunk_length < 1:
        raise ValueError(
            "a direct model needs output_chunk_length of at least 1 (forecaster.train.fit sets 0 to the horizon)"
        )
    layers, width = [], config.hidden_dim
    for size in config.hidden_fc_sizes:
        layers.append(nn.Linear(width, size))
        if config.activation != "none":
            layers.append(_ACTIVATIONS[config.activation]())
        width = size
    layers.append(nn.Linear(width, config.output_chunk_length))
    return nn.Sequential(*layers)


def _as_history(history, calendar: bool, season: int) -> Panel:
    """A forecast's history as a panel: a Panel, a dated Series, or (without calendar inputs) plain values."""
    if isinstance(history, Panel):
        return history
    if isinstance(history, pd.Series) and isinstance(history.index, pd.DatetimeIndex):
        return as_panel(history)
    if calendar:
        raise ValueError("this model reads the calendar: give the history as a pandas Series with its dates")
    values = np.asarray(history, dtype=np.float64)
    return Panel(
        ids=np.array(["series"], dtype=object),
        offsets=np.array([0, len(values)], dtype=np.int64),
        times=np.arange(len(values), dtype=np.int64),
        values=values,
        freq=None,
        season=season,
        origins=np.zeros(1, dtype=np.int64),
    )


def _to(tensor: Tensor | None, device) -> Tensor | None:
    return None if tensor is None else tensor.to(device)
