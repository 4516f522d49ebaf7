"""The answer's prediction intervals (--levels), by conformal calibration on forecasts that already exist
(forecaster.answer.intervals): no model is trained for them. The answer is the ensemble's weighted mean of its members
(nets
and baselines: sweeps.answer.ensemble).

- On the test window: the answer's forecast of every backtest window of the validation part (the trials' nets from
  the end of training, the baselines fit on the training part: what the answer does one part later) gives, per step
  ahead, the absolute errors that calibrate, each window's beside the others'. Each is divided by its series' scale
  over the points before the validation part (with the trials' nets' own error on the last horizon they trained on)
  and by its point's unit (the members' spread there plus a floor: forecaster.answer.intervals.spread_units); the test
  window's half-widths are those quantiles times each series' scale over the points before the test window (with the
  refit nets' error on theirs) and each test point's unit (the members' spread there plus the same floor).
- For the future (the saved model): the answer's errors on the test window, made as the future is (nets continued
  through the part before it, baselines fit on every point before it), beside those of the backtest windows, in the
  test window's floor. Without a test window, the backtest windows' alone.

docs/design-notes.md, "The work after the trials", compares this calibration with the one before it (two
configurations trained again from scratch to forecast the last horizon of the training part) on inner windows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from forecaster.answer.ensemble import weighted_mean
from forecaster.answer.intervals import SPREAD_WEIGHT
from forecaster.data.panel import Panel
from sweeps.plan.sweep_plan import SweepPlan

SCALES = (
    "each series' scale the geometric mean of its MASE scale, the same over its last horizon, and the nets' error on "
    "the last horizon they trained on; each point's unit the ensemble's members' spread there plus "
    f"{SPREAD_WEIGHT:g} times their median spread over the calibration's points"
)
METHOD = (
    "conformal on the answer's errors one part before (every backtest window of the validation part, forecast by the "
    f"trials' nets from the end of training and the baselines fit on the training part), {SCALES}"
)
FUTURE_METHOD = (
    "conformal on the answer's errors on the test window (forecast by its nets continued through the validation "
    "part and its baselines fit on every point before it, as the saved model's future is) and on every backtest "
    f"window of the validation part, {SCALES}"
)


@dataclasses.dataclass(frozen=True)
class AnswerIntervals:
    bounds: dict[float, tuple[np.ndarray, np.ndarray]]
    """{level: (lower, upper)}, flat in the test part's row order; the levels the calibration cannot bound left out."""
    calibration: dict[str, Any]
    """How they were calibrated, or why they could not be ({"unavailable": ...})."""
    points: pd.DataFrame | None = None
    """The points that calibrated them, with the members' mean forecast, each series' scale and each point's unit
    (calibration.parquet)."""
    errors: np.ndarray | None = None
    """(steps, S): their scaled errors, from which any level's half-widths come."""


@dataclasses.dataclass(frozen=True)
class ScaledErrors:
    """A part's errors as the intervals read them."""

    errors: np.ndarray
    """(steps, S) each absolute error over its series' scale and its point's unit; NaN past a series' end."""
    scale: np.ndarray
    """(S,) each series' scale over the points before the part (forecaster.answer.intervals.interval_scales)."""
    spread: np.ndarray
    """(steps, S) the members' spread at each point, in its series' scale
    (forecaster.answer.intervals.member_spread)."""
    floor: float
    """What each point's unit adds to its spread (forecaster.answer.intervals.spread_floor)."""


def scaled_errors(
    history: Panel,
    part: Panel,
    members: np.ndarray,
    weights: np.ndarray,
    fitted: np.ndarray,
    horizon: int,
    floor: float | None = None,
) -> ScaledErrors:
    """The absolute errors of the members' weighted mean forecast of `part` (`members`: (members, n), each flat in
    the part's row order; `weights`, (members,)), each divided by its series' scale over `history` (the points before
    `part`; `fitted`, the nets' error on its last horizon) and by its point's unit
    (forecaster.answer.intervals.spread_units:
    the members' spread there, plus `floor`, by default spread_floor's of this part)."""
    from forecaster.answer.intervals import interval_scales, member_spread, spread_floor, spread_units

    scale = interval_scales(history, horizon, fitted)
    spread = member_spread(np.stack([grid(part, forecast) for forecast in members]), scale)
    floor = spread_floor(spread) if floor is None else floor
    forecast = weighted_mean(members, weights)
    errors = grid(part, np.abs(part.values - forecast)) / scale[None, :] / spread_units(spread, floor)
    return ScaledErrors(errors, scale, spread, floor)


def members_mean(values: Sequence[np.ndarray | None]) -> np.ndarray:
    """The members' mean per series, NaN where none gave one (a series no net could read)."""
    assert all(value is not None for value in values), "every member forecast the part"
    stacked = np.array(values, dtype=np.float64)
    counts = np.isfinite(stacked).sum(axis=0)
    return np.where(counts > 0, np.nansum(stacked, axis=0) / np.maximum(counts, 1), np.nan)


def grid(part: Panel, flat: np.ndarray) -> np.ndarray:
    """A part's flat values as (steps, S), NaN past a series' end."""
    values = np.full((int(part.lengths.max()), len(part)), np.nan)
    values[part.cells] = flat
    return values


def test_intervals(
    plan: SweepPlan,
    validation_members: np.ndarray,
    test_members: np.ndarray,
    weights: np.ndarray,
    fitted_before_validation: np.ndarray,
    fitted_before_test: np.ndarray,
) -> AnswerIntervals:
    """The intervals at the plan's distribution_levels around the answer's test forecast (the weighted mean of
    `test_members`, (members, n): each member's forecast of the test part; `weights`, (members,)), calibrated on the
    errors of the answer's forecast of the validation part, every backtest window's (`validation_members`: the
    trials' nets from the end of training, the baselines fit on the training part); `fitted_before_*`, the nets'
    errors on the last horizon they trained on before each part (forecaster.answer.intervals.fitted_error)."""
    from forecaster.answer.intervals import (
        POOLED_BELOW,
        bands,
        conformal_quantiles,
        interval_scales,
        member_spread,
        spread_units,
    )

    train, val, seen, test = plan.parts.train, plan.parts.val, plan.parts.seen, plan.parts.test
    assert test is not None, "the answer's intervals bound its test window"
    horizon = int(test.lengths.max())
    found = scaled_errors(train, val, validation_members, weights, fitted_before_validation, horizon)
    errors = reach(side_by_side(found.errors, plan.parts.windows), horizon)
    quantiles = conformal_quantiles(errors, plan.distribution_levels)
    unbounded = [level for level, half in quantiles.items() if not np.isfinite(half).all()]
    calibration = {
        "method": METHOD,
        "members": len(validation_members),
        "calibration_series": int(np.isfinite(errors).any(axis=0).sum()) // plan.parts.windows,
        "windows": plan.parts.windows,
        "series": len(test),
        "horizon": horizon,
        "calibration_errors": int(np.isfinite(errors).sum()),
        "steps_pooled": errors.shape[1] < POOLED_BELOW,
        "spread_floor": round(found.floor, 6),
        "unbounded_levels": unbounded,
    }
    points = val.to_frame()
    points["step"] = val.positions % plan.parts.window_size + 1
    points["window"] = val.positions // plan.parts.window_size + 1
    points["forecast"] = weighted_mean(validation_members, weights)
    points["scale"] = np.repeat(found.scale, val.lengths)
    points["unit"] = spread_units(found.spread, found.floor)[val.cells]
    bounded = {level: half for level, half in quantiles.items() if level not in unbounded}
    lowest = np.minimum.reduceat(seen.values, seen.offsets[:-1])
    scale = interval_scales(seen, horizon, fitted_before_test)
    ahead = np.stack([grid(test, forecast) for forecast in test_members])
    units = spread_units(member_spread(ahead, scale), found.floor)
    forecast = grid(test, weighted_mean(test_members, weights))
    widths = bands(forecast, scale, bounded, floor=np.where(lowest >= 0, 0.0, -np.inf), units=units)
    return AnswerIntervals(
        {level: (lower[test.cells], upper[test.cells]) for level, (lower, upper) in widths.items()},
        calibration,
        points,
        errors,
    )


def side_by_side(errors: np.ndarray, windows: int) -> np.ndarray:
    """A validation part's errors (windows * steps, S), window after window, as (steps, windows * S): each backtest
    window's errors at each step ahead are more calibration points of that step."""
    if windows == 1:
        return errors
    steps = len(errors) // windows
    return errors.reshape(windows, steps, -1).transpose(1, 0, 2).reshape(steps, -1)


def reach(errors: np.ndarray, horizon: int) -> np.ndarray:
    """`errors` (steps, n) for `horizon` steps: a step past the calibration's last one takes its errors (a test
    window longer than the validation part, cut by dates)."""
    if len(errors) >= horizon:
        return errors[:horizon]
    return np.concatenate([errors, np.repeat(errors[-1:], horizon - len(errors), axis=0)])


def future_errors(
    plan: SweepPlan, members: dict[str, np.ndarray], weights: np.ndarray, fitted: dict[str, np.ndarray]
) -> tuple[np.ndarray, float]:
    """The scaled errors (horizon, n) the saved model's intervals come from, over at least the future's horizon, and
    the floor of its units (forecaster.answer.intervals.spread_floor): those of the answer's forecasts of the test
    window
    (made as the future is, by nets continued through the part before it) and of every backtest window of the
    validation part, side by side. `members`, per part, each member's forecast of it (members, n), of `weights`;
    `fitted`, per part, the nets' error on the last horizon before it."""
    parts, horizon = plan.parts, future_horizon(plan)
    found, floor = [], None
    if parts.test is not None:
        test = scaled_errors(parts.seen, parts.test, members["test"], weights, fitted["test"], horizon)
        found.append(reach(test.errors, horizon))
        floor = test.floor
    val = scaled_errors(parts.train, parts.val, members["validation"], weights, fitted["validation"], horizon, floor)
    found.append(reach(side_by_side(val.errors, parts.windows), horizon))
    return np.concatenate(found, axis=1), val.floor


def future_horizon(plan: SweepPlan) -> int:
    """How many points the future forecast reaches: the sweep's horizon, or without one the longest validation part."""
    return int(plan.sweep.horizon or plan.parts.window_size)
