"""Prediction intervals: how far the truth may fall from a point forecast, and how good any interval is.

Bounds come from conformal calibration: the errors of forecasts made as the answer makes them (by nets that never
trained on the points they forecast, from right after what they learnt) on points that ranked no trial nor the
window bounded, each divided by its series' scale so that the errors of every series pool into one distribution per
step ahead. A level's half-width at step h is the conformal quantile of those scaled errors (the ceil((n + 1) level)-th
smallest of n), times each series' own scale: intervals as wide as the errors were, relative to each series' size,
symmetric around the forecast, each point's further multiplied by its unit (`spread_units`): how far the members'
forecasts of it spread apart, plus a floor, so that the points the members disagree on get the wider intervals. A
series' scale (`interval_scales`) says how hard it is to forecast from three angles
at once, each over the points before the window it scales: how much it moved over its whole history (its MASE scale),
how much over its last horizon (a series whose swings grew or calmed), and how far the nets miss the last horizon of
the points they trained on (`fitted_error`: how hard the series is for them). Where too few calibration errors share
a step (fewer than `POOLED_BELOW` series: one series alone), every step's errors pool into one quantile.

Judged as the M4 competition judges intervals: coverage (the share of points inside, per level), the mean width
relative to each series' scale, and the mean scaled interval score (MSIS: the width plus 2 / (1 - level) times each
miss, divided by the series' MASE scale, the mean over steps, then over series).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from forecaster.data.panel import Panel
from forecaster.metrics import mase_scales

if TYPE_CHECKING:
    from forecaster.training.net import RNNNet

POOLED_BELOW = 20
"""Calibration series under which every step's errors pool: a 95 % conformal quantile needs 19 errors to be finite."""


SPREAD_WEIGHT = 2.0
"""A point's unit is the members' spread at it plus this many times their median spread over the calibration's
points: the floor keeps a point they agree on from a zero width, and weighs their disagreement against the step's
common width (docs/intervals.md: chosen among 0.5, 1, 2 and 4 on two inner windows of each of six panels)."""


def check_levels(levels: Iterable[float]) -> tuple[float, ...]:
    """Levels in percent, strictly between 0 and 100, sorted and once each; ValueError naming a bad one."""
    checked = []
    for level in levels:
        if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 100:
            raise ValueError(f"level {level!r} must be a percentage strictly between 0 and 100, e.g. 80 or 95")
        checked.append(float(level))
    return tuple(sorted(set(checked)))


def level_name(level: float) -> str:
    """80 -> '80', 97.5 -> '97.5': the suffix of Nixtla's columns (answer-lo-80, answer-hi-80)."""
    return f"{level:g}"


def check_quantiles(quantiles: Iterable[float]) -> tuple[float, ...]:
    """Quantiles strictly between 0 and 1, sorted and once each; ValueError naming a bad one."""
    checked = []
    for quantile in quantiles:
        if isinstance(quantile, bool) or not isinstance(quantile, (int, float)) or not 0 < quantile < 1:
            raise ValueError(f"quantile {quantile!r} must be strictly between 0 and 1, e.g. 0.1 or 0.9")
        checked.append(round(float(quantile), 9))
    return tuple(sorted(set(checked)))


def quantile_column(method: str, quantile: float) -> str:
    """neuralforecast's name of a forecast at a quantile: answer_ql0.1, AutoETS_ql0.9."""
    return f"{method}_ql{quantile:g}"


def quantile_levels(quantiles: Iterable[float]) -> tuple[float, ...]:
    """The levels of the central intervals whose bounds are these quantiles (0.5, the point forecast, needs none)."""
    return tuple(sorted({quantile_level(q) for q in quantiles} - {0.0}))


def quantile_level(quantile: float) -> float:
    """The central interval whose bound quantile q is: 0.1 and 0.9 bound the 80 % one; 0.5 (the point) none, 0."""
    return round(abs(200 * quantile - 100), 9)


def quantiles_of(
    point: np.ndarray, bounds: dict[float, tuple[np.ndarray, np.ndarray]], quantiles: Sequence[float]
) -> dict[float, np.ndarray] | None:
    """{q: forecast at quantile q}, shaped as `point`: below 0.5 the lower bound of the central interval at
    quantile_level(q), above it the upper bound, 0.5 the point forecast (statsforecast's and the conformal intervals
    are symmetric in probability around it, as AutoGluon reads statsforecast's quantiles). Sorted across q at every
    point, so that no two cross; None where `bounds` lacks a level they need."""
    needed = {quantile_level(q) for q in quantiles} - {0.0}
    if not needed <= set(bounds):
        return None
    if not len(quantiles):
        return {}
    found = [point if q == 0.5 else bounds[quantile_level(q)][0 if q < 0.5 else 1] for q in quantiles]
    ordered = np.sort(np.stack(found), axis=0)  # in q's order where they were given sorted
    order = np.argsort(quantiles)
    return {float(quantiles[k]): ordered[rank] for rank, k in enumerate(order)}


def interval_scales(history: Panel, horizon: int, fitted: np.ndarray) -> np.ndarray:
    """(S,) what each series' half-widths are multiples of: the geometric mean of its mean absolute seasonal
    difference over the whole of `history` (its MASE scale: forecaster.features.transforms.error_scales), the same over
    its last
    `horizon` differences, and `fitted` (S,), how far the nets miss its last horizon of the points they trained on
    (`fitted_error`). Each of the last two stands in for the first where it is undefined or 0 (a tail shorter than a
    season, a flat stretch, a series the nets cannot read). Each part covers what the others miss: the whole history
    how much a series moves, the last horizon a series whose swings grew or calmed, the nets' own error how hard the
    series is for them (docs/design-notes.md, "The work after the trials", compares this scale with others)."""
    from forecaster.features.transforms import error_scales

    whole = error_scales(history)
    recent = mase_scales(history.split_at(np.maximum(history.lengths - horizon - history.season, 0))[1])
    parts = [whole, *(np.where(np.isfinite(part) & (part > 0), part, whole) for part in (recent, fitted))]
    return cast(np.ndarray, np.exp(np.mean(np.log(parts), axis=0)))


def fitted_error(net: RNNNet, panel: Panel, horizon: int) -> np.ndarray:
    """(S,) `net`'s mean absolute error on each series' last `horizon` points of `panel` (points it trained on),
    forecast from the points before them; NaN for a series too short for it to read."""
    history, last = panel.split_at(np.maximum(panel.lengths - horizon, 1))
    readable = history.lengths >= net.points_read
    found = np.full(len(panel), np.nan)
    if readable.any():
        some, window = (history, last) if readable.all() else (history.take(readable), last.take(readable))
        missed = np.abs(window.values - net.forecast_part(some, window))
        found[readable] = np.add.reduceat(missed, window.offsets[:-1]) / window.lengths
    return found


def conformal_quantiles(scores: np.ndarray, levels: Sequence[float]) -> dict[float, np.ndarray]:
    """{level: (steps,) half-width in scale units}: per step, the conformal quantile of the scaled errors `scores`
    (steps, n) (NaN: no error there), or of every step's together where fewer than POOLED_BELOW series calibrate."""
    scores = np.asarray(scores, dtype=np.float64)
    steps = scores.shape[0]
    pooled = scores.shape[1] < POOLED_BELOW
    found = {}
    for level in levels:
        if pooled:
            found[level] = np.full(steps, _conformal(scores.reshape(-1), level))
        else:
            found[level] = np.array([_conformal(row, level) for row in scores])
    return found


def _conformal(errors: np.ndarray, level: float) -> float:
    errors = np.sort(errors[np.isfinite(errors)])
    n = len(errors)
    rank = math.ceil((n + 1) * level / 100)
    return float(errors[rank - 1]) if 0 < rank <= n else math.inf


def member_spread(forecasts: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(steps, S) how far the members' forecasts (members, steps, S) spread apart at each point (their standard
    deviation), in units of each series' scale (S,); NaN where fewer than two forecast it (a series too short for
    the others to read): how sure they are there is unknown."""
    forecasts = np.asarray(forecasts, dtype=np.float64)
    present = np.isfinite(forecasts)
    count = present.sum(axis=0)
    mean = np.where(present, forecasts, 0.0).sum(axis=0) / np.maximum(count, 1)
    variance = np.where(present, (forecasts - mean) ** 2, 0.0).sum(axis=0) / np.maximum(count, 1)
    return cast(np.ndarray, np.where(count > 1, np.sqrt(variance), np.nan) / scale[None, :])


def spread_floor(spread: np.ndarray) -> float:
    """What every point's unit adds to its spread: SPREAD_WEIGHT times the median `spread` (member_spread) over the
    calibration's points; 0 where the members never disagree there (one member), which makes every unit 1."""
    finite = spread[np.isfinite(spread)]
    median = float(np.median(finite)) if len(finite) else 0.0
    return SPREAD_WEIGHT * median if median > 0 else 0.0


def spread_units(spread: np.ndarray, floor: float) -> np.ndarray:
    """Each point's unit (shaped as `spread`): its spread plus `floor` (spread_floor), a point of unknown spread
    taking the calibration's median (floor / SPREAD_WEIGHT); 1 everywhere where the floor is 0 (one member, or a
    model calibrated before the units)."""
    if floor <= 0:
        return np.ones_like(spread)
    return np.where(np.isfinite(spread), spread, floor / SPREAD_WEIGHT) + floor


def bands(
    forecast: np.ndarray,
    scale: np.ndarray,
    quantiles: dict[float, np.ndarray],
    floor: np.ndarray | None = None,
    units: np.ndarray | None = None,
) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """{level: (lower, upper)}, each (steps, S): the forecast (steps, S) plus and minus each step's half-width times
    each series' scale (S,) and, where given, each point's unit (steps, S: spread_units); `floor` (S,), where given,
    the lowest a series' lower bound goes (0 for a series that has never been below 0, as sales or visitors)."""
    found = {}
    for level, half in quantiles.items():
        width = half[: len(forecast), None] * scale[None, :]
        if units is not None:
            width = width * units[: len(forecast)]
        lower = forecast - width
        if floor is not None:
            lower = np.maximum(lower, floor[None, :])
        found[level] = (lower, forecast + width)
    return found


def interval_scores(
    actual: np.ndarray, lower: np.ndarray, upper: np.ndarray, scale: np.ndarray, level: float
) -> dict[str, np.ndarray]:
    """Per series (columns of the (steps, S) arrays; NaN in `actual` where a series has no point): the share of its
    points inside [lower, upper], the mean width divided by its scale (S,), and its scaled interval score (MSIS
    at this level)."""
    alpha = 1 - level / 100
    present = np.isfinite(actual)
    count = present.sum(0)
    truth = np.where(present, actual, 0.0)
    inside = (truth >= lower) & (truth <= upper) & present
    width = np.where(present, upper - lower, 0.0)
    below = np.where(present & (truth < lower), lower - truth, 0.0)
    above = np.where(present & (truth > upper), truth - upper, 0.0)
    score = (width + 2 / alpha * (below + above)).sum(0) / count
    return {
        "coverage": inside.sum(0) / count,
        "width": width.sum(0) / count / scale,
        "msis": score / scale,
    }
