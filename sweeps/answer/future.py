"""The future: what a sweep hands its user. The answer's members (the same configurations, each for its trial's best
epoch count) trained again on every point given, the test windows included, as Ray tasks of a trial's resources; saved
as one model (forecaster.answer_model) with a calibration of its intervals for that situation; and forecasting the
horizon after each series' end, beside the statistical baselines fit on the same points and, for a panel, the
combination.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import pandas as pd

from sweeps.answer import Answer
from sweeps.answer.combination import COMBINATION, COMBINED
from sweeps.answer.intervals import AnswerIntervals, answer_intervals, future_horizon
from sweeps.answer.refits import fits_on_ray
from sweeps.plan import SweepPlan


@dataclasses.dataclass(frozen=True)
class Future:
    model: Any
    """The answer as one model (forecaster.answer_model.AnswerModel)."""
    table: pd.DataFrame
    """unique_id, ds, answer and its bounds, each baseline's forecast and bounds, and for a panel the combination."""
    record: dict[str, Any]
    """How it was made: the trials, epochs, devices and seconds of the refit, the horizon, what did not run."""


def future_calibration(plan: SweepPlan, answer: Answer) -> AnswerIntervals | None:
    """The scaled errors the future's bounds come from: the test windows' where they were made as the future is (a
    refit answer, gap 1, over at least the future's horizon); otherwise calibrated for it. None without --levels."""
    if not plan.options.levels:
        return None
    test, intervals = plan.parts.test, answer.intervals
    if (
        intervals is not None
        and intervals.errors is not None
        and plan.sweep.refit_answer
        and int(test.lengths.max()) >= future_horizon(plan)
    ):
        return intervals
    return answer_intervals(plan, answer.members, answer.forecasts["validation"]["answer"], None)


def future_model(plan: SweepPlan, answer: Answer):
    """The members' configurations trained on every point of the plan's panel, as one model with the calibration of
    its intervals (where the sweep asked for levels); and how it was made."""
    from forecaster.answer_model import AnswerModel, Calibration, SavedMember, library_versions
    from forecaster.train import fit_through

    started = time.perf_counter()
    intervals = future_calibration(plan, answer)
    found = fits_on_ray(plan, fit_through, answer.members, plan.panel)
    calibration, calibrated = None, {}
    if intervals is not None:
        calibrated = intervals.calibration
        if intervals.errors is not None:
            rows = {series_id: row for row, series_id in enumerate(plan.parts.train.ids)}
            calibration = Calibration(
                errors=intervals.errors,
                validation_error=intervals.validation_error[[rows[i] for i in plan.panel.ids]],
                levels=tuple(level for level in plan.options.levels if level not in calibrated["unbounded_levels"]),
                method=calibrated["method"],
            )
    trained_on = sorted({device for _, device in found})
    model = AnswerModel(
        [SavedMember(net, member.trial_id, member.epochs) for (net, _), member in zip(found, answer.members)],
        model_data(plan),
        calibration,
        library_versions() | training_versions(),
        trained_on,
    )
    return model, {
        "trials": [member.trial_id for member in answer.members],
        "epochs": [member.epochs for member in answer.members],
        "trained_on": trained_on,
        "calibration": calibrated,
        "seconds": round(time.perf_counter() - started, 1),
    }


def model_data(plan: SweepPlan) -> dict[str, Any]:
    """What the saved model says of its data: how to read a newer file of it, and what it trained on."""
    panel, options = plan.panel, plan.options
    shown = (lambda t: str(pd.Timestamp(t).date())) if panel.dated else int
    return {
        "source": plan.data_label,
        "columns": {"id": options.id_column, "date": options.date_column, "value": options.value_column},
        "freq": panel.freq,
        "season": panel.season,
        "horizon": future_horizon(plan),
        "metric": plan.sweep.metric,
        "sweep": plan.name,
        "first": shown(panel.first_times().min()),
        "last": shown(panel.last_times().max()),
        "series": [str(series_id) for series_id in panel.ids],
    }


def training_versions() -> dict[str, str]:
    """The versions of what trained the model, which loading it needs none of."""
    from importlib import metadata

    return {name: metadata.version(name) for name in ("ray", "lightning")}


def future_table(plan: SweepPlan, model) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The model's forecast of the horizon after every series of the plan's panel, at the plan's levels (those the
    calibration bounds), beside every baseline's own forecast and bounds fit on the same points; and what did not
    run."""
    from forecaster.baselines import BASELINES, BaselineUnavailable, forecast
    from forecaster.intervals import conformal_quantiles, level_name

    panel, horizon = plan.panel, future_horizon(plan)
    calibration = model.calibration
    bounded: tuple[float, ...] = ()
    if calibration is not None and horizon <= calibration.horizon and plan.options.levels:
        quantiles = conformal_quantiles(calibration.errors, plan.options.levels)
        bounded = tuple(level for level, half in quantiles.items() if np.isfinite(half).all())
    table = model.forecast(panel, horizon, bounded)
    unavailable: dict[str, str] = {}
    fell_back: dict[str, list[str]] = {}
    for name in BASELINES:
        try:
            found = forecast(name, panel, horizon, levels=plan.options.levels)
        except BaselineUnavailable as error:
            unavailable[name] = str(error)
            continue
        table[name] = found.values.T.reshape(-1)
        for level in sorted(found.bounds, reverse=True):
            table[f"{name}-lo-{level_name(level)}"] = found.bounds[level][0].T.reshape(-1)
        for level in sorted(found.bounds):
            table[f"{name}-hi-{level_name(level)}"] = found.bounds[level][1].T.reshape(-1)
        fell_back[name] = found.fell_back
    if len(panel) > 1 and all(name in table for name in COMBINED):
        table[COMBINATION] = table[["answer", *COMBINED]].mean(axis=1)
    return table, {
        "horizon": horizon,
        "levels": list(bounded),
        "series": len(panel),
        "rows": len(table),
        "unavailable": unavailable,
        "fell_back": {name: ids for name, ids in fell_back.items() if ids},
    }


def build_future(plan: SweepPlan, answer: Answer, saved=None) -> Future:
    """The future of a sweep: its answer refit on every point and saved, or `saved`, the model the sweep saved
    (sweeps.report), where it holds the answer's members; and its forecast beside the baselines'."""
    same = saved is not None and [(m.trial_id, m.epochs) for m in saved.members] == [
        (m.trial_id, m.epochs) for m in answer.members
    ]
    if same:
        model = saved
        record = {"trials": [m.trial_id for m in saved.members], "epochs": [m.epochs for m in saved.members]}
        record |= {"trained_on": saved.trained_on, "seconds": None, "read_from": "the model the sweep saved"}
    else:
        model, record = future_model(plan, answer)
    table, made = future_table(plan, model)
    return Future(model, table, record | made)
