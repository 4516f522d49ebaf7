"""The m3_monthly sweep as a user runs it, judged as the field judges methods: on M3's official hold-out (the last 18
points of each of its 1,428 monthly series), by the mean over series of sMAPE, MASE and MAPE, beside the methods
that won it, and beside neuralforecast's AutoLSTM given the same trials and CPUs.

For every seed: `python -m sweeps.run m3_monthly --seed S` in a fresh process (its whole-command time, from the
command's start to its exit), whose answer, baselines (seasonal naive, AutoETS, Theta, AutoCES, fit on the same
points by statsforecast, and the mean of the last three) and combination (the mean of the answer, AutoETS, Theta
and AutoCES) the sweep scores itself; then, with --nf-python (`make nf-env`), the peer
(bench/neuralforecast_peer.py) on the same split, scored here with the same code. Medians over seeds. `--dataset`
runs the same on another competition panel (tourism_monthly: 366 series, a hold-out of 24).

    python bench/panel.py [--seeds 0 1 2] [--dataset m3_monthly] [--nf-python .nf-venv/bin/python]
        [--peer-time-factor 2] [--peer-seeds 0] [-- EXTRA SWEEP ARGS]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("smape", "mase", "mape")


def run_sweep(seed: int, dataset: str, storage: str, extra: list[str]) -> dict:
    name = f"{dataset}-seed{seed}"
    command = [sys.executable, "-m", "sweeps.run", "m3_monthly", "--seed", str(seed), "--storage-path", storage]
    command += ["--name", name, *(["--data", dataset] if dataset != "m3_monthly" else []), *extra]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    best = json.loads(Path(storage, name, "best_config.json").read_text())
    answer = best["answer"]
    row = {"seed": seed, "whole_command_seconds": wall, "best_trial": best["trial_id"], "trials": answer["trials"]}
    row["answer"] = {metric: answer[f"test_{metric}"] for metric in METRICS}
    row["baselines"] = {
        name: {metric: values.get(f"test_{metric}") for metric in METRICS}
        | {"answer_better_on_share_of_series": values.get("test_beaten_by_answer", {}).get("smape")}
        for name, values in answer["baselines"].items()
        if "unavailable" not in values
    }
    if "combination" in answer:
        combination = answer["combination"]
        row["combination"] = {metric: combination[f"test_{metric}"] for metric in METRICS} | {
            "better_on_share_of_series": {name: share["smape"] for name, share in combination["test_beats"].items()}
        }
    return row


def run_peer(python: str, seed: int, dataset: str, trials: int, cpus: int, folder: str, budget: float | None) -> dict:
    import numpy as np
    import pandas as pd

    from forecaster.data import load_panel
    from forecaster.metrics import mase_scales, panel_scores

    out = os.path.join(folder, f"peer-{dataset}-{seed}.parquet")
    command = [python, str(ROOT / "bench" / "neuralforecast_peer.py"), "--dataset", dataset, "--trials", str(trials)]
    command += ["--cpus", str(cpus), "--seed", str(seed), "--out", out]
    command += ["--time-budget", str(budget)] if budget else []
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:  # the sweeps' results are kept: the JSON says what failed
        return {"seed": seed, "whole_command_seconds": wall, "failed": f"exit {done.returncode}: {done.stderr[-2000:]}"}
    report = json.loads(done.stdout.strip().splitlines()[-1])
    panel = load_panel(dataset)
    seen, test = panel.split_last(panel.horizon)
    predicted = pd.read_parquet(out)
    predicted["unique_id"] = predicted["unique_id"].astype(str)
    frame = test.to_frame().merge(predicted, on=["unique_id", "ds"], how="left")
    h, series = panel.horizon, len(test)
    actual = frame["y"].to_numpy().reshape(series, h).T
    forecast = frame["forecast"].to_numpy().reshape(series, h).T
    scores = panel_scores(actual, forecast, np.ones_like(actual), np.arange(series), series, mase_scales(seen))
    return {
        "seed": seed,
        "whole_command_seconds": wall,
        "fit_and_predict_seconds": report["wall_seconds"],
        "trials": trials,
        "trials_run": report.get("trials_run"),
        "time_budget_seconds": budget,
        "cpus": cpus,
        **{metric: float(scores[metric]) for metric in METRICS},
    }


def median(rows: list[dict], *keys: str) -> float | None:
    values = []
    for row in rows:
        value = row
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            values.append(value)
    return statistics.median(values) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--dataset", default="m3_monthly")
    parser.add_argument("--nf-python", help="neuralforecast's environment (make nf-env): runs AutoLSTM beside")
    parser.add_argument(
        "--peer-time-factor",
        type=float,
        help="give AutoLSTM this many times the sweep's whole-command time of the same seed (its time_budget; its "
        "default trials take minutes each, so 24 of them take hours on 2 cores); default: no limit",
    )
    parser.add_argument(
        "--peer-seeds", type=int, nargs="+", help="run AutoLSTM for these of the seeds only (default: every seed)"
    )
    parser.add_argument("extra", nargs="*", help="more options for the sweep, after --")
    args = parser.parse_args()

    from sweeps.registry import SWEEPS

    sweep = SWEEPS["m3_monthly"]
    cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as folder:
        ours, peers = [], []
        for seed in args.seeds:
            ours.append(run_sweep(seed, args.dataset, folder, args.extra))
            print(json.dumps(ours[-1]), file=sys.stderr, flush=True)
            if args.nf_python and (args.peer_seeds is None or seed in args.peer_seeds):
                budget = args.peer_time_factor * ours[-1]["whole_command_seconds"] if args.peer_time_factor else None
                peers.append(run_peer(args.nf_python, seed, args.dataset, sweep.num_samples, cpus, folder, budget))
                print(json.dumps(peers[-1]), file=sys.stderr, flush=True)
    baselines = sorted(ours[0]["baselines"])
    summary = {
        "answer": {metric: median(ours, "answer", metric) for metric in METRICS}
        | {"whole_command_seconds": median(ours, "whole_command_seconds")},
        "baselines": {
            name: {metric: median(ours, "baselines", name, metric) for metric in METRICS}
            | {"answer_better_on_share_of_series": median(ours, "baselines", name, "answer_better_on_share_of_series")}
            for name in baselines
        },
    }
    if all("combination" in run for run in ours):
        summary["combination"] = {metric: median(ours, "combination", metric) for metric in METRICS} | {
            "better_on_share_of_series": {
                name: median(ours, "combination", "better_on_share_of_series", name)
                for name in ours[0]["combination"]["better_on_share_of_series"]
            }
        }
    if peers:
        scored = [peer for peer in peers if "failed" not in peer]
        summary["neuralforecast_AutoLSTM"] = {metric: median(scored, metric) for metric in METRICS} | {
            "whole_command_seconds": median(scored, "whole_command_seconds"),
            "failed_seeds": [peer["seed"] for peer in peers if "failed" in peer],
        }
    print(
        json.dumps(
            {
                "bench": "panel",
                "dataset": args.dataset,
                "sweep": {"trials": sweep.num_samples, "max_epochs": sweep.max_epochs, "extra": args.extra},
                "cpus": cpus,
                "seeds": args.seeds,
                "medians": summary,
                "runs": ours,
                "peer_runs": peers,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
