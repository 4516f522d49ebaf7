"""Does the sweep's answer hold on data it never saw? The default air_rnn sweep with a held-out test window, on two
real monthly series, against seasonal naive and statsforecast's AutoETS and AutoCES on the same points.

- air_passengers: the last 23 months held out (the sweep sees data through 1959-01 only);
- wineind (Australian wine sales): the last 24 months held out (the sweep sees data through 1992-08 only).

For each series and seed (a local Ray with all CPUs) it runs `python -m sweeps.run air_rnn --data SERIES
--test-after DATE --seed SEED` as a plan in this process, and reports the best trial's validation MAPE (selected
on validation), the answer's validation and test MAPE, every baseline's test MAPE, and the sweep's time inside
Tuner.fit. Medians over the seeds; the goal on air_passengers: test MAPE at most 8 % (half of seasonal naive's
15.75 %), stretch 4 % (AutoCES's 4.03 %).

    python bench/holdout.py [--runs 3] [--series air_passengers wineind] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SERIES = {"air_passengers": "1959-01-01", "wineind": "1992-08-01"}


def run_once(series: str, seed: int, storage: str, pins: dict, cpus: int) -> dict:
    import ray

    from sweeps.driver import run_sweep
    from sweeps.plan.sweep_plan import make_plan

    started = time.perf_counter()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    plan = make_plan(
        "air_rnn",
        data=series,
        test_after=SERIES[series],
        seed=seed,
        pins=pins,
        storage_path=storage,
        name=f"{series}-{seed}",
    )
    run = run_sweep(plan, ["bench/holdout.py", series], progress=False)
    ray.shutdown()
    scores = run.scores
    return {
        "seed": seed,
        "split_after": plan.sweep.split_after,
        "best_trial_validation_mape": run.results.best.score,
        "answer_validation_mape": scores.answer["validation_mape"],
        "answer_test_mape": scores.answer["test_mape"],
        "baselines_test_mape": {name: b.get("test_mape") for name, b in scores.baselines.items()},
        "answer_trials": len(scores.trials),
        "tuner_fit_seconds": run.fit_seconds,
        "command_seconds": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="seeds per series")
    parser.add_argument("--series", nargs="+", default=list(SERIES), choices=list(SERIES))
    parser.add_argument("--set", dest="pins", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--cpus", type=int, default=os.cpu_count())
    args = parser.parse_args()

    from sweeps.plan.options import parse_pins

    pins = parse_pins(args.pins)
    report = {"benchmark": "holdout", "cpus": args.cpus, "pins": pins, "series": {}}
    with tempfile.TemporaryDirectory() as storage:
        for series in args.series:
            runs = [run_once(series, seed, storage, pins, args.cpus) for seed in range(args.runs)]
            baselines = runs[0]["baselines_test_mape"]  # the same for every seed
            report["series"][series] = {
                "test_after": SERIES[series],
                "median": {
                    key: statistics.median(run[key] for run in runs)
                    for key in (
                        "best_trial_validation_mape",
                        "answer_validation_mape",
                        "answer_test_mape",
                        "tuner_fit_seconds",
                        "command_seconds",
                    )
                },
                "answer_test_mape_of_each_seed": [round(run["answer_test_mape"], 2) for run in runs],
                "baselines_test_mape": baselines,
                "runs": runs,
            }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
