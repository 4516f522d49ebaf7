"""`python -m sweeps.refit RESULTS_DIR`: retrain a sweep's best configuration and check its score again.

The trial is retrained with the same seed, data (every series up to its test window) and thread count up to its
best epoch; on CPU that reproduces the trial's model exactly, so its validation score (the sweep's metric: MAPE,
sMAPE or MASE) must come out the same. A trial that PBT perturbed, or that resumed on other hardware, may differ
slightly: the difference is printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from forecaster.cli import add_options, option, read_options


@dataclasses.dataclass(frozen=True)
class RefitOptions:
    """What `python -m sweeps.refit` is asked."""

    results_dir: str = option(None, "the sweep's folder, as the sweep printed it", positional=True)
    tolerance: float = option(0.01, "allowed difference of the score", type=float)
    plot: str | None = option(None, "draw the refit model's forecast", metavar="FILE.png")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sweeps.refit", description=__doc__.splitlines()[0])
    return add_options(parser, RefitOptions)


def main(argv: list[str] | None = None) -> int:
    args: RefitOptions = read_options(RefitOptions, build_parser().parse_args(argv))

    from forecaster.config import ForecasterConfig
    from forecaster.metrics import METRIC_NAMES
    from forecaster.training.train import fit, quiet_lightning
    from sweeps.plan.options import PlanError
    from sweeps.plan.record import read_plan
    from sweeps.plan.storage import SweepFolder

    folder = args.results_dir.rstrip("/")
    try:
        plan = read_plan(folder)
        best = SweepFolder(folder).best_config()
    except (FileNotFoundError, OSError, PlanError) as error:
        print(
            f"error: {error} (run python -m sweeps.report {folder} first if the sweep was interrupted)", file=sys.stderr
        )
        return 2
    quiet_lightning()
    config = ForecasterConfig.from_dict({**best["config"], "n_epochs": best["best_epoch"]})
    threads = plan.resources.trainer_arguments()["threads"]
    sweep = plan.sweep
    metric = sweep.metric
    result = fit(config, plan.parts.without_test(), threads=threads)
    score, stored_score = result.history[-1][f"val_{metric}"], best[sweep.ranked]
    difference = score - stored_score
    reproduced = abs(difference) <= args.tolerance
    name, unit = METRIC_NAMES[metric], " %" if metric == "mape" else ""
    print(
        f"Refit of trial {best['trial_id']} ({config.model}, {best['best_epoch']} epochs): validation {name} "
        f"{score:.4f}{unit} against {stored_score:.4f}{unit} in the sweep "
        f"({'reproduced' if reproduced else f'differs by {difference:+.4f} points'}); fit {result.fit_seconds:.1f} s"
    )
    if args.plot:
        from forecaster.plot import plot_forecast, plot_panel

        parts = result.parts
        title = f"refit of {best['trial_id']}: {name} {score:.2f}{unit}"
        if len(parts.train) == 1:
            plot_forecast(parts.train.series(0), parts.val.series(0), result.forecast_series(0), args.plot, title=title)
        else:
            shown = range(min(6, len(parts.train)))
            items = [(parts.train.series(i), parts.val.series(i), result.forecast_series(i)) for i in shown]
            plot_panel(items, args.plot, title=f"{title} (the first {len(shown)} series)")
        print(f"plot: {args.plot}")
    return 0 if reproduced else 1


if __name__ == "__main__":
    sys.exit(main())
