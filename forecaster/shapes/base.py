"""What a shape of model is: one small interface, which forecaster.training.net, forecaster.training.model,
forecaster.training.train,
forecaster.training.parts and forecaster.answer.model ask instead of comparing shape names.

A shape says
- what it needs of a configuration and of the data (`check`, `window_points`, the advice when a series is too
  short);
- the windows it trains on (`training_data`) and its loss on them (`loss`);
- its net: the layers it adds to RNNNet (`build`), their forward pass (`forward`) and the optimizer's groups;
- how it forecasts (`points_read`, `forecast_scaled`, `predict`, `forecast_columns`);
- what it saves and loads beside the weights (`state`, `plain_state`): the keyword arguments of RNNNet that only it
  takes, stored with the net's hyperparameters.

`Shape` implements the part that the recurrent and direct shapes share: the net reads each series through its
TargetTransform (forecaster/features/transforms.py), in scaled windows, and forecasts back in original units. A shape is
a
stateless object: its methods take the net (or the Lightning module) they act on.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from forecaster.config import ShapeSettings
from forecaster.features.transforms import (
    ForecastInputs,
    ShapeInputs,
    ShapeWindows,
    TargetTransform,
    TrainingWindows,
    covariate_regression,
    forecast_inputs,
)

if TYPE_CHECKING:
    from forecaster.config import ForecasterConfig
    from forecaster.data.panel import Panel
    from forecaster.features.step_inputs import StepLayout
    from forecaster.training.model import EpochBatch, RNNForecaster
    from forecaster.training.net import RNNNet
    from forecaster.training.parts import FitParts

CELLS = {"RNN": nn.RNN, "LSTM": nn.LSTM, "GRU": nn.GRU}


class Shape:
    """The interface of a shape, with the behaviour of the shapes that read scaled windows (recurrent, direct)."""

    name: ClassVar[str] = ""
    settings: ClassVar[type[ShapeSettings]] = ShapeSettings
    """Its own settings (forecaster.config.ShapeSettings): a frozen dataclass whose fields only this shape reads, which
    a ForecasterConfig of it holds and reads as its own; a subclass's settings may extend its parent's."""
    padded: ClassVar[bool] = False
    """Histories shorter than the input chunk are padded with zeros and masked: the mask is the net's last input."""
    scaled: ClassVar[bool] = True
    """The net reads each series min-max scaled on its training part (TargetTransform's scaler); False: as the
    shape's own transform leaves it."""
    reads_short_series: ClassVar[bool] = False
    """In a panel, a series too short for a training window is still forecast from its input chunk, trained on by
    none (the recurrent shape)."""
    forecasts_new_series: ClassVar[bool] = False
    """`forecast_columns` forecasts series the net never trained on by itself, from every point of them (the
    hybrid); otherwise the caller fits transforms on each new series and passes them."""
    reads_covariates: ClassVar[bool] = True
    """Its steps read the data's known-ahead covariates and statics (forecaster/features/step_inputs.py)."""
    reads_seasonal_lag: ClassVar[bool] = False
    """Its steps may read the value a season before the point they predict (ForecasterConfig.seasonal_lag): a shape
    whose every step predicts one point (the recurrent shape)."""
    reads_hist: ClassVar[bool] = False
    """Its steps read the historic covariates too: a shape that reads its input chunk and no fed-back point of its
    own (the direct shape, as neuralforecast's; Darts' RNNModel, the recurrent shape, takes none)."""

    # --- the configuration and the data -----------------------------------------------------------------------------
    def check(self, config: ForecasterConfig) -> None:
        """Raise forecaster.config.ConfigError for what this shape cannot take in `config`."""

    def prepared(self, config: ForecasterConfig, horizon: int) -> ForecasterConfig:
        """The configuration a fit trains: its defaults that depend on the data set (`horizon`: the points a
        validation forecast scores, FitParts.window_size)."""
        return config

    def window_points(self, config: ForecasterConfig) -> int:
        """The fewest points of a series (after the differences) that give one training window: one to read and one
        to forecast, the rest of the window padded."""
        return 2

    def one_window(self, config: ForecasterConfig, lag: int, differenced: str) -> str:
        """What one training window takes, as a message says it (`differenced`: '' or ' + the N that ... takes')."""
        window = self.window_points(config) + lag
        counted = f"2{differenced} = {window}" if lag else "2"
        return f"{counted} for one training window (a point to read, one to forecast)"

    def shorter(self, config: ForecasterConfig, reads_only: bool = False) -> str:
        """What to change so that a panel's shorter series fit."""
        return "lower the horizon"

    def short_series(self, config: ForecasterConfig) -> str:
        """What to change for a single series too short for a fit of a given horizon."""
        return "lower the horizon"

    def short_training_part(self, config: ForecasterConfig, points: int, lag: int, needed: str) -> str:
        """The message for a single series whose training part (`points` long) holds no training window."""
        return (
            f"the training part has {points} points, too few for one training window: "
            f"{needed.removeprefix('each needs ')}; move split_after later"
        )

    def data_lines(self, seen: Panel) -> list[str]:
        """What this shape does to the data, for a sweep's banner (its lines after 'hybrid', 'transform', ...)."""
        return []

    def state(self, config: ForecasterConfig, parts: FitParts, transform: TargetTransform) -> dict[str, Any]:
        """The keyword arguments of RNNNet that a fit computes for this shape from the data: with covariate_path
        linear, where its linear term starts (forecaster.features.transforms.covariate_regression)."""
        if config.covariate_path != "linear":
            return {}
        return {"covariate_start": covariate_regression(transform, parts.train)}

    def plain_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """`state` as plain values (lists): what a checkpoint stores among the net's hyperparameters."""
        return {name: np.asarray(value, dtype=np.float64).tolist() for name, value in state.items()}

    # --- the net ----------------------------------------------------------------------------------------------------
    def inputs(self, net: RNNNet) -> int:
        """The features of each step the recurrent layers read: the value, what it reads beside it (the calendar,
        the covariates), and the padding's mask; with covariate_path linear, not the covariates."""
        return len(self.recurrent_columns(net))

    def layout(self, net: RNNNet) -> StepLayout:
        """Where each input lies in a row of the net's features (forecaster.features.step_inputs.StepLayout)."""
        return net.transform.step_inputs(net.config.calendar).layout(self.padded)

    def recurrent_columns(self, net: RNNNet) -> list[int]:
        """Which of a row's features the recurrent layers read: all, but with covariate_path linear none of the
        covariates (those of the point after it, and its own point's known-ahead values), which the linear term reads
        instead (`recurrent_inputs`)."""
        layout = self.layout(net)
        every = range(layout.width)
        if net.config.covariate_path != "linear":
            return list(every)
        left = {*layout.covariates, *layout.own_known}
        return [column for column in every if column not in left]

    def known_ahead_columns(self, net: RNNNet) -> range:
        """Where a row's known-ahead covariates (of the point after it) lie among its features."""
        return self.layout(net).known_ahead

    def own_known_columns(self, net: RNNNet) -> range:
        """Where a row's own point's known-ahead values lie (covariate_path linear; empty otherwise)."""
        return self.layout(net).own_known

    def recurrent_inputs(self, net: RNNNet, rows: Tensor) -> Tensor:
        """What the recurrent layers read of `rows` (..., features): all of it; with covariate_path linear, the value
        less the linear term of its own point's known-ahead values (the regression's error, which the net forecasts)
        and the features but the covariates."""
        if net.config.covariate_path != "linear":
            return rows
        read = self.recurrent_columns(net)
        own = self.own_known_columns(net)
        if not len(own):
            return rows[..., read]
        value = rows[..., :1] - net.covariate_term(rows[..., own.start : own.stop])
        return torch.cat([value, rows[..., read[1:]]], -1)

    def covariate_effect(self, net: RNNNet, rows: Tensor) -> Tensor | float:
        """The linear term of the known-ahead values of `rows` (..., features) -> (..., 1) with covariate_path linear,
        else 0."""
        known = self.known_ahead_columns(net)
        if net.config.covariate_path != "linear" or not len(known):
            return 0.0
        effect: Tensor = net.covariate_term(rows[..., known.start : known.stop])
        return effect

    def build(self, net: RNNNet, series: int, season: int, **state: Any) -> None:
        """Add the shape's layers to `net` (its recurrent layers `rnn` first: the order of creation is the order the
        seed draws their weights in)."""
        config = net.config
        between_layers = config.dropout if config.n_rnn_layers > 1 else 0.0  # PyTorch warns on dropout with 1 layer
        cell = CELLS[config.model]
        net.rnn = cell(self.inputs(net), config.hidden_dim, config.n_rnn_layers, dropout=between_layers)
        net.head = self.head(net)
        known = self.known_ahead_columns(net)
        if config.covariate_path == "linear" and len(known):  # the training part's regression, else 0
            net.covariate_term = nn.Linear(len(known), 1, bias=False)
            start = state.get("covariate_start")
            with torch.no_grad():
                net.covariate_term.weight.copy_(torch.as_tensor(np.zeros(len(known)) if start is None else start)[None])

    def head(self, net: RNNNet) -> nn.Module:
        """The layer from the recurrent layers' states to the forecast."""
        raise NotImplementedError

    def forward(self, net: RNNNet, inputs: Tensor) -> Tensor:
        raise NotImplementedError

    def optimizer_groups(self, module: RNNForecaster) -> list[dict[str, Any]]:
        """The optimizer's parameter groups (each may carry `lr_scale`, a multiple of the configured lr)."""
        return [{"params": list(module.parameters())}]

    # --- training ---------------------------------------------------------------------------------------------------
    def training_data(
        self, config: ForecasterConfig, parts: FitParts, transform: TargetTransform, ends: np.ndarray, **state: Any
    ) -> tuple[ShapeWindows, ShapeInputs]:
        """The training windows of `parts.train`, and the inputs of the validation forecasts from each row `ends` of
        `parts.seen`, `parts.window_size` points each."""
        windows = TrainingWindows.of(transform, parts.train, config, self)
        inputs = forecast_inputs(
            transform,
            parts.seen,
            ends,
            config.input_chunk_length,
            parts.window_size,
            config.calendar,
            padded=self.padded,
        )
        return windows, inputs

    def window_layout(self, config: ForecasterConfig, lengths: np.ndarray) -> tuple[int, Any, np.ndarray, int]:
        """(span, earliest, last, first_scored) of the training windows of series of `lengths` (after the
        differences): each window's points, the first and last position k of a window's first forecast point, and
        the first row of a window that a loss in original units scores."""
        raise NotImplementedError

    def loss(
        self, module: RNNForecaster, batch: Tensor, originals: tuple[ForecastInputs, Tensor] | None, epoch: EpochBatch
    ) -> Tensor:
        """The loss of one mini-batch of `epoch`'s windows."""
        raise NotImplementedError

    # --- forecasting ------------------------------------------------------------------------------------------------
    def points_read(self, net: RNNNet) -> int:
        """How many of a series' last points a forecast reads: the input chunk and the differences' lag (a padded
        shape: one point past the lag)."""
        return (1 if self.padded else net.config.input_chunk_length) + net.transform.lag

    def forecast_scaled(self, net: RNNNet, context: Tensor, steps: int, future: Tensor | None) -> Tensor:
        """(steps, B) in the net's units after each column of `context` (T, B, features), fed back with the
        calendar of each point after (`future`)."""
        raise NotImplementedError

    def predict(self, net: RNNNet, inputs: ShapeInputs, steps: int) -> Tensor:
        """Forecasts of `steps` points from each origin of `inputs`, in original units: (steps, B)."""
        assert isinstance(inputs, ForecastInputs), f"the {self.name} shape reads ForecastInputs"
        with net.averaged_weights():
            scaled = net.forecast_scaled(inputs.context, steps, inputs.future)
        return net.transform.from_model(scaled, inputs)

    def forecast_columns(
        self,
        net: RNNNet,
        panel: Panel,
        steps: int,
        transform: TargetTransform | None = None,
        new_series: bool = False,
    ) -> np.ndarray:
        """(steps, S) after every series of `panel` in original units (RNNNet.forecast_columns)."""
        rows = None
        if transform is None:
            rows, transform = net.scaler_rows(panel), net.transform
            if net.time_origins is not None and not panel.dated:  # the season count of training, whatever the start
                panel = dataclasses.replace(panel, origins=net.time_origins[rows])
        needed = self.points_read(net)
        if panel.lengths.min() < needed:
            short = panel.ids[panel.lengths < needed]
            raise ValueError(
                f"history has {panel.lengths.min()} points"
                + (f" in series {panel.id_list(short)}" if len(panel) > 1 else "")
                + f"; the model reads the last {needed}"
            )
        config = net.config
        inputs = forecast_inputs(
            transform,
            panel,
            panel.offsets[1:] - 1,
            config.input_chunk_length,
            steps,
            config.calendar,
            rows,
            padded=self.padded,
        )
        was_training = net.training
        net.eval()
        try:
            with net.averaged_weights():
                device = next(net.rnn.parameters()).device
                future = None if inputs.future is None else inputs.future.to(device)
                scaled = net.forecast_scaled(inputs.context.to(device), steps, future)
            return transform.from_model(scaled.double().cpu(), inputs).numpy()
        finally:
            net.train(was_training)
