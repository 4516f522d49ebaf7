"""One fit of the seed config (and its LSTM and GRU variants): time, CPU, speed, accuracy, memory.

Each measurement is a fresh process, `python -m forecaster.fit --threads 1 --json`, as a user runs it.
Each fit also runs on PyTorch's own nn.RNN/nn.GRU instead of the hand-written layers of
forecaster/shapes/recurrence.py, interleaved, to show what those layers save: a fresh process of this script,
`python bench/single_trial.py --plain-modules-child FIT_ARGS...`, replaces
`forecaster.shapes.recurrence.fast_path_applies` with a function that returns False, then runs
`forecaster.fit.main(FIT_ARGS)`, the same fit with the same arguments. With a Darts environment
(`make darts-env`), the peer runs in the same loop, interleaved, so the CPU ratio compares two figures taken
side by side on the same noisy machine; the peer runs both at torch's default thread count (the reference
condition) and on one thread. Medians over --runs.

    python bench/single_trial.py [--runs 3] [--models RNN LSTM GRU] [--darts-python .darts-venv/bin/python]
                                 [--seeds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DARTS = ROOT / ".darts-venv" / "bin" / "python"
PLAIN_MODULES_CHILD = "--plain-modules-child"
"""The first argument of this script's own child process that fits on PyTorch's modules (`plain_modules_child`)."""


def run_json(command: list[str]) -> dict:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ours(model: str, seed: int = 42, plain_modules: bool = False) -> dict:
    fit_args = ["--model", model, "--threads", "1", "--random-state", str(seed), "--json"]
    if plain_modules:
        return run_json([sys.executable, str(Path(__file__).resolve()), PLAIN_MODULES_CHILD, *fit_args])
    return run_json([sys.executable, "-m", "forecaster.fit", *fit_args])


def plain_modules_child(fit_args: list[str]) -> int:
    """`python -m forecaster.fit FIT_ARGS` with every recurrent module running itself (PyTorch's nn.RNN/nn.GRU), never
    the hand-written layers: forecaster.shapes.recurrence.hidden_states looks fast_path_applies up at call time."""
    sys.path.insert(0, str(ROOT))  # as `python -m` from ROOT finds the package
    from forecaster import fit
    from forecaster.shapes import recurrence

    recurrence.fast_path_applies = lambda *args: False
    return fit.main(fit_args)


def peer(darts_python: str, model: str, *extra: str) -> dict:
    return run_json([darts_python, str(ROOT / "bench" / "darts_peer.py"), "--model", model, *extra])


def medians(rows: list[dict], keys: list[str]) -> dict:
    return {key: statistics.median(row[key] for row in rows) for key in keys} | {"runs": len(rows)}


def spread(values: list[float]) -> dict:
    return {"min": min(values), "median": statistics.median(values), "max": max(values), "values": values}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=["RNN", "LSTM", "GRU"])
    parser.add_argument(
        "--darts-python",
        default=str(DEFAULT_DARTS) if DEFAULT_DARTS.exists() else None,
        help="Python of an environment with darts 0.48.1 (default: .darts-venv if present)",
    )
    parser.add_argument("--seeds", type=int, default=0, help="also report the val MAPE of seeds 0..N-1 (both sides)")
    args = parser.parse_args()

    import lightning
    import torch

    ours_rows = {m: [] for m in args.models}
    plain_rows = {m: [] for m in args.models}
    peer_rows = {m: [] for m in args.models}
    peer_one_thread = {m: [] for m in args.models}
    for _ in range(args.runs):
        for model in args.models:  # interleaved: ours, ours on the plain modules, peer, peer on one thread
            ours_rows[model].append(ours(model))
            plain_rows[model].append(ours(model, plain_modules=True))
            if args.darts_python:
                peer_rows[model].append(peer(args.darts_python, model))
                peer_one_thread[model].append(peer(args.darts_python, model, "--threads", "1"))

    timing = ["fit_wall_seconds", "fit_cpu_seconds"]
    report = {
        "benchmark": "single_trial",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "lightning": lightning.__version__,
        },
        "config": ours_rows[args.models[0]][0]["config"] | {"model": "varies", "threads": 1},
        "ours": {},
    }
    for model, rows in ours_rows.items():
        report["ours"][model] = medians(rows, [*timing, "epochs_per_second", "peak_rss_mb"]) | {
            "val_mape": rows[0]["val_mape"],  # deterministic: the same in every run
            "best_val_mape": rows[0]["best_val_mape"],
            "best_epoch": rows[0]["best_epoch"],
            "val_mape_identical_in_all_runs": len({row["val_mape"] for row in rows}) == 1,
        }
    report["plain_modules"] = {
        model: medians(rows, timing)
        | {
            "val_mape": rows[0]["val_mape"],
            "fit_cpu_ratio_to_ours": statistics.median(row["fit_cpu_seconds"] for row in rows)
            / report["ours"][model]["fit_cpu_seconds"],
        }
        for model, rows in plain_rows.items()
    }
    if args.darts_python:
        report["darts"] = {
            model: {
                "default_threads": medians(peer_rows[model], timing)
                | {"threads": peer_rows[model][0]["threads"], "val_mape": peer_rows[model][0]["val_mape"]},
                "one_thread": medians(peer_one_thread[model], timing),
            }
            for model in args.models
        }
        report["cpu_speedup_vs_darts"] = {
            model: {
                "default_threads": report["darts"][model]["default_threads"]["fit_cpu_seconds"]
                / report["ours"][model]["fit_cpu_seconds"],
                "one_thread": report["darts"][model]["one_thread"]["fit_cpu_seconds"]
                / report["ours"][model]["fit_cpu_seconds"],
            }
            for model in args.models
        }
    if args.seeds:
        report["val_mape_by_seed"] = {}
        for model in args.models:
            entry = {"ours": spread([ours(model, seed)["val_mape"] for seed in range(args.seeds)])}
            if args.darts_python:
                entry["darts"] = spread(peer(args.darts_python, model, "--seeds", str(args.seeds))["val_mape_by_seed"])
            report["val_mape_by_seed"][model] = entry
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    if sys.argv[1:2] == [PLAIN_MODULES_CHILD]:
        sys.exit(plain_modules_child(sys.argv[2:]))
    main()
