"""The sweep's answer and how far to trust it: what a forecaster would deploy, scored where it was not chosen.

The answer is the mean forecast, series by series, of its members: the best models of the sweep's top trials; with
`refit_answer`, each continued through the validation part first. It is used as a forecaster deploys it: trained on
what the sweep saw, forecasting on from the end of it with everything before as context.

- On the validation parts it forecasts from the end of the training parts, as the trials' single-origin score does.
  That number was *selected* on those same points, so it is optimistic; the summary says so.
- On the test windows (`--test-after`, `--horizon`), which no trial, scheduler or ranking saw, it forecasts from the
  end of the validation parts: the honest score, beside the statistical baselines on the same points.

The work after the trials is one graph of tasks (`run_tail`, on the sweep's Ray: sweeps.answer.tasks): each member's
refit, then its future (continued on every point), and the baselines, submitted before the trials. One module per
concern, each returning values: `members` (which trials, how they were chosen), `refits` (the members' tasks),
`intervals` (the answer's conformal intervals), `baselines`, `combination`, `scores` (how good it is, beside the
baselines) and `text` (the summary's lines). `build_answer` puts the answer together from the tasks' results; `future`
saves it as one model and forecasts after the data.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from forecaster.answer.ensemble import weighted_mean
from sweeps.answer.baselines import BaselineForecasts, BaselineJobs, finished_baselines, gather_baselines
from sweeps.answer.combination import COMBINED, STATISTICAL_COMBINATION, combinations
from sweeps.answer.ensemble import NETS_MEAN, Ensemble, choose_ensemble
from sweeps.answer.intervals import AnswerIntervals, future_horizon, members_mean, test_intervals
from sweeps.answer.members import Member, ranking, selection
from sweeps.answer.refits import AS_TRAINED, FutureMember, RefitMember, continued_epochs, future_member, refit_member
from sweeps.answer.tasks import Runner, TaskTiming
from sweeps.plan.sweep_plan import SweepPlan
from sweeps.trials.results import SweepResults

if TYPE_CHECKING:
    from forecaster.training.net import RNNNet


@dataclasses.dataclass(frozen=True)
class TailPlan:
    """How the members are made after the trials: which, and how long each is continued; what a time limit cut."""

    members: list[Member]
    refit_epochs: list[int]
    """Per member, the epochs it is continued through the validation part (0: the trial's net forecasts the test)."""
    future_epochs: list[int] | None
    """Per member, the epochs its net is continued through the test window for the future; None: no future."""

    def only(self, kept: list[int]) -> TailPlan:
        """The plan of the members at positions `kept`."""
        future = None if self.future_epochs is None else [self.future_epochs[index] for index in kept]
        return TailPlan([self.members[index] for index in kept], [self.refit_epochs[index] for index in kept], future)


def tail_plan(plan: SweepPlan, chosen: list[Member], future: bool = True) -> TailPlan:
    """The tail as the sweep asks for it: every member, each continued `continued_epochs` of its best epoch count
    through the validation part (where the sweep refits its answer and has a test window) and then, for the future
    (unless --no-future, or not `future`: a sweep stopped before its end), through the test window (through the
    validation part without one)."""
    refit = plan.sweep.refit_answer and plan.parts.test is not None
    refit_epochs = [continued_epochs(member.epochs) if refit else 0 for member in chosen]
    wanted = plan.answer_settings.future and future
    future_epochs = [continued_epochs(member.epochs) for member in chosen] if wanted else None
    return TailPlan(chosen, refit_epochs, future_epochs)


@dataclasses.dataclass(frozen=True)
class Tail:
    """What the tasks after the trials gave."""

    plan: TailPlan
    refits: list[RefitMember]
    future: list[FutureMember]
    """Empty without a future (--no-future)."""
    baselines: BaselineForecasts
    timings: list[TaskTiming]
    late: tuple[str, ...] = ()
    """The trials whose members were left out, their tasks not ended by the deadline (--time-limit)."""
    late_baselines: tuple[str, ...] = ()
    """The baselines left out, not finished by the deadline."""
    shortened: tuple[str, ...] = ()
    """The trials whose members' continuations stopped at the deadline, short of their planned epochs."""


def run_tail(
    plan: SweepPlan,
    tail: TailPlan,
    runner: Runner,
    baselines: BaselineJobs | BaselineForecasts,
    saved_refits: list[RNNNet] | None = None,
    deadline: float | None = None,
) -> Tail:
    """Every member's refit and future as tasks, each future waiting on its own refit only, and the baselines'
    results (tasks submitted before the trials, or forecasts read back: sweeps.report). `saved_refits`: the nets a
    sweep saved as they forecast the test window (sweeps.report), forecasting instead of training again.

    `deadline` (time.time(), --time-limit): what has not ended by then is left out, its tasks cancelled: the members
    whose refit or future is still running (all but the first to end, when none has) and the baselines not
    finished. The estimate `give_way` fit the tail to is only an estimate: a node busier than the trials found it
    would otherwise carry the command past its limit."""
    parts = runner.put(plan.parts)
    options = runner.fit_options()
    refit_handles = []
    for index, (member, epochs) in enumerate(zip(tail.members, tail.refit_epochs)):
        saved = None if saved_refits is None else saved_refits[index]
        arguments = (member.trial_id, member.best_model, parts, epochs, saved)
        stop_at = refit_deadline(member, tail, deadline)
        refit_handles.append(runner.submit("refit", member.trial_id, refit_member, *arguments, stop_at, **options))
    future_handles = []
    if tail.future_epochs is not None:
        panel, horizon = runner.put(plan.panel), future_horizon(plan)
        future_handles = [
            runner.submit(
                "future", member.trial_id, future_member, handle.value, panel, epochs, horizon, deadline, **options
            )
            for member, handle, epochs in zip(tail.members, refit_handles, tail.future_epochs)
        ]
    late: tuple[str, ...] = ()
    late_baselines: tuple[str, ...] = ()
    if deadline is not None:
        groups = [[refit, *future_handles[index : index + 1]] for index, refit in enumerate(refit_handles)]
        kept = runner.ended_by(groups, deadline)
        late = tuple(member.trial_id for index, member in enumerate(tail.members) if index not in kept)
        for index in set(range(len(groups))) - set(kept):
            for handle in groups[index]:
                runner.cancel(handle)
        tail, refit_handles = tail.only(kept), [refit_handles[index] for index in kept]
        future_handles = [future_handles[index] for index in kept] if future_handles else []
        if isinstance(baselines, BaselineJobs):
            finished = finished_baselines(baselines, runner)
            late_baselines, baselines = tuple(set(baselines.handles) - set(finished.handles)), finished
    refits = [runner.get(handle) for handle in refit_handles]
    future = [runner.get(handle) for handle in future_handles]
    if isinstance(baselines, BaselineJobs):
        baselines = gather_baselines(plan, runner, baselines)
    future_epochs = tail.future_epochs or [0] * len(refits)
    shortened = tuple(
        refit.trial_id
        for index, refit in enumerate(refits)
        if refit.epochs < tail.refit_epochs[index] or (future and future[index].epochs < future_epochs[index])
    )
    return Tail(tail, refits, future, baselines, runner.timings(), late, late_baselines, shortened)


def refit_deadline(member: Member, tail: TailPlan, deadline: float | None) -> float | None:
    """When a member's continuation through the validation part stops (time.time()): at `deadline`, less what its
    future needs at least (an epoch and its forecasts) where it has one."""
    if deadline is None:
        return None
    return deadline - (2 * member.epoch_seconds if tail.future_epochs is not None else 0.0)


@dataclasses.dataclass(frozen=True)
class Answer:
    trial_ids: list[str]
    """The trials whose best models make the answer, best first."""
    forecasts: dict[str, dict[str, np.ndarray]]
    """Per part ("validation", "test"): per method ("answer", each baseline that ran, and for a panel the
    combination), its forecast of every point of the part, flat in the part's row order
    (forecaster.data.panel.Panel)."""
    unavailable: dict[str, str]
    """Baselines that did not run, and why."""
    fell_back: dict[str, list[str]]
    """Per baseline: the series it could not fit (seasonal naive's forecast stands in for them)."""
    selection: dict[str, Any]
    """How the best validation score was found: evaluations, and the best trial's score around its best epoch."""
    bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]] = dataclasses.field(default_factory=dict)
    """The prediction intervals on the test windows (--levels): per method (the answer, each baseline that gives
    them), {level: (lower, upper)}, flat in the test part's row order."""
    quantiles: dict[str, dict[float, np.ndarray]] = dataclasses.field(default_factory=dict)
    """The forecast distributions on the test windows: per method that gives one, {q: forecast at quantile q} at the
    plan's distribution_quantiles (WQL's and --quantiles), flat in the test part's row order, none crossing."""
    calibration: dict[str, Any] = dataclasses.field(default_factory=dict)
    """How the answer's intervals were calibrated (sweeps.answer.intervals), or why they could not be."""
    calibration_points: pd.DataFrame | None = None
    """The points that calibrated the answer's intervals, with the members' mean forecast of them:
    calibration.parquet."""
    refit: dict[str, Any] = dataclasses.field(default_factory=dict)
    """With the sweep's `refit_answer`: which members were continued through the validation parts, for how many
    epochs, on which devices, and how long it took (sweeps.answer.refits)."""
    intervals: AnswerIntervals | None = None
    """The calibration of its intervals on the test windows, with their scaled errors (None without --levels)."""
    member_forecasts: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    """Per part: each member's forecast of it (members, n), whose mean is the answer's; how far they spread apart
    sets each point's unit in the intervals (forecaster.answer.intervals.spread_units)."""
    ensemble: Ensemble | None = None
    """The weighted ensemble of the members' nets and the baselines, chosen on the validation parts
    (sweeps.answer.ensemble), whose forecasts are the answer's; None where no candidate could be weighed (the answer
    is then the nets' mean)."""
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    """Per member (by trial id) and baseline: what it took, a net its trial and its tasks after, a baseline its
    tasks."""

    def long_table(self, plan: SweepPlan) -> pd.DataFrame:
        """Every validation and test point with its truth and every forecast: unique_id, ds, y, part, answer and one
        column per baseline (NaN where it did not forecast that part); on the test windows the intervals, by Nixtla's
        names (answer-lo-80, answer-hi-80, AutoETS-lo-80, ...), and the distributions WQL scores (with --quantiles)
        by neuralforecast's (answer_ql0.1, ..., answer_ql0.9)."""
        from forecaster.answer.intervals import level_name, quantile_column

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
                for method, by_quantile in self.quantiles.items():
                    for quantile, forecast in by_quantile.items():
                        frame[quantile_column(method, quantile)] = forecast
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)


def build_answer(plan: SweepPlan, results: SweepResults, tail: Tail) -> Answer:
    """The answer of a sweep from what its tasks after the trials gave (`run_tail`): the ensemble of its members' nets
    and its baselines, weighed on the validation parts (sweeps.answer.ensemble), with the nets' plain mean beside it
    (NETS_MEAN)."""
    parts, refits = plan.parts, tail.refits
    trial_ids = [member.trial_id for member in refits]
    members = {"validation": np.array([member.validation for member in refits])}
    as_trained = None
    refit: dict[str, Any] = {}
    if parts.test is not None:
        members["test"] = as_trained = np.array(present([member.as_trained for member in refits]))
        if any(tail.plan.refit_epochs) or any(member.read_from for member in refits):
            members["test"] = np.array(present([member.test for member in refits]))
            refit = refit_record(tail)
    baselines = tail.baselines
    forecasts: dict[str, dict[str, np.ndarray]] = {
        part_name: {NETS_MEAN: forecast.mean(axis=0)} for part_name, forecast in members.items()
    }
    for part_name, by_name in baselines.forecasts.items():
        forecasts[part_name].update(by_name)
    ensemble = choose_ensemble(plan, trial_ids, members, baselines.forecasts)
    for part_name in forecasts:
        answer = forecasts[part_name][NETS_MEAN] if ensemble is None else ensemble.forecast(part_name)
        forecasts[part_name] = {"answer": answer, **forecasts[part_name]}
    fell_back = dict(baselines.fell_back) | {NETS_MEAN: []}
    if refit and as_trained is not None:
        trained = as_trained.mean(axis=0)
        if ensemble is not None:
            candidates = ensemble.candidates["test"] | dict(zip(trial_ids, as_trained))
            trained = weighted_mean(*dataclasses.replace(ensemble, candidates={"test": candidates}).members("test"))
        forecasts["test"][AS_TRAINED], fell_back[AS_TRAINED] = trained, []
    bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]] = {}
    calibration: dict[str, Any] = {}
    calibration_points = intervals = None
    if parts.test is not None and plan.distribution_levels:
        chosen, weights = answer_members(ensemble, members)
        intervals = test_intervals(
            plan,
            chosen["validation"],
            chosen["test"],
            weights,
            members_mean([member.fitted_before_validation for member in refits]),
            members_mean([member.fitted_before_test for member in refits]),
        )
        if "unavailable" not in intervals.calibration:
            bounds["answer"] = intervals.bounds
        calibration = intervals.calibration
        if plan.answer_settings.levels or plan.answer_settings.quantiles:
            calibration_points = intervals.points
    bounds.update(baselines.bounds)
    quantiles = distributions(plan, forecasts.get("test", {}), bounds)
    bounds = asked_bounds(plan, bounds)
    if parts.test is not None and len(parts.test) > 1:
        combined = combinations(forecasts["test"])
        forecasts["test"].update(combined)
        if combined:
            fell_back[STATISTICAL_COMBINATION] = sorted({s for name in COMBINED for s in fell_back[name]})
    return Answer(
        trial_ids=trial_ids,
        forecasts=forecasts,
        unavailable=baselines.unavailable,
        fell_back=fell_back,
        selection={**selection(results), "far_behind": ranking(plan, results)[1]},
        bounds=bounds,
        quantiles=quantiles,
        calibration=calibration,
        calibration_points=calibration_points,
        refit=refit,
        intervals=intervals,
        member_forecasts=members,
        ensemble=ensemble,
        seconds=candidate_seconds(results, tail),
    )


def answer_members(
    ensemble: Ensemble | None, members: dict[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The answer's members' forecasts, per part (members, n), and their weights: the ensemble's chosen candidates,
    or without an ensemble the nets, alike (`members`, per part)."""
    if ensemble is None:
        count = len(members["validation"])
        return members, np.full(count, 1.0 / count)
    weights = ensemble.members("validation")[1]
    return {part: ensemble.members(part)[0] for part in ensemble.candidates}, weights


def candidate_seconds(results: SweepResults, tail: Tail) -> dict[str, float]:
    """Per member (by trial id): its trial's training seconds and its tasks' after it; per baseline: its tasks'."""
    found: dict[str, float] = {}
    for timing in tail.timings:
        if timing.kind in ("refit", "future", "baselines"):
            name = timing.label.rsplit(", series ", 1)[0]
            found[name] = found.get(name, 0.0) + timing.seconds
    trials = results.trials
    if len(trials) and "seconds" in trials:
        for trial_id, seconds in zip(trials["trial_id"], trials["seconds"]):
            if trial_id in found and np.isfinite(seconds):
                found[trial_id] += float(seconds)
    return found


def refit_record(tail: Tail) -> dict[str, Any]:
    """Which members were continued through the validation part, from which best epoch, for how many epochs, on
    which devices and for how long; or that their nets were read from the sweep's folder."""
    seconds = [timing.seconds for timing in tail.timings if timing.kind == "refit"]
    return {
        "trials": [member.trial_id for member in tail.refits],
        "best_epochs": [member.epochs for member in tail.plan.members],
        "continued_epochs": [member.epochs for member in tail.refits],
        "trained_on": sorted({member.trained_on for member in tail.refits if member.trained_on}),
        **(
            {"seconds": None, "read_from": "the saved test model"}
            if any(member.read_from for member in tail.refits)
            else {"seconds": round(max(seconds), 1) if seconds else None}
        ),
    }


def present(values: list[np.ndarray | None]) -> list[np.ndarray]:
    """`values`, every one there: the members' forecasts of a part each of them forecast."""
    assert all(value is not None for value in values), "every member forecast the part"
    return [value for value in values if value is not None]


def distributions(
    plan: SweepPlan, tested: dict[str, np.ndarray], bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]]
) -> dict[str, dict[float, np.ndarray]]:
    """Every method's forecast distribution on the test windows, at the plan's distribution_quantiles, read from its
    intervals at the plan's distribution_levels (forecaster.answer.intervals.quantiles_of)."""
    from forecaster.answer.intervals import quantiles_of

    found = {}
    for method, by_level in bounds.items():
        if method in tested:
            quantiles = quantiles_of(tested[method], by_level, plan.distribution_quantiles)
            if quantiles is not None:
                found[method] = quantiles
    return found


def asked_bounds(
    plan: SweepPlan, bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]]
) -> dict[str, dict[float, tuple[np.ndarray, np.ndarray]]]:
    """The intervals at the levels asked for (--levels), of the methods that gave them."""
    kept = {
        method: {level: found for level, found in by_level.items() if level in plan.answer_settings.levels}
        for method, by_level in bounds.items()
    }
    return {method: by_level for method, by_level in kept.items() if by_level}
