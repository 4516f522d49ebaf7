"""Sweeps on a local Ray: how fast they run, how much of that is scheduling, and how good their best trial is.

Two workloads on the air_rnn search space, each run --runs times with different seeds:
- "reference_budget": the budget of the Darts + Ray Tune reference (../shared/README.md): 16 trials of up
  to 100 epochs, 1 CPU each, ASHA with grace period 3 and reduction factor 2;
- "air_rnn_default": the default `python -m sweeps.run air_rnn` (64 trials of up to 300 epochs).

Per sweep it reports the time inside Tuner.fit (as the reference does) and the time to start Ray and to
write the results around it, trials completed, trials per minute, time to the first reported epoch, the
best validation MAPE, epochs run, and the scheduling overhead: the trial slots' time not spent inside a
trial (process start and imports, scheduling, reporting between trials), per trial.

    python bench/sweep.py [--runs 3] [--workloads reference_budget air_rnn_default]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORKLOADS = {
    "reference_budget": {
        "num_samples": 16,
        "max_epochs": 100,
        "scheduler_options": {"grace_period": 3, "reduction_factor": 2},
    },
    "air_rnn_default": {},
}


def run_workload(name: str, seed: int, storage: str, cpus: int) -> dict:
    import ray

    from sweeps.plan import make_plan
    from sweeps.run import run_sweep

    settings = dict(WORKLOADS[name])
    started = time.perf_counter()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    ray_started = time.perf_counter()
    plan = make_plan("air_rnn", seed=seed, storage_path=storage, name=f"{name}-{seed}", **settings)
    fit_started = time.time()
    run = run_sweep(plan, ["bench/sweep.py", name], progress=False)
    results, fit_seconds = run.results, run.fit_seconds
    ray.shutdown()
    total = time.perf_counter() - started

    trials = results.trials
    first_report = min(
        pd.read_csv(path)["timestamp"].min() for path in glob.glob(f"{plan.experiment_path}/*/progress.csv")
    )
    inside = float(trials["seconds"].fillna(0).sum())
    completed = int(trials["status"].isin(["COMPLETED", "STOPPED"]).sum())
    return {
        "seed": seed,
        "tuner_fit_seconds": fit_seconds,
        "ray_start_seconds": ray_started - started,
        "command_seconds": total,
        "trials": len(trials),
        "trials_completed": completed,
        "trials_per_minute": completed / fit_seconds * 60,
        "seconds_to_first_result": float(first_report - fit_started),
        "best_val_mape": results.best["best_val_mape"] if results.best else None,
        "best_trial": results.best["config"] if results.best else None,
        "epochs_total": int(trials["epochs"].sum()),
        "stopped_early": int((trials["status"] == "STOPPED").sum()),
        "seconds_inside_trials": inside,
        "driver_cpu_seconds_in_fit": run.driver_cpu_seconds,
        "scheduling_overhead_seconds_per_trial": (fit_seconds * cpus - inside) / len(trials),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--cpus", type=int, default=os.cpu_count())
    args = parser.parse_args()

    report = {"benchmark": "sweep", "cpus": args.cpus, "workloads": {}}
    with tempfile.TemporaryDirectory() as storage:
        for name in args.workloads:
            runs = [run_workload(name, seed, storage, args.cpus) for seed in range(args.runs)]
            keys = [
                "tuner_fit_seconds",
                "command_seconds",
                "trials_per_minute",
                "seconds_to_first_result",
                "best_val_mape",
                "epochs_total",
                "scheduling_overhead_seconds_per_trial",
                "driver_cpu_seconds_in_fit",
            ]
            report["workloads"][name] = {
                "median": {key: statistics.median(run[key] for run in runs) for key in keys},
                "best_val_mape_of_each_run": [run["best_val_mape"] for run in runs],
                "runs": runs,
            }
    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
