"""The recurrent shape: Darts' RNNModel. The net predicts the next point at every position of its windows and
forecasts by feeding each prediction back.

Training (teacher forcing): each window of training_length + 1 scaled points gives the inputs x_0..x_{L-1} and the
targets x_1..x_L; the loss scores the next-step predictions at all L positions (or, with loss_after_context, those
after the input chunk). Forecasting: read the last input_chunk_length points, then feed each prediction back as the
next input, carrying the hidden state, for as many steps as asked.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from torch import Tensor, nn

from forecaster.config import ConfigError, ShapeSettings, setting, whole_number
from forecaster.shapes import recurrence
from forecaster.shapes.base import Shape

if TYPE_CHECKING:
    from forecaster.config import ForecasterConfig
    from forecaster.features.transforms import ForecastInputs
    from forecaster.training.model import EpochBatch, RNNForecaster
    from forecaster.training.net import RNNNet


@dataclasses.dataclass(frozen=True)
class RecurrentSettings(ShapeSettings):
    loss_after_context: bool = setting(
        False,
        "recurrent shape: score the next-step loss only where the net has read input_chunk_length points of its "
        "window, as a forecast has (Darts scores every position, from the first point on)",
    )
    training_length: int = setting(
        20,
        "recurrent shape: length of the training windows; the model learns to predict the next point at every position",
    )

    def __post_init__(self) -> None:
        flag = self.loss_after_context
        if not isinstance(flag, (bool, int)) or flag not in (0, 1):
            raise ConfigError(f"loss_after_context={flag!r} must be true or false")
        object.__setattr__(self, "loss_after_context", bool(flag))
        object.__setattr__(self, "training_length", whole_number("training_length", self.training_length, 2))


class Recurrent(Shape):
    name = "recurrent"
    settings = RecurrentSettings
    reads_short_series = True
    reads_seasonal_lag = True

    def check(self, config: ForecasterConfig) -> None:
        if config.training_length <= config.input_chunk_length:
            raise ConfigError(
                f"training_length={config.training_length} must exceed input_chunk_length="
                f"{config.input_chunk_length}: the model trains on windows of training_length points and "
                "must see at least as much history in training as it is given when it forecasts"
            )

    def window_points(self, config: ForecasterConfig) -> int:
        own = cast(RecurrentSettings, config.settings)
        return own.training_length + 1

    def one_window(self, config: ForecasterConfig, lag: int, differenced: str) -> str:
        return f"training_length + 1{differenced} = {self.window_points(config) + lag} for one training window"

    def shorter(self, config: ForecasterConfig, reads_only: bool = False) -> str:
        if reads_only:
            return "lower input_chunk_length, or use shape=direct, which pads a short series"
        if config.training_length > 2:
            return "lower training_length"
        return "use shape=direct, which pads a short series (training_length=2 is the recurrent shape's least)"

    def short_series(self, config: ForecasterConfig) -> str:
        return "lower training_length or the horizon"

    def short_training_part(self, config: ForecasterConfig, points: int, lag: int, needed: str) -> str:
        differenced = f" ({points} less the {lag} that {config.target_transform} takes)" if lag else ""
        return (
            f"the training part has {points - lag} points{differenced}, too few for training_length="
            f"{config.training_length}: one training window takes training_length + 1 = "
            f"{config.training_length + 1} points; lower training_length or move split_after later"
        )

    def head(self, net: RNNNet) -> nn.Module:
        return nn.Linear(net.config.hidden_dim, 1)

    def forward(self, net: RNNNet, inputs: Tensor) -> Tensor:
        """Next-step predictions at every position: (T, B, features) -> (T, B, 1); with covariate_path linear, each
        the net's forecast of the regression's error plus the linear term of the point it predicts (its row's
        known-ahead values)."""
        predictions: Tensor = net.head(recurrence.hidden_states(net.rnn, self.recurrent_inputs(net, inputs)))
        return (
            predictions + self.covariate_effect(net, inputs) if net.config.covariate_path == "linear" else predictions
        )

    def window_layout(self, config: ForecasterConfig, lengths: np.ndarray) -> tuple[int, Any, np.ndarray, int]:
        span = config.training_length + 1
        last = lengths - span + config.input_chunk_length  # the last window ends at the series' end
        earliest: Any = config.input_chunk_length
        recent = config.windows_from_last
        if recent:  # at least the last window, however small N
            earliest = np.minimum(np.maximum(earliest, lengths - recent), np.maximum(last, earliest))
        return span, earliest, last, config.input_chunk_length if config.loss_after_context else 1

    def loss(
        self, module: RNNForecaster, batch: Tensor, originals: tuple[ForecastInputs, Tensor] | None, epoch: EpochBatch
    ) -> Tensor:
        """The loss of the next-step predictions (teacher forcing), from the input chunk's last position on with
        loss_after_context, else from the first: in the net's units, or smape or mase in original units."""
        config = module.config
        scored_from = config.input_chunk_length - 1 if config.loss_after_context else 0
        inputs, targets = batch[:-1], batch[1:, :, :1]  # (L, B, 1 + C) and (L, B, 1), shifted by one step
        predictions = module(inputs)[scored_from:]
        if originals is None:
            return module.unit_errors(predictions, targets[scored_from:]).mean()
        return module.original_unit_errors(predictions[..., 0], targets[scored_from:, :, 0], originals).mean()

    def forecast_scaled(self, net: RNNNet, context: Tensor, steps: int, future: Tensor | None) -> Tensor:
        """Read `context`, then feed back each point (with the calendar of the point after it); with covariate_path
        linear, each point less, and each prediction plus, the linear term of its known-ahead values."""
        linear = net.config.covariate_path == "linear"
        state = recurrence.zero_state(net.rnn, context.shape[1], context)
        for point in self.recurrent_inputs(net, context) if linear else context:
            hidden = recurrence.step(net.rnn, point, state)
        predictions = context.new_empty(steps, context.shape[1], 1)
        head = cast(nn.Linear, net.head)
        weight, bias = head.weight.t(), head.bias
        torch.addmm(bias, hidden, weight, out=predictions[0])
        if linear:
            predictions[0] += self.covariate_effect(net, context[-1])
        for t in range(1, steps):
            fed_back = predictions[t - 1] if future is None else torch.cat([predictions[t - 1], future[t - 1]], -1)
            point = self.recurrent_inputs(net, fed_back) if linear else fed_back
            torch.addmm(bias, recurrence.step(net.rnn, point, state), weight, out=predictions[t])
            if linear:
                predictions[t] += self.covariate_effect(net, fed_back)
        return predictions[..., 0]


SHAPE = Recurrent()
