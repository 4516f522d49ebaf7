"""The direct shape: Darts' BlockRNNModel. The recurrent layers read input_chunk_length points and fully connected
layers emit output_chunk_length points at once; longer forecasts roll forward block by block.

Training: each window of input_chunk_length + output_chunk_length points gives the input chunk and the block after
it; the loss scores the block's real points. With known-ahead covariates, the fully connected layers read their values
over the block beside the last state, as neuralforecast's RNN decoder reads `futr_exog` over the horizon. A history
shorter than the input chunk is padded with zeros, and a mask (1 on real points), the last input, tells the net which
points are real: every series trains and forecasts whatever its length, one point to read and one to forecast at
least.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import torch
from torch import Tensor, nn

from forecaster.config import ConfigError, ShapeSettings, layer_sizes, setting, whole_number
from forecaster.shapes import recurrence
from forecaster.shapes.base import Shape

if TYPE_CHECKING:
    from forecaster.config import ForecasterConfig
    from forecaster.features.transforms import ForecastInputs
    from forecaster.training.model import EpochBatch, RNNForecaster
    from forecaster.training.net import RNNNet

ACTIVATIONS = {"ReLU": nn.ReLU, "Tanh": nn.Tanh, "Sigmoid": nn.Sigmoid}


@dataclasses.dataclass(frozen=True)
class DirectSettings(ShapeSettings):
    output_chunk_length: int = setting(
        0,
        "direct shape: points forecast at once, from one read of the input chunk; 0: the validation part's length "
        "(the horizon)",
    )
    hidden_fc_sizes: tuple[int, ...] = setting(
        (),
        "direct shape: sizes of the fully connected layers between the RNN's last state and the output block, as "
        "Darts' hidden_fc_sizes (none: one linear layer)",
    )
    activation: str = setting(
        "ReLU", "direct shape: activation between those fully connected layers: ReLU, Tanh, Sigmoid or none"
    )

    def __post_init__(self) -> None:
        if self.activation not in (*ACTIVATIONS, "none"):
            raise ConfigError(f"activation={self.activation!r} is not one of {', '.join([*ACTIVATIONS, 'none'])}")
        object.__setattr__(self, "hidden_fc_sizes", layer_sizes(self.hidden_fc_sizes))
        length = whole_number("output_chunk_length", self.output_chunk_length, 0)
        object.__setattr__(self, "output_chunk_length", length)


class Direct(Shape):
    name = "direct"
    settings: ClassVar[type[ShapeSettings]] = DirectSettings
    padded = True
    reads_hist = True

    def prepared(self, config: ForecasterConfig, horizon: int) -> ForecasterConfig:
        """output_chunk_length 0 is one block for the whole validation part."""
        return config if config.output_chunk_length else config.replace(output_chunk_length=horizon)

    def head(self, net: RNNNet) -> nn.Module:
        """Darts' BlockRNNModel's decoder: fully connected layers of hidden_fc_sizes, the activation between them (not
        after the last), from the recurrent layers' last state (and the block's known-ahead covariates) to
        output_chunk_length points."""
        config = net.config
        if config.output_chunk_length < 1:
            raise ValueError(
                "a direct model needs output_chunk_length of at least 1 "
                "(forecaster.training.train.fit sets 0 to the horizon)"
            )
        layers: list[nn.Module] = []
        read = len(self.known_ahead_columns(net)) if config.covariate_path == "net" else 0  # linear: their own term
        width = config.hidden_dim + config.output_chunk_length * read
        for size in config.hidden_fc_sizes:
            layers.append(nn.Linear(width, size))
            if config.activation != "none":
                layers.append(ACTIVATIONS[config.activation]())
            width = size
        layers.append(nn.Linear(width, config.output_chunk_length))
        return nn.Sequential(*layers)

    def forward(self, net: RNNNet, inputs: Tensor) -> Tensor:
        """The block after each input chunk: (input_chunk_length, B, features) -> (output_chunk_length, B), from
        the top layer's last state, as Darts' BlockRNNModel reads it. With known-ahead covariates, `inputs` holds
        the rows after the chunk too (a whole window, or the chunk and the rows of the points it forecasts), of which
        the head reads those covariates only: row j's are those of point j + 1. With covariate_path linear, the
        recurrent layers read the chunk's values less the linear term of their known-ahead values, and each point of
        the block is the net's forecast of that error plus its own term."""
        chunk = net.config.input_chunk_length
        state = recurrence.hidden_states(net.rnn, self.recurrent_inputs(net, inputs[:chunk]))[-1]
        ahead = self.known_ahead_columns(net)
        if not len(ahead):
            return cast(Tensor, net.head(state).T)
        block = inputs[chunk - 1 : chunk - 1 + net.config.output_chunk_length, :, ahead]
        if net.config.covariate_path == "linear":
            return cast(Tensor, net.head(state).T + net.covariate_term(block)[..., 0])
        return cast(Tensor, net.head(torch.cat([state, block.transpose(0, 1).reshape(len(state), -1)], -1)).T)

    def window_layout(self, config: ForecasterConfig, lengths: np.ndarray) -> tuple[int, Any, np.ndarray, int]:
        span = config.input_chunk_length + config.output_chunk_length
        last = lengths - 1  # the last origin: one point of the window's block is real
        recent = config.windows_from_last
        earliest = np.maximum(1, lengths - recent) if recent else np.ones_like(lengths)
        return span, earliest, last, config.input_chunk_length

    def loss(
        self, module: RNNForecaster, batch: Tensor, originals: tuple[ForecastInputs, Tensor] | None, epoch: EpochBatch
    ) -> Tensor:
        """The loss of each window's output block over its real points (the mask, last input, is 0 on the padding
        past a series' end): in the net's units, or smape or mase in original units."""
        chunk = module.config.input_chunk_length
        targets, real = batch[chunk:, :, 0], batch[chunk:, :, -1]  # (output_chunk_length, B)
        predictions = module(batch)  # the chunk, and the block's known-ahead covariates
        if originals is None:
            errors = module.unit_errors(predictions, targets)
        else:
            errors = module.original_unit_errors(predictions, targets, originals)
        return (errors * real).sum() / real.sum()

    def forecast_scaled(self, net: RNNNet, context: Tensor, steps: int, future: Tensor | None) -> Tensor:
        """Beyond output_chunk_length, each block's outputs join the input chunk (as real points, with their
        calendar), whose last input_chunk_length points the next block reads, normalised by their own level as every
        training window was. Everything stays in the units of `context`'s own level."""
        length, size = len(context), net.config.output_chunk_length

        def with_block(rows: Tensor, start: int) -> Tensor:
            """The chunk `rows` and the rows of the block from forecast point `start` on (their features: what is
            known ahead of each), which the head reads with known-ahead covariates."""
            if future is None or not len(self.known_ahead_columns(net)):
                return rows
            ahead = future[start : start + size - 1]
            missing = size - 1 - len(ahead)
            if missing:
                ahead = torch.cat([ahead, ahead.new_zeros(missing, *ahead.shape[1:])])
            filler = ahead.new_zeros(*ahead.shape[:2], 1)
            return torch.cat([rows, torch.cat([filler, ahead, filler], -1)[..., : rows.shape[-1]]])

        rows, blocks = context, [net(with_block(context, 0))]
        for start in range(size, steps, size):
            appended = [blocks[-1][..., None]]
            if future is not None:  # the calendar of the point after each new one
                appended.append(future[start - size : start])
            appended.append(torch.ones_like(appended[0]))
            rows = torch.cat([rows, torch.cat(appended, -1)])[-length:]
            values, real = rows[:, :, 0], rows[:, :, -1]
            shift = (values * real).sum(0) / real.sum(0)  # the chunk's level, in the first chunk's units
            if net.transform.window_norm == "subtract":
                block = net(with_block(torch.cat([((values - shift) * real)[..., None], rows[:, :, 1:]], -1), start))
                block = block + shift
            elif net.transform.window_norm == "divide":
                # x = s / L - 1, so s / chunk's level - 1 = (x + 1) / (m + 1) - 1
                ratio = shift + 1.0
                normalised = (((values + 1.0) / ratio - 1.0) * real)[..., None]
                block = net(with_block(torch.cat([normalised, rows[:, :, 1:]], -1), start)) + 1.0
                block = block * ratio - 1.0
            else:
                block = net(with_block(rows, start))
            blocks.append(block)
        return torch.cat(blocks)[:steps]


SHAPE = Direct()
