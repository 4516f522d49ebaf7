"""The direct shape: Darts' BlockRNNModel. The recurrent layers read input_chunk_length points and fully connected
layers emit output_chunk_length points at once; longer forecasts roll forward block by block.

Training: each window of input_chunk_length + output_chunk_length points gives the input chunk and the block after
it; the loss scores the block's real points. A history shorter than the input chunk is padded with zeros, and a mask
(1 on real points), the last input, tells the net which points are real: every series trains and forecasts whatever
its length, one point to read and one to forecast at least.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from forecaster import recurrence
from forecaster.shapes.base import Shape

if TYPE_CHECKING:
    from forecaster.config import ForecasterConfig
    from forecaster.model import EpochBatch, RNNForecaster
    from forecaster.net import RNNNet
    from forecaster.transforms import ForecastInputs

ACTIVATIONS = {"ReLU": nn.ReLU, "Tanh": nn.Tanh, "Sigmoid": nn.Sigmoid}


class Direct(Shape):
    name = "direct"
    padded = True

    def prepared(self, config: ForecasterConfig, horizon: int) -> ForecasterConfig:
        """output_chunk_length 0 is one block for the whole validation part."""
        return config if config.output_chunk_length else config.replace(output_chunk_length=horizon)

    def head(self, config: ForecasterConfig) -> nn.Module:
        """Darts' BlockRNNModel's decoder: fully connected layers of hidden_fc_sizes, the activation between them (not
        after the last), from the recurrent layers' last state to output_chunk_length points."""
        if config.output_chunk_length < 1:
            raise ValueError(
                "a direct model needs output_chunk_length of at least 1 (forecaster.train.fit sets 0 to the horizon)"
            )
        layers: list[nn.Module] = []
        width = config.hidden_dim
        for size in config.hidden_fc_sizes:
            layers.append(nn.Linear(width, size))
            if config.activation != "none":
                layers.append(ACTIVATIONS[config.activation]())
            width = size
        layers.append(nn.Linear(width, config.output_chunk_length))
        return nn.Sequential(*layers)

    def forward(self, net: RNNNet, inputs: Tensor) -> Tensor:
        """The block after each input chunk: (input_chunk_length, B, features) -> (output_chunk_length, B), from
        the top layer's last state, as Darts' BlockRNNModel reads it."""
        return net.head(recurrence.hidden_states(net.rnn, inputs)[-1]).T

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
        predictions = module(batch[:chunk])
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
        rows, blocks = context, [net(context)]
        for start in range(size, steps, size):
            appended = [blocks[-1][..., None]]
            if future is not None:  # the calendar of the point after each new one
                appended.append(future[start - size : start])
            appended.append(torch.ones_like(appended[0]))
            rows = torch.cat([rows, torch.cat(appended, -1)])[-length:]
            values, real = rows[:, :, 0], rows[:, :, -1]
            shift = (values * real).sum(0) / real.sum(0)  # the chunk's level, in the first chunk's units
            if net.transform.window_norm == "subtract":
                block = net(torch.cat([((values - shift) * real)[..., None], rows[:, :, 1:]], -1)) + shift
            elif net.transform.window_norm == "divide":
                # x = s / L - 1, so s / chunk's level - 1 = (x + 1) / (m + 1) - 1
                ratio = shift + 1.0
                block = net(torch.cat([(((values + 1.0) / ratio - 1.0) * real)[..., None], rows[:, :, 1:]], -1)) + 1.0
                block = block * ratio - 1.0
            else:
                block = net(rows)
            blocks.append(block)
        return torch.cat(blocks)[:steps]


SHAPE = Direct()
