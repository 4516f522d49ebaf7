"""`python -m sweeps.run NAME`: a hyperparameter sweep of the RNN forecaster on a Ray cluster.

Examples:
  python -m sweeps.run --list                                    # the sweeps and what they are for
  python -m sweeps.run air_rnn                                   # on a local Ray, the default budget
  python -m sweeps.run air_rnn --smoke-test                      # a tiny budget, well under a minute
  python -m sweeps.run air_rnn --num-samples 32 --max-epochs 150 --scheduler median
  python -m sweeps.run air_rnn --search optuna --seed 1          # Optuna's TPE instead of random search
  python -m sweeps.run air_rnn --set model=GRU --set n_rnn_layers=1
  python -m sweeps.run air_rnn --data sales.csv --date-column day --value-column units --split-after 2024-06-30
  python -m sweeps.run m3_monthly                               # 1,428 series, one global model (benchmarks extra)
  python -m sweeps.run m3_monthly --data stores.parquet --horizon 12 --drop-short-series   # unique_id, ds, y
  python -m sweeps.run panel --data stores.parquet --horizon 12 --levels 80 95   # any panel, with intervals
  python -m sweeps.run air_rnn --resume                          # continue the latest air_rnn sweep
  python -m sweeps.run air_rnn --address auto --gpus-per-trial 0.25 --storage-path s3://bucket/sweeps
  python -m sweeps.run air_rnn --address auto --tpu-chips-per-trial 4 --storage-path gs://bucket/sweeps
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import signal
import sys
import textwrap
import threading
import time
from typing import Any

import numpy as np

from forecaster.data import BUILTIN_DATASETS
from forecaster.metrics import METRIC_NAMES, METRICS
from forecaster.transforms import seasonal_components
from sweeps.answer import build_answer
from sweeps.cluster_probe import CapacityError, cluster_capacity
from sweeps.plan import (
    PlanError,
    SweepPlan,
    find_sweep,
    free_name,
    make_plan,
    parse_pins,
    scheduler_options_from,
    taken_message,
)
from sweeps.ray_session import RaySession, RaySessionError, dashboard_line, start_ray
from sweeps.registry import ANSWER_SCOPES, SWEEPS
from sweeps.resources import TrialResources
from sweeps.results import SweepResults, collect
from sweeps.schedulers import SCHEDULERS, scheduler_of
from sweeps.searches import SEARCHES
from sweeps.space import describe, is_relative
from sweeps.storage import DEFAULT_STORAGE, SweepFolder, experiment_path, latest_run, located
from sweeps.summary import interrupted, report_command, resume_command, summary, write_results


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sweeps.run",
        description="Run a named hyperparameter sweep of the RNN forecaster with Ray Tune.",
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("sweep", nargs="?", help="the sweep to run (--list shows them)")
    parser.add_argument("--list", action="store_true", help="list the sweeps and exit")
    budget = parser.add_argument_group("budget and search (defaults: the sweep's own)")
    budget.add_argument("--num-samples", type=int, help="how many trials")
    budget.add_argument("--max-epochs", type=int, help="epochs per trial at most (the scheduler's max_t)")
    budget.add_argument("--scheduler", choices=list(SCHEDULERS), help="trial scheduler: asha stops weak trials early")
    budget.add_argument("--search", choices=SEARCHES, help="random search, or Optuna's TPE (pip install optuna)")
    budget.add_argument("--seed", type=int, help="seed of the search: the same seed samples the same trials")
    budget.add_argument(
        "--set",
        dest="pins",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="pin a hyperparameter instead of searching it (repeatable), e.g. --set model=GRU",
    )
    budget.add_argument(
        "--scheduler-option",
        dest="scheduler_options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the scheduler (repeatable): grace_period, reduction_factor (asha, hyperband, median), "
        "perturbation_interval (pbt)",
    )
    budget.add_argument("--smoke-test", action="store_true", help="a tiny budget (4 trials, 6 epochs) to check a setup")
    hardware = parser.add_argument_group("hardware per trial")
    hardware.add_argument("--cpus-per-trial", type=float, help="CPUs per trial (torch threads); default 1")
    hardware.add_argument(
        "--gpus-per-trial",
        type=float,
        help="GPUs per trial: 0.25 packs four trials on a card; 2 or more trains data-parallel",
    )
    hardware.add_argument("--tpu-chips-per-trial", type=float, help="TPU chips per trial: 1, 2, 4 or 8")
    hardware.add_argument(
        "--workers-per-trial",
        type=int,
        default=0,
        help="data-parallel workers (Ray Train, DDP); default: one per GPU when a trial has several",
    )
    hardware.add_argument("--max-concurrent-trials", type=int, help="run at most this many trials at once")
    faults = parser.add_argument_group("faults")
    faults.add_argument(
        "--max-failures",
        type=int,
        default=1,
        help="retries of a failed trial, each from its latest checkpoint (default 1)",
    )
    faults.add_argument(
        "--trial-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="kill and retry a trial that reports nothing for this long (default 600)",
    )
    cluster = parser.add_argument_group("cluster and storage")
    cluster.add_argument(
        "--address",
        help="join a running Ray cluster ('auto': the one started here with `ray start`, or host:port); 'local': a "
        "new Ray of the sweep's own. Default: RAY_ADDRESS inside a Ray job, else a new Ray of the sweep's own",
    )
    cluster.add_argument(
        "--dashboard-host",
        default="127.0.0.1",
        help="where a local Ray's dashboard listens (default 127.0.0.1: this machine only)",
    )
    cluster.add_argument(
        "--dashboard-port",
        type=int,
        help="the dashboard's port on a Ray of the sweep's own (default 8265, or the next free one when taken)",
    )
    cluster.add_argument("--storage-path", help="where results go: a folder, s3://... or gs://... (default ./results)")
    cluster.add_argument(
        "--mlflow-uri",
        help="also log every trial as an MLflow run there (e.g. http://mlflow:5000 or sqlite:///mlflow.db; "
        "pip install '.[mlflow]')",
    )
    cluster.add_argument("--name", help="the sweep's folder name in the storage (default: SWEEP-date-time)")
    cluster.add_argument(
        "--resume",
        action="store_true",
        help="continue a stopped sweep (--name, default the latest of this sweep): finished "
        "trials are kept, unfinished ones continue from their checkpoints",
    )
    data = parser.add_argument_group("data (default: the sweep's dataset)")
    data.add_argument(
        "--data",
        help="a CSV or Parquet file (one series, or a panel in long format: unique_id, ds, y), or a built-in dataset",
    )
    data.add_argument("--id-column", help="a panel's series id column (found by itself when named unique_id)")
    data.add_argument("--date-column", help="the date (or time) column (found by itself when named ds, or with 2)")
    data.add_argument("--value-column", help="the value column (found by itself when named y, or with 2 columns)")
    data.add_argument("--freq", help="pandas frequency of the dates (default: inferred)")
    data.add_argument(
        "--season-length", type=int, help="points per season of a plain integer time index (12 for monthly data)"
    )
    data.add_argument(
        "--horizon",
        type=int,
        help="points per series: each series' last H are its test window (no trial sees them) and the H before them "
        "its validation part (default: the sweep's, or a benchmark panel's official hold-out; else the dates)",
    )
    data.add_argument("--split-after", help="without a horizon: the last date of every series' training part")
    data.add_argument(
        "--test-after",
        help="without a horizon: hold out the points after this date: no trial sees them; the answer and the "
        "baselines are scored on them after the sweep (default: no test window)",
    )
    data.add_argument(
        "--metric",
        choices=METRICS,
        help="what ranks the trials and stops weak ones: mape, smape or mase (default: the sweep's; on other data, "
        "mape for one series and smape for a panel; mase where a value is below 0)",
    )
    data.add_argument(
        "--drop-short-series",
        action="store_true",
        help="leave out the series too short for some configuration of the space, instead of refusing the panel",
    )
    data.add_argument(
        "--levels",
        type=float,
        nargs="+",
        metavar="LEVEL",
        help="prediction intervals at these levels (percent, e.g. 80 95) for the answer and every baseline, scored on "
        "the test window: coverage, width and MSIS",
    )
    budget.add_argument(
        "--answer-top-k",
        type=int,
        help="the sweep's answer is the mean forecast of the best models of the top K trials (default: the sweep's)",
    )
    budget.add_argument(
        "--answer-scope",
        choices=ANSWER_SCOPES,
        help="what ranks the trials for the answer, as Tune's scope: all (each trial's best validation score over its "
        "epochs) or last (its last epoch's) (default: the sweep's; the panel sweep ranks on the last)",
    )
    budget.add_argument(
        "--refit-answer",
        action=argparse.BooleanOptionalAction,
        help="train the answer's configurations again through the validation part before they forecast the test "
        "window (default: the sweep's; the panel sweep does)",
    )
    return parser


def list_sweeps() -> str:
    lines = []
    for sweep in SWEEPS.values():
        options = ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in sweep.scheduler_options.items())
        lines.append(
            f"{sweep.name}: {sweep.num_samples} trials of up to {sweep.max_epochs} epochs, "
            f"{sweep.scheduler} scheduler ({options}), {sweep.search} search, ranking on {sweep.ranked} "
            f"({sweep.mode}), "
            + (f"data {sweep.dataset}" if sweep.dataset else "on your data (--data, --horizon)")
            + (f" split after {sweep.split_after}" if sweep.dataset in BUILTIN_DATASETS else "")
            + ", "
            f"{TrialResources(sweep.cpus_per_trial, sweep.gpus_per_trial, sweep.tpu_chips_per_trial).describe()} "
            "per trial"
        )
        lines.extend(textwrap.wrap(sweep.purpose, 100, initial_indent="    ", subsequent_indent="    "))
        lines.extend(f"    {name:<19} {value}" for name, value in describe(sweep.space).items())
    return "\n".join(lines)


RESUMABLE_OPTIONS = ("sweep", "resume", "name", "storage_path", "address", "dashboard_host", "dashboard_port")
"""What --resume may change: where the sweep is stored and where it runs. The rest is the stored plan's."""


def plan_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser, arguments: list[str]) -> SweepPlan:
    if args.resume:
        plan = _resumed_plan(args)
        # The same command with --resume added is fine; an option that would change the plan is refused.
        defaults, stored = parser.parse_args([]), parser.parse_args(list(plan.arguments))
        changed = [
            name
            for name, value in vars(args).items()
            if name not in RESUMABLE_OPTIONS and value != getattr(defaults, name) and value != getattr(stored, name)
        ]
        if changed:
            options = ", ".join("--" + name.replace("_", "-").replace("pins", "set") for name in changed)
            raise PlanError(
                f"--resume continues {plan.name} as it was planned ({' '.join(plan.arguments)}), so "
                f"{options} cannot change; drop {'it' if len(changed) == 1 else 'them'}, or start a "
                "new sweep with another --name"
            )
        return dataclasses.replace(plan, address=args.address)
    plan = make_plan(
        args.sweep,
        num_samples=args.num_samples,
        max_epochs=args.max_epochs,
        scheduler=args.scheduler,
        scheduler_options=scheduler_options_from(args.scheduler_options, args.sweep, args.scheduler, args.smoke_test),
        search=args.search,
        cpus_per_trial=args.cpus_per_trial,
        gpus_per_trial=args.gpus_per_trial,
        tpu_chips_per_trial=args.tpu_chips_per_trial,
        workers_per_trial=args.workers_per_trial,
        max_concurrent_trials=args.max_concurrent_trials,
        data=args.data,
        id_column=args.id_column,
        date_column=args.date_column,
        value_column=args.value_column,
        freq=args.freq,
        season_length=args.season_length,
        split_after=args.split_after,
        test_after=args.test_after,
        horizon=args.horizon,
        metric=args.metric,
        drop_short=args.drop_short_series,
        answer_top_k=args.answer_top_k,
        refit_answer=args.refit_answer,
        answer_scope=args.answer_scope,
        pins=parse_pins(args.pins),
        seed=args.seed,
        name=args.name,
        storage_path=args.storage_path,
        smoke_test=args.smoke_test,
        max_failures=args.max_failures,
        trial_timeout_s=args.trial_timeout,
        mlflow_uri=args.mlflow_uri,
        levels=args.levels or (),
    )
    return dataclasses.replace(plan, address=args.address, arguments=tuple(arguments))


def _resumed_plan(args: argparse.Namespace) -> SweepPlan:
    """The stored plan of the sweep to resume: the same trials, data and resources as when it started."""
    find_sweep(args.sweep)
    storage = located(args.storage_path or DEFAULT_STORAGE)
    name = args.name or latest_run(storage, args.sweep)
    if name is None:
        raise PlanError(f"--resume: no earlier run of {args.sweep!r} in {storage}; give its --name and --storage-path")
    try:
        plan = SweepFolder(experiment_path(storage, name)).load_plan()
    except FileNotFoundError as error:
        raise PlanError(f"--resume: {error}") from None
    if plan.sweep.name != args.sweep:
        raise PlanError(f"--resume: {name} is a run of {plan.sweep.name!r}, not of {args.sweep!r}")
    return dataclasses.replace(plan, resume=True)  # load_plan pointed it at the folder it was read from


def banner(plan: SweepPlan, at_once: int, cluster: str, session: RaySession) -> str:
    sweep = plan.sweep
    scheduler = scheduler_of(sweep)
    options = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in scheduler.settings(sweep).items())
    searched = ", ".join(plan.searched)
    pinned = ", ".join(f"{k}={v}" for k, v in plan.pinned.items())
    purpose = sweep.purpose
    if sweep.dataset and plan.data_label != sweep.dataset:  # its purpose names its own data
        purpose = f"its space and budget on {plan.data_label} (its own data is {sweep.dataset})"
    lines = [
        f"Sweep {sweep.name}{' (smoke test)' if plan.smoke_test else ''}{' - resuming' if plan.resume else ''}: "
        f"{purpose}",
        *describe_data(plan),
        f"  budget     {sweep.num_samples} trials of up to {sweep.max_epochs} epochs; {sweep.search} search"
        f"{f' (seed {plan.seed})' if plan.seed is not None else ''}; {sweep.scheduler} scheduler"
        f"{f' ({options})' if options else ''}, ranking on {scheduler.metric(sweep)}",
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
    return _log_lines(plan) + _season_lines(plan)


def _log_lines(plan: SweepPlan) -> list[str]:
    if plan.sweep.space.get("target_transform") != "log_if_positive":
        return []
    _, _, given, _ = plan.parts()
    positive = np.minimum.reduceat(given.values, given.offsets[:-1]) > 0
    if positive.all():
        return [f"  transform  the log of every series (all {len(given)} are above 0)"]
    return [
        f"  transform  the log of {int(positive.sum())} of {len(given)} series; {int((~positive).sum())} with a value "
        f"at or below 0 as they are: {given.id_list(given.ids[~positive])}"
    ]


def _season_lines(plan: SweepPlan) -> list[str]:
    if plan.sweep.space.get("deseasonalise") is not True:
        return []
    train = plan.parts()[0]
    indices, shifts = seasonal_components(train)
    divided = (indices != 1).any(axis=1)
    subtracted = np.zeros(len(train), dtype=bool) if shifts is None else (shifts != 0).any(axis=1)
    named = f" ({train.id_list(train.ids[subtracted])})" if subtracted.any() else ""
    return [
        f"  seasons    {int(divided.sum())} of {len(train)} series divided by their seasonal indices, "
        f"{int(subtracted.sum())} less their seasonal shifts (a value below 0, or a place always 0){named}, "
        f"{int((~divided & ~subtracted).sum())} as they are (no season by Theta's test, or under 3 seasons to train)"
    ]


def describe_data(plan: SweepPlan) -> list[str]:
    """The banner's lines about the data the sweep really runs on: for one series its dates and parts, as always; for
    a panel its series, their lengths, and the points of each that train, validate and are held out."""
    sweep, panel = plan.sweep, plan.panel
    train, val, _, test = plan.parts()
    dropped = (
        f"; {len(panel.dropped)} dropped as too short ({panel.id_list(list(panel.dropped))})" if panel.dropped else ""
    )
    if len(panel) == 1:
        index = panel.series(0).index
        when = (lambda t: t.date()) if panel.dated else (lambda t: t)
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
    if plan.untrained:
        dropped += (
            f"; {len(plan.untrained)} shorter than the recurrent shape's training window "
            f"({panel.id_list(list(plan.untrained))}): its trials forecast them without training on them"
        )
    if sweep.horizon:
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
        f"             {cut}; ranked by validation {METRIC_NAMES[sweep.metric]} (mean over series)",
    ]


def _span(lengths: np.ndarray) -> str:
    low, high = int(lengths.min()), int(lengths.max())
    return str(low) if low == high else f"{low}-{high}"


@dataclasses.dataclass
class SweepRun:
    results: SweepResults
    written: dict[str, str]
    """The files written at the end, name -> path."""
    scores: dict[str, Any] | None
    """The answer's scores and the baselines' (sweeps.answer); None if no trial left a model."""
    fit_seconds: float
    """Wall time inside Tuner.fit."""
    driver_cpu_seconds: float
    """CPU time of this process inside Tuner.fit: Tune's controller, scheduler, loggers and reporter."""
    fit_started_at: float
    """When Tuner.fit started, in seconds since the epoch (as the trials' reported_at)."""


DRIVER_MODULES_LATER = ("torch", "forecaster.net", "forecaster.baselines", "matplotlib")
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
            SweepFolder(plan.experiment_path).save_plan(plan, plan.resolved(command))
            return plan
        except FileExistsError:
            if plan.named_by_user:
                raise PlanError(taken_message(plan.storage_path, plan.name, plan.sweep.name)) from None
            plan = dataclasses.replace(plan, name=free_name(plan.storage_path, plan.name))


def run_sweep(
    plan: SweepPlan, command: list[str], progress: bool = True, shared: bool = False, answer: bool = True
) -> SweepRun:
    """Run (or resume) the sweep on the Ray session of this process; write and return its results. `shared`: on
    a cluster that other sweeps may use at the same time, it keeps to its fair share (sweeps.sharing). Without
    `answer`, the trials only: no answer and no baselines (a benchmark of the trials' speed)."""
    from sweeps.ray_session import warm_workers_enabled
    from sweeps.tuner import build_tuner
    from sweeps.warm_pool import warm_up

    if warm_workers_enabled():
        warm_up(plan.resources, plan.most_at_once)  # the trials' workers import torch while the Tuner is built
    if not plan.resume:
        plan = claim_folder(plan, command)
    tuner = build_tuner(plan, progress=progress, shared=shared)
    started_at, wall, cpu = time.time(), time.perf_counter(), time.process_time()
    with signals_given_back():
        tuner.fit()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    results = None
    try:
        results = collect(plan)
        if progress and answer and len(plan.panel) > 1 and not interrupted(plan, results):
            refit = (
                f"training the top {min(plan.sweep.answer_top_k, plan.sweep.num_samples)} configurations again through "
                "the validation part, "
                if plan.sweep.refit_answer and plan.parts()[3] is not None
                else ""
            )
            print(
                f"The trials have ended; {refit}scoring the answer and the baselines on {len(plan.panel)} series...",
                flush=True,
            )
        found = build_answer(plan, results) if answer else None
        scores = found.scores(plan) if found else None
        return SweepRun(results, write_results(plan, results, found, scores), scores, wall, cpu, started_at)
    except KeyboardInterrupt:
        if results is None or interrupted(plan, results):
            raise ScoringInterrupted(
                "stopped by Ctrl+C; what the trials ran is stored. Resume the sweep with:  " + resume_command(plan)
            ) from None
        raise ScoringInterrupted(
            "stopped by Ctrl+C while the answer was scored; every trial had ended and is stored. "
            f"Score it and write its files with:  {report_command(plan)}"
        ) from None


class ScoringInterrupted(KeyboardInterrupt):
    """Ctrl+C once `fit()` has returned, while the results are collected and the answer and the baselines scored;
    the message says what is left to do. Still a KeyboardInterrupt for callers other than the CLI (tests, benches)."""


@contextlib.contextmanager
def signals_given_back():
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        print(list_sweeps())
        return 0
    if not args.sweep:
        parser.print_usage(sys.stderr)
        print(
            f"error: name a sweep; the sweeps are: {', '.join(SWEEPS)} (python -m sweeps.run --list)", file=sys.stderr
        )
        return 2
    try:
        plan = plan_from_args(args, parser, sys.argv[1:] if argv is None else argv)
    except PlanError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    import ray

    started_here = not ray.is_initialized()
    importing = threading.Thread(target=import_for_later, daemon=True)
    importing.start()
    try:
        session = start_ray(args.address, args.dashboard_host, args.dashboard_port)
        importing.join()
        at_once, cluster = cluster_capacity(
            plan.resources, plan.max_concurrent_trials, session.address, own=session.own
        )
        print(banner(plan, at_once, cluster, session), flush=True)
        run = run_sweep(plan, [sys.executable, "-m", "sweeps.run", *plan.arguments], shared=not session.own)
    except (PlanError, RaySessionError, CapacityError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except ScoringInterrupted as stopped:
        print(str(stopped), file=sys.stderr)
        return 130
    finally:
        if started_here:
            ray.shutdown()
    print(summary(plan, run.results, run.written, took=f"after {run.fit_seconds:.1f} s", scores=run.scores))
    if interrupted(plan, run.results):
        return 130  # as a shell reports a program stopped by Ctrl+C
    return 0 if run.results.best else 1


if __name__ == "__main__":
    sys.exit(main())
