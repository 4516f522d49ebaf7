"""The answer's configurations trained again, as Ray tasks of a trial's resources, and what they forecast.

A member's model was trained on the training parts only; refit through the validation part (each configuration for its
trial's best epoch count, neuralforecast's `refit_with_val`), it forecasts the test window from right after what it
learnt, as the statistical baselines, fit on every point before the window, do. The intervals' calibration fits
(sweeps.answer.intervals) run the same way.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from forecaster.panel import Panel
from sweeps.answer.members import Member
from sweeps.plan import SweepPlan

AS_TRAINED = "answer before refit"
"""With `refit_answer`: the answer as the trials trained it (on the training parts only), reported beside the refit
one, which is the answer."""


def fits_on_ray(plan: SweepPlan, function: Callable, jobs: Sequence[Member], panel: Panel, *arguments: Any) -> list:
    """`function(config, epochs, panel, *arguments)` for each member: Ray tasks of a trial's resources (on a GPU
    fraction where the trials had one), all at once, on the sweep's Ray; in this process, one after the other, without
    one (sweeps.report)."""
    import ray

    resources = plan.resources
    options: dict[str, Any] = {"threads": max(1, int(resources.cpus)), "accelerator": "cpu"}
    configs = [(member.model.config, member.epochs) for member in jobs]
    if not ray.is_initialized():
        return [function(config, epochs, panel, *arguments, **options) for config, epochs in configs]
    task: dict[str, Any] = {"num_cpus": resources.cpus}
    if resources.gpus and not resources.train_on_cpu:
        task["num_gpus"] = min(resources.gpus, 1.0)
        options.update(accelerator="gpu", devices=1)
    remote = ray.remote(**task)(function)
    shared = ray.put(panel)
    return ray.get([remote.remote(config, epochs, shared, *arguments, **options) for config, epochs in configs])


@dataclasses.dataclass(frozen=True)
class Refit:
    forecast: np.ndarray
    """The refit members' mean forecast of the test windows, flat in the test part's row order; a series no refit
    kept (too short for a training window, which the members read anyway) keeps the as-trained forecast."""
    record: dict[str, Any]
    """Which configurations were trained again, for how many epochs, on which devices, and how long it took."""


def refit_through_validation(plan: SweepPlan, members: Sequence[Member], as_trained: np.ndarray) -> Refit:
    """Each member's configuration trained again on every point before the test windows (its validation part too),
    forecasting the test windows; `as_trained` is the members' own forecast of them."""
    from forecaster.train import fit_through

    started = time.perf_counter()
    seen, test = plan.parts.seen, plan.parts.test
    steps = int(test.lengths.max())
    found = []
    for net, trained_on in fits_on_ray(plan, fit_through, members, seen):
        kept = seen.take(np.isin(seen.ids, net.series_ids))
        found.append((kept.ids, net.forecast_columns(kept, steps), trained_on))
    columns = np.repeat(np.arange(len(test)), test.lengths)
    grid = np.full((steps, len(test)), np.nan)
    grid[test.positions, columns] = as_trained
    totals, counts = np.zeros_like(grid), np.zeros(len(test))
    rows = {series_id: index for index, series_id in enumerate(test.ids)}
    for ids, forecast, _ in found:
        where = np.array([rows[series_id] for series_id in ids], dtype=np.int64)
        totals[:, where] += forecast
        counts[where] += 1
    refit = np.where(counts > 0, totals / np.maximum(counts, 1), grid)
    return Refit(
        forecast=refit[test.positions, columns],
        record={
            "trials": [member.trial_id for member in members],
            "epochs": [member.epochs for member in members],
            "series_as_trained": [str(i) for i in test.ids[counts == 0]],
            "trained_on": sorted({trained_on for _, _, trained_on in found}),
            "seconds": round(time.perf_counter() - started, 1),
        },
    )
