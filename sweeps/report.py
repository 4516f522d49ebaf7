"""`python -m sweeps.report RESULTS_DIR`: rebuild a sweep's tables and plots from its storage, and its forecast of the
future (future.*) from the model it saved.

Works on a finished, interrupted or still-running sweep, local or on s3:// / gs://. It reads the folder as data (the
plan's JSON and Parquet, Tune's state as plain JSON, the trials' CSV files and checkpoints loaded with
weights_only=True): nothing in it runs code.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sweeps.report", description=" ".join(__doc__.split("\n\n")[0].split())
    )
    parser.add_argument("results_dir", help="the sweep's folder, as the sweep printed it")
    parser.add_argument(
        "--levels",
        type=float,
        nargs="+",
        metavar="LEVEL",
        help="prediction intervals at these levels (percent, e.g. 80 95), instead of the sweep's own (--levels)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    from sweeps.answer import build_answer
    from sweeps.answer.future import build_future
    from sweeps.answer.scores import scores as score
    from sweeps.plan import check_interval_levels
    from sweeps.plan_record import read_plan
    from sweeps.results import collect
    from sweeps.summary import summary, write_future, write_results

    try:
        plan = read_plan(args.results_dir)
        if args.levels is not None:
            levels = check_interval_levels(args.levels, plan.sweep)
            plan = dataclasses.replace(plan, options=dataclasses.replace(plan.options, levels=levels))
        results = collect(plan)
    except (OSError, ValueError) as error:  # no plan, one refused (PlanError), no Tune state, a storage's own errors
        print(f"error: {error}", file=sys.stderr)
        return 2
    answer = build_answer(plan, results)
    scores = score(answer, plan) if answer else None
    written = write_results(plan, results, answer, scores)
    future = None
    if answer and plan.options.future:
        future = build_future(plan, answer, saved_model(plan))
        written.update(write_future(plan, future))
    seconds = float(results.trials["seconds"].fillna(0).sum()) if len(results.trials) else 0.0
    print(summary(plan, results, written, took=f"({seconds:.1f} s inside trials)", scores=scores, future=future))
    return 0


def saved_model(plan):
    """The answer the sweep saved, which forecasts the future again without training where it holds the answer's
    members (sweeps.answer.future.build_future); None where there is none that reads (a sweep stopped before it saved
    one): the future is then trained here, as the sweep would have."""
    from forecaster.answer_model import AnswerModel
    from sweeps.storage import MODEL_FOLDER

    try:
        return AnswerModel.load(f"{plan.experiment_path}/{MODEL_FOLDER}")
    except (OSError, ValueError, KeyError, RuntimeError):
        return None


if __name__ == "__main__":
    sys.exit(main())
