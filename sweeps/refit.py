"""`python -m sweeps.refit RESULTS_DIR`: retrain a sweep's best configuration and check its MAPE again.

The trial is retrained with the same seed, data and thread count up to its best epoch; on CPU that
reproduces the trial's model exactly, so its validation MAPE must come out the same. A trial that
PBT perturbed, or that resumed on other hardware, may differ slightly: the difference is printed.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sweeps.refit", description=__doc__.splitlines()[0])
    parser.add_argument("results_dir", help="the sweep's folder, as the sweep printed it")
    parser.add_argument(
        "--tolerance", type=float, default=0.01, help="allowed MAPE difference, in points (default 0.01)"
    )
    parser.add_argument("--plot", metavar="FILE.png", help="draw the refit model's forecast")
    args = parser.parse_args(argv)

    from forecaster.config import ForecasterConfig
    from forecaster.train import fit, quiet_lightning
    from sweeps.storage import SweepFolder

    folder = args.results_dir.rstrip("/")
    try:
        stored = SweepFolder(folder)
        plan = stored.load_plan()
        best = stored.best_config()
    except (FileNotFoundError, OSError) as error:
        print(
            f"error: {error} (run python -m sweeps.report {folder} first if the sweep was interrupted)", file=sys.stderr
        )
        return 2
    quiet_lightning()
    config = ForecasterConfig.from_dict({**best["config"], "n_epochs": best["best_epoch"]})
    threads = plan.resources.trainer_arguments()["threads"]
    result = fit(config, plan.seen_series, split_after=plan.sweep.split_after, threads=threads)
    difference = result.val_mape - best["best_val_mape"]
    reproduced = abs(difference) <= args.tolerance
    print(
        f"Refit of trial {best['trial_id']} ({config.model}, {best['best_epoch']} epochs): validation MAPE "
        f"{result.val_mape:.4f} % against {best['best_val_mape']:.4f} % in the sweep "
        f"({'reproduced' if reproduced else f'differs by {difference:+.4f} points'}); fit {result.fit_seconds:.1f} s"
    )
    if args.plot:
        from forecaster.plot import plot_forecast

        parts = result.parts
        plot_forecast(
            parts.train.series(0),
            parts.val.series(0),
            result.forecast_series(0),
            args.plot,
            title=f"refit of {best['trial_id']}: MAPE {result.val_mape:.2f} %",
        )
        print(f"plot: {args.plot}")
    return 0 if reproduced else 1


if __name__ == "__main__":
    sys.exit(main())
