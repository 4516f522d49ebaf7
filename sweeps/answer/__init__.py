"""The sweep's answer and how far to trust it: what a forecaster would deploy, scored where it was not chosen.

The answer is the mean forecast, series by series, of the best models of the sweep's top trials (its members); with
`refit_answer`, of their configurations trained again through the validation part. It is used as a forecaster deploys
it: trained on what the sweep saw, forecasting on from the end of it with everything before as context.

- On the validation parts it forecasts from the end of the training parts, as the trials' single-origin score does.
  That number was *selected* on those same points, so it is optimistic; the summary says so.
- On the test windows (`--test-after`, `--horizon`), which no trial, scheduler or ranking saw, it forecasts from the
  end of the validation parts: the honest score, beside the statistical baselines on the same points.

One module per concern, each returning values: `members` (which trials, how they were chosen, their models),
`refits` (configurations trained again on Ray), `intervals` (the answer's conformal intervals), `baselines`,
`combination`, `scores` (how good it is, beside the baselines) and `text` (the summary's lines). `build_answer` puts
the answer together; `future` then trains it on every point, saves it as one model and forecasts after the data.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from sweeps.answer.baselines import baseline_forecasts
from sweeps.answer.combination import COMBINED, STATISTICAL_COMBINATION, combinations
from sweeps.answer.intervals import AnswerIntervals, answer_intervals
from sweeps.answer.members import Member, members, ranking, selection
from sweeps.answer.refits import AS_TRAINED, refit_through_validation
from sweeps.plan import SweepPlan
from sweeps.results import SweepResults


@dataclasses.dataclass(frozen=True)
class Answer:
    trial_ids: list[str]
    """The trials whose best models make the answer, best first."""
    forecasts: dict[str, dict[str, np.ndarray]]
    """Per part ("validation", "test"): per method ("answer", each baseline that ran, and for a panel the
    combination), its forecast of every point of the part, flat in the part's row order (forecaster.panel.Panel)."""
    unavailable: dict[str, str]
    """Baselines that did not run, and why."""
    fell_back: dict[str, list[str]]
    """Per baseline: the series it could not fit (seasonal naive's forecast stands in for them)."""
    selection: dict[str, Any]
    """How the best validation score was found: evaluations, and the best trial's score around its best epoch."""
    bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]] = dataclasses.field(default_factory=dict)
    """The prediction intervals on the test windows (--levels): per method (the answer, each baseline that gives
    them), {level: (lower, upper)}, flat in the test part's row order."""
    calibration: dict[str, Any] = dataclasses.field(default_factory=dict)
    """How the answer's intervals were calibrated (sweeps.answer.intervals), or why they could not be."""
    calibration_points: pd.DataFrame | None = None
    """The points that calibrated the answer's intervals, with the mean forecast of the calibrating models:
    calibration.parquet."""
    refit: dict[str, Any] = dataclasses.field(default_factory=dict)
    """With the sweep's `refit_answer`: which configurations were trained again through the validation parts, for
    how many epochs, on which devices, and how long it took (sweeps.answer.refits)."""
    members: list[Member] = dataclasses.field(default_factory=list)
    """The trials' best models that make it (what the future trains again: sweeps.answer.future)."""
    intervals: AnswerIntervals | None = None
    """The calibration of its intervals on the test windows, with their scaled errors (None without --levels)."""

    def long_table(self, plan: SweepPlan) -> pd.DataFrame:
        """Every validation and test point with its truth and every forecast: unique_id, ds, y, part, answer and one
        column per baseline (NaN where it did not forecast that part); on the test windows the intervals, by Nixtla's
        names (answer-lo-80, answer-hi-80, AutoETS-lo-80, ...)."""
        from forecaster.intervals import level_name

        frames = []
        for part_name, part in (("validation", plan.parts.val), ("test", plan.parts.test)):
            if part is None:
                continue
            frame = part.to_frame()
            frame["part"] = part_name
            for method, forecast in self.forecasts[part_name].items():
                frame[method] = forecast
            if part_name == "test":
                for method, by_level in self.bounds.items():
                    for level, (lower, upper) in by_level.items():
                        frame[f"{method}-lo-{level_name(level)}"] = lower
                        frame[f"{method}-hi-{level_name(level)}"] = upper
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)


def build_answer(plan: SweepPlan, results: SweepResults) -> Answer | None:
    """The answer of a sweep whose trials reported; None if no trial has a best model to forecast with."""
    chosen = members(plan, results)
    if not chosen:
        return None
    parts = plan.parts
    validation = np.mean([member.model.forecast_part(parts.train, parts.val) for member in chosen], axis=0)
    forecasts: dict[str, dict[str, np.ndarray]] = {"validation": {"answer": validation}}
    bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]] = {}
    calibration: dict[str, Any] = {}
    calibration_points = None
    refit: dict[str, Any] = {}
    intervals = None
    if parts.test is not None:
        as_trained = np.mean([member.model.forecast_part(parts.seen, parts.test) for member in chosen], axis=0)
        forecasts["test"] = {"answer": as_trained}
        if plan.sweep.refit_answer:
            refitted = refit_through_validation(plan, chosen, as_trained)
            forecasts["test"] = {"answer": refitted.forecast, AS_TRAINED: as_trained}
            refit = refitted.record
        if plan.options.levels:
            intervals = answer_intervals(plan, chosen, validation, forecasts["test"]["answer"])
            if "unavailable" not in intervals.calibration:
                bounds["answer"] = intervals.bounds
            calibration, calibration_points = intervals.calibration, intervals.points
    baselines = baseline_forecasts(plan)
    for part_name, by_name in baselines.forecasts.items():
        forecasts[part_name].update(by_name)
    bounds.update(baselines.bounds)
    fell_back = dict(baselines.fell_back)
    if refit:
        fell_back[AS_TRAINED] = []
    if parts.test is not None and len(parts.test) > 1:
        combined = combinations(forecasts["test"])
        forecasts["test"].update(combined)
        if combined:
            fell_back[STATISTICAL_COMBINATION] = sorted({s for name in COMBINED for s in fell_back[name]})
    return Answer(
        trial_ids=[member.trial_id for member in chosen],
        forecasts=forecasts,
        unavailable=baselines.unavailable,
        fell_back=fell_back,
        selection={**selection(results), "far_behind": ranking(plan, results)[1]},
        bounds=bounds,
        calibration=calibration,
        calibration_points=calibration_points,
        refit=refit,
        members=chosen,
        intervals=intervals,
    )
