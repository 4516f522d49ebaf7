"""`fit(config, data)`: train one forecaster with a Lightning Trainer on a series or a panel of many, and return
its metrics per epoch.

One global model for a panel: every series' windows train the same weights, each series seen through its own
scaler (fit on its own training part), and every epoch is scored on the validation part of every series. A single
series is a panel of one, on the same path.

Nothing here knows about Ray: a sweep passes its reporting callback in `callbacks` and its Trainer
settings in `trainer_options`. What makes a fit of a 481-parameter model fast is what is *not* done
per step: the training parts live in one tensor on the device and an epoch's windows are cut from it in one
gather (no DataLoader, no per-sample collation), the loss is logged once per epoch, the validation forecast of
every series is one batched autoregressive loop, and the progress bar, model summary, logger and checkpoint
files are off unless asked for. An epoch has at most `windows_per_epoch` windows, each series equally likely, so
its cost does not grow with the number of series; the validation forecast does, one column per series.
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

from forecaster.config import ACCELERATORS, ForecasterConfig
from forecaster.data.datasets import AIR_PASSENGERS_SPLIT_AFTER, DEFAULT_DATASET
from forecaster.data.panel import Panel
from forecaster.data.read import as_panel, load_panel, naming
from forecaster.features.transforms import ShapeInputs, ShapeWindows, TargetTransform
from forecaster.metrics import METRICS, mase_scales
from forecaster.shapes import shape_of
from forecaster.training.model import EpochBatch, RNNForecaster
from forecaster.training.net import RNNNet
from forecaster.training.parts import FitParts, fit_parts


@dataclasses.dataclass
class FitResult:
    """What a fit leaves: the trained model, the metrics of every epoch and the final forecast."""

    model: RNNForecaster
    """On the CPU once the fit returns, wherever it trained: Lightning's teardown moves the module back (`trained_on`
    says where the epochs ran)."""
    history: list[dict[str, float]]
    """One row per epoch: epoch (from 1), train_loss (scaled MSE), and over the validation parts, in original units:
    val_mape (percent; NaN where a series has a zero), val_smape (0-200) and val_mase, each a mean over series."""
    forecast: pd.DataFrame
    """The trained model's forecast of every series' validation part: unique_id, ds, y (the truth) and forecast."""
    parts: FitParts
    """The training and validation parts it was given, and the ranking metric."""
    fit_seconds: float
    cpu_seconds: float
    devices: list[str]
    """Where each epoch of `history` trained, as the Trainer's strategy placed the model ('cpu', 'cuda:0', 'xla:0')."""

    @property
    def metric(self) -> str:
        return self.parts.metric

    @property
    def dropped(self) -> tuple[str, ...]:
        """Series left out as too short (drop_short)."""
        return self.parts.dropped

    @property
    def trained_on(self) -> str:
        """Where the epochs trained: 'cuda:0', or several joined by commas (a fit resumed on other hardware)."""
        return ", ".join(dict.fromkeys(self.devices))

    @property
    def val_mape(self) -> float:
        return self.history[-1]["val_mape"]

    @property
    def score(self) -> float:
        """The last epoch's value of the ranking metric."""
        return self.history[-1][f"val_{self.metric}"]

    @property
    def best_epoch(self) -> dict[str, float]:
        """The epoch with the lowest value of the ranking metric (NaN epochs never win)."""
        key = f"val_{self.metric}"
        finite = [row for row in self.history if math.isfinite(row[key])]
        return min(finite, key=lambda row: row[key]) if finite else self.history[-1]

    @property
    def epochs_per_second(self) -> float:
        return len(self.history) / self.fit_seconds

    def forecast_series(self, index: int = 0) -> pd.Series:
        """Series `index`'s validation forecast as a pandas Series over its validation dates (or times)."""
        val = self.parts.val.series(index)
        rows = self.forecast["unique_id"] == self.parts.val.ids[index]
        return pd.Series(self.forecast.loc[rows, "forecast"].to_numpy(), index=val.index, name=val.name)


class EpochBatches:
    """One `EpochBatch` per epoch: its training windows, cut into mini-batches, on the device.

    An epoch is every window once, in a random order, where there are at most `windows_per_epoch` and every series has
    as many; a single series with more windows than that gives an epoch of that many of them, drawn without replacement.
    Otherwise an epoch is `windows_per_epoch` windows (or as many as there are), each drawn by choosing a series with
    windows uniformly at random, then one of its windows uniformly: every series weighs the same whatever its length,
    and an epoch costs the same whatever the number of series. The draw depends only on (seed, epoch), so a fit resumed
    from a checkpoint sees the same batches as an uninterrupted one. Under data parallelism every rank draws alike and
    takes its own share, padded to equal length as DistributedSampler does, so that all ranks step together.
    """

    dataset = None
    """No dataset behind the batches; Lightning's multi-device XLA strategy wraps every training loader in torch-xla's
    MpDeviceLoader, which reads this attribute (without it, a fit on several TPU chips fails before its first step)."""

    def __init__(
        self,
        windows: ShapeWindows,
        validation: Validation,
        batch_size: int,
        windows_per_epoch: int,
        seed: int,
        epoch: Callable[[], int],
        rank: int = 0,
        world_size: int = 1,
    ):
        self.windows, self.validation = windows, validation
        self.batch_size, self.seed, self.epoch = batch_size, seed, epoch
        self.rank, self.world_size = rank, world_size
        self.counts = windows.counts.cpu()
        self.trained = torch.nonzero(self.counts).reshape(-1)  # a series shorter than a recurrent window has none
        total = int(self.counts.sum())
        self.size = min(windows_per_epoch, total)
        equal = bool((self.counts == self.counts[0]).all())
        self.permuted = equal and (self.size == total or len(self.counts) == 1)
        """Windows drawn without replacement: a random permutation of all of them, cut to the epoch's size."""

    def __len__(self) -> int:
        return 1

    def draw(self) -> tuple[Tensor, Tensor]:
        """This epoch's windows, (series, position) pairs, on the CPU."""
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch())
        if self.permuted:
            order = torch.randperm(int(self.counts.sum()), generator=generator)[: self.size]
            per_series = int(self.counts[0])
            series, positions = order // per_series, order % per_series
        else:
            series = self.trained[torch.randint(len(self.trained), (self.size,), generator=generator)]
            positions = (torch.rand(self.size, generator=generator, dtype=torch.float64) * self.counts[series]).long()
        if self.world_size > 1:
            per_rank = math.ceil(self.size / self.world_size)
            mine = torch.arange(self.size).repeat(2)[: per_rank * self.world_size][self.rank :: self.world_size]
            series, positions = series[mine], positions[mine]
        return series, positions

    def __iter__(self) -> Iterator[EpochBatch]:
        series, positions = self.draw()
        device = self.windows.device
        series, positions = series.to(device), positions.to(device)
        windows = self.windows.cut(series, positions)
        originals = None
        found = self.windows.in_original_units(series, positions, windows)
        if found is not None:  # a loss in original units
            inputs, error_scale = found
            size = self.batch_size
            originals = [
                (inputs.columns(slice(start, start + size)), error_scale[start : start + size])
                for start in range(0, windows.shape[1], size)
            ]
        validation = self.validation
        yield EpochBatch(
            list(windows.split(self.batch_size, dim=1)),  # type: ignore[no-untyped-call]
            validation.inputs,
            validation.actual,
            validation.weights,
            validation.series,
            validation.mase_scale,
            validation.mape_defined,
            originals,
            self.windows,
        )


@dataclasses.dataclass
class Validation:
    """The forecasts that score every epoch: from each validation origin of every series to its part's end."""

    inputs: ShapeInputs
    actual: Tensor
    """(steps, B), original units; 1 past a part's end, where the weight is 0."""
    weights: Tensor
    series: Tensor
    """(B,) int64: the series of each column (columns run series after series, origins within)."""
    mase_scale: Tensor
    """(B,): the MASE scale of each column's series."""
    mape_defined: bool

    def to(self, device: torch.device | str) -> Validation:
        return dataclasses.replace(
            self,
            inputs=self.inputs.to(device),
            actual=self.actual.to(device),
            weights=self.weights.to(device),
            series=self.series.to(device),
            mase_scale=self.mase_scale.to(device),
        )


def validation_origins(points: np.ndarray, origins: int) -> np.ndarray:
    """(origins, S): how many validation points each origin of each series has seen, evenly spaced from 0 (the end
    of training); `points` (S,) is each series' validation length, at least `origins`."""
    seen: np.ndarray = np.round(np.arange(origins)[:, None] * np.asarray(points)[None, :] / origins).astype(np.int64)
    return seen


class PanelDataModule(L.LightningDataModule):
    """Training windows and the validation forecasts' inputs of every series, in the net's units, put on the training
    device once."""

    def __init__(self, config: ForecasterConfig, parts: FitParts, transform: TargetTransform, **shape_state: Any):
        """`shape_state`: what the config's shape keeps of the data (Shape.state: the hybrid's log shifts)."""
        super().__init__()
        self.config = config
        train, val, seen = parts.train, parts.val, parts.seen
        if parts.windows > 1:  # the trials rank on the earlier windows; the answer's ensemble is weighed on the rest
            origins = parts.ranking_windows
            seen_points = validation_origins(val.lengths, parts.windows)[:origins]  # (origins, S)
        else:
            origins = config.val_origins
            seen_points = validation_origins(val.lengths, origins)
        columns = seen_points.T.reshape(-1)  # series after series, origins within
        series = np.repeat(np.arange(len(train)), origins)
        ends = seen.offsets[series] + train.lengths[series] - 1 + columns
        steps = parts.window_size  # an origin forecasts to the part's end; a backtest window's, its window only
        shape = shape_of(config.shape)
        self.windows, inputs = shape.training_data(config, parts, transform, ends, **shape_state)
        left = np.minimum(val.lengths[series] - columns, steps)  # validation points after each origin it scores
        ahead = np.arange(steps)[:, None]
        scored = ahead < left[None, :]
        rows = np.minimum(val.offsets[series] + columns + ahead, len(val.values) - 1)
        actual = np.where(scored, val.values[rows], 1.0)
        scales = mase_scales(train)
        self.validation = Validation(
            inputs,
            torch.as_tensor(actual, dtype=torch.float32),
            torch.as_tensor(scored, dtype=torch.float32),
            torch.as_tensor(series),
            torch.as_tensor(scales[series], dtype=torch.float32),
            mape_defined=not (val.values == 0).any(),
        )

    def train_dataloader(self) -> EpochBatches:
        trainer = self.trainer
        assert trainer is not None, "Lightning asks for the batches of a data module attached to a Trainer"
        device = trainer.strategy.root_device
        return EpochBatches(
            self.windows.to(device),
            self.validation.to(device),
            self.config.batch_size,
            self.config.windows_per_epoch,
            seed=self.config.random_state,
            epoch=lambda: trainer.current_epoch,
            rank=trainer.global_rank,
            world_size=trainer.world_size,
        )


class EpochHistory(L.Callback):
    """Records train_loss and the validation metrics at the end of every epoch, and where it trained."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.devices: list[str] = []

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        metrics = trainer.callback_metrics
        self.rows.append(
            {
                "epoch": trainer.current_epoch + 1,
                "train_loss": float(metrics.get("train_loss", math.nan)),
                **{f"val_{name}": float(metrics.get(f"val_{name}", math.nan)) for name in METRICS},
            }
        )
        self.devices.append(str(module.device))

    def state_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "devices": self.devices}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.rows = list(state_dict["rows"])
        self.devices = list(state_dict.get("devices", ["unknown"] * len(self.rows)))  # older checkpoints: not kept


class StopAt(L.Callback):
    """Ends a fit at the end of the epoch during which the clock passes `at` (time.time()): a continuation that must
    end by a deadline (a sweep's --time-limit) trains what fits before it, and at least one epoch."""

    def __init__(self, at: float) -> None:
        self.at = at
        self.epochs = 0
        """The epochs that ran."""

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self.epochs += 1
        if time.time() >= self.at:
            trainer.should_stop = True


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
    data: Panel | pd.Series | pd.DataFrame | FitParts | None = None,
    *,
    split_after: str | int | None = None,
    val_size: int | None = None,
    test_size: int = 0,
    metric: str | None = None,
    drop_short: bool = False,
    callbacks: Sequence[L.Callback] = (),
    accelerator: str = "cpu",
    devices: int | str | Sequence[int] = 1,
    threads: int | None = None,
    trainer_options: Mapping[str, Any] | None = None,
    prepare_trainer: Callable[[L.Trainer], L.Trainer] | None = None,
    ckpt_path: str | None = None,
    initial: RNNNet | None = None,
) -> FitResult:
    """Train one forecaster with a Lightning Trainer, and score every epoch on each series' validation part.

    Each series is cut as forecaster.training.parts.fit_parts says: the last `test_size` points of each never reach the
    fit; it
    validates on the last `val_size` points of the rest, or on everything after `split_after`. The model is tiny: one
    CPU thread is the cheapest way to train it; a GPU pays off for large hidden_dim and batch_size, or when many fits
    share it.

    Args:
        config: The hyperparameters (a ForecasterConfig, or a mapping of its fields).
        data: A Panel, a long DataFrame (unique_id, ds, y) or a dated Series, cut and checked here; or FitParts cut and
            checked already for this configuration (a sweep's), used as they are. None: Air Passengers, split after
            AIR_PASSENGERS_SPLIT_AFTER unless told otherwise.
        split_after: The last date (or time) of every series' training part.
        val_size: Points of each series that validate, before its test window.
        test_size: Points at each series' end that never reach the fit.
        metric: mape, smape or mase: what ranks the epochs (default MAPE for one series, sMAPE for a panel).
        drop_short: Leave out the series too short for the windows instead of refusing the panel.
        callbacks: More Lightning callbacks (a sweep's reporter).
        accelerator: cpu, gpu, tpu or auto.
        devices: A count, or a list of GPU ids (TPU: cores).
        threads: torch's CPU threads.
        trainer_options: More Trainer arguments, over the defaults here.
        prepare_trainer: A function that adjusts the Trainer before it fits.
        ckpt_path: A Lightning checkpoint to resume from.
        initial: A trained net of this configuration on the same series, where the weights (and their moving average)
            start instead of at random: a fit that continues it on newer points, its transforms fit on them as a fresh
            fit's would be.

    Returns:
        The trained model (on the CPU), its metrics per epoch and its forecast of every validation part.

    Raises:
        ConfigError: An impossible hyperparameter.
        SeriesError: Data the configuration cannot use (too short, a log of a value at or below 0, ...).
        AcceleratorError: The hardware asked for is not there."""
    config = config if isinstance(config, ForecasterConfig) else ForecasterConfig.from_dict(config)
    if isinstance(data, FitParts):
        cutting = {"split_after": split_after, "val_size": val_size, "test_size": test_size, "metric": metric}
        given = [name for name, value in cutting.items() if value] + (["drop_short"] if drop_short else [])
        if given:  # the parts say how they were cut, and were checked as they are
            raise ValueError(f"{', '.join(given)}: the parts given are cut and checked already; give a panel instead")
        parts = data
    else:
        if data is None and split_after is None and val_size is None:
            split_after = AIR_PASSENGERS_SPLIT_AFTER
        panel = as_panel(load_panel(DEFAULT_DATASET) if data is None else data)
        with naming(panel.source):
            parts = fit_parts(
                config,
                panel,
                split_after=split_after,
                val_size=val_size,
                test_size=test_size,
                metric=metric,
                drop_short=drop_short,
            )
    check_accelerator(accelerator)
    if threads is not None:
        torch.set_num_threads(threads)
    shape = shape_of(config.shape)
    config = shape.prepared(config, parts.window_size)

    train = parts.train
    transform = TargetTransform.fit(config, train, parts.seen)
    shape_state = shape.state(config, parts, transform)
    torch.manual_seed(config.random_state)  # the initial weights and dropout masks
    model = RNNForecaster(
        config,
        transform.scaler.minimum,
        transform.scaler.scale,
        train.season,
        series_ids=train.ids,
        time_origins=train.origins,
        seasonal_indices=transform.seasonal,
        logged_series=transform.logged,
        seasonal_shifts=transform.shifts,
        step_inputs=None if transform.inputs is None else transform.inputs.state(),
        year_season=transform.year,
        **shape_state,
    )
    if initial is not None:
        start_from(model, initial)
    module = PanelDataModule(config, parts, transform, **shape_state)
    history = EpochHistory()
    options: dict[str, Any] = dict(
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
    trainer.fit(model, datamodule=module, ckpt_path=ckpt_path)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return FitResult(
        model=model,
        history=history.rows,
        forecast=validation_forecast(model, parts),
        parts=parts,
        fit_seconds=wall,
        cpu_seconds=cpu,
        devices=history.devices,
    )


def fit_through(
    config: ForecasterConfig, epochs: int, seen: Panel, start: RNNNet | None = None, **fit_options: Any
) -> tuple[RNNNet, str]:
    """Train `config` through every point of `seen` but each series' last (which the loop validates on and a forecast
    reads), so that what it forecasts follows right after what it learnt: a sweep's configuration refit through its
    validation part (neuralforecast's `refit_with_val`), or through every point for the future.

    From scratch, it keeps the series long enough for a training window (in a panel, the recurrent shape's input chunk).
    From `start`, it continues that net on every one of its series (those too short for a window train nothing and are
    forecast by what the others taught it).

    Args:
        config: The hyperparameters.
        epochs: How many epochs; 0 with `start` gives `start` itself.
        seen: Every point to train on.
        start: A trained net of `config` on the same series (a trial's best model, or such a refit) to continue.
        **fit_options: `fit`'s run options (threads, accelerator, devices, ...).

    Returns:
        The plain net (RNNNet, on the CPU: a driver that forecasts with it needs no Lightning), and where it trained
        ('cuda:0', ...; '' where nothing trained)."""
    if start is not None and epochs == 0:
        return start.eval(), ""
    quiet_lightning()  # in a sweep's Ray task, as in a trial: no banner per fit
    config = config.replace(n_epochs=epochs, val_origins=1)
    if start is None:
        # The one validation point ranks nothing: sMAPE, defined on any value (MAPE is not at 0, MASE on a flat series).
        result = fit(config, seen, val_size=1, metric="smape", drop_short=True, **fit_options)
    else:
        train, last = seen.split_at(seen.lengths - 1)
        parts = FitParts(train, last, seen, "smape")  # a continuation of nets trained on shorter parts of these series
        result = fit(config, parts, initial=start, **fit_options)
    net = RNNNet(**result.model.hyperparameters)
    net.load_state_dict({name: tensor.cpu() for name, tensor in result.model.state_dict().items()})
    return net.eval(), result.trained_on


def start_from(model: RNNForecaster, initial: RNNNet) -> None:
    """`model`'s weights, their moving average and its per-series parameters set to `initial`'s, a net of the same
    configuration trained on the same series (ValueError otherwise)."""
    if list(initial.series_ids or []) != list(model.series_ids or []):
        raise ValueError(
            f"a fit continues a net trained on the same series: it knows {len(initial.series_ids or [])}, the data "
            f"holds {len(model.series_ids or [])}"
        )
    model.load_state_dict(initial.state_dict())


def validation_forecast(model: RNNForecaster, parts: FitParts) -> pd.DataFrame:
    """The model's forecast of every series' validation part from the end of its training part (with backtest windows,
    each window from the points before it): unique_id, ds, y and forecast, one row per validation point."""
    frame = parts.val.to_frame()
    frame["forecast"] = parts.backtest(model.forecast_part)
    return frame
