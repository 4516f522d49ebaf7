"""Darts' RNNModel as a LightningModule: a recurrent net that predicts the next point at every position.

Training (teacher forcing): each window of training_length + 1 scaled points gives the inputs x_0..x_{L-1}
and the targets x_1..x_L; the loss is the MSE of the next-step predictions at all L positions.
Forecasting: read the last input_chunk_length points, then feed each prediction back as the next input,
carrying the hidden state, for as many steps as asked.

Batches are time-major, (time, batch, 1): each time step is then a contiguous slice, which is what the
recurrent loops index.

One Lightning batch is one epoch (`EpochBatch`): its shuffled mini-batches, stepped here with manual
optimization, and the validation data that scores the epoch. Lightning's per-batch machinery (hooks,
fetchers, result collection) costs more than a training step of this model and its validation loop
more than the forecast, so both run once per epoch instead of once per step. The optimizer steps still
go through `manual_backward` and the Lightning optimizer, so DDP, XLA, precision plugins, `global_step`
and checkpointing behave as usual.

What that shape gives up, on purpose: there is no `validation_step` (the epoch's score is computed at the end
of `training_step`, so Lightning's validation loop, `val_check_interval` and `limit_val_batches` do nothing),
and under manual optimization Lightning never steps an LR scheduler by itself: the model configures none,
and refuses to train with one rather than silently keeping its learning rate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from forecaster import recurrence
from forecaster.config import ForecasterConfig
from forecaster.data import MinMaxScaler
from forecaster.metrics import mape

_CELLS = {"RNN": nn.RNN, "LSTM": nn.LSTM, "GRU": nn.GRU}


@dataclasses.dataclass
class EpochBatch:
    """What one training step of the Trainer gets: a whole epoch, and what to score it on."""

    windows: list[Tensor]
    """The epoch's mini-batches of training windows, each (training_length + 1, batch, 1), scaled."""
    context: Tensor
    """The last input_chunk_length scaled training points, (input_chunk_length, 1, 1): the forecast's start."""
    actual: Tensor
    """The validation values in original units, (n,)."""


class RNNForecaster(L.LightningModule):
    """The forecaster, with the scaler of its training data so that a checkpoint forecasts in original units."""

    def __init__(
        self, config: ForecasterConfig | Mapping[str, Any], scaler_minimum: float = 0.0, scaler_scale: float = 1.0
    ):
        super().__init__()
        config = config if isinstance(config, ForecasterConfig) else ForecasterConfig.from_dict(config)
        self.config = config
        self.scaler = MinMaxScaler(minimum=float(scaler_minimum), scale=float(scaler_scale))
        self.save_hyperparameters(
            {"config": config.to_dict(), "scaler_minimum": self.scaler.minimum, "scaler_scale": self.scaler.scale}
        )
        between_layers = config.dropout if config.n_rnn_layers > 1 else 0.0  # PyTorch warns on dropout with 1 layer
        self.rnn = _CELLS[config.model](1, config.hidden_dim, config.n_rnn_layers, dropout=between_layers)
        self.head = nn.Linear(config.hidden_dim, 1)
        self.automatic_optimization = False  # training_step steps each mini-batch of the epoch

    def forward(self, inputs: Tensor) -> Tensor:
        """Next-step predictions at every position: (T, B, 1) -> (T, B, 1)."""
        return self.head(recurrence.hidden_states(self.rnn, inputs))  # (T, B, hidden_dim) -> (T, B, 1)

    def training_step(self, epoch: EpochBatch, batch_index: int) -> None:
        optimizer = self.optimizers()
        loss_sum, windows = torch.zeros((), device=self.device), 0
        for batch in epoch.windows:
            inputs, targets = batch[:-1], batch[1:]  # (L, B, 1) each, shifted by one step
            loss = F.mse_loss(self(inputs), targets)
            optimizer.zero_grad()
            self.manual_backward(loss)
            optimizer.step()
            loss_sum.add_(loss.detach(), alpha=batch.shape[1])  # stays on the device: no sync per step
            windows += batch.shape[1]
        forecast = self.scaler.inverse_transform(self.forecast_scaled(epoch.context, len(epoch.actual))[:, 0])
        metrics = {"train_loss": loss_sum / windows, "val_mape": mape(epoch.actual, forecast)}
        self.log_dict(metrics, on_step=False, on_epoch=True, sync_dist=True, batch_size=1)

    def on_train_start(self) -> None:
        if self.trainer.lr_scheduler_configs:
            raise RuntimeError(
                f"{type(self).__name__} steps its optimizer by hand (one Lightning batch per epoch), so Lightning "
                "would never step the LR scheduler configured here; step it at the end of training_step instead"
            )
        # A checkpoint restores the optimizer with the learning rate it was saved with; a fit resumed with
        # another lr (PBT copies a trial's weights and changes its lr) must train with its own.
        for optimizer in self.trainer.optimizers:
            for group in optimizer.param_groups:
                group["lr"] = self.config.lr

    def configure_optimizers(self) -> torch.optim.Optimizer:
        # The fused kernel updates all parameters in one call; it exists on CPU and CUDA only.
        fused = True if self.device.type in ("cpu", "cuda") else None
        return torch.optim.Adam(self.parameters(), lr=self.config.lr, fused=fused)

    @torch.no_grad()
    def forecast_scaled(self, context: Tensor, steps: int) -> Tensor:
        """Forecast `steps` points after `context` (T, B, 1), feeding predictions back: returns (steps, B).

        In the weights' own precision: mixed precision would round the fed-back predictions at every step.
        """
        with torch.autocast(context.device.type, enabled=False):
            state = recurrence.zero_state(self.rnn, context.shape[1], context)
            for point in context:
                hidden = recurrence.step(self.rnn, point, state)
            predictions = context.new_empty(steps, context.shape[1], 1)
            weight, bias = self.head.weight.t(), self.head.bias
            torch.addmm(bias, hidden, weight, out=predictions[0])
            for t in range(1, steps):
                torch.addmm(bias, recurrence.step(self.rnn, predictions[t - 1], state), weight, out=predictions[t])
        return predictions[..., 0]

    def forecast(self, history, steps: int) -> np.ndarray:
        """Forecast `steps` points after `history` (original units, oldest first) in original units."""
        history = np.asarray(history, dtype=np.float64)
        if len(history) < self.config.input_chunk_length:
            raise ValueError(
                f"history has {len(history)} points; the model reads the last {self.config.input_chunk_length}"
            )
        context = self.scaler.transform(history[-self.config.input_chunk_length :])
        context = torch.as_tensor(context, dtype=torch.float32, device=self.device).view(-1, 1, 1)
        was_training = self.training
        self.eval()
        try:
            scaled = self.forecast_scaled(context, steps)[:, 0].double().cpu().numpy()
        finally:
            self.train(was_training)
        return self.scaler.inverse_transform(scaled)
