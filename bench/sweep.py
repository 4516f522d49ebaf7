"""Sweeps as users run them (`python -m sweeps.run`, each in a fresh process with a local Ray of its own): how fast
they run, how soon the first epoch comes, how much is scheduling, and how good the best trial is.

Three workloads on the air_rnn search space, each run --runs times with different seeds:
- "reference_budget": the budget of the Darts + Ray Tune reference (../shared/README.md): 16 trials of up
  to 100 epochs, 1 CPU each, ASHA with grace period 3 and reduction factor 2;
- "air_rnn_default": the default `python -m sweeps.run air_rnn` (64 trials of up to 300 epochs);
- "smoke_test": `python -m sweeps.run air_rnn --smoke-test`.

Every sweep runs with warm workers (sweeps/trials/warm_pool.py) and without (SWEEPS_WARM_WORKERS=0), one right after
the other for each seed (the order alternating between seeds), so that the two are compared side by side. Per
sweep: the whole command's time, the time inside Tuner.fit (as the reference measures it), the seconds from the
command's start to the first reported epoch, how many trials found torch and Lightning imported when they
started, trials per minute, the best validation MAPE, epochs run, and the scheduling overhead (the trial slots'
time not spent inside a trial, per trial). Once, the memory of an idle warm worker.

    python bench/sweep.py [--runs 3] [--workloads reference_budget air_rnn_default smoke_test]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORKLOADS = {
    "reference_budget": [
        "--num-samples",
        "16",
        "--max-epochs",
        "100",
        "--scheduler-option",
        "grace_period=3",
        "--scheduler-option",
        "reduction_factor=2",
    ],
    "air_rnn_default": [],
    "smoke_test": ["--smoke-test"],
}
MEDIANS = [
    "command_seconds",
    "tuner_fit_seconds",
    "seconds_to_first_epoch",
    "trials_started_warm",
    "trials_per_minute",
    "best_val_mape",
    "epochs_total",
    "scheduling_overhead_seconds_per_trial",
]


def run_workload(name: str, seed: int, storage: str, warm: bool) -> dict:
    folder = Path(storage, f"{name}-{seed}-{'warm' if warm else 'cold'}")
    command = [sys.executable, "-m", "sweeps.run", "air_rnn", *WORKLOADS[name], "--seed", str(seed)]
    command += ["--storage-path", str(folder.parent), "--name", folder.name]
    env = dict(os.environ, SWEEPS_WARM_WORKERS="1" if warm else "0", RAY_AUTH_MODE="disabled")
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    total = time.time() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    fit_seconds = float(re.search(r"finished after ([0-9.]+) s", done.stdout).group(1))
    trials = pd.read_csv(folder / "results.csv")
    progress = [pd.read_csv(path) for path in glob.glob(f"{folder}/*/progress.csv")]
    inside = float(trials["seconds"].fillna(0).sum())
    completed = int(trials["status"].isin(["COMPLETED", "STOPPED"]).sum())
    cpus = os.cpu_count()
    best = json.loads((folder / "best_config.json").read_text())
    return {
        "seed": seed,
        "warm_workers": warm,
        "command_seconds": total,
        "tuner_fit_seconds": fit_seconds,
        "seconds_to_first_epoch": float(min(history["reported_at"].min() for history in progress) - started),
        "trials_started_warm": int(sum(int(history["warm_start"].iloc[0]) for history in progress)),
        "trials": len(trials),
        "trials_per_minute": completed / fit_seconds * 60,
        "best_val_mape": best["best_val_mape"],
        "epochs_total": int(trials["epochs"].sum()),
        "stopped_early": int((trials["status"] == "STOPPED").sum()),
        "scheduling_overhead_seconds_per_trial": (fit_seconds * cpus - inside) / len(trials),
    }


def idle_warm_worker_rss_mb() -> float:
    """The resident memory of one idle warm worker: one is asked for, and measured once it has imported."""
    import ray

    from sweeps.trials.cluster_probe import prestart_workers
    from sweeps.trials.ray_session import WARM_WORKERS
    from sweeps.trials.warm_pool import KEEP_ALIVE_S, trial_runtime_env

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False, _system_config=WARM_WORKERS)
    prestart_workers(ray.nodes()[0], 1, trial_runtime_env(), KEEP_ALIVE_S)
    time.sleep(20)  # it starts, then imports torch and Lightning
    listing = subprocess.run(["ps", "-eo", "rss,args"], capture_output=True, text=True).stdout
    sizes = [int(line.split()[0]) / 1024 for line in listing.splitlines() if "ray::IDLE" in line]
    ray.shutdown()
    return max(sizes) if sizes else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    args = parser.parse_args()

    report = {"benchmark": "sweep", "cpus": os.cpu_count(), "workloads": {}}
    with tempfile.TemporaryDirectory() as storage:
        for name in args.workloads:
            runs = {True: [], False: []}
            for seed in range(args.runs):
                for warm in (True, False) if seed % 2 == 0 else (False, True):
                    runs[warm].append(run_workload(name, seed, storage, warm))
            report["workloads"][name] = {
                label: {
                    "median": {key: statistics.median(run[key] for run in runs[warm]) for key in MEDIANS},
                    "runs": runs[warm],
                }
                for label, warm in (("warm", True), ("cold", False))
            }
    report["idle_warm_worker_rss_mb"] = idle_warm_worker_rss_mb()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
