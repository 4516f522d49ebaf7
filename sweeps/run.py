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
import dataclasses
import gc
import sys
import textwrap
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sweeps.plan.budget import check_time_limit, read_spent
from sweeps.plan.options import PlanError, SweepOptions, changed_on_resume, from_args, resumed
from sweeps.plan.options import build_parser as build_options_parser
from sweeps.plan.registry import SWEEPS
from sweeps.plan.resources import TrialResources
from sweeps.plan.space import describe

if TYPE_CHECKING:
    from sweeps.plan.sweep_plan import SweepPlan


def build_parser() -> argparse.ArgumentParser:
    """Every declared option (sweeps.plan.options), and --list."""
    parser = build_options_parser(
        prog="python -m sweeps.run",
        description="Run a named hyperparameter sweep of the RNN forecaster with Ray Tune.",
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--list", action="store_true", help="list the sweeps and exit")
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
            + (f" split after {sweep.split_after}" if sweep.split_after else "")
            + ", "
            f"{TrialResources(sweep.cpus_per_trial, sweep.gpus_per_trial, sweep.tpu_chips_per_trial).describe()} "
            "per trial"
        )
        lines.extend(textwrap.wrap(sweep.purpose, 100, initial_indent="    ", subsequent_indent="    "))
        lines.extend(f"    {name:<19} {value}" for name, value in describe(sweep.space).items())
    return "\n".join(lines)


def plan_from_args(args: argparse.Namespace, arguments: Sequence[str]) -> SweepPlan:
    """The plan of a command line: a new one, or with --resume the stored one (only where it runs may change). The
    data is read and checked here: the first of the command's imports of pandas and the forecaster."""
    from sweeps.plan.sweep_plan import make_plan

    options = from_args(args)
    if options.resume:
        return _resumed_plan(options, arguments)
    return dataclasses.replace(make_plan(options), arguments=tuple(arguments))


def _resumed_plan(asked: SweepOptions, arguments: Sequence[str]) -> SweepPlan:
    """The stored plan of the sweep to resume: the same trials, data and resources as when it started. The same command
    with --resume added is fine; an option that would change the plan is refused by the flag the user typed."""
    from sweeps.plan.record import read_plan
    from sweeps.plan.storage import experiment_path, latest_run
    from sweeps.plan.sweep_plan import find_sweep

    find_sweep(asked.sweep)
    storage = asked.storage()
    name = asked.name or latest_run(storage, str(asked.sweep))
    if name is None:
        raise PlanError(f"--resume: no earlier run of {asked.sweep!r} in {storage}; give its --name and --storage-path")
    try:
        plan = read_plan(experiment_path(storage, name))
    except (OSError, PlanError) as error:
        raise PlanError(f"--resume: {error}") from None
    if plan.sweep.name != asked.sweep:
        raise PlanError(f"--resume: {name} is a run of {plan.sweep.name!r}, not of {asked.sweep!r}")
    changed = changed_on_resume(plan.options, asked, arguments)
    if changed:
        raise PlanError(
            f"--resume continues {plan.name} as it was planned ({' '.join(plan.arguments)}), so "
            f"{', '.join(changed)} cannot change; drop {'it' if len(changed) == 1 else 'them'}, or start a "
            "new sweep with another --name"
        )
    return dataclasses.replace(plan, options=resumed(plan.options, asked))


def earlier_runs_spent(plan: SweepPlan) -> float:
    """Seconds earlier runs of a resumed sweep spent (0 for a new one): what --time-limit counts too."""
    from sweeps.plan.storage import SweepFolder

    return read_spent(SweepFolder(plan.experiment_path)) if plan.options.resume else 0.0


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
    from sweeps.output.timings import Clock

    clock = Clock() if argv is None else Clock(started=time.time())  # the command's start: the process's, or now
    try:
        plan = plan_from_args(args, sys.argv[1:] if argv is None else argv)
        check_time_limit(plan.options.time_limit, clock.elapsed() + earlier_runs_spent(plan))
    except PlanError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from sweeps.driver import drive

    return drive(plan, clock)


if __name__ == "__main__":
    code = main()
    gc.freeze()  # the driver's heap, collected object by object at exit, took 5 s for nothing (2026-11-29)
    sys.exit(code)
