"""From sweep to forecast: what forecasting with a sweep's saved answer costs, and what forecasting the future adds to
a sweep.

- "sweep": the default `python -m sweeps.run m3_monthly --seed S` as a user runs it, whole command timed, with and
  without --no-future, one right after the other in one run; the future's own refit and baseline seconds from the
  summary of the run that made it.
- "forecast": in a fresh process each (torch limited to --threads), the seconds to import, to load the saved model
  (`AnswerModel.load`) and to forecast M3 monthly's 1,428 series at the sweep's levels, and the same for a generated
  panel of --series monthly series (which the model never trained on, so each member fits its transforms on each),
  with each process's peak RSS. The generated series are monthly, on the model's kind of time (dates, or a plain
  integer index as M3's).

    python bench/forecast.py sweep [--seed 0] [--storage /tmp/forecast-bench]
    python bench/forecast.py forecast --model RESULTS_DIR [--series 100000] [--threads 2]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, resource, sys, time
started = time.perf_counter()
import torch
torch.set_num_threads(int(sys.argv[3]))
from forecaster.answer.model import AnswerModel
from forecaster.data.read import load_panel
imported = time.perf_counter()
model = AnswerModel.load(sys.argv[1])
loaded = time.perf_counter()
data = sys.argv[2]
if data.startswith("generated:"):
    import numpy as np, pandas as pd
    from forecaster.data.panel import Panel
    count = int(data.split(":")[1])
    generator = np.random.default_rng(0)
    lengths = generator.integers(48, 145, count)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    series = np.repeat(np.arange(count), lengths)
    t = np.arange(offsets[-1]) - offsets[series]
    level = 10 ** generator.uniform(1, 4, count)
    phase = generator.integers(0, 12, count)[series]
    season = generator.uniform(0, 0.3, count)[series] * np.sin(2 * np.pi * (t + phase) / 12)
    values = level[series] * (1 + generator.uniform(-0.005, 0.01, count)[series] * t + season)
    values *= 1 + 0.05 * generator.standard_normal(len(values))
    ids = np.array([f"g{i}" for i in range(count)], dtype=object)
    if model.data.freq is None:  # the model's kind of time: M3's is a plain integer index
        first = generator.integers(1, 25, count)
        panel = Panel(ids, offsets, first[series] + t, values, None, 12, origins=first)
    else:
        starts = pd.date_range("1990-01-01", periods=24, freq="MS").to_numpy()[generator.integers(0, 24, count)]
        times = (pd.DatetimeIndex(starts[series]).to_period("M") + t).to_timestamp().to_numpy("datetime64[ns]")
        panel = Panel(ids, offsets, times, values, "MS", 12)
else:
    panel = load_panel(data)
made = time.perf_counter()
future = model.forecast(panel)
done = time.perf_counter()
print(json.dumps({
    "series": len(panel), "points": int(len(panel.values)), "rows": len(future), "columns": list(future.columns),
    "new_series": len(model.new_series(panel)), "members": len(model.members),
    "import_seconds": round(imported - started, 2), "load_seconds": round(loaded - imported, 3),
    "data_seconds": round(made - loaded, 2), "forecast_seconds": round(done - made, 3),
    "load_and_forecast_seconds": round(loaded - imported + done - made, 3),
    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    "ray_imported": "ray" in sys.modules, "lightning_imported": "lightning" in sys.modules,
}))
"""


def forecast_bench(model: str, series: int, threads: int) -> dict:
    runs = {}
    for label, data in (("m3_monthly", "m3_monthly"), ("generated", f"generated:{series}")):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, model, data, str(threads)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=os.environ | {"OMP_NUM_THREADS": str(threads)},
        )
        if done.returncode:
            raise SystemExit(done.stderr[-3000:])
        runs[label] = json.loads(done.stdout.strip().splitlines()[-1])
    return {"bench": "forecast", "model": model, "threads": threads, "cpus": os.cpu_count(), **runs}


def sweep_bench(seed: int, storage: str) -> dict:
    runs = {}
    for label, extra in (("with_future", []), ("no_future", ["--no-future"])):
        name = f"m3-seed{seed}-{label}"
        command = [sys.executable, "-m", "sweeps.run", "m3_monthly", "--seed", str(seed), "--name", name]
        command += ["--storage-path", storage, *extra]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if done.returncode:
            raise SystemExit(done.stdout[-2000:] + done.stderr[-3000:])
        out = done.stdout
        record = {"command": " ".join(command[1:]), "command_seconds": round(seconds, 1)}
        refit = re.search(r"trained again on every point, the test window included: ([\d.]+) s", out)
        record["future_refit_seconds"] = float(refit.group(1)) if refit else None
        test = re.search(r"answer, test\s+([\d.]+)", out)
        record["answer_test_smape"] = float(test.group(1)) if test else None
        record["results"] = f"{storage}/{name}"
        runs[label] = record
    added = runs["with_future"]["command_seconds"] / runs["no_future"]["command_seconds"] - 1
    return {"bench": "forecast", "part": "sweep", "seed": seed, "cpus": os.cpu_count(), **runs, "future_adds": added}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    sweep = sub.add_parser("sweep")
    sweep.add_argument("--seed", type=int, default=0)
    sweep.add_argument("--storage", default="/tmp/forecast-bench")
    timing = sub.add_parser("forecast")
    timing.add_argument("--model", required=True, help="a sweep's results folder, or its model folder")
    timing.add_argument("--series", type=int, default=100_000)
    timing.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.part == "sweep":
        report = sweep_bench(args.seed, args.storage)
    else:
        report = forecast_bench(args.model, args.series, args.threads)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
