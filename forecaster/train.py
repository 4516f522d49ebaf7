"""`fit(config, series)`: train one forecaster with a Lightning Trainer and return its metrics per epoch.

Nothing here knows about Ray: a sweep passes its reporting callback in `callbacks` and its Trainer
settings in `trainer_options`. What makes a fit of a 481-parameter model fast is what is *not* done
per step: the training windows live in one tensor on the device and batches are slices of it (no
DataLoader, no per-sample collation), the loss is logged once per epoch, the validation forecast is
one cheap autoregressive loop, and the progress bar, model summary, logger and checkpoint files are
off unless asked for.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import lightning as L
import numpy as np
import pandas as pd
import torch
from torch import Tensor

from forecaster.config import ForecasterConfig
from forecaster.data import (
    DEFAULT_SPLIT_AFTER,
    MinMaxScaler,
    check_fit_possible,
    check_series,
    load_series,
    naming,
    source_of,
    split_series,
)
from forecaster.model import EpochBatch, RNNForecaster

ACCELERATORS = ("cpu", "gpu", "tpu", "auto")


@dataclasses.dataclass
class FitResult:
    """What a fit leaves: the trained model, the metrics of every epoch and the final forecast."""

    model: RNNForecaster
    history: list[dict[str, float]]
    """One row per epoch: epoch (from 1), train_loss (scaled MSE), val_mape (percent, original units)."""
    forecast: pd.Series
    """The trained model's forecast of the validation dates, in original units."""
    fit_seconds: float
    cpu_seconds: float

    @property
    def val_mape(self) -> float:
        return self.history[-1]["val_mape"]

    @property
    def best_epoch(self) -> dict[str, float]:
        """The epoch with the lowest validation MAPE (NaN epochs never win)."""
        finite = [row for row in self.history if math.isfinite(row["val_mape"])]
        return min(finite, key=lambda row: row["val_mape"]) if finite else self.history[-1]

    @property
    def epochs_per_second(self) -> float:
        return len(self.history) / self.fit_seconds


class EpochBatches:
    """One `EpochBatch` per epoch: the training windows shuffled and cut into mini-batches, on the device.

    The order depends only on (seed, epoch), so a fit resumed from a checkpoint sees the same batches as
    an uninterrupted one. Under data parallelism every rank shuffles alike and takes its own share,
    padded to equal length as DistributedSampler does, so that all ranks step together.
    """

    def __init__(
        self,
        windows: Tensor,
        context: Tensor,
        actual: Tensor,
        batch_size: int,
        seed: int,
        epoch: Callable[[], int],
        rank: int = 0,
        world_size: int = 1,
    ):
        self.windows, self.context, self.actual = windows, context, actual
        self.batch_size, self.seed, self.epoch = batch_size, seed, epoch
        self.rank, self.world_size = rank, world_size

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[EpochBatch]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch())
        count = self.windows.shape[1]
        order = torch.randperm(count, generator=generator)
        if self.world_size > 1:
            per_rank = math.ceil(count / self.world_size)
            order = order.repeat(2)[: per_rank * self.world_size][self.rank :: self.world_size]
        order = order.to(self.windows.device)
        batches = [self.windows.index_select(1, part) for part in order.split(self.batch_size)]
        yield EpochBatch(batches, self.context, self.actual)


class SeriesDataModule(L.LightningDataModule):
    """Scaled training windows and the validation data, put on the training device once."""

    def __init__(self, config: ForecasterConfig, train: pd.Series, val: pd.Series, scaler: MinMaxScaler):
        super().__init__()
        self.config = config
        scaled = torch.as_tensor(scaler.transform(train.to_numpy(np.float64)), dtype=torch.float32)
        # All windows of training_length + 1 points, time-major: (training_length + 1, n_windows, 1).
        self.windows = scaled.unfold(0, config.training_length + 1, 1).t().unsqueeze(-1).contiguous()
        self.context = scaled[-config.input_chunk_length :].view(-1, 1, 1)
        self.actual = torch.tensor(val.to_numpy(np.float64), dtype=torch.float32)

    def train_dataloader(self) -> EpochBatches:
        trainer = self.trainer
        device = trainer.strategy.root_device
        return EpochBatches(
            self.windows.to(device),
            self.context.to(device),
            self.actual.to(device),
            self.config.batch_size,
            seed=self.config.random_state,
            epoch=lambda: trainer.current_epoch,
            rank=trainer.global_rank,
            world_size=trainer.world_size,
        )


class EpochHistory(L.Callback):
    """Records train_loss and val_mape at the end of every epoch."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        metrics = trainer.callback_metrics
        self.rows.append(
            {
                "epoch": trainer.current_epoch + 1,
                "train_loss": float(metrics.get("train_loss", math.nan)),
                "val_mape": float(metrics.get("val_mape", math.nan)),
            }
        )

    def state_dict(self) -> dict[str, Any]:
        return {"rows": self.rows}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.rows = list(state_dict["rows"])


class AcceleratorError(RuntimeError):
    """The hardware asked for is not there."""


def check_accelerator(accelerator: str) -> None:
    """Say plainly when the hardware asked for is not there, instead of Lightning's generic error."""
    if accelerator not in ACCELERATORS:
        raise AcceleratorError(f"accelerator={accelerator!r} is not one of {', '.join(ACCELERATORS)}")
    if accelerator == "gpu" and not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
        raise AcceleratorError(
            f"accelerator='gpu' but torch {torch.__version__} sees no CUDA device (CUDA_VISIBLE_DEVICES={visible}); "
            "install a CUDA build of torch on a machine with a GPU, or use accelerator='cpu'"
        )
    if accelerator == "tpu":
        try:
            import torch_xla  # noqa: F401
        except ImportError:
            raise AcceleratorError("accelerator='tpu' needs torch-xla: pip install '.[tpu]' on a TPU VM") from None


def quiet_lightning() -> None:
    """Silence Lightning's per-run banners ('GPU available: ...'), which repeat for every trial, and a
    deprecation warning that Lightning 2.6 itself triggers in torch's pytree module."""
    for name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)")


def fit(
    config: ForecasterConfig | Mapping[str, Any] = ForecasterConfig(),
    series: pd.Series | None = None,
    *,
    split_after: str = DEFAULT_SPLIT_AFTER,
    callbacks: Sequence[L.Callback] = (),
    accelerator: str = "cpu",
    devices: int | str | Sequence[int] = 1,
    threads: int | None = None,
    trainer_options: Mapping[str, Any] | None = None,
    prepare_trainer: Callable[[L.Trainer], L.Trainer] | None = None,
    ckpt_path: str | None = None,
) -> FitResult:
    """Train one forecaster on `series` (default: Air Passengers) split after `split_after`.

    accelerator: "cpu", "gpu" (devices = a count or a list of ids), "tpu" (devices = cores) or "auto".
    The model is tiny: one CPU thread is the cheapest way to train it, a GPU pays off only for large
    hidden_dim and batch_size, or when many fits share it. `threads` sets torch's CPU threads.
    `trainer_options` and `prepare_trainer` let a caller (a sweep) adjust the Trainer; `ckpt_path`
    resumes from a Lightning checkpoint.
    """
    config = config if isinstance(config, ForecasterConfig) else ForecasterConfig.from_dict(config)
    series = load_series("air_passengers") if series is None else series
    with naming(source_of(series)):
        check_series(series)
        train, val = split_series(series, split_after)
        check_fit_possible(config, train, val)
    check_accelerator(accelerator)
    if threads is not None:
        torch.set_num_threads(threads)

    scaler = MinMaxScaler.fit(train.to_numpy())
    torch.manual_seed(config.random_state)  # the initial weights and dropout masks
    model = RNNForecaster(config, scaler.minimum, scaler.scale)
    data = SeriesDataModule(config, train, val, scaler)
    history = EpochHistory()
    options = dict(
        max_epochs=config.n_epochs,
        accelerator=accelerator,
        devices=devices,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    options.update(trainer_options or {})
    trainer = L.Trainer(callbacks=[history, *callbacks], **options)
    if prepare_trainer is not None:
        trainer = prepare_trainer(trainer)

    wall, cpu = time.perf_counter(), time.process_time()
    trainer.fit(model, datamodule=data, ckpt_path=ckpt_path)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu

    forecast = pd.Series(model.forecast(train.to_numpy(), len(val)), index=val.index, name=series.name)
    return FitResult(model=model, history=history.rows, forecast=forecast, fit_seconds=wall, cpu_seconds=cpu)
