"""The exponential smoothing of the hybrid shape (Smyl's ES-RNN, the M4 winner): per series, a level and a
multiplicative season whose coefficients and initial factors are learnt with the net.

Everything runs in logs, where Holt-Winters' multiplicative form is additive: with z_t the log of a series,

    level_t  = alpha * (z_t - s_t) + (1 - alpha) * level_{t-1}        (level_0 = z_0 - s_0)
    s_{t+m}  = gamma * (z_t - level_t) + (1 - gamma) * s_t

alpha and gamma are sigmoids of free parameters, so they stay in (0, 1) whatever the optimizer does; the m initial
factors s_0..s_{m-1} are free, centred to a mean of 0 (their exps multiply to 1), and indexed by the place in the
season, so that a history that starts in another month still finds its own. Past a series' last point the level
stays and the factors repeat its last season: the factors of the points a forecast reaches.

A series with a value at or below 0 is logged after a shift (`log_shifts`): the series plus 1 % of its mean absolute
value more than its lowest value. The recursion runs a season at a time, the seasons by a scan (`smooth`), every
series of a batch at once.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import Tensor, nn

from forecaster.data.panel import Panel
from forecaster.features.seasonal_adjustment import seasonal_components

SHIFT_MARGIN = 0.01
"""How far above 0 a shifted series' lowest value lands, as a share of its mean absolute value."""
INITIAL_LEVEL_LOGIT = -1.0
"""alpha = sigmoid(-1) = 0.27 before training, as Smyl's initialisation of the level coefficient."""
INITIAL_SEASON_LOGIT = -2.0
"""gamma = sigmoid(-2) = 0.12: seasons move more slowly than levels."""


def log_shifts(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(S,) what each series needs added before its log: 0 where every value is above 0, else enough to lift its
    lowest value to SHIFT_MARGIN of its mean absolute value (a series of zeros: to 1e-6)."""
    starts = offsets[:-1]
    lowest = np.minimum.reduceat(values, starts)
    size = np.add.reduceat(np.abs(values), starts) / np.diff(offsets)
    return np.where(lowest > 0, 0.0, SHIFT_MARGIN * np.maximum(size, 1e-4) - np.minimum(lowest, 0.0))


def to_logs(values: np.ndarray, offsets: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """Each series' log after its shift; a later value below what the shift lifts above 0 (new data lower than any
    the model saw) is read as SHIFT_MARGIN of the series' mean absolute value, the shift's own floor."""
    lengths = np.diff(offsets)
    shifted = values + np.repeat(shifts, lengths)
    size = np.add.reduceat(np.abs(values), offsets[:-1]) / np.maximum(lengths, 1) if len(values) else np.zeros(0)
    floor = np.repeat(SHIFT_MARGIN * np.maximum(size, 1e-4), lengths)
    return np.log(np.where(shifted > 0, shifted, floor))


def smooth(z: Tensor, lengths: Tensor, alpha: Tensor, gamma: Tensor, initial: Tensor) -> tuple[Tensor, Tensor]:
    """Levels (B, T) and seasonal factors (B, T + m) of the series z (B, T), each left-aligned with `lengths` points:
    alpha, gamma (B,) in (0, 1); initial (B, m) the factors of points 0..m-1 (m = 1: no season, factors of 0).

    The recursion is linear with constant coefficients, so it runs a season at a time (the factors a season reads
    were all made in the season before) and the seasons by a scan: log2(T / m) batched products of the
    (m + 1)-state transition, instead of a loop over points (the same values, tests/test_hybrid.py compares them
    with the loop). Past a series' end the level stays and the factors repeat its last season."""
    rows, steps = z.shape
    season = initial.shape[1]
    if season == 1:  # a level alone: factors that stay 0
        gamma, initial = torch.zeros_like(gamma), torch.zeros_like(initial)
    seasons = -(-steps // season)
    blocks = nn.functional.pad(z, (0, seasons * season - steps)).view(rows, seasons, season)
    within, carried, transition, inputs = _season_maps(alpha, gamma, season)
    start = torch.cat([(z[:, 0] - initial[:, 0])[:, None], initial], 1)  # level_-1 such that level_0 = z_0 - s_0
    states = _linear_scan(transition, torch.cat([start[:, None], blocks @ inputs.transpose(1, 2)], 1))
    before, factors = states[..., 0], states[..., 1:]  # per season: the level before it, its m factors
    levels = before[:, :seasons, None] * carried[:, None, :] + (blocks - factors[:, :seasons]) @ within.transpose(1, 2)
    levels, factors = levels.reshape(rows, -1), factors.reshape(rows, -1)
    last = (lengths - 1)[:, None]
    levels = levels.gather(1, torch.arange(steps, device=z.device)[None, :].minimum(last))
    if season == 1:
        return levels, z.new_zeros(rows, steps + 1)
    places = torch.arange(steps + season, device=z.device)[None, :]
    repeated = torch.where(places <= last, places, last + 1 + (places - last - 1) % season)
    return levels, factors.gather(1, repeated)


def _season_maps(alpha: Tensor, gamma: Tensor, season: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The maps of one season of the recursion, per series. Within a season of values x (m,) whose factors s are
    known, the levels are carried * level_before + within @ (x - s) (within: alpha (1 - alpha)^(p - j), j <= p;
    carried: (1 - alpha)^(p + 1)). The state (level before the season, its m factors) then moves to the next season
    as transition @ state + inputs @ x."""
    keep = 1 - alpha
    ones = torch.ones_like(alpha)[:, None]
    powers = torch.cumprod(torch.cat([ones, keep[:, None].expand(-1, season - 1)], 1), 1)  # keep^p, p < m
    lag = torch.arange(season, device=alpha.device)[:, None] - torch.arange(season, device=alpha.device)[None, :]
    within = torch.where(lag >= 0, alpha[:, None, None] * powers[:, lag.clamp(min=0)], 0.0)
    carried = powers * keep[:, None]
    last_row = within[:, -1]
    identity = torch.eye(season, device=alpha.device, dtype=alpha.dtype)
    g = gamma[:, None, None]
    transition = torch.cat(
        [
            torch.cat([carried[:, -1:, None], -last_row[:, None, :]], 2),
            torch.cat([-g * carried[:, :, None], (1 - g) * identity + g * within], 2),
        ],
        1,
    )
    inputs = torch.cat([last_row[:, None, :], g * (identity - within)], 1)
    return within, carried, transition, inputs


def _linear_scan(transition: Tensor, pushes: Tensor) -> Tensor:
    """(B, K, n): the states x_k = transition @ x_(k-1) + pushes_k, x_0 = pushes_0, of transitions (B, n, n) and
    pushes (B, K, n), by doubling: after round r each state holds the sum of its last 2^r pushes, each carried by
    its power of the transition (Hillis and Steele's scan): log2(K) batched products."""
    states, power, shift = pushes, transition, 1
    while shift < pushes.shape[1]:
        carried = states[:, :-shift] @ power.transpose(1, 2)
        states = torch.cat([states[:, :shift], states[:, shift:] + carried], 1)
        power, shift = power @ power, shift * 2
    return states


def factors_ahead(factors: Tensor, lengths: Tensor, steps: int, season: int, rows: Tensor | None = None) -> Tensor:
    """(B, steps): the seasonal factors of the `steps` points after each series' end (its last season repeated); with
    `rows` (B,), of factors' row rows[i] for the i-th end (several ends may read one series' row, none copied)."""
    places = lengths[:, None] + torch.arange(steps, device=factors.device)[None, :] % season
    return factors.gather(1, places) if rows is None else factors[rows[:, None], places]


class SeasonalSmoothing(nn.Module):
    """The per-series parameters of the smoothing, one row per series the model trained on (in its scaler rows'
    order): they belong to the model, are saved with its weights and train at their own learning rate."""

    def __init__(self, series: int, season: int):
        super().__init__()
        self.season = int(season)
        self.level_logit = nn.Parameter(torch.full((series,), INITIAL_LEVEL_LOGIT))
        self.season_logit = nn.Parameter(torch.full((series,), INITIAL_SEASON_LOGIT))
        self.initial_factors = nn.Parameter(torch.zeros(series, self.season))
        """Log factors by place in the season (the place of the series' first point: its phase)."""

    def coefficients(
        self, rows: Tensor, phases: Tensor, new_factors: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """alpha, gamma (B,) and the initial factors (B, m) of points 0..m-1 of the series at `rows`, whose first
        points fall at `phases` of the season. A row of -1 (a series the model never trained on) gets the
        median coefficients of the trained series, and `new_factors` (B, m) by place in the season, or 0."""
        safe = rows.clamp(min=0)
        level, season, factors = self.level_logit[safe], self.season_logit[safe], self.initial_factors[safe]
        if new_factors is not None:  # a forecast of series it may never have seen (training never has any)
            new = rows < 0
            level = torch.where(new, self.level_logit.median(), level)
            season = torch.where(new, self.season_logit.median(), season)
            fresh = torch.zeros_like(factors) if new_factors is None else new_factors.to(factors)
            factors = torch.where(new[:, None], fresh, factors)
        factors = factors - factors.mean(1, keepdim=True)
        places = (phases[:, None] + torch.arange(self.season, device=phases.device)[None, :]) % self.season
        return torch.sigmoid(level), torch.sigmoid(season), factors.gather(1, places)


@dataclasses.dataclass
class HybridInputs:
    """What the hybrid reads to forecast after the end of each column: the log of its series up to there, with room
    after it for a forecast longer than a block to be fed back."""

    z: Tensor
    """(B, T) float32: each column's log series, left-aligned, 0 after its end."""
    lengths: Tensor
    """(B,) int64: the points of each column."""
    rows: Tensor
    """(B,) int64: each column's series among those the model trained on; -1 for one it never saw."""
    phases: Tensor
    """(B,) int64: the place in the season of each column's first point."""
    shifts: Tensor
    """(B,) float64: what was added to each column's series before its log."""
    new_factors: Tensor | None = None
    """(B, m): initial log factors by place in the season for the columns whose row is -1; None where there are none."""
    beside: Tensor | None = None
    """(B, T + output_chunk_length, C) float32: what each row of a column reads beside its value (the covariates: the
    hybrid's `beside`); None without covariates."""

    def to(self, device: torch.device | str, dtype: torch.dtype = torch.float32) -> HybridInputs:
        return HybridInputs(
            self.z.to(device),
            self.lengths.to(device),
            self.rows.to(device),
            self.phases.to(device),
            self.shifts.to(device, dtype),
            None if self.new_factors is None else self.new_factors.to(device),
            None if self.beside is None else self.beside.to(device),
        )


def hybrid_inputs(
    panel: Panel, ends: np.ndarray, steps: int, shifts: np.ndarray, rows: np.ndarray, new_factors: np.ndarray | None
) -> HybridInputs:
    """The inputs of forecasts of `steps` points after each row of `panel` in `ends` (several may lie in one series):
    `shifts` and `rows` per series of `panel`, `new_factors` (S, m) for the series whose row is -1."""
    ends = np.asarray(ends, dtype=np.int64)
    series = np.searchsorted(panel.offsets, ends, side="right") - 1
    starts = panel.offsets[series]
    lengths = ends - starts + 1
    logs = to_logs(panel.values, panel.offsets, shifts)
    width = int(lengths.max()) + steps
    where = np.arange(width)[None, :]
    inside = where < lengths[:, None]
    z = np.where(inside, logs[np.minimum(starts[:, None] + where, len(logs) - 1)], 0.0)
    rows = np.asarray(rows, dtype=np.int64)[series]
    return HybridInputs(
        z=torch.as_tensor(z, dtype=torch.float32),
        lengths=torch.as_tensor(lengths),
        rows=torch.as_tensor(rows),
        phases=torch.as_tensor(panel.phases()[series]),
        shifts=torch.as_tensor(np.asarray(shifts, dtype=np.float64)[series]),
        new_factors=None if new_factors is None else torch.as_tensor(new_factors[series], dtype=torch.float32),
    )


def new_series_factors(panel: Panel) -> np.ndarray:
    """(S, m) initial log factors by place in the season for series the model never trained on: the logs of their
    classical multiplicative seasonal indices (forecaster.features.transforms.seasonal_components: 1 where its test
    finds no
    season), 0 where those are undefined."""
    indices, _ = seasonal_components(panel, first_only=True) if panel.season > 1 else (np.ones((len(panel), 1)), None)
    return np.log(indices)


@dataclasses.dataclass
class HybridWindows:
    """Every series' training part as logs, one row each, from which an epoch's windows are drawn as (series, origin)
    pairs: their inputs depend on the smoothing being learnt, so the model cuts them itself, step by step. The
    origins are the direct shape's: every point from the second on (or among the last windows_from_last), the block
    after it padded past the series' end."""

    z: Tensor
    """(S, T) float32: each series' log, left-aligned, 0 after its end."""
    lengths: Tensor
    """(S,) int64."""
    phases: Tensor
    """(S,) int64: the place in the season of each series' first point."""
    first: Tensor
    """(S,) int64: the first origin of each series' windows."""
    counts: Tensor
    """(S,) int64: how many windows (origins) each series has."""
    beside: Tensor | None = None
    """(S, T + output_chunk_length, C) float32: as HybridInputs'."""

    @classmethod
    def of(cls, train: Panel, shifts: np.ndarray, windows_from_last: int) -> HybridWindows:
        lengths = train.lengths
        inputs = hybrid_inputs(train, train.offsets[1:] - 1, 0, shifts, np.arange(len(train)), None)
        earliest = np.maximum(1, lengths - windows_from_last) if windows_from_last else np.ones_like(lengths)
        return cls(
            z=inputs.z,
            lengths=inputs.lengths,
            phases=inputs.phases,
            first=torch.as_tensor(earliest),
            counts=torch.as_tensor(np.maximum(lengths - earliest, 0)),
        )

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def device(self) -> torch.device:
        return self.z.device

    def to(self, device: torch.device | str) -> HybridWindows:
        return HybridWindows(
            z=self.z.to(device),
            lengths=self.lengths.to(device),
            phases=self.phases.to(device),
            first=self.first.to(device),
            counts=self.counts.to(device),
            beside=None if self.beside is None else self.beside.to(device),
        )

    def cut(self, series: Tensor, positions: Tensor) -> Tensor:
        """(2, E) int64: the series and origin (its first point forecast) of each window drawn."""
        return torch.stack([series, self.first[series] + positions])

    def in_original_units(self, series: Tensor, positions: Tensor, windows: Tensor) -> None:
        """None: the hybrid's losses are in its own units (forecaster.features.transforms.ShapeWindows)."""
        return None
