"""The answer's prediction intervals (--levels), by conformal calibration on forecasts that already exist
(forecaster.intervals): no model is trained for them.

- On the test window: the members' mean forecast of the validation part (the trials' nets, from the end of training:
  what the refit answer does one part later, from the end of what it learnt) gives, per step ahead, the absolute
  errors that calibrate. Each is divided by its series' scale over the points before the validation part (with the
  trials' nets' own error on the last horizon they trained on); the test window's half-widths are those quantiles
  times each series' scale over the points before the test window (with the refit nets' error on theirs).
- For the future (the saved model): the test window's errors of the answer that forecast it, in the same scales as
  the test window's bounds: made as the future is, by nets continued through the part before the one they forecast.
  Without a test window, the validation part's errors.

docs/design-notes.md, "The work after the trials", compares this calibration with the one before it (two
configurations trained again from scratch to forecast the last horizon of the training part) on inner windows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from forecaster.panel import Panel
from sweeps.plan.sweep_plan import SweepPlan

METHOD = (
    "conformal on the members' errors one part before (the validation part's, forecast by the trials' nets from the "
    "end of training), each series' scale the geometric mean of its MASE scale, the same over its last horizon, and "
    "the nets' error on the last horizon they trained on"
)
FUTURE_METHOD = (
    "conformal on the answer's errors on the test window (forecast by its nets continued through the validation "
    "part, as the saved model's are through the test window), each series' scale the geometric mean of its MASE "
    "scale, the same over its last horizon, and the nets' error on the last horizon they trained on"
)


@dataclasses.dataclass(frozen=True)
class AnswerIntervals:
    bounds: dict[float, tuple[np.ndarray, np.ndarray]]
    """{level: (lower, upper)}, flat in the test part's row order; the levels the calibration cannot bound left out."""
    calibration: dict[str, Any]
    """How they were calibrated, or why they could not be ({"unavailable": ...})."""
    points: pd.DataFrame | None = None
    """The points that calibrated them, with the members' mean forecast and each series' scale (calibration.parquet)."""
    errors: np.ndarray | None = None
    """(steps, S): their scaled errors, from which any level's half-widths come."""


def scaled_errors(
    history: Panel, part: Panel, forecast: np.ndarray, fitted: np.ndarray, horizon: int
) -> tuple[np.ndarray, np.ndarray]:
    """(steps, S) the absolute errors of a flat `forecast` of `part` (NaN past a series' end), each divided by its
    series' scale over `history` (the points before `part`; `fitted`, the nets' error on its last horizon), and those
    scales (S,)."""
    from forecaster.intervals import interval_scales

    scale = interval_scales(history, horizon, fitted)
    errors = grid(part, np.abs(part.values - forecast)) / scale[None, :]
    return errors, scale


def members_mean(values: Sequence[np.ndarray | None]) -> np.ndarray:
    """The members' mean per series, NaN where none gave one (a series no net could read)."""
    assert all(value is not None for value in values), "every member forecast the part"
    stacked = np.array(values, dtype=np.float64)
    counts = np.isfinite(stacked).sum(axis=0)
    return np.where(counts > 0, np.nansum(stacked, axis=0) / np.maximum(counts, 1), np.nan)


def grid(part: Panel, flat: np.ndarray) -> np.ndarray:
    """A part's flat values as (steps, S), NaN past a series' end."""
    values = np.full((int(part.lengths.max()), len(part)), np.nan)
    values[part.positions, np.repeat(np.arange(len(part)), part.lengths)] = flat
    return values


def test_intervals(
    plan: SweepPlan,
    validation_forecast: np.ndarray,
    test_forecast: np.ndarray,
    fitted_before_validation: np.ndarray,
    fitted_before_test: np.ndarray,
    members: int,
) -> AnswerIntervals:
    """The intervals at the plan's distribution_levels around the answer's test forecast, calibrated on
    `validation_forecast`'s errors (the mean of `members` trials' nets); `fitted_before_*`, the nets' errors on the
    last horizon they trained on before each part (forecaster.intervals.fitted_error)."""
    from forecaster.intervals import POOLED_BELOW, bands, conformal_quantiles, interval_scales

    train, val, seen, test = plan.parts.train, plan.parts.val, plan.parts.seen, plan.parts.test
    assert test is not None, "the answer's intervals bound its test window"
    horizon = int(test.lengths.max())
    errors, before = scaled_errors(train, val, validation_forecast, fitted_before_validation, horizon)
    errors = reach(errors, horizon)
    quantiles = conformal_quantiles(errors, plan.distribution_levels)
    unbounded = [level for level, half in quantiles.items() if not np.isfinite(half).all()]
    calibration = {
        "method": METHOD,
        "members": members,
        "calibration_series": int(np.isfinite(errors).any(axis=0).sum()),
        "series": len(test),
        "horizon": horizon,
        "calibration_errors": int(np.isfinite(errors).sum()),
        "steps_pooled": errors.shape[1] < POOLED_BELOW,
        "unbounded_levels": unbounded,
    }
    points = val.to_frame()
    points["step"] = val.positions + 1
    points["forecast"] = validation_forecast
    points["scale"] = np.repeat(before, val.lengths)
    bounded = {level: half for level, half in quantiles.items() if level not in unbounded}
    lowest = np.minimum.reduceat(seen.values, seen.offsets[:-1])
    scale = interval_scales(seen, horizon, fitted_before_test)
    found = bands(grid(test, test_forecast), scale, bounded, floor=np.where(lowest >= 0, 0.0, -np.inf))
    where = test.positions, np.repeat(np.arange(len(test)), test.lengths)
    return AnswerIntervals(
        {level: (lower[where], upper[where]) for level, (lower, upper) in found.items()}, calibration, points, errors
    )


def reach(errors: np.ndarray, horizon: int) -> np.ndarray:
    """`errors` (steps, n) for `horizon` steps: a step past the calibration's last one takes its errors (a test
    window longer than the validation part, cut by dates)."""
    if len(errors) >= horizon:
        return errors[:horizon]
    return np.concatenate([errors, np.repeat(errors[-1:], horizon - len(errors), axis=0)])


def future_errors(plan: SweepPlan, forecast: np.ndarray, fitted: np.ndarray) -> np.ndarray:
    """(horizon, n) the scaled errors the saved model's intervals come from: `forecast`, the answer's of the test
    window (of the validation part without one), with `fitted`, its nets' error on the last horizon before it, over
    at least the future's horizon."""
    parts = plan.parts
    history, part = (parts.seen, parts.test) if parts.test is not None else (parts.train, parts.val)
    horizon = future_horizon(plan)
    errors, _ = scaled_errors(history, part, forecast, fitted, horizon)
    return reach(errors, horizon)


def future_horizon(plan: SweepPlan) -> int:
    """How many points the future forecast reaches: the sweep's horizon, or without one the longest validation part."""
    return int(plan.sweep.horizon or plan.parts.val.lengths.max())
