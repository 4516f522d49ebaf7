"""The future: what a sweep hands its user. The answer's members, each net continued on every point given (the test
window included: sweeps.answer.refits.future_member), saved as one model (forecaster.answer.model) with a calibration
of its intervals made as the future is (sweeps.answer.intervals.future_errors); and its forecast of the horizon after
each series' end, beside the statistical baselines run on over the same points (sweeps.answer.baselines) and, for a
panel, the combination.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from sweeps.answer import Answer, Tail, answer_members
from sweeps.answer.baselines import future_fits
from sweeps.answer.combination import COMBINATION, COMBINED
from sweeps.answer.ensemble import STATISTICAL
from sweeps.answer.intervals import FUTURE_METHOD, METHOD, future_errors, future_horizon, members_mean
from sweeps.answer.refits import FutureMember, RefitMember
from sweeps.answer.tasks import Runner
from sweeps.plan.sweep_plan import SweepPlan

if TYPE_CHECKING:
    from forecaster.answer.model import AnswerModel, ModelData


@dataclasses.dataclass(frozen=True)
class Future:
    model: AnswerModel
    """The answer as one model."""
    table: pd.DataFrame
    """unique_id, ds, answer and its bounds, each baseline's forecast and bounds, and for a panel the combination."""
    record: dict[str, Any]
    """How it was made: the trials, how each net was continued, the devices and seconds, the horizon, what did not
    run."""


def future_model(plan: SweepPlan, answer: Answer, tail: Tail) -> tuple[AnswerModel, dict[str, Any]]:
    """The answer as one model: its nets continued on every point of the plan's panel, each with its weight in the
    ensemble, and its statistical members (statsforecast fits them on the data at each forecast), with the
    calibration of its intervals (at any level or quantile asked of it later; by default at the sweep's levels); and
    how it was made."""
    from forecaster.answer.intervals import conformal_quantiles
    from forecaster.answer.model import AnswerModel, Calibration, SavedMember, StatisticalMember, library_versions
    from sweeps.answer.baselines import plan_baselines

    ensemble = answer.ensemble
    parts, weights = answer_members(ensemble, answer.member_forecasts)
    fitted = {"validation": members_mean([member.fitted_before_validation for member in tail.refits])}
    if plan.parts.test is not None:
        fitted["test"] = members_mean([member.fitted_before_test for member in tail.refits])
    errors, floor = future_errors(plan, parts, weights, fitted)
    quantiles = conformal_quantiles(errors, plan.answer_settings.levels)
    tested = plan.parts.test is not None
    calibration = Calibration(
        errors=errors,
        fitted_error=members_mean([member.fitted for member in tail.future]),
        levels=tuple(level for level, half in quantiles.items() if np.isfinite(half).all()),
        method=FUTURE_METHOD if tested else METHOD,
        spread_floor=floor,
    )
    members = []
    for refit, future, best in zip(tail.refits, tail.future, tail.plan.members):
        steps = [("the validation part", refit.epochs)] if refit.epochs else []
        if future.epochs:
            newer = "the validation part"  # the points after what the net had learnt
            if tested:
                newer = "the test window" if steps else "the validation part and the test window"
            steps.append((newer, future.epochs))
        weight = None if ensemble is None else ensemble.weights.get(future.trial_id, 0.0)
        members.append(SavedMember(future.net, future.trial_id, best.epochs, tuple(steps), weight))
    statistical = []
    if ensemble is not None:
        fitting, lag = plan_baselines(plan), run_on(plan)
        for name in ensemble.chosen:
            if ensemble.kinds[name] == STATISTICAL:
                seasons, points = fitting.of(name).seasons, fitting.fit_points.get(name)
                statistical.append(StatisticalMember(name, ensemble.weights[name], seasons, points, lag))
    used: list[RefitMember | FutureMember] = [*tail.refits, *tail.future]
    trained_on = sorted({member.trained_on for member in used if member.trained_on})
    seconds = [timing.seconds for timing in tail.timings if timing.kind == "future"]
    model = AnswerModel(
        members, model_data(plan), calibration, library_versions() | training_versions(), trained_on, statistical
    )
    return model, {
        "trials": [member.trial_id for member in members],
        "best_epochs": [member.epochs for member in members],
        "continued": [[list(step) for step in member.continued] for member in members],
        "weights": {name: weight for name, weight in (ensemble.weights if ensemble else {}).items() if weight > 0},
        "trained_on": trained_on,
        "seconds": round(max(seconds), 1) if seconds else None,
    }


def run_on(plan: SweepPlan) -> int:
    """The points at each series' end that the saved model's statistical members run on over after their fit: those
    the sweep's baselines ran on over for the future (forecaster.answer.model.StatisticalMember.lag), so that their
    future, which the baselines' tasks made, is the saved model's. The test window of a horizon cut (without one, its
    validation part); 0 where series are cut by dates, each at its own point: the members are then fit on every
    point, for the future by tasks of their own (sweeps.answer.baselines.future_fits)."""
    cut = plan.parts.cut
    if cut.val_size is None:
        return 0
    return cut.test_size if plan.parts.test is not None else cut.val_size


def test_model(plan: SweepPlan, tail: Tail) -> AnswerModel | None:
    """The nets that forecast the test window as one model, where any was continued through the validation part
    (without, the trials' own checkpoints hold them); None otherwise."""
    from forecaster.answer.model import AnswerModel, SavedMember, library_versions

    if plan.parts.test is None or not any(refit.epochs for refit in tail.refits):
        return None
    members = [
        SavedMember(refit.net, refit.trial_id, best.epochs, (("the validation part", refit.epochs),))
        for refit, best in zip(tail.refits, tail.plan.members)
    ]
    data = model_data(plan, test_window=True)
    trained_on = sorted({refit.trained_on for refit in tail.refits if refit.trained_on})
    return AnswerModel(members, data, None, library_versions() | training_versions(), trained_on)


def model_data(plan: SweepPlan, test_window: bool = False) -> ModelData:
    """What the saved model says of its data: how to read a newer file of it, and what it trained on; for the model of
    the test window (`test_window`), its horizon is the test window's and it has no last time."""
    from forecaster.answer.model import ModelCovariates, ModelData

    panel, asked = plan.panel, plan.answer_settings
    shown: Callable[[Any], str | int] = (lambda t: str(pd.Timestamp(t).date())) if panel.dated else int
    covariates = ModelCovariates(
        asked.futr_exog, asked.hist_exog, () if panel.covariates is None else tuple(panel.covariates.static_columns)
    )
    return ModelData(
        panel.freq,
        panel.season,
        int(plan.parts.test.lengths.max()) if test_window and plan.parts.test is not None else future_horizon(plan),
        tuple(str(series_id) for series_id in panel.ids),
        plan.data_label,
        dict(asked.columns),
        covariates,
        plan.sweep.metric,
        plan.name,
        shown(panel.first_times().min()),
        None if test_window else shown(panel.last_times().max()),
    )


def training_versions() -> dict[str, str]:
    """The versions of what trained the model, which loading it needs none of."""
    from importlib import metadata

    return {name: metadata.version(name) for name in ("ray", "lightning")}


def future_table(
    plan: SweepPlan, model: AnswerModel, baselines: dict[str, Any], fitted: dict[str, Any] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The model's forecast of the horizon after every series of the plan's panel, at the plan's levels and
    quantiles (those the calibration bounds), beside every baseline's (`baselines`: name ->
    forecaster.baselines.BaselineForecast of (H, S), with its intervals at the plan's future_levels). `fitted`: the
    model's statistical members' forecasts as the sweep's tasks made them, fit on every point as the model fits them
    (sweeps.answer.baselines.future_fits); they stand for those baselines too."""
    fitted = fitted or {}
    baselines = baselines | fitted
    from forecaster.answer.intervals import (
        conformal_quantiles,
        level_name,
        quantile_column,
        quantile_levels,
        quantiles_of,
    )

    panel, horizon = plan.panel, future_horizon(plan)
    calibration = model.calibration
    bounded: tuple[float, ...] = ()
    distributed: tuple[float, ...] = ()
    if calibration is not None and horizon <= calibration.horizon:
        finite = {
            level
            for level, half in conformal_quantiles(calibration.errors, plan.future_levels).items()
            if np.isfinite(half).all()
        }
        bounded = tuple(level for level in plan.answer_settings.levels if level in finite)
        distributed = tuple(q for q in plan.answer_settings.quantiles if set(quantile_levels([q])) <= finite)
    made = {name: found.values for name, found in fitted.items()}
    table = model.forecast(panel, horizon, bounded, quantiles=distributed, statistical_forecasts=made)
    for name, found in baselines.items():
        table[name] = found.values.T.reshape(-1)
        levels = [level for level in plan.answer_settings.levels if level in found.bounds]
        for level in sorted(levels, reverse=True):
            table[f"{name}-lo-{level_name(level)}"] = found.bounds[level][0].T.reshape(-1)
        for level in sorted(levels):
            table[f"{name}-hi-{level_name(level)}"] = found.bounds[level][1].T.reshape(-1)
        for quantile, values in (
            quantiles_of(found.values, found.bounds, plan.answer_settings.quantiles) or {}
        ).items():
            table[quantile_column(name, quantile)] = values.T.reshape(-1)
    if len(panel) > 1 and all(name in table for name in COMBINED):
        table[COMBINATION] = table[["answer", *COMBINED]].mean(axis=1)
    record = {"horizon": horizon, "levels": list(bounded), "quantiles": list(distributed)}
    return table, record | {"series": len(panel), "rows": len(table)}


def build_future(
    plan: SweepPlan, answer: Answer, tail: Tail, runner: Runner, saved: AnswerModel | None = None
) -> Future:
    """The future of a sweep: its members as the tail continued them, saved as one model, or `saved`, the model the
    sweep saved (sweeps.report), where it holds the answer's members; and its forecast beside the baselines', its
    statistical members' forecasts the baselines' own future (their `lag` the horizon), or, on a date cut, fit on every
    point by `runner`'s tasks."""
    same = saved is not None and [m.trial_id for m in saved.members] == [m.trial_id for m in tail.refits]
    if same:
        model = cast("AnswerModel", saved)
        record: dict[str, Any] = {
            "trials": [m.trial_id for m in model.members],
            "best_epochs": [m.epochs for m in model.members],
        }
        record |= {"continued": [[list(step) for step in m.continued] for m in model.members]}
        record |= {"trained_on": model.trained_on, "seconds": None, "read_from": "the model the sweep saved"}
    else:
        model, record = future_model(plan, answer, tail)
    names = [member.name for member in model.statistical]
    ready = all(name in tail.baselines.future for name in names)
    if ready and (all(member.lag for member in model.statistical) or (same and tail.baselines.read_back)):
        fitted = {name: tail.baselines.future[name] for name in names}  # the baselines' own future: no fit again
    else:
        fitted = future_fits(plan, runner, names)
    table, made = future_table(plan, model, tail.baselines.future, fitted)
    return Future(model, table, record | made)
