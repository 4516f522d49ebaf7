"""The recurrent net of the forecaster and its forecasts, in plain PyTorch.

forecaster/training/model.py trains it (RNNForecaster, its LightningModule); a sweep's driver loads the best models of
its
trials into it to forecast its answer, without importing Lightning, whose import is a large part of a driver's CPU
time (docs/benchmarks.md, "Sweeps").
Forecasting: read the last input_chunk_length points, then feed each prediction back as the next input, carrying
the hidden state, for as many steps as asked, in original units (see the TargetTransform of
forecaster/features/transforms.py).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any, Self

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from forecaster.config import ForecasterConfig
from forecaster.data.panel import Panel
from forecaster.data.read import as_panel
from forecaster.features.smoothing import SeasonalSmoothing
from forecaster.features.step_inputs import StepInputs
from forecaster.features.transforms import MinMaxScaler, ShapeInputs, TargetTransform
from forecaster.shapes import shape_of

CPU_FORECAST_COLUMNS = 2048
"""A CPU forecast of many series runs in blocks of this many: each block's states stay in the cache, so the time per
forecast stays the same however many series there are (docs/benchmarks.md, "One fit on a panel")."""


class RNNNet(nn.Module):
    """The net, with the transform of its training data, so that it forecasts in original units."""

    rnn: nn.RNNBase
    """The recurrent layers (its shape's `build` makes them, and what follows them)."""
    head: nn.Module
    """From the recurrent layers' states to the forecast."""
    covariate_term: nn.Linear
    """The recurrent shape's linear term of the known-ahead covariates (covariate_path linear)."""
    smoothing: SeasonalSmoothing
    """The hybrid shape's per-series smoothing."""
    log_shifts: np.ndarray
    """The hybrid shape's: what each series gets added before its log."""

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
        step_inputs: Mapping[str, Any] | None = None,
        year_season: Sequence[Any] | None = None,
        **shape_state: Any,
    ):
        """One scaler (minimum and scale) per series it is trained on, with their ids, so that it forecasts any of
        them from its history; `time_origins`, on a plain time index, where each series' season count starts;
        `seasonal_indices`, (series, season), where the config deseasonalises, and `seasonal_shifts` where a series is
        additive; `logged_series`, which series log_if_positive logs; `step_inputs`, what each step reads beside the
        value (StepInputs.to_plain: the calendar's periods, the covariates and their scaling; None: the place in the
        season alone); `year_season`, (series, 2, 2K), daily data's year where the config deseasonalises
        (TargetTransform.year); `shape_state`, what the config's shape keeps of the data (forecaster.shapes: the
        hybrid's `log_shifts`, what each series gets added before its log)."""
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
        if year_season is not None:
            year_season = np.asarray(year_season, dtype=np.float64).tolist()
        shape = shape_of(config.shape)
        shape_state = shape.plain_state({name: value for name, value in shape_state.items() if value is not None})
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
            **({"step_inputs": dict(step_inputs)} if step_inputs is not None else {}),
            **({"year_season": year_season} if year_season is not None else {}),
            **shape_state,
        }
        """The arguments that build this net again, as plain values: what a checkpoint stores."""
        self.config = config
        self.shape = shape
        """The config's shape (forecaster.shapes): its layers, its forward pass and its forecasts."""
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
            StepInputs.from_plain(config.calendar, int(season), None if step_inputs is None else dict(step_inputs)),
            None if year_season is None else np.array(year_season),
        )
        shape.build(self, len(self.scaler.minimum), int(season), **shape_state)
        if config.ema_decay:
            # Buffers, so that checkpoints and the best model keep the average with the weights.
            for index, parameter in enumerate(self.parameters()):
                self.register_buffer(f"average_{index}", parameter.detach().clone())

    @classmethod
    def load_best_model(cls, path: str | os.PathLike[str] | IO[bytes]) -> Self:
        """A model saved as a sweep's trials save their best (its weights and hyperparameters), on the CPU: what
        Lightning's `load_from_checkpoint` gives for the same file, without Lightning, and loaded with
        weights_only=True.

        Args:
            path: The file (best_model.ckpt), or a file-like object of its bytes.

        Returns:
            The net, ready to forecast."""
        saved = torch.load(path, map_location="cpu", weights_only=True)
        model = cls(**saved["hyper_parameters"])
        model.load_state_dict(saved["state_dict"])
        return model

    def forward(self, inputs: Tensor) -> Tensor:
        """The shape's forward pass (recurrent: next-step predictions at every position, (T, B, features) ->
        (T, B, 1); direct and hybrid: the block after each input chunk, -> (output_chunk_length, B))."""
        return self.shape.forward(self, inputs)

    def _averages(self) -> list[Tensor]:
        return [getattr(self, f"average_{index}") for index in range(len(list(self.parameters())))]

    @torch.no_grad()
    def _update_average(self) -> None:
        if self.config.ema_decay:
            for average, parameter in zip(self._averages(), self.parameters()):
                average.lerp_(parameter, 1.0 - self.config.ema_decay)

    @contextlib.contextmanager
    def averaged_weights(self) -> Iterator[None]:
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
        (steps, B). The recurrent shape feeds back each point, the direct shape each block (Shape.forecast_scaled).

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
        with torch.autocast(context.device.type, enabled=False):
            return self.shape.forecast_scaled(self, context, steps, future)

    def predict(self, inputs: ShapeInputs, steps: int) -> Tensor:
        """Forecasts of `steps` points from each origin of `inputs`, in original units: (steps, B)."""
        return self.shape.predict(self, inputs, steps)

    def forecast(
        self, history: Panel | pd.Series | Sequence[float] | np.ndarray, steps: int
    ) -> pd.DataFrame | np.ndarray:
        """Forecast `steps` points after the end of every series of `history`, in original units.

        Args:
            history: A Panel of series this model trained on (matched by id; any one series for a model of one); or a
                pandas Series with its dates (which calendar inputs need), or without calendar inputs any sequence of
                values, as a panel of one.
            steps: Points to forecast.

        Returns:
            For a Panel, a long table: unique_id, ds and forecast; for one series, an array of `steps` values.

        Raises:
            ValueError: A series it never trained on, or one shorter than what it reads."""
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
        flat: np.ndarray = forecasts[part.cells]
        return flat

    @property
    def points_read(self) -> int:
        """How many of a series' last points a forecast reads: the recurrent shape's input chunk (and the differences'
        lag); the direct shape pads a shorter history, and needs one point past the lag."""
        return self.shape.points_read(self)

    def forecast_columns(
        self, panel: Panel, steps: int, transform: TargetTransform | None = None, new_series: bool = False
    ) -> np.ndarray:
        """`steps` points after the end of every series of `panel`, in original units, as its shape forecasts them.

        Args:
            panel: The series, each its history up to where the forecast starts.
            steps: Points to forecast.
            transform: One row per series of `panel`, in its order: for a global model forecasting series it never
                trained on, their scalers fit on their own history (forecaster.answer.model), with `panel.origins`
                then the caller's to set on a plain time index. Default: the net's own rows, found by id, and the
                origins it trained with.
            new_series: A shape that forecasts new series by itself (the hybrid) does so; otherwise they are refused.

        Returns:
            (steps, S), one column per series.

        Raises:
            ValueError: A series it cannot read (unknown, or shorter than `points_read`)."""
        return self.shape.forecast_columns(self, panel, steps, transform, new_series)

    def scaler_rows(self, panel: Panel, allow_new: bool = False) -> np.ndarray:
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


def _as_history(history: Panel | pd.Series | Sequence[float] | np.ndarray, calendar: bool, season: int) -> Panel:
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
