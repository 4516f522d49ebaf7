"""`python -m sweeps.report RESULTS_DIR`: rebuild a sweep's tables and plots from its storage, and its forecast of the
future (future.*) from the model it saved.

Works on a finished, interrupted or still-running sweep, local or on s3:// / gs://. It reads the folder as data (the
plan's JSON and Parquet, Tune's state as plain JSON, the trials' CSV files and checkpoints loaded with
weights_only=True): nothing in it runs code. On a folder that holds the answer's saved nets (test_model/, model/)
and the baselines' forecasts, it trains and fits nothing: it forecasts with the saved nets. What a folder lacks (a
sweep stopped before its end), or intervals at other levels than the sweep's for the baselines, is made here, in
this process, as the sweep would have.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING

from forecaster.cli import add_options, levels_option, option, read_options

if TYPE_CHECKING:
    from forecaster.answer.model import AnswerModel, SavedMember
    from sweeps.plan.sweep_plan import SweepPlan


@dataclasses.dataclass(frozen=True)
class ReportOptions:
    """What `python -m sweeps.report` is asked."""

    results_dir: str = option(None, "the sweep's folder, as the sweep printed it", positional=True)
    levels: tuple[float, ...] | None = levels_option(
        "prediction intervals at these levels (percent, e.g. 80 95) instead of the sweep's own; --levels alone: none"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sweeps.report", description=" ".join(__doc__.split("\n\n")[0].split())
    )
    return add_options(parser, ReportOptions)


def main(argv: list[str] | None = None) -> int:
    args: ReportOptions = read_options(ReportOptions, build_parser().parse_args(argv))

    from sweeps.answer import build_answer, run_tail, tail_plan
    from sweeps.answer.baselines import saved_baselines, submit_baselines
    from sweeps.answer.future import build_future
    from sweeps.answer.intervals import future_horizon
    from sweeps.answer.members import members
    from sweeps.answer.scores import scores as score
    from sweeps.answer.tasks import Runner
    from sweeps.output.summary import interrupted, summary, write_future, write_results
    from sweeps.plan.record import read_plan
    from sweeps.plan.storage import MODEL_FOLDER, TEST_MODEL_FOLDER
    from sweeps.plan.sweep_plan import check_interval_levels
    from sweeps.trials.results import collect

    try:
        plan = read_plan(args.results_dir)
        if args.levels is not None:
            levels = check_interval_levels(args.levels, plan.sweep)
            plan = dataclasses.replace(plan, options=dataclasses.replace(plan.options, levels=levels))
        results = collect(plan)
    except (OSError, ValueError) as error:  # no plan, one refused (PlanError), no Tune state, a storage's own errors
        print(f"error: {error}", file=sys.stderr)
        return 2
    chosen = members(plan, results)
    answer = scores = future = None
    if chosen:
        runner = Runner(plan.resources, on_ray=False)
        wanted = tail_plan(plan, chosen, future=not interrupted(plan, results))
        model = saved_model(plan, MODEL_FOLDER, [member.trial_id for member in chosen])
        tested = saved_model(plan, TEST_MODEL_FOLDER, [member.trial_id for member in chosen])
        saved_refits = None
        if tested is not None:
            saved_refits = [member.net for member in tested.members]
            wanted = dataclasses.replace(wanted, refit_epochs=[_continued(member) for member in tested.members])
        elif model is not None:  # no test model: the sweep continued none through the validation part
            wanted = dataclasses.replace(wanted, refit_epochs=[_continued(member) for member in model.members])
        if model is not None:
            wanted = dataclasses.replace(wanted, future_epochs=None)
        future_steps = future_horizon(plan) if plan.options.future else None
        baselines = saved_baselines(plan, future=future_steps is not None) or submit_baselines(
            plan, runner, future_steps
        )
        tail = run_tail(plan, wanted, runner, baselines, saved_refits)
        answer = build_answer(plan, results, tail)
        scores = score(answer, plan)
        if plan.options.future and (model is not None or tail.future):
            future = build_future(plan, answer, tail, runner, model)
    written = write_results(plan, results, answer, scores)
    if future is not None:
        written.update(write_future(plan, future))
    seconds = float(results.trials["seconds"].fillna(0).sum()) if len(results.trials) else 0.0
    print(summary(plan, results, written, took=f"({seconds:.1f} s inside trials)", scores=scores, future=future))
    return 0


def _continued(member: SavedMember) -> int:
    """The epochs a saved member was continued through the validation part."""
    return sum(epochs for on, epochs in member.continued if on == "the validation part")


def saved_model(plan: SweepPlan, name: str, trials: list[str]) -> AnswerModel | None:
    """The model the sweep saved in its folder `name`, where it holds the members `trials`; None where there is none
    that reads, or it holds others (a sweep stopped before it saved one)."""
    from forecaster.answer.model import AnswerModel

    try:
        model = AnswerModel.load(f"{plan.experiment_path}/{name}")
    except (OSError, ValueError, KeyError, RuntimeError):
        return None
    return model if [member.trial_id for member in model.members] == trials else None


if __name__ == "__main__":
    sys.exit(main())
