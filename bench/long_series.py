"""A long series swept as a new user sweeps it: a generated year of hourly demand with two known-ahead covariates,
the default `panel` sweep's whole command, each shape's seconds per epoch and each baseline's seconds (issue 73).

The data (generated here, nothing downloaded, `--seed`): one series of `--days` days of hourly points (365: 8,760)
and the two days after it for --futr-data. Demand is a level that drifts slowly, times a daily profile that differs on
workdays and weekends (a daily and a weekly season), plus heating and cooling load that grows with the distance of a
temperature-like covariate from 18 degrees, plus noise. The covariates, both known ahead (`--futr-exog temperature
workday`): `temperature` (a yearly and a daily cycle plus a slowly wandering weather term) and `workday` (1 Monday
to Friday but for a few holidays, else 0).

What it runs, in a fresh process each:
- **the sweep**: `python -m sweeps.run panel --data FILE --horizon 24 --futr-exog temperature workday --futr-data
  FUTURE` at the panel sweep's default budget (10 trials of up to 40 epochs, ASHA), its whole command timed from the
  command's start to its exit; from its trials' progress.csv, each shape's median seconds per epoch; from its
  best_config.json, the answer's and baselines' test sMAPE; from its timings.json, the phases.
- **each baseline alone** (`--baselines`), as one of the sweep's baseline tasks runs it (sweeps.answer.baselines'
  `baseline_chunk`: fit on everything before the test window with its intervals, then run on over the whole series
  for the future), on one CPU, with `--baseline-timeout` seconds each.

    python bench/long_series.py [--days 365] [--seed 0] [--checkout WORKTREE] [--sweep-timeout S] [--no-sweep]
        [--no-baselines] [--baseline-timeout S] [--storage DIR] [--out FILE] [-- EXTRA SWEEP ARGS]

`--checkout` runs both with the code of another worktree (an earlier commit: `git worktree add`), side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.environ.get("BENCH_CHECKOUT", str(ROOT)))

HORIZON = 48
"""Two days, as the issue's user forecast: 8,664 training points of 8,760."""
COVARIATES = ("temperature", "workday")
START = "2025-01-06 00:00"
"""A Monday."""
HOLIDAYS = ("01-01", "04-18", "04-21", "05-05", "05-26", "08-25", "12-25", "12-26")
"""Month-day of the days off on a weekday (England's bank holidays of 2025)."""


def generated(days: int, seed: int) -> tuple:
    """(history, future): the series' `days` of hourly points, and its covariates over the day after."""
    import pandas as pd

    random = np.random.default_rng(seed)
    times = pd.date_range(START, periods=days * 24 + HORIZON, freq="h")
    hours = np.arange(len(times))
    hour, weekday = times.hour.to_numpy(), times.dayofweek.to_numpy()
    holiday = np.isin(times.strftime("%m-%d"), HOLIDAYS)
    workday = ((weekday < 5) & ~holiday).astype(np.float64)
    year = 2 * np.pi * hours / (365.25 * 24)
    weather = np.cumsum(random.normal(0, 0.08, len(times)))
    weather -= np.convolve(weather, np.ones(24 * 14) / (24 * 14), mode="same")  # a wander of days, not of months
    temperature = 11 - 7 * np.cos(year) + 4 * np.sin(2 * np.pi * (hour - 9) / 24) + 2 * weather
    morning, evening = np.exp(-(((hour - 9) / 2.5) ** 2)), np.exp(-(((hour - 18.5) / 2.0) ** 2))
    working = 0.55 + 0.35 * morning + 0.45 * evening + 0.25 * ((hour >= 8) & (hour <= 17))
    resting = 0.55 + 0.15 * np.exp(-(((hour - 12) / 3.0) ** 2)) + 0.35 * evening
    profile = np.where(workday > 0, working, resting)
    level = 1000 * (1 + 0.04 * np.sin(year / 2) + 0.02 * np.cumsum(random.normal(0, 0.01, len(times))))
    load = 9 * np.maximum(15 - temperature, 0) + 14 * np.maximum(temperature - 21, 0) ** 1.3
    noise = np.zeros(len(times))
    shocks = random.normal(0, 18, len(times))
    for index in range(1, len(times)):  # AR(1) noise: a few hours' memory
        noise[index] = 0.6 * noise[index - 1] + shocks[index]
    y = level * profile + load + noise
    frame = pd.DataFrame(
        {"unique_id": "demand", "ds": times, "y": y.round(2), "temperature": temperature.round(2), "workday": workday}
    )
    cut = days * 24
    return frame.iloc[:cut], frame.iloc[cut:].drop(columns="y")


def write_data(folder: str, days: int, seed: int) -> tuple[str, str]:
    history, future = generated(days, seed)
    data, future_path = os.path.join(folder, "hourly.csv"), os.path.join(folder, "hourly-future.csv")
    history.to_csv(data, index=False)
    future.to_csv(future_path, index=False)
    return data, future_path


def sweep_arguments(data: str, future: str) -> list[str]:
    return ["--data", data, "--horizon", str(HORIZON), "--futr-exog", *COVARIATES, "--futr-data", future]


def run_sweep(data: str, future: str, args: argparse.Namespace, storage: str) -> dict:
    """The whole command in a fresh process with the code of args.checkout, stopped after args.sweep_timeout."""
    name = f"long-seed{args.seed}{args.label}"
    command = [sys.executable, "-m", "sweeps.run", "panel", *sweep_arguments(data, future), "--seed", str(args.seed)]
    command += ["--storage-path", storage, "--name", name, *args.extra]
    environment = {**os.environ, "PYTHONPATH": str(args.checkout)}
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command, cwd=args.checkout, capture_output=True, text=True, env=environment, timeout=args.sweep_timeout
        )
        wall, finished, log = time.perf_counter() - started, done.returncode == 0, done.stdout + done.stderr
    except subprocess.TimeoutExpired as stopped:
        wall, finished = time.perf_counter() - started, False
        log = "".join(
            part.decode() if isinstance(part, bytes) else part or "" for part in (stopped.stdout, stopped.stderr)
        )
        subprocess.run(["ray", "stop", "--force"], capture_output=True)  # the embedded Ray it left behind
    Path(storage, f"{name}.log").write_text(log)
    folder = Path(storage, name)
    row: dict = {"command": shlex.join(command), "whole_command_seconds": round(wall, 1), "finished": finished}
    if not finished:
        row["stopped"] = f"not finished after {wall:.0f} s (--sweep-timeout {args.sweep_timeout}): {log[-800:]}"
    row |= trial_epochs(folder)
    best = folder / "best_config.json"
    if best.exists():
        answer = json.loads(best.read_text())["answer"]
        row["answer_test_smape"] = _round(answer.get("test_smape"))
        row["baselines_test_smape"] = {
            method: _round(values.get("test_smape")) if "unavailable" not in values else values["unavailable"]
            for method, values in answer["baselines"].items()
        }
    timings = folder / "timings.json"
    if timings.exists():
        record = json.loads(timings.read_text())
        row["phases"] = {phase["phase"]: phase["seconds"] for phase in record["phases"]}
        row["tasks"] = {
            kind: {key: tasks[key] for key in ("tasks", "task_seconds", "span_seconds", "last_ended_after")}
            for kind, tasks in record["tasks"].items()
        }
        held = [task for task in record.get("each_task", []) if task["kind"] == "baselines"]
        if held:  # how long each baseline's task held its slot, beside the longest trial
            row["baseline_task_seconds"] = {task["label"]: task["seconds"] for task in held}
            longest = max((shape["longest_trial_seconds"] for shape in row["shapes"].values()), default=None)
            row["longest_baseline_task_over_longest_trial"] = (
                round(max(task["seconds"] for task in held) / longest, 3) if longest else None
            )
    return row


def trial_epochs(folder: Path) -> dict:
    """Per shape: its trials, epochs run, lookbacks, median seconds per epoch (every epoch after each trial's first,
    whose time holds the trial's start-up) and its longest trial's seconds, from the trials' own records (each trial's
    progress.csv, its shape from the trial's folder name and results.csv or, for a sweep stopped before it wrote that,
    from its configuration in the experiment's state), finished or not."""
    import pandas as pd

    configs = {}
    if (folder / "results.csv").exists():
        table = pd.read_csv(folder / "results.csv")
        configs = {row.trial_id: (row.shape, row.input_chunk_length) for row in table.itertuples()}
    else:
        for state in folder.glob("experiment_state-*.json"):
            configs |= _configs_from_state(state)
    shapes: dict[str, dict] = {}
    for progress in folder.glob("*/progress.csv"):
        trial = next((trial for trial in configs if trial in progress.parent.name), None)
        if trial is None or not progress.stat().st_size:
            continue
        shape, lookback = configs[trial]
        seconds = pd.read_csv(progress)["time_this_iter_s"].to_numpy()
        entry = shapes.setdefault(shape, {"trials": 0, "epochs": 0, "seconds": [], "lookbacks": set(), "longest": 0.0})
        entry["trials"] += 1
        entry["epochs"] += len(seconds)
        entry["seconds"] += list(seconds[1:] if len(seconds) > 1 else seconds)
        entry["lookbacks"].add(int(lookback))
        entry["longest"] = max(entry["longest"], float(seconds.sum()))
    return {
        "shapes": {
            shape: {
                "trials": entry["trials"],
                "epochs": entry["epochs"],
                "lookbacks": sorted(entry["lookbacks"]),
                "seconds_per_epoch": round(statistics.median(entry["seconds"]), 3) if entry["seconds"] else None,
                "longest_trial_seconds": round(entry["longest"], 1),
            }
            for shape, entry in sorted(shapes.items())
        }
    }


def _configs_from_state(state: Path) -> dict:
    """{trial id: (shape, input_chunk_length)} from Tune's experiment state (its trials' JSON, config inside)."""
    found = {}
    for text in json.loads(state.read_text()).get("trial_data", []):
        trial = json.loads(text[0]) if isinstance(text, list) else json.loads(text)
        config = trial.get("config", {})
        if "shape" in config:
            found[trial["trial_id"]] = (config["shape"], config.get("input_chunk_length", 0))
    return found


def run_baselines(data: str, future: str, args: argparse.Namespace) -> dict:
    """Each baseline the sweep plans, alone in a fresh process on one CPU, as its task runs it."""
    names = json.loads(_in_checkout(args, ["--list-baselines", data, future], None).strip().splitlines()[-1])
    found = {}
    for name in names:
        try:
            text = _in_checkout(args, ["--one-baseline", name, data, future], args.baseline_timeout)
            found[name] = json.loads(text.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            found[name] = {"seconds": None, "stopped": f"not finished after {args.baseline_timeout} s"}
        print(json.dumps({name: found[name]}), file=sys.stderr, flush=True)
    return found


def _in_checkout(args: argparse.Namespace, inner: list[str], timeout: float | None) -> str:
    command = [sys.executable, str(Path(__file__).resolve()), *inner]
    environment = {**os.environ, "BENCH_CHECKOUT": str(args.checkout), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        command, cwd=args.checkout, capture_output=True, text=True, env=environment, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(command)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def _plan(data: str, future: str):
    from sweeps.plan.options import SweepOptions
    from sweeps.plan.sweep_plan import make_plan

    options = SweepOptions(
        sweep="panel", data=data, horizon=HORIZON, futr_exog=list(COVARIATES), futr_data=future, storage_path=None
    )
    return make_plan(options)


def list_baselines(data: str, future: str) -> None:
    from sweeps.answer.baselines import plan_baselines

    print(json.dumps(list(plan_baselines(_plan(data, future)).names)))


def one_baseline(name: str, data: str, future: str) -> None:
    """Baseline `name` as one of the sweep's tasks runs it on this one series (its only chunk): seconds, and how many
    points it fit on where the task says."""
    import sweeps.answer.baselines as baselines

    plan = _plan(data, future)
    fitting = baselines.plan_baselines(plan)
    windows = getattr(baselines, "later_windows", None)  # an earlier commit's: one validation window, no later ones
    size = plan.parts.window_size if windows else None
    jobs = [
        (part, history, size if part == "validation" and size else int(scored.lengths.max()))
        for part, history, scored in baselines.scored_parts(plan)
    ]
    chunk = (jobs, windows(plan), plan.panel) if windows else (jobs, plan.panel)
    if hasattr(fitting, "of"):  # a Baseline object per name, made for the plan's seasons
        options = (fitting.of(name), chunk, HORIZON, plan.distribution_levels, plan.future_levels)
        options += (fitting.fit_points.get(name),)
    else:  # an earlier commit's: names, MSTL's seasons beside them, and before 2026-12-06 no fit points
        options = (name, chunk, HORIZON, plan.distribution_levels, plan.future_levels, fitting.mstl_seasons)
        options += tuple([fitting.fit_points.get(name)] if hasattr(fitting, "fit_points") else [])
    started = time.perf_counter()
    found = baselines.baseline_chunk(*options)
    seconds = time.perf_counter() - started
    row = {"seconds": round(seconds, 2)}
    if "unavailable" in found:
        row["unavailable"] = found["unavailable"]
    if getattr(fitting, "fit_points", {}).get(name):
        row["fit_points"] = fitting.fit_points[name]
    print(json.dumps(row))


def _round(value):
    return None if value is None else round(float(value), 3)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--list-baselines":
        return list_baselines(*sys.argv[2:4])
    if len(sys.argv) > 1 and sys.argv[1] == "--one-baseline":
        return one_baseline(*sys.argv[2:5])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkout", type=Path, default=ROOT, help="run with the code of this worktree")
    parser.add_argument("--label", default="", help="appended to the sweep's folder name (-before, -after)")
    parser.add_argument("--sweep-timeout", type=float, default=3600, help="stop the sweep after this many seconds")
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument("--baseline-timeout", type=float, default=1200)
    parser.add_argument("--storage", help="keep the data and the sweep's folder there (default: a temporary folder)")
    parser.add_argument("--out", help="also write the JSON there")
    parser.add_argument("extra", nargs="*", help="more options for the sweep, after --")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as temporary:
        storage = args.storage or temporary
        os.makedirs(storage, exist_ok=True)
        data, future = write_data(storage, args.days, args.seed)
        report: dict = {
            "bench": "long_series",
            "cpus": os.cpu_count(),
            "checkout": str(args.checkout),
            "data": {"days": args.days, "points": args.days * 24, "horizon": HORIZON, "seed": args.seed},
        }
        if not args.no_baselines:
            report["baselines_alone"] = run_baselines(data, future, args)
        if not args.no_sweep:
            report["sweep"] = run_sweep(data, future, args, storage)
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
