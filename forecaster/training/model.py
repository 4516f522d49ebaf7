"""The net as a LightningModule: each shape of model (forecaster/shapes: Darts' RNNModel, its BlockRNNModel, Smyl's
ES-RNN) trains through it, the shape's loss on the shape's windows: MSE, L1 or pinball in the net's units, or sMAPE
or MASE in original units.

Batches are time-major, (time, batch, 1): each time step is then a contiguous slice, which is what the
recurrent loops index.

One Lightning batch is one epoch (`EpochBatch`): its shuffled mini-batches, stepped here with manual
optimization, and the validation data that scores the epoch. Lightning's per-batch machinery (hooks,
fetchers, result collection) costs more than a training step of this model and its validation loop
more than the forecast, so both run once per epoch instead of once per step. The optimizer steps still
go through `manual_backward` and the Lightning optimizer, so DDP, XLA, precision plugins, `global_step`
and checkpointing behave as usual.

The net sees the series through a `TargetTransform` (forecaster/features/transforms.py: log, differences, min-max
scaling fit on the training part, per-window normalisation), optionally with the season's calendar as extra
inputs, and always forecasts back in original units: the validation MAPE, `forecast` and a checkpoint alike.
With `ema_decay`, an exponential moving average of the weights (updated every epoch) is what forecasts, is
scored and is saved: a single epoch's weights jump around, their average much less.

What that shape gives up, on purpose: there is no `validation_step` (the epoch's score is computed at the end
of `training_step`, so Lightning's validation loop, `val_check_interval` and `limit_val_batches` do nothing),
and under manual optimization Lightning never steps an LR scheduler by itself: the model configures none,
and refuses to train with one rather than silently keeping its learning rate.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import lightning as L
import torch
from lightning.pytorch.core.optimizer import LightningOptimizer
from torch import Tensor

from forecaster.features.transforms import ForecastInputs, ShapeInputs, ShapeWindows
from forecaster.metrics import panel_scores
from forecaster.training.net import RNNNet


@dataclasses.dataclass
class EpochBatch:
    """What one training step of the Trainer gets: a whole epoch, and what to score it on."""

    windows: list[Tensor]
    """The epoch's mini-batches of training windows, each (span, batch, 1 + C) in the net's units: the value, and
    with calendar inputs the next point's place in the season. The hybrid shape's: (2, batch), each window's series and
    origin, which its loss cuts from `source`."""
    validation: ShapeInputs
    """The forecasts that score the epoch, one column per series and validation origin (B of them)."""
    actual: Tensor
    """(steps, B): the validation values each forecast is scored on, in original units (1 where there is none)."""
    weights: Tensor
    """(steps, B): 1 where a forecast step has a validation value to be scored on, 0 past the part's end."""
    series: Tensor
    """(B,) int64: the series of each column."""
    mase_scale: Tensor
    """(B,): the in-sample seasonal naive error of each column's series, by which MASE divides."""
    mape_defined: bool
    """False where a series has a zero in its validation part: MAPE is then reported as NaN."""
    originals: list[tuple[ForecastInputs, Tensor]] | None = None
    """For a loss in original units (smape and mase), per mini-batch: what takes the scored points of its windows
    back to original units, and each window's MASE scale."""
    source: ShapeWindows | None = None
    """What the windows were cut from: the hybrid cuts its own, step by step, as its smoothing learns."""


class RNNForecaster(RNNNet, L.LightningModule):
    """The net (forecaster/training/net.py) as a LightningModule: a checkpoint of it forecasts in original units."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """RNNNet's arguments."""
        super().__init__(*args, **kwargs)
        # Lightning's save_hyperparameters reads this frame's arguments and compares each with what it saves, which
        # arrays break: from here on they are the plain values that the net keeps.
        args, kwargs = (), dict(self.hyperparameters)
        self.save_hyperparameters(kwargs)
        self.automatic_optimization = False  # training_step steps each mini-batch of the epoch

    def unit_errors(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """Each prediction's loss in the net's units: its squared error (mse), absolute error (l1) or pinball loss."""
        error = targets - predictions
        if self.config.loss == "l1":
            return error.abs()
        if self.config.loss == "pinball":
            tau = self.config.pinball_tau
            return torch.maximum(tau * error, (tau - 1.0) * error)
        return error**2

    def original_unit_errors(
        self, predictions: Tensor, targets: Tensor, originals: tuple[ForecastInputs, Tensor]
    ) -> Tensor:
        """(steps, B): each prediction's error in original units, as MASE (over its series' in-sample seasonal naive
        error) or sMAPE scores it; both (steps, B) in the net's units, with what takes them back."""
        inputs, error_scale = originals
        forecast = self.transform.from_model(predictions, inputs)
        actual = self.transform.from_model(targets, inputs)
        error = (actual - forecast).abs()
        if self.config.loss == "mase":
            return error / error_scale
        total = actual.abs() + forecast.abs()
        return torch.where(total > 0, 200.0 * error / total.clamp(min=1e-12), 0.0)

    def training_step(self, epoch: EpochBatch, batch_index: int) -> None:
        optimizer = cast(LightningOptimizer, self.optimizers())  # one optimizer: configure_optimizers
        loss_sum, windows = torch.zeros((), device=self.device), 0
        for index, batch in enumerate(epoch.windows):
            originals = epoch.originals[index] if epoch.originals else None
            loss = self.shape.loss(self, batch, originals, epoch)
            optimizer.zero_grad()
            self.manual_backward(loss)
            optimizer.step()
            loss_sum.add_(loss.detach(), alpha=batch.shape[1])  # stays on the device: no sync per step
            windows += batch.shape[1]
        self._update_average()
        forecast = self.predict(epoch.validation, len(epoch.actual))
        scores = panel_scores(
            epoch.actual,
            forecast,
            epoch.weights,
            epoch.series,
            len(self.scaler.minimum),
            epoch.mase_scale,
            epoch.mape_defined,
        )
        metrics = {"train_loss": loss_sum / windows, **{f"val_{name}": value for name, value in scores.items()}}
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
                group["lr"] = self.config.lr * group.get("lr_scale", 1.0)
        if self.device.type == "xla":
            # XLA's dropout draws from torch-xla's own generator, which torch.manual_seed does not reseed: without
            # this, a second fit in the same process (a warm Ray worker) would draw other masks with the same seed.
            import torch_xla.core.xla_model as xm

            xm.set_rng_state(self.config.random_state, device=self.device)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        # The fused kernel updates all parameters in one call; it exists on CPU and CUDA only.
        fused = True if self.device.type in ("cpu", "cuda") else None
        return torch.optim.Adam(self.shape.optimizer_groups(self), lr=self.config.lr, fused=fused)
