"""The answer's prediction intervals on the test windows (--levels), by conformal calibration (forecaster.intervals).

The top configurations are trained again on each series' training part less its last horizon and the gap the answer
forecasts across, and forecast that last horizon, which ranked no trial. Their errors, scaled by each series' scale
(forecaster.intervals.interval_scales over each series' training part, for the calibration points over what their fits
trained on, with the answer's validation errors), give each step's half-width. The gap is the validation part for an
answer as the trials trained it, one point for a refit answer (which trains through all but the last point it reads).
With few series, forecasts from every point of the gap too, every step's errors pooled.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from forecaster.data import SeriesError
from sweeps.answer.members import Member
from sweeps.answer.refits import fits_on_ray
from sweeps.plan import SweepPlan

CALIBRATION_REFITS = 2
"""How many of the answer's top configurations are trained again to calibrate its intervals (each for its trial's
best epoch count; their mean forecast stands for the answer's mean of models): two run beside each other on a laptop's
two cores."""


@dataclasses.dataclass(frozen=True)
class AnswerIntervals:
    bounds: dict[float, tuple[np.ndarray, np.ndarray]]
    """{level: (lower, upper)}, flat in the test part's row order; the levels the calibration cannot bound left out."""
    calibration: dict[str, Any]
    """How they were calibrated, or why they could not be ({"unavailable": ...})."""
    points: pd.DataFrame | None = None
    """The points that calibrated them, with the calibrating models' mean forecast (calibration.parquet)."""
    errors: np.ndarray | None = None
    """(horizon, n): their scaled errors, from which any level's half-widths come (the saved model keeps them)."""
    validation_error: np.ndarray | None = None
    """(S,): the answer's mean absolute error on each series' validation part, in the training part's order."""


def answer_intervals(
    plan: SweepPlan, members: Sequence[Member], validation_forecast: np.ndarray, test_forecast: np.ndarray | None
) -> AnswerIntervals:
    """The intervals at the plan's levels around the answer's test forecast; `validation_forecast` is the answer's
    forecast of the validation parts, whose errors set each series' scale. With `test_forecast` None, the calibration
    alone, for the future: its horizon, and the gap of a model trained through all but each series' last point."""
    from forecaster.intervals import (
        POOLED_BELOW,
        bands,
        calibration_forecast,
        conformal_quantiles,
        interval_scales,
        mean_calibration,
        scaled_errors,
    )

    started = time.perf_counter()
    train, val, seen, test = plan.parts.train, plan.parts.val, plan.parts.seen, plan.parts.test
    levels = plan.options.levels
    future = test_forecast is None
    horizon = future_horizon(plan) if future else int(test.lengths.max())
    gap = 1 if future or plan.sweep.refit_answer else int(val.lengths.max())
    calibrating = members[:CALIBRATION_REFITS]
    few = len(train if future else test) < POOLED_BELOW
    missed = np.abs(val.values - validation_forecast)
    validation_error = np.add.reduceat(missed, val.offsets[:-1]) / val.lengths
    origins = gap + 1 if few else 1
    try:
        calibrations = fits_on_ray(
            plan, calibration_forecast, calibrating, train, horizon, gap, origins, validation_error
        )
    except SeriesError as error:  # no series has room for a calibration window
        return AnswerIntervals({}, {"unavailable": f"no series is long enough to calibrate intervals: {error}"})
    errors, ids = scaled_errors(calibrations)
    quantiles = conformal_quantiles(errors, levels)
    unbounded = [level for level, half in quantiles.items() if not np.isfinite(half).all()]
    calibration = {
        "method": (
            "conformal: scaled errors of the top configurations trained again, on points that ranked no trial; "
            "each series' scale the geometric mean of its MASE scale, the same over its last horizon, and the "
            "answer's validation error"
        ),
        "refit_trials": [member.trial_id for member in calibrating],
        "calibration_series": len(set(ids)),
        "series": len(train if future else test),
        "horizon": horizon,
        "gap": gap,
        "calibration_errors": int(errors.size),
        "steps_pooled": errors.shape[1] < POOLED_BELOW,
        "unbounded_levels": unbounded,
        "seconds": round(time.perf_counter() - started, 1),
    }
    points = mean_calibration(calibrations).to_frame()
    if future:
        return AnswerIntervals({}, calibration, points, errors, validation_error)
    columns = np.repeat(np.arange(len(test)), test.lengths)
    grid = np.full((horizon, len(test)), np.nan)
    grid[test.positions, columns] = test_forecast
    lowest = np.minimum.reduceat(seen.values, seen.offsets[:-1])
    bounded = {level: half for level, half in quantiles.items() if level not in unbounded}
    found = bands(
        grid, interval_scales(train, horizon, validation_error), bounded, floor=np.where(lowest >= 0, 0.0, -np.inf)
    )
    where = test.positions, columns
    return AnswerIntervals(
        {level: (lower[where], upper[where]) for level, (lower, upper) in found.items()},
        calibration,
        points,
        errors,
        validation_error,
    )


def future_horizon(plan: SweepPlan) -> int:
    """How many points the future forecast reaches: the sweep's horizon, or without one the longest validation part."""
    return int(plan.sweep.horizon or plan.parts.val.lengths.max())
