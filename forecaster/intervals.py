"""Prediction intervals: how far the truth may fall from a point forecast, and how good any interval is.

Bounds come from conformal calibration: the errors of forecasts made as the answer makes them (from a model that
never trained on the points it forecasts, across the same gap between the end of its training and the forecast's
origin) on points that ranked no trial, each divided by its series' scale so that the errors of every series pool
into one distribution per step ahead. A level's half-width at step h is the conformal quantile of those scaled
errors (the ceil((n + 1) level)-th smallest of n), times each series' own scale: intervals as wide as the errors
were, relative to each series' size, symmetric around the forecast. A series' scale (`interval_scales`) says how
hard it is to forecast from three angles at once: how much it moved over its whole history (its MASE scale), how
much over its last horizon (a series whose swings grew or calmed), and how far the answer missed it on its
validation part. Where too few calibration errors share a step (fewer than `POOLED_BELOW` series: one series
alone), every step's errors pool into one quantile.

Judged as the M4 competition judges intervals: coverage (the share of points inside, per level), the mean width
relative to each series' scale, and the mean scaled interval score (MSIS: the width plus 2 / (1 - level) times each
miss, divided by the series' MASE scale, the mean over steps, then over series).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from forecaster.config import ForecasterConfig
from forecaster.metrics import mase_scales
from forecaster.panel import Panel

POOLED_BELOW = 20
"""Calibration series under which every step's errors pool: a 95 % conformal quantile needs 19 errors to be finite."""


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


def interval_scales(train: Panel, horizon: int, validation_error: np.ndarray) -> np.ndarray:
    """(S,) what each series' half-widths are multiples of: the geometric mean of its mean absolute seasonal
    difference over the whole of `train` (its MASE scale: forecaster.transforms.error_scales), the same over its last
    `horizon` differences, and `validation_error` (S,), the answer's mean absolute error on its validation part.
    Each of the last two stands in for the first where it is undefined or 0 (a tail shorter than a season, a flat
    stretch, a perfect forecast). Each part covers what the others miss: the whole history how much a series moves,
    the last horizon a series whose swings grew or calmed, the validation error how hard the series is for the answer
    itself (docs/design-notes.md, "Prediction intervals", compares this scale with the alternatives)."""
    from forecaster.transforms import error_scales

    whole = error_scales(train)
    recent = mase_scales(train.split_at(np.maximum(train.lengths - horizon - train.season, 0))[1])
    parts = [whole, *(np.where(np.isfinite(part) & (part > 0), part, whole) for part in (recent, validation_error))]
    return np.exp(np.mean(np.log(parts), axis=0))


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


def bands(
    forecast: np.ndarray, scale: np.ndarray, quantiles: dict[float, np.ndarray], floor: np.ndarray | None = None
) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """{level: (lower, upper)}, each (steps, S): the forecast (steps, S) plus and minus each step's half-width times
    each series' scale (S,); `floor` (S,), where given, the lowest a series' lower bound goes (0 for a series that
    has never been below 0, as sales or visitors)."""
    found = {}
    for level, half in quantiles.items():
        width = half[: len(forecast), None] * scale[None, :]
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


@dataclasses.dataclass
class Calibration:
    """One model's forecasts of calibration points, as the answer forecasts its test windows: trained on each series'
    training part less its last horizon and the gap before it, reading the gap as context (as the answer reads the
    validation part it never trained on), forecasting the last horizon of the training part, which ranked no trial.
    With more origins, also from earlier points of the gap: every point after the end of the model's training is
    one it never saw."""

    ids: np.ndarray
    """(n,) the series of each forecast (those long enough to train on before the gap and the horizon)."""
    origins: np.ndarray
    """(n,) how many points of the gap each forecast read (the gap itself: the answer's own situation)."""
    forecast: np.ndarray
    """(horizon, n)."""
    actual: np.ndarray
    """(horizon, n)."""
    scale: np.ndarray
    """(n,) each forecast's series' scale (`interval_scales`): over what the model trained on, with the answer's
    validation error."""

    def to_frame(self):
        """One row per calibration point: unique_id, origin_points (how many points of the gap the forecast read),
        step (1 = the first point ahead), y, forecast and scale."""
        import pandas as pd

        steps, count = self.forecast.shape
        return pd.DataFrame(
            {
                "unique_id": np.tile(self.ids, steps),
                "origin_points": np.tile(self.origins, steps),
                "step": np.repeat(np.arange(1, steps + 1), count),
                "y": self.actual.reshape(-1),
                "forecast": self.forecast.reshape(-1),
                "scale": np.tile(self.scale, steps),
            }
        )


def calibration_forecast(
    config: ForecasterConfig,
    epochs: int,
    train: Panel,
    horizon: int,
    gap: int | None = None,
    origins: int = 1,
    validation_error: np.ndarray | None = None,
    **fit_options: Any,
) -> Calibration:
    """Train `config` again for `epochs` on every series of `train` (a sweep's training parts) less its last
    `horizon` points and the `gap` before them (default: a horizon; the answer's validation part), and forecast
    `horizon` points from the end of the gap and, with `origins` > 1, from as many points evenly spread over the gap
    back to its start (see Calibration). Series too short for that are left out. `validation_error` (one per series
    of `train`): the answer's mean absolute error on each series' validation part, one of the three parts of each
    forecast's scale (`interval_scales`; without it, each series' MASE scale stands in for that part)."""
    from forecaster.train import fit, quiet_lightning

    quiet_lightning()  # in a sweep's Ray task, as in a trial: no banner per fit
    gap = horizon if gap is None else gap
    result = fit(
        config.replace(n_epochs=epochs), train, val_size=gap, test_size=horizon, drop_short=True, **fit_options
    )
    parts, model = result.parts, result.model
    kept = np.isin(train.ids, parts.train.ids)
    whole = train.take(kept)  # the fit's series, their every point
    missed = np.full(len(train), np.nan) if validation_error is None else np.asarray(validation_error, dtype=float)
    scale = interval_scales(parts.train, horizon, missed[kept])
    ids, read, forecasts, actuals = [], [], [], []
    for read_points in np.unique(np.round(np.linspace(gap, 0, max(1, min(origins, gap + 1)))).astype(int)):
        history, after = whole.split_at(parts.train.lengths + read_points)
        window = after.split_at(np.full(len(after), horizon))[0]
        forecasts.append(model.forecast_part(history, window).reshape(len(window), horizon).T)
        actuals.append(window.values.reshape(len(window), horizon).T)
        ids.append(np.asarray(window.ids))
        read.append(np.full(len(window), read_points))
    return Calibration(
        ids=np.concatenate(ids),
        origins=np.concatenate(read),
        forecast=np.concatenate(forecasts, axis=1),
        actual=np.concatenate(actuals, axis=1),
        scale=np.tile(scale, len(ids)),
    )


def mean_calibration(calibrations: Sequence[Calibration]) -> Calibration:
    """The mean forecast of several calibrations, on the forecasts they all made (the same series and origins), as
    the answer is the mean forecast of its models."""
    keys = [[f"{i}\u0000{o}" for i, o in zip(c.ids, c.origins)] for c in calibrations]
    shared = set(keys[0]).intersection(*keys[1:])
    chosen = [[index for index, key in enumerate(own) if key in shared] for own in keys]
    order = [sorted(indices, key=lambda index, own=own: own[index]) for indices, own in zip(chosen, keys)]
    first, columns = calibrations[0], order[0]
    return Calibration(
        ids=first.ids[columns],
        origins=first.origins[columns],
        forecast=np.mean([c.forecast[:, own] for c, own in zip(calibrations, order)], axis=0),
        actual=first.actual[:, columns],
        scale=first.scale[columns],
    )


def scaled_errors(calibrations: Sequence[Calibration]) -> tuple[np.ndarray, np.ndarray]:
    """(steps, n) the absolute errors of the mean forecast of several calibrations divided by each series' scale, and
    those forecasts' series ids."""
    mean = mean_calibration(calibrations)
    return np.abs(mean.actual - mean.forecast) / mean.scale[None, :], mean.ids
