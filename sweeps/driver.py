"""One sweep from its plan to its summary, on Ray: the banner, the trials, the answer's tasks after them, the files
and the summary. `python -m sweeps.run` (sweeps/run.py) imports this once it has a plan: its help, its list and its
checks of the options and the data load none of Ray, torch or Lightning, and this driver loads no Lightning (the
trials and the answer's tasks train in Ray's workers).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from forecaster.data.panel import Panel
from forecaster.features.seasonal_adjustment import seasonal_components, year_components
from forecaster.metrics import METRIC_NAMES
from forecaster.shapes import shape_of
from sweeps.answer import TailPlan, build_answer, run_tail, tail_plan
from sweeps.answer.baselines import (
    BaselineJobs,
    baselines_left,
    cancel_baselines,
    cut_slowest,
    submit_baselines,
    within_the_trials_time,
)
from sweeps.answer.future import Future, build_future
from sweeps.answer.intervals import future_horizon
from sweeps.answer.members import members
from sweeps.answer.refits import tail_estimate
from sweeps.answer.scores import AnswerScores, TimeLimitCut
from sweeps.answer.scores import scores as score
from sweeps.answer.tasks import Runner
from sweeps.output.summary import (
    interrupted,
    report_command,
    resume_command,
    summary,
    write_future,
    write_results,
    write_test_model,
    write_timings,
)
from sweeps.output.timings import Clock
from sweeps.plan.budget import ACTIVE, Active, Cut, TimeBudget, check_time_limit, give_way, read_spent, spent_writer
from sweeps.plan.options import PlanError, SweepOptions
from sweeps.plan.record import store_plan
from sweeps.plan.registry import SWEEPS
from sweeps.plan.schedulers import scheduler_of
from sweeps.plan.space import describe, is_relative, values_taken
from sweeps.plan.storage import SweepFolder
from sweeps.plan.sweep_plan import SweepPlan, free_name, make_plan, taken_message
from sweeps.trials.cluster_probe import CapacityError, cluster_capacity
from sweeps.trials.ray_session import RaySession, RaySessionError, dashboard_line, start_ray
from sweeps.trials.results import SweepResults, collect


def drive(plan: SweepPlan, clock: Clock) -> int:
    """`python -m sweeps.run`'s sweep once its plan is made: Ray started (or joined), the banner, the sweep, the
    summary; the command's exit code."""
    import ray

    started_here = not ray.is_initialized()
    importing = threading.Thread(target=import_for_later, daemon=True)
    importing.start()
    try:
        options = plan.options
        clock.mark("start")
        session = start_ray(options.address, options.dashboard_host, options.dashboard_port)
        clock.mark("ray")
        importing.join()
        at_once, cluster = cluster_capacity(
            plan.resources, options.max_concurrent_trials, session.address, own=session.own
        )
        print(banner(plan, at_once, cluster, session), flush=True)
        run = run_sweep(
            plan, [sys.executable, "-m", "sweeps.run", *plan.arguments], shared=not session.own, clock=clock
        )
    except (PlanError, RaySessionError, CapacityError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except ScoringInterrupted as stopped:
        print(str(stopped), file=sys.stderr)
        return 130
    finally:
        if started_here:
            ray.shutdown()
    took = f"after {run.fit_seconds:.1f} s"
    print(summary(plan, run.results, run.written, took=took, scores=run.scores, future=run.future, timings=run.timings))
    if interrupted(plan, run.results):
        return 130  # as a shell reports a program stopped by Ctrl+C
    return 0 if run.results.best else 1


def sweep(options: SweepOptions, progress: bool = True) -> SweepRun:
    """Plan and run a sweep from Python as `python -m sweeps.run` runs it: on the Ray this process is connected to,
    or else on one of its own (or the cluster at `options.address`), started here and stopped after.

    Args:
        options: What the command line would say: `SweepOptions(sweep="panel", data="stores.csv", horizon=12)`.
        progress: Print Ray Tune's table of the trials as they run, and what the sweep does after them.

    Returns:
        The trials read back from the sweep's folder, the answer's scores beside the baselines', its forecast of the
        future and saved model, the files written and where the time went.

    Raises:
        PlanError: The options or the data cannot make a sweep; raised before Ray starts.
        RaySessionError: No Ray to run on at `options.address`.
        CapacityError: No node of a cluster that cannot grow holds a trial's resources.
    """
    import ray

    plan = make_plan(options)
    check_time_limit(options.time_limit, 0.0)
    started_here = not ray.is_initialized()
    own = False
    try:
        if started_here:
            own = start_ray(options.address, options.dashboard_host, options.dashboard_port).own
        return run_sweep(plan, [f"sweeps.sweep({plan.options!r})"], progress=progress, shared=not own)
    finally:
        if started_here:
            ray.shutdown()


def banner(plan: SweepPlan, at_once: int, cluster: str, session: RaySession) -> str:
    sweep = plan.sweep
    scheduler = scheduler_of(sweep)
    settings = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in scheduler.settings(sweep).items())
    searched = ", ".join(plan.searched)
    options = plan.options
    pinned = ", ".join(f"{k}={v}" for k, v in options.pins.items())
    purpose = sweep.purpose
    if sweep.dataset and plan.data_label != sweep.dataset:  # its purpose names its own data
        purpose = f"its space and budget on {plan.data_label} (its own data is {sweep.dataset})"
    lines = [
        f"Sweep {sweep.name}{' (smoke test)' if options.smoke_test else ''}{' - resuming' if options.resume else ''}: "
        f"{purpose}",
        *describe_data(plan),
        f"  budget     {sweep.num_samples} trials of up to {sweep.max_epochs} epochs; {sweep.search} search"
        f"{f' (seed {options.seed})' if options.seed is not None else ''}; {sweep.scheduler} scheduler"
        f"{f' ({settings})' if settings else ''}, ranking on {scheduler.metric(sweep)}",
        f"  searching  {searched}" + (f"; pinned {pinned}" if pinned else ""),
        *resolved_lines(plan),
        *transform_lines(plan),
        f"  ray        {session.describe()}",
        f"  per trial  {plan.resources.describe()}: {at_once} trial(s) at once on {cluster}",
        f"  dashboard  {dashboard_line(session)}",
        f"  results    {plan.experiment_path}",
    ]
    return "\n".join(lines)


def resolved_lines(plan: SweepPlan) -> list[str]:
    """The banner's line of the values the sweep's space states relative to the data, as this data resolves them."""
    registered = SWEEPS[plan.sweep.name].space
    resolved = describe({key: plan.sweep.space[key] for key, value in registered.items() if is_relative(value)})
    if not resolved:
        return []
    return [f"  resolved   {'; '.join(f'{key} {value}' for key, value in resolved.items())} (for this data)"]


def transform_lines(plan: SweepPlan) -> list[str]:
    """The banner's lines of what the transforms do to which series: those target_transform='log_if_positive' logs
    (every point the trials are given above 0; the others as they are, named), and with deseasonalise, those divided
    by their seasonal indices, those less their seasonal shifts (named) and those left as they are."""
    return _log_lines(plan) + _season_lines(plan) + _shape_lines(plan)


def _shape_lines(plan: SweepPlan) -> list[str]:
    """What each shape the space takes does to the data, as the shape says it (Shape.data_lines)."""
    return [
        line for name in values_taken(plan.sweep.space, "shape") for line in shape_of(name).data_lines(plan.parts.seen)
    ]


def _log_lines(plan: SweepPlan) -> list[str]:
    if "log_if_positive" not in values_taken(plan.sweep.space, "target_transform"):
        return []
    given = plan.parts.seen
    positive = np.minimum.reduceat(given.values, given.offsets[:-1]) > 0
    if positive.all():
        return [f"  transform  the log of every series (all {len(given)} are above 0)"]
    return [
        f"  transform  the log of {int(positive.sum())} of {len(given)} series; {int((~positive).sum())} with a value "
        f"at or below 0 as they are: {given.id_list(given.ids[~positive])}"
    ]


def _season_lines(plan: SweepPlan) -> list[str]:
    if True not in values_taken(plan.sweep.space, "deseasonalise"):
        return []
    train = plan.parts.train
    indices, shifts = seasonal_components(train)
    divided = (indices != 1).any(axis=1)
    subtracted = np.zeros(len(train), dtype=bool) if shifts is None else (shifts != 0).any(axis=1)
    named = f" ({train.id_list(train.ids[subtracted])})" if subtracted.any() else ""
    lines = [
        f"  seasons    {int(divided.sum())} of {len(train)} series divided by their seasonal indices, "
        f"{int(subtracted.sum())} less their seasonal shifts (a value below 0, or a place always 0){named}, "
        f"{int((~divided & ~subtracted).sum())} as they are (no season by Theta's test, or under 3 seasons to train)"
    ]
    period = indices.shape[1]
    if period > train.season:  # a longer season nested in the first: the week of hourly data
        table = indices if shifts is None else np.where(subtracted[:, None], shifts, indices)
        cycles = table.reshape(len(train), period // train.season, train.season)
        longer = int((np.ptp(cycles, axis=1) > 0).any(axis=1).sum())
        lines.append(
            f"             {longer} of them with a season of {period} points too (X-11's test, 3 of its cycles)"
        )
    year = year_components(train, indices, shifts)
    if year is not None:
        count = int(year.any(axis=(1, 2)).sum())
        lines.append(f"             {count} of {len(train)} series with the year (a smooth profile: 2 years to train)")
    return lines


def describe_data(plan: SweepPlan) -> list[str]:
    """The banner's lines about the data the sweep really runs on: for one series its dates and parts, as always; for
    a panel its series, their lengths, and the points of each that train, validate and are held out; then its
    covariates, and the columns of the data that nothing uses."""
    return _value_lines(plan) + covariate_lines(plan.panel)


def covariate_lines(panel: Panel) -> list[str]:
    """The banner's lines of the covariates the sweep reads, and of the data's columns it does not: a column left out
    by mistake shows here, not as a model that quietly ignored it."""
    lines = []
    covariates = panel.covariates
    if covariates is not None:
        kinds = [
            (label, ", ".join(names))
            for label, names in (("known ahead", covariates.futr_names), ("historic", covariates.hist_names))
            if names
        ]
        if covariates.static_columns:
            count = covariates.static_count
            kinds.append(
                ("static", f"{', '.join(covariates.static_columns)} ({count} column{'s' if count != 1 else ''})")
            )
        lines.append("  covariates " + "; ".join(f"{label}: {names}" for label, names in kinds))
    if panel.unused_columns:
        lines.append(
            f"  not used   {', '.join(panel.unused_columns)} (name them with --futr-exog, --hist-exog, or put "
            "per-series facts in --static-data)"
        )
    return lines


def _value_lines(plan: SweepPlan) -> list[str]:
    sweep, panel = plan.sweep, plan.panel
    train, val, test, untrained = plan.parts.train, plan.parts.val, plan.parts.test, plan.parts.untrained
    dropped = (
        f"; {len(panel.dropped)} dropped as too short ({panel.id_list(list(panel.dropped))})" if panel.dropped else ""
    )
    if len(panel) == 1:
        index = panel.series(0).index
        when: Callable[[Any], object] = (lambda t: t.date()) if panel.dated else (lambda t: t)
        where = f"after {sweep.split_after}" if not sweep.horizon else "before the test window"
        tested = f"after {sweep.test_after}" if not sweep.horizon else f"the last {sweep.horizon}"
        return [
            f"  data       {plan.data_label}: {len(index)} points, {when(index[0])} to {when(index[-1])} "
            f"({panel.freq or f'plain index, season {panel.season}'}); {len(train.values)} training, "
            f"{len(val.values)} validation {where}"
            + (f", {len(test.values)} test {tested} (held out: no trial sees them)" if test is not None else "")
            + dropped
        ]
    lengths = panel.lengths
    time = (
        f"dates ({panel.freq}), season {panel.season}" if panel.dated else f"a plain time index, season {panel.season}"
    )
    if untrained:
        dropped += (
            f"; {len(untrained)} shorter than the recurrent shape's training window "
            f"({panel.id_list(list(untrained))}): its trials forecast them without training on them"
        )
    if sweep.horizon and sweep.val_windows > 1:
        cut = (
            f"per series: the last {sweep.horizon} held out (no trial sees them), the {sweep.val_windows} backtest "
            f"windows of {sweep.horizon} before them validate (each forecast from the points before it), the "
            f"{_span(train.lengths)} before those train"
        )
    elif sweep.horizon:
        cut = (
            f"per series: the last {sweep.horizon} held out (no trial sees them), the {sweep.horizon} before them "
            f"validate, the {_span(train.lengths)} before those train"
        )
    else:
        cut = (
            f"per series: {_span(train.lengths)} training points up to {sweep.split_after}, {_span(val.lengths)} "
            "validating after it"
            + (f", {_span(test.lengths)} held out after {sweep.test_after}" if test is not None else "")
        )
    return [
        f"  data       {plan.data_label}: {len(panel)} series of {_span(lengths)} points (median "
        f"{int(np.median(lengths))}), {time}{dropped}",
        f"             {cut}; ranked by validation {METRIC_NAMES[sweep.metric]} (mean over series"
        + (" and windows)" if sweep.val_windows > 1 else ")"),
    ]


def _span(lengths: np.ndarray) -> str:
    low, high = int(lengths.min()), int(lengths.max())
    return str(low) if low == high else f"{low}-{high}"


@dataclasses.dataclass
class SweepRun:
    """What run_sweep leaves: the trials as read back from storage, the answer scored beside the baselines, the
    forecast of the future, and the files written."""

    results: SweepResults
    written: dict[str, str]
    """The files written at the end, name -> path."""
    scores: AnswerScores | None
    """The answer's scores and the baselines' (sweeps.answer.scores); None if no trial left a model."""
    future: Future | None
    """The forecast after the data and the answer saved as one model (sweeps.answer.future); None with --no-future,
    when no trial left a model, or when Ctrl+C stopped the trials."""
    fit_seconds: float
    """Wall time inside Tuner.fit."""
    driver_cpu_seconds: float
    """CPU time of this process inside Tuner.fit: Tune's controller, scheduler, loggers and reporter."""
    fit_started_at: float
    """When Tuner.fit started, in seconds since the epoch (as the trials' reported_at)."""
    timings: dict[str, Any] | None = None
    """Where the time went (sweeps.output.timings): timings.json."""


DRIVER_MODULES_LATER = ("torch", "forecaster.training.net", "forecaster.baselines", "matplotlib")
"""What the driver needs once Ray is up (the answer's models, statsforecast's baselines and the plots): imported
while Ray starts, which is mostly waiting for its processes. Nothing of Ray's: two threads importing parts of one
package that import each other deadlock, and Python breaks the tie by failing one import (`KeyError: 'ray.tune'`).
The thread is joined before the sweep imports anything else."""


def import_for_later() -> None:
    for name in (*DRIVER_MODULES_LATER, "statsforecast.models"):
        with contextlib.suppress(ImportError):  # an optional extra not installed: the code that needs it says so
            importlib.import_module(name)


def claim_folder(plan: SweepPlan, command: list[str]) -> SweepPlan:
    """Store the plan in its folder, which no other sweep may hold; a made-up name moves on to a free one (two
    sweeps started in the same second), a name the user gave is refused."""
    while True:
        try:
            store_plan(plan, command)
            return plan
        except FileExistsError:
            if plan.named_by_user:
                raise PlanError(taken_message(plan.storage_path, plan.name, plan.sweep.name)) from None
            plan = dataclasses.replace(plan, name=free_name(plan.storage_path, plan.name))


@dataclasses.dataclass(frozen=True)
class TrialsRun:
    plan: SweepPlan
    """The plan as run: in the folder it claimed."""
    fit_seconds: float
    """Wall time inside Tuner.fit."""
    driver_cpu_seconds: float
    """CPU time of this process inside Tuner.fit: Tune's controller, scheduler, loggers and reporter."""
    fit_started_at: float
    """When Tuner.fit started, in seconds since the epoch (as the trials' reported_at)."""
    started_with: Any = None
    """What `run_trials`' `start_with` gave."""


def run_trials(
    plan: SweepPlan,
    command: list[str],
    progress: bool = True,
    shared: bool = False,
    start_with: Callable[[SweepPlan], Any] | None = None,
) -> TrialsRun:
    """Run (or resume) the sweep's trials on the Ray session of this process, its plan stored in its folder first;
    `start_with(plan)`, once the folder is claimed, starts what runs beside the trials (run_sweep: the baselines'
    tasks and the time limit's stopper). `shared`: on a cluster that other sweeps may use at the same time, it keeps
    to its fair share (sweeps.trials.sharing)."""
    from sweeps.trials.ray_session import warm_workers_enabled
    from sweeps.trials.tuner import build_tuner
    from sweeps.trials.warm_pool import warm_up

    if warm_workers_enabled():
        # The trials' workers import torch while the Tuner is built; under --time-limit the answer's tasks' too, for
        # they come at a moment the stopper picks, and a worker that starts then is seconds on the limit's clock.
        warm_up(plan.resources, plan.most_at_once, tail_too=plan.options.time_limit is not None)
    if not plan.options.resume:
        plan = claim_folder(plan, command)
    started_with = start_with(plan) if start_with is not None else None
    tuner = build_tuner(plan, progress=progress, shared=shared)
    started_at, wall, cpu = time.time(), time.perf_counter(), time.process_time()
    with signals_given_back():
        tuner.fit()
    return TrialsRun(plan, time.perf_counter() - wall, time.process_time() - cpu, started_at, started_with)


def beside_the_trials(plan: SweepPlan, runner: Runner, budget: TimeBudget) -> BaselineJobs:
    """What a sweep starts with its trials: the baselines' tasks (they wait on nothing but the data), and what its
    stopper reads to keep the search within --time-limit (sweeps.plan.budget)."""
    from sweeps.trials.ray_session import warm_workers_enabled
    from sweeps.trials.warm_pool import warm_for_the_tail

    baselines = submit_baselines(plan, runner, future_horizon(plan) if plan.options.future else None)
    slots = runner.slots()
    left = EveryFewSeconds(lambda: sum(baselines_left(baselines, runner).values()) / slots)

    def cut_baseline() -> str | None:
        why = "cut by --time-limit while the trials ran: the time left was what the answer would need"
        name = cut_slowest(baselines, runner, why)
        left.forget()
        return name

    ACTIVE[plan.experiment_path] = Active(
        budget,
        tail_estimate(plan, slots, left),
        spent_writer(SweepFolder(plan.experiment_path)),
        warm=lambda: warm_for_the_tail(plan.resources, plan.most_at_once) if warm_workers_enabled() else None,
        cut_baseline=cut_baseline,
    )
    return baselines


def run_sweep(
    plan: SweepPlan, command: list[str], progress: bool = True, shared: bool = False, clock: Clock | None = None
) -> SweepRun:
    """Run (or resume) a planned sweep on the Ray this process is connected to, then make and score its answer from the
    tasks after the trials (sweeps.answer.run_tail), and write its files.

    Args:
        plan: What `make_plan` made (or a stored plan, with --resume's options).
        command: The command that asked for it, as resolved_sweep.json records it.
        progress: Print Ray Tune's table of the trials, and what the sweep does after them.
        shared: On a cluster other sweeps may use at the same time: keep to a fair share of it.
        clock: Where the command's time started (default: now), for timings.json and --time-limit.

    Returns:
        The trials, the answer's scores, the future, the files written and where the time went.

    Raises:
        ScoringInterrupted: Ctrl+C, with what is stored and the command that continues it."""
    clock = clock or Clock()
    clock.spent_before = read_spent(SweepFolder(plan.experiment_path)) if plan.options.resume else 0.0
    budget = TimeBudget(plan.options.time_limit, clock.started, clock.spent_before)
    runner = Runner(plan.resources, on_ray=True)
    trials = run_trials(plan, command, progress, shared, lambda claimed: beside_the_trials(claimed, runner, budget))
    clock.mark("trials")
    plan = trials.plan
    ACTIVE.pop(plan.experiment_path, None)  # the stopper's: the trials have ended
    results = None
    try:
        results = collect(plan)
        stopped = interrupted(plan, results)
        chosen = members(plan, results)
        found = scores = tail = future = None
        if chosen:
            wanted = tail_plan(plan, chosen, future=not stopped)
            # A resumed sweep's trials began in its earlier commands: their seconds count too.
            trials_seconds = trials.fit_seconds + clock.spent_before
            baselines = within_the_trials_time(trials.started_with, runner, trials_seconds)
            cut = Cut(baselines=tuple(baselines.cut))  # what gave way while the trials ran
            if plan.options.time_limit is not None:
                left = baselines_left(baselines, runner)
                wanted, after = give_way(wanted, budget.left(), runner.slots(), left)
                cut = dataclasses.replace(after, baselines=cut.baselines + after.baselines)
                why = "cut by --time-limit: it had not finished when the trials ended"
                baselines = cancel_baselines(baselines, runner, after.baselines, why)
            if progress and len(plan.panel) > 1 and not stopped:
                print(announcement(plan, wanted), flush=True)
            tail = run_tail(plan, wanted, runner, baselines, deadline=budget.deadline())
            cut = dataclasses.replace(
                cut, baselines=cut.baselines + tail.late_baselines, late=tail.late, shortened=tail.shortened
            )
            clock.tasks = tail.timings
            clock.mark("tail")
            found = build_answer(plan, results, tail)
            scores = score(found, plan)
            if plan.options.time_limit is not None:
                scores = dataclasses.replace(scores, time_limit=TimeLimitCut(plan.options.time_limit, cut.lines()))
        written = write_results(plan, results, found, scores)  # the answer's files first: the future takes longest
        if tail is not None:
            written.update(write_test_model(plan, tail))
        clock.mark("scoring")
        if found is not None and tail is not None and tail.future:
            future = build_future(plan, found, tail, runner)
            written.update(write_future(plan, future))
        clock.mark("saving")
        record = clock.record(ended=clock.marks["saving"])
        written.update(write_timings(plan, record))
        spent_writer(SweepFolder(plan.experiment_path))(budget.spent())
        return SweepRun(
            results,
            written,
            scores,
            future,
            trials.fit_seconds,
            trials.driver_cpu_seconds,
            trials.fit_started_at,
            record,
        )
    except KeyboardInterrupt:
        if results is None or interrupted(plan, results):
            raise ScoringInterrupted(
                "stopped by Ctrl+C; what the trials ran is stored. Resume the sweep with:  " + resume_command(plan)
            ) from None
        raise ScoringInterrupted(
            "stopped by Ctrl+C while the answer was scored; every trial had ended and is stored. "
            f"Score it and write its files with:  {report_command(plan)}"
        ) from None


class EveryFewSeconds:
    """`function()`, called again only every few `seconds`: the stopper asks at every step of Tune's loop."""

    def __init__(self, function: Callable[[], float], seconds: float = 2.0):
        self.function, self.seconds = function, seconds
        self.at, self.value = -math.inf, 0.0

    def __call__(self) -> float:
        if time.monotonic() - self.at >= self.seconds:
            self.at, self.value = time.monotonic(), self.function()
        return self.value

    def forget(self) -> None:
        """The next call asks again."""
        self.at = -math.inf


def announcement(plan: SweepPlan, tail: TailPlan) -> str:
    """What the sweep does once its trials have ended, and on how many series."""
    steps = []
    if any(tail.refit_epochs):
        steps.append(f"continued through the validation part ({', '.join(map(str, tail.refit_epochs))} epochs)")
    if tail.future_epochs is not None:
        through = "then through" if steps else "continued through"
        steps.append(f"{through} every point for the future ({', '.join(map(str, tail.future_epochs))} epochs)")
    done = f" (the top {len(tail.members)} trials' nets {', '.join(steps)})" if steps else ""
    return f"The trials have ended; scoring the answer and the baselines on {len(plan.panel)} series{done}..."


class ScoringInterrupted(KeyboardInterrupt):
    """Ctrl+C once `fit()` has returned, while the results are collected and the answer and the baselines scored;
    the message says what is left to do. Still a KeyboardInterrupt for callers other than the CLI (tests, benches)."""


@contextlib.contextmanager
def signals_given_back() -> Iterator[None]:
    """Ray Tune catches Ctrl+C (and SIGUSR1) during `fit()` to stop the trials cleanly, and leaves its handlers
    installed when no signal came: a Ctrl+C while the answer and the baselines are scored (minutes on M3) would only
    be logged. The handlers of before are put back once `fit()` returns."""
    if threading.current_thread() is not threading.main_thread():
        yield  # Tune installs no handler outside the main thread
        return
    caught = [signal.SIGINT, *([signal.SIGUSR1] if hasattr(signal, "SIGUSR1") else [])]
    handlers = {number: signal.getsignal(number) for number in caught}
    try:
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
