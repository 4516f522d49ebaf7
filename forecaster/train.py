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
    check_fit_possible,
    check_series,
    load_series,
    naming,
    season_length,
    season_phase,
    source_of,
    split_series,
    with_frequency,
)
from forecaster.model import EpochBatch, RNNForecaster
from forecaster.transforms import ForecastInputs, TargetTransform, forecast_inputs, training_windows

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

    dataset = None
    """No dataset behind the batches; Lightning's multi-device XLA strategy wraps every training loader in torch-xla's
    MpDeviceLoader, which reads this attribute (without it, a fit on several TPU chips fails before its first step)."""

    def __init__(
        self,
        windows: Tensor,
        validation: Validation,
        batch_size: int,
        seed: int,
        epoch: Callable[[], int],
        rank: int = 0,
        world_size: int = 1,
    ):
        self.windows, self.validation = windows, validation
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
        # Each mini-batch's indices go to the device on their own: on XLA, index_select with the pieces of a
        # device tensor's split() aborts the process (torch-xla 2.9: `shape.h: Check failed: buffer != nullptr`).
        device = self.windows.device
        batches = [self.windows.index_select(1, part.to(device)) for part in order.split(self.batch_size)]
        validation = self.validation
        yield EpochBatch(batches, validation.inputs, validation.actual, validation.weights)


@dataclasses.dataclass
class Validation:
    """The forecasts that score every epoch: from each validation origin to the validation part's end."""

    inputs: ForecastInputs
    actual: Tensor
    """(steps, origins), original units; 1 past the part's end, where the weight is 0."""
    weights: Tensor

    def to(self, device) -> Validation:
        inputs = self.inputs
        moved = ForecastInputs(
            context=inputs.context.to(device),
            level=inputs.level.to(device, torch.float32),
            history=inputs.history.to(device, torch.float32),
            future=None if inputs.future is None else inputs.future.to(device),
        )
        return Validation(moved, self.actual.to(device), self.weights.to(device))


def validation_origins(points: int, origins: int) -> list[int]:
    """How many validation points each origin has seen: evenly spaced from 0 (the end of training)."""
    return sorted({round(k * points / origins) for k in range(origins)})


class SeriesDataModule(L.LightningDataModule):
    """Training windows and the validation forecasts' inputs, in the net's units, put on the training device once."""

    def __init__(self, config: ForecasterConfig, train: pd.Series, val: pd.Series, transform: TargetTransform):
        super().__init__()
        self.config = config
        freq = train.index.freqstr
        first_phase = season_phase(train.index[0], freq) if config.calendar else None
        self.windows = training_windows(transform, train.to_numpy(np.float64), config, first_phase)
        values = np.concatenate([train.to_numpy(np.float64), val.to_numpy(np.float64)])
        seen = validation_origins(len(val), config.val_origins)
        steps = len(val)
        inputs = forecast_inputs(
            transform, values, [len(train) - 1 + k for k in seen], config.input_chunk_length, steps, first_phase
        )
        actual = np.ones((steps, len(seen)))
        weights = np.zeros((steps, len(seen)))
        for column, k in enumerate(seen):  # origin k forecasts val[k:], in its first len(val) - k steps
            actual[: steps - k, column] = val.to_numpy(np.float64)[k:]
            weights[: steps - k, column] = 1.0
        self.validation = Validation(
            inputs, torch.as_tensor(actual, dtype=torch.float32), torch.as_tensor(weights, dtype=torch.float32)
        )

    def train_dataloader(self) -> EpochBatches:
        trainer = self.trainer
        device = trainer.strategy.root_device
        return EpochBatches(
            self.windows.to(device),
            self.validation.to(device),
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
        series = with_frequency(series)
        train, val = split_series(series, split_after)
        check_fit_possible(config, train, val)
    check_accelerator(accelerator)
    if threads is not None:
        torch.set_num_threads(threads)

    season = season_length(train.index.freqstr)
    transform = TargetTransform.fit(config, train.to_numpy(np.float64), season)
    torch.manual_seed(config.random_state)  # the initial weights and dropout masks
    model = RNNForecaster(config, transform.scaler.minimum, transform.scaler.scale, season)
    data = SeriesDataModule(config, train, val, transform)
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

    forecast = pd.Series(model.forecast(train, len(val)), index=val.index, name=series.name)
    return FitResult(model=model, history=history.rows, forecast=forecast, fit_seconds=wall, cpu_seconds=cpu)
