"""The hybrid shape: Smyl's ES-RNN, the M4 winner. The direct shape's net reads the log of each series less a level
and seasonal factors that per-series exponential smoothing gives (forecaster/features/smoothing.py), its coefficients
and
initial factors learnt with the net, and emits a block in those units.

It takes each series' log itself (after a shift where a value is at or below 0) and normalises by its own level and
season, so it refuses the transforms that would do either again; its loss is in its own units (mse, l1 or pinball),
plus level_penalty times the wiggliness of each series' smoothed level. Its per-series parameters train at their own
learning rate (series_lr). It reads every point of a series (its smoothing starts at the first), and forecasts a
series it never trained on with the median coefficients of those it did and initial factors from the new series' own
seasonal indices.

With covariates it reads them as the direct shape does (forecaster/features/step_inputs.py): beside each point of its
window
the known-ahead values of the point after, the historic values of the point, the statics; and its head reads the
known-ahead values of the block it forecasts.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from forecaster.config import ConfigError, real_number, setting
from forecaster.features.smoothing import (
    HybridInputs,
    HybridWindows,
    SeasonalSmoothing,
    factors_ahead,
    hybrid_inputs,
    log_shifts,
    new_series_factors,
    smooth,
)
from forecaster.features.step_inputs import StepInputs
from forecaster.shapes.direct import Direct, DirectSettings

if TYPE_CHECKING:
    from forecaster.config import ForecasterConfig
    from forecaster.data.panel import Panel
    from forecaster.features.transforms import ForecastInputs, ShapeInputs, TargetTransform
    from forecaster.training.model import EpochBatch, RNNForecaster
    from forecaster.training.net import RNNNet
    from forecaster.training.parts import FitParts

HYBRID_LOSSES = ("mse", "l1", "pinball")
"""The hybrid's losses: in its own units, the log of the series less its smoothed level and season."""
PLAIN_SETTINGS = {"target_transform": "none", "window_norm": "none", "deseasonalise": False, "calendar": False}
"""The settings of the transforms that the hybrid does its own way, as it needs them left."""


@dataclasses.dataclass(frozen=True)
class HybridSettings(DirectSettings):
    level_penalty: float = setting(
        200.0,
        "hybrid shape: weight of the penalty on the wiggliness of each series' smoothed level (the mean squared "
        "second difference of its log), which keeps the level smooth and leaves the net the rest (Smyl's, 0: off)",
    )
    series_lr: float = setting(
        0.1,
        "hybrid shape: the learning rate of the per-series smoothing coefficients and initial seasonal factors, as a "
        "multiple of lr",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        penalty = real_number("level_penalty", self.level_penalty)
        if penalty < 0.0:
            raise ConfigError(f"level_penalty={self.level_penalty!r} must be at least 0 (0: off)")
        series_lr = real_number("series_lr", self.series_lr)
        if not series_lr > 0.0:
            raise ConfigError(f"series_lr={self.series_lr!r} must be a positive multiple of lr, for example 0.1")
        object.__setattr__(self, "level_penalty", penalty)
        object.__setattr__(self, "series_lr", series_lr)


class Hybrid(Direct):
    name = "hybrid"
    settings = HybridSettings
    scaled = False
    forecasts_new_series = True
    reads_hist = True

    def check(self, config: ForecasterConfig) -> None:
        """Its own logs and its own level and season: the transforms that do either are refused, not ignored."""
        if config.covariate_path == "linear":
            raise ConfigError(
                "covariate_path='linear' with shape='hybrid': the hybrid reads its own smoothed log levels, not the "
                "values a regression's errors are; use covariate_path 'net' or 'none'"
            )
        if config.loss not in HYBRID_LOSSES:
            raise ConfigError(
                f"loss={config.loss!r} with shape='hybrid': its loss is in its own units (the log less the level and "
                f"season); use one of {', '.join(HYBRID_LOSSES)}"
            )
        for name, plain in PLAIN_SETTINGS.items():
            if getattr(config, name) != plain:
                raise ConfigError(
                    f"{name}={getattr(config, name)!r} with shape='hybrid': the hybrid takes each series' log and "
                    f"divides it by its own learnt level and season; set {name}={plain!r}"
                )

    def data_lines(self, seen: Panel) -> list[str]:
        shifted = log_shifts(seen.values, seen.offsets) > 0
        if not shifted.any():
            return [f"  hybrid     the log of every series (all {len(seen)} are above 0)"]
        return [
            f"  hybrid     the log of every series, {int(shifted.sum())} with a value at or below 0 after a shift of "
            f"1 % of its mean absolute value above its lowest: {seen.id_list(seen.ids[shifted])}"
        ]

    def state(self, config: ForecasterConfig, parts: FitParts, transform: TargetTransform) -> dict[str, Any]:
        """The log shifts, from every point it reads (training and validation), as log_if_positive decides."""
        return {"log_shifts": log_shifts(parts.seen.values, parts.seen.offsets)}

    # --- the net ----------------------------------------------------------------------------------------------------
    def build(self, net: RNNNet, series: int, season: int, **state: Any) -> None:
        super().build(net, series, season)
        net.smoothing = SeasonalSmoothing(series, season)
        shifts = state.get("log_shifts")
        net.log_shifts = np.zeros(series) if shifts is None else np.array(shifts)

    def optimizer_groups(self, module: RNNForecaster) -> list[dict[str, Any]]:
        """The per-series smoothing at its own rate (Smyl's)."""
        per_series = list(module.smoothing.parameters())
        shared = [parameter for parameter in module.parameters() if all(parameter is not p for p in per_series)]
        scale = module.config.series_lr
        return [{"params": shared}, {"params": per_series, "lr": module.config.lr * scale, "lr_scale": scale}]

    def smoothed(
        self, net: RNNNet, z: Tensor, lengths: Tensor, rows: Tensor, phases: Tensor, new_factors: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """The levels (B, T) and seasonal factors (B, T + m) of the series z (B, T) with `lengths` points, smoothed
        through all of them (`rows`, `phases` and `new_factors` as in `SeasonalSmoothing.coefficients`)."""
        alpha, gamma, initial = net.smoothing.coefficients(rows, phases, new_factors)
        return smooth(z, lengths, alpha, gamma, initial)

    def window(
        self,
        net: RNNNet,
        z: Tensor,
        levels: Tensor,
        factors: Tensor,
        columns: Tensor,
        ends: Tensor,
        beside: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The hybrid's view of windows ending at `ends` (E,) of the series `columns` (E,) of z (B, T), smoothed
        (`smoothed`: levels, factors): the net's inputs (input_chunk_length, E, 2), each window's last level (E,)
        and the seasonal factors of the output block's points (E, output_chunk_length). Several windows may read one
        series' row, none copying it. With covariates (`beside`, (B, W, C): what each row of a series reads beside
        its value), the inputs are (input_chunk_length + output_chunk_length - 1, E, 2 + C): the value, the
        covariates and the mask of each row of the window, then the rows of the block's points, whose known-ahead
        covariates the head reads (Direct.forward)."""
        last_level = levels[columns, ends]
        places = ends[:, None] + torch.arange(1 - net.config.input_chunk_length, 1, device=z.device)[None, :]
        real = places >= 0
        safe = places.clamp(min=0)
        series = columns[:, None]
        values = z[series, safe] - factors[series, safe] - last_level[:, None]
        mask = real.to(values.dtype)
        window = torch.stack([torch.where(real, values, 0.0), mask], -1)
        if beside is not None:
            size = net.config.output_chunk_length
            read = beside[series, safe] * mask[..., None]
            block = (ends[:, None] + torch.arange(1, size, device=z.device)[None, :]).clamp(max=beside.shape[1] - 1)
            known = beside[series, block]
            empty = known.new_zeros(*known.shape[:2], 1)
            window = torch.cat(
                [
                    torch.cat([window[..., :1], read, window[..., 1:]], -1),
                    torch.cat([empty, known, empty], -1),
                ],
                1,
            )
        ahead = factors_ahead(factors, ends + 1, net.config.output_chunk_length, net.smoothing.season, columns)
        return window.transpose(0, 1), last_level, ahead

    # --- training ---------------------------------------------------------------------------------------------------
    def training_data(
        self, config: ForecasterConfig, parts: FitParts, transform: TargetTransform, ends: np.ndarray, **state: Any
    ) -> tuple[HybridWindows, HybridInputs]:
        shifts = state["log_shifts"]
        windows = HybridWindows.of(parts.train, shifts, config.windows_from_last)
        inputs = transform.step_inputs(False)
        train_ends = parts.train.offsets[1:] - 1
        size = config.output_chunk_length
        every = np.arange(len(parts.train))
        windows.beside = step_rows(inputs, parts.train, train_ends, windows.z.shape[1] + size, every)
        steps = parts.window_size
        validation = hybrid_inputs(parts.seen, ends, steps, shifts, np.arange(len(parts.seen)), None)
        validation.beside = step_rows(inputs, parts.seen, ends, validation.z.shape[1] + size, every, steps)
        return windows, validation

    def loss(
        self, module: RNNForecaster, batch: Tensor, originals: tuple[ForecastInputs, Tensor] | None, epoch: EpochBatch
    ) -> Tensor:
        """The loss of the windows (series, origin) in `batch`: the series smoothed with their current coefficients,
        the output block's points less the window's last level and their seasonal factors scored over the real
        points, plus level_penalty times the mean squared second difference of the smoothed log levels (each series
        counted once per window it gives).

        Where the panel has no more series than the batch has windows (a long series' hundreds of windows), every
        series is smoothed once and the windows read theirs; otherwise each window smooths its own series' row. Either
        way the shapes depend on the batch's size alone, never on the draw (an XLA device compiles them once)."""
        data = epoch.source
        assert isinstance(data, HybridWindows), "the hybrid's epochs carry the series its windows are cut from"
        series: Tensor
        origins: Tensor
        series, origins = batch
        if len(data.lengths) <= len(series):
            drawn, columns = torch.arange(len(data.lengths), device=series.device), series
        else:
            drawn, columns = series, torch.arange(len(series), device=series.device)
        z, lengths = data.z[drawn], data.lengths[drawn]
        beside = None if data.beside is None else data.beside[drawn]
        levels, factors = self.smoothed(module, z, lengths, drawn, data.phases[drawn])
        window, last_level, ahead = self.window(module, z, levels, factors, columns, origins - 1, beside)
        places = origins[:, None] + torch.arange(ahead.shape[1], device=z.device)[None, :]
        real = (places < lengths[columns, None]).to(z.dtype)
        targets = z[columns[:, None], places.clamp(max=z.shape[1] - 1)] - last_level[:, None] - ahead
        errors = module.unit_errors(module(window).T, targets)
        loss = (errors * real).sum() / real.sum()
        penalty = module.config.level_penalty
        if penalty and levels.shape[1] > 2:
            wiggle = levels[:, 2:] - 2 * levels[:, 1:-1] + levels[:, :-2]
            inside = (torch.arange(2, levels.shape[1], device=z.device)[None, :] < lengths[:, None]).to(z.dtype)
            given = torch.zeros(len(drawn), device=z.device, dtype=z.dtype)  # each series' windows in the batch
            given = given.index_add_(0, columns, torch.ones_like(columns, dtype=z.dtype))
            inside = inside * given[:, None]
            loss = loss + penalty * (wiggle**2 * inside).sum() / inside.sum().clamp(min=1)
        return loss

    # --- forecasting ------------------------------------------------------------------------------------------------
    def predict(self, net: RNNNet, inputs: ShapeInputs, steps: int) -> Tensor:
        assert isinstance(inputs, HybridInputs), "the hybrid reads HybridInputs"
        with net.averaged_weights(), torch.no_grad(), torch.autocast(inputs.z.device.type, enabled=False):
            return self.forecast_blocks(net, inputs, steps)

    def forecast_blocks(self, net: RNNNet, inputs: HybridInputs, steps: int) -> Tensor:
        """(steps, B) in original units: each block of output_chunk_length points from the smoothing and the net
        after each column's end, fed back as points of its series (and smoothed) for the next block."""
        z, lengths, blocks = inputs.z, inputs.lengths, []
        size = net.config.output_chunk_length
        columns = torch.arange(len(z), device=z.device)
        for done in range(0, steps, size):
            levels, factors = self.smoothed(net, z, lengths, inputs.rows, inputs.phases, inputs.new_factors)
            window, last_level, ahead = self.window(net, z, levels, factors, columns, lengths - 1, inputs.beside)
            block = net(window).T + last_level[:, None] + ahead  # (B, size), logs
            blocks.append(block)
            if done + size < steps:
                places = (lengths[:, None] + torch.arange(size, device=z.device)[None, :]).clamp(max=z.shape[1] - 1)
                z, lengths = z.scatter(1, places, block.to(z.dtype)), lengths + size
        logs = torch.cat(blocks, 1)[:, :steps].to(inputs.shifts.dtype)
        return (torch.exp(logs) - inputs.shifts[:, None]).T

    def forecast_columns(
        self,
        net: RNNNet,
        panel: Panel,
        steps: int,
        transform: TargetTransform | None = None,
        new_series: bool = False,
    ) -> np.ndarray:
        """A series it trained on keeps what it learnt (its shift, coefficients and initial factors); with
        `new_series`, one it never saw gets the median coefficients of those it did, initial factors from its own
        classical seasonal indices and a shift from its own values. It reads every point: `transform` is not used."""
        rows = net.scaler_rows(panel, allow_new=new_series)
        if net.time_origins is not None and not panel.dated:  # the season count of training, whatever the start
            origins = np.array(panel.first_times() if panel.origins is None else panel.origins, dtype=np.int64)
            origins[rows >= 0] = net.time_origins[rows[rows >= 0]]
            panel = dataclasses.replace(panel, origins=origins)
        new = rows < 0
        shifts = net.log_shifts[np.maximum(rows, 0)]
        factors = None
        read = net.transform.step_inputs(False)
        if new.any():
            fresh = panel.take(new)
            shifts[new] = log_shifts(fresh.values, fresh.offsets)
            factors = np.zeros((len(panel), net.smoothing.season))
            factors[new] = new_series_factors(fresh)
            if read.count:  # scaled as each series it trained on was: on its own history
                read = read.merged(rows, StepInputs.fit(False, fresh, self.reads_hist), new)
        elif read.count:
            read = read.rows(rows)
        ends = panel.offsets[1:] - 1
        inputs = hybrid_inputs(panel, ends, steps, shifts, rows, factors)
        width = inputs.z.shape[1] + net.config.output_chunk_length
        inputs.beside = step_rows(read, panel, ends, width, np.arange(len(panel)), steps)
        was_training = net.training
        net.eval()
        try:
            device = next(net.rnn.parameters()).device
            return net.predict(inputs.to(device, torch.float64), steps).cpu().numpy()
        finally:
            net.train(was_training)


def step_rows(
    inputs: StepInputs, panel: Panel, ends: np.ndarray, width: int, rows: np.ndarray, steps: int = 0
) -> Tensor | None:
    """(B, width, C) float32: what row p of each column (a series of `panel` up to its row `ends`, as hybrid_inputs
    lays it out) reads beside its value: the known-ahead covariates of point p + 1, the historic ones of point p
    (carried forward past the column's end), its series' statics (`rows`: each series' row of `inputs`). None where
    the net reads none. `steps`: the forecast's length, whose known-ahead values must be there."""
    if not inputs.count:
        return None
    ends = np.asarray(ends, dtype=np.int64)
    series = np.searchsorted(panel.offsets, ends, side="right") - 1
    origins = ends - panel.offsets[series]
    if steps:
        inputs.check_known_ahead(panel, series, origins, steps)
    positions = np.arange(width)[None, :]
    rows = np.asarray(rows)[series][:, None]
    values = inputs.covariates_of(panel, series[:, None], positions, origins[:, None], rows)
    return torch.as_tensor(values, dtype=torch.float32)


SHAPE = Hybrid()
