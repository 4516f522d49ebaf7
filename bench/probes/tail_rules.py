"""How the answer's members are trained after the trials, measured where it may be chosen: on kept `panel` sweeps of
inner windows (`python bench/panel.py --inner K --storage DIR`), never on an official hold-out.

For each sweep folder, from the same members (the answer's top trials and their best models, as the sweep chose
them), the mean forecast of the test window by:

- the trials' own nets, as they trained them (no refit);
- the sweep's refit from scratch (its `forecasts.parquet`, where the sweep that made the folder refit);
- each net continued on every point before the test window (`forecaster.training.train.fit_through` from the trial's
best
  model, its moving average and, for the hybrid, its per-series smoothing) for a share f of its trial's best epoch
  count (at least 1 epoch), f in `--shares`.

With `--future` (a folder of an inner window K >= 2, whose next H points are in the panel's in-sample part), the
future's forecast of those H points by each continued net continued again by the same share on every point, or not
at all (the refit net itself), beside the sweep's own future (`future.parquet`, from scratch).

And the intervals on the test window: the sweep's own (calibrated on fits of the members trained again from scratch),
and conformal on the members' validation errors, in several scales (see `interval_methods`), around the answer made
by continuing for the share `--interval-share`.

    python bench/probes/tail_rules.py FOLDER [FOLDER ...] [--shares 0.1 0.25 0.5] [--future] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def member_forecasts(best_model: bytes, best_epochs: int, parts: dict, shares: list[float], future: bool) -> dict:
    """One member's forecasts (flat, in each part's row order, or (H, S) for the future), as a Ray task."""
    import io

    import torch

    from forecaster.training.net import RNNNet
    from forecaster.training.train import fit_through

    torch.set_num_threads(1)
    model = RNNNet.load_best_model(io.BytesIO(best_model))
    train, val, seen, test, whole = parts["train"], parts["val"], parts["seen"], parts["test"], parts["whole"]
    horizon = int(test.lengths.max())
    found = {
        "validation": model.forecast_part(train, val),
        "as trained": model.forecast_part(seen, test),
        "in-sample before validation": in_sample(model, train, horizon),
        "continued": {},
        "future": {},
        "seconds": {},
    }
    for share in shares:
        k = continued_epochs(share, best_epochs)
        started = time.perf_counter()
        net, _ = fit_through(model.config, k, seen, start=model)
        found["seconds"][share] = time.perf_counter() - started
        found["continued"][share] = {
            "test": net.forecast_part(seen, test),
            "in-sample before test": in_sample(net, seen, horizon),
        }
        for k_future in (0, k) if future else ():
            again, _ = fit_through(model.config, k_future, whole, start=net)
            found["future"][(share, k_future > 0)] = again.forecast_columns(whole, horizon)
    return found


def continued_epochs(share: float, best_epochs: int) -> int:
    return max(1, round(share * best_epochs))


def in_sample(model, panel, horizon: int) -> np.ndarray:
    """(S,) the model's mean absolute error on each series' last `horizon` points of `panel`, forecast from before
    them (points it trained on: a measure of how hard each series is for it, taken before the window it scores)."""
    history, last = panel.split_at(np.maximum(panel.lengths - horizon, 1))
    try:
        forecast = model.forecast_part(history, last)
    except ValueError:  # a recurrent net reads more points than the shortest history holds
        keep = history.lengths >= model.points_read
        found = np.full(len(panel), np.nan)
        if keep.any():
            found[keep] = in_sample(model, panel.take(keep), horizon)
        return found
    missed = np.abs(last.values - forecast)
    return np.add.reduceat(missed, last.offsets[:-1]) / last.lengths


def scores(actual, forecast, seen) -> dict:
    from forecaster.metrics import mase_scales, panel_scores

    series, scored = actual.shape[1], np.isfinite(actual)
    actual, forecast = np.where(scored, actual, 1.0), np.where(scored, forecast, 1.0)
    result = panel_scores(actual, forecast, scored * 1.0, np.arange(series), series, mase_scales(seen))
    return {metric: round(float(result[metric]), 3) for metric in ("smape", "mase")}


def grid(part, flat) -> np.ndarray:
    """A part's flat values as (H, S), NaN past a series' end."""
    h = int(part.lengths.max())
    out = np.full((h, len(part)), np.nan)
    out[part.cells] = flat
    return out


def interval_methods(plan, folder: str, members: list[dict], k: float) -> dict:
    """Coverage (80, 95) and MSIS (95) on the test window of: the sweep's own intervals (around its refit answer),
    its calibration's scaled errors around the answer continued for k epochs, and conformal on the members' validation
    errors (the trials' nets forecasting the validation part from the end of training) around that answer, each
    series' scale the geometric mean of its MASE scale and the same over its last horizon (over the points before the
    window calibrated, as the test's over the points before the test), with or without a third part: each net's
    in-sample error over the last horizon before the window (its own training points)."""
    import pandas as pd

    from forecaster.answer.intervals import bands, conformal_quantiles, interval_scales, interval_scores
    from forecaster.metrics import mase_scales

    train, val, seen, test = plan.parts.train, plan.parts.val, plan.parts.seen, plan.parts.test
    levels = (80.0, 95.0)
    h = int(test.lengths.max())
    actual = grid(test, test.values)
    answer = grid(test, np.mean([m["continued"][k]["test"] for m in members], axis=0))
    lowest = np.minimum.reduceat(seen.values, seen.offsets[:-1])
    floor = np.where(lowest >= 0, 0.0, -np.inf)
    msis_scale = mase_scales(seen)
    msis_scale = np.where(msis_scale > 0, msis_scale, np.nan)
    validation = grid(val, np.mean([m["validation"] for m in members], axis=0))
    validation_error = np.nanmean(np.abs(grid(val, val.values) - validation), axis=0)
    missed = np.abs(grid(val, val.values) - validation)
    before_val = np.nanmean([m["in-sample before validation"] for m in members], axis=0)
    before_test = np.nanmean([m["continued"][k]["in-sample before test"] for m in members], axis=0)
    none = np.full(len(train), np.nan)
    methods = {}
    frame = pd.read_parquet(Path(folder, "forecasts.parquet"))
    tested = frame[frame["part"] == "test"]
    if "answer-lo-80" in tested:
        methods["the sweep's (calibration fits from scratch, around its refit answer)"] = {
            level: (grid(test, tested[f"answer-lo-{level:g}"]), grid(test, tested[f"answer-hi-{level:g}"]))
            for level in levels
        }
    calibration = Path(folder, "calibration.parquet")
    if calibration.exists():
        points = pd.read_parquet(calibration)
        points["score"] = (points["y"] - points["forecast"]).abs() / points["scale"]
        errors = points.pivot_table(index="step", columns=["unique_id", "origin_points"], values="score").to_numpy()
        methods["the sweep's calibration errors, around the continued answer"] = bands(
            answer, interval_scales(train, h, validation_error), conformal_quantiles(errors, levels), floor
        )
    for name, (then, now) in {
        "MASE and recent": (interval_scales(train, h, none), interval_scales(seen, h, none)),
        "MASE, recent and in-sample error": (
            interval_scales(train, h, before_val),
            interval_scales(seen, h, before_test),
        ),
        "MASE, recent and validation error (circular on the calibration points)": (
            interval_scales(train, h, validation_error),
            interval_scales(train, h, validation_error),
        ),
    }.items():
        quantiles = conformal_quantiles(missed / then[None, :], levels)
        methods[f"conformal on the validation errors, scale {name}"] = bands(answer, now, quantiles, floor)
    found = {}
    for method, by_level in methods.items():
        found[method] = {}
        for level, (lower, upper) in by_level.items():
            result = interval_scores(actual, lower, upper, msis_scale, level)
            inside = (actual >= lower) & (actual <= upper)
            found[method][f"coverage_{level:g}"] = round(float(inside[np.isfinite(actual)].mean() * 100), 2)
            if level == 95:
                found[method]["msis_95"] = round(float(np.nanmean(result["msis"])), 3)
    return found


def measure(folder: str, shares: list[float], future: bool, interval_share: float) -> dict:
    import pandas as pd
    import ray

    from forecaster.data.read import load_panel
    from sweeps.answer.members import top_checkpoints
    from sweeps.plan.record import read_plan
    from sweeps.trials.results import collect

    started = time.perf_counter()
    plan = read_plan(folder)
    results = collect(plan)
    epochs = results.trials.set_index("trial_id")["best_epoch"]
    shapes = results.trials.set_index("trial_id")["shape"]
    chosen = [  # the answer's members, as the sweep chose them (sweeps.answer.members)
        (trial_id, Path(path, "best_model.ckpt").read_bytes(), int(epochs[trial_id]), shapes[trial_id])
        for trial_id, path in top_checkpoints(plan, results)
        if Path(path, "best_model.ckpt").exists()
    ]
    train, val, seen, test, whole = plan.parts.train, plan.parts.val, plan.parts.seen, plan.parts.test, plan.panel
    h = int(test.lengths.max())
    truth = None
    if future:  # the next H points after the panel: the in-sample part's, for an inner window 2 or more back
        source = load_panel(str(plan.panel.source).split("-inner")[0].rsplit("/", 1)[-1])
        in_sample_part, _ = source.split_last(source.horizon)
        rows = {series_id: i for i, series_id in enumerate(in_sample_part.ids)}
        truth = np.full((h, len(whole)), np.nan)
        for column, series_id in enumerate(whole.ids):
            values = in_sample_part.series(rows[series_id]).to_numpy()
            after = values[whole.lengths[column] : whole.lengths[column] + h]
            truth[: len(after), column] = after
    parts = ray.put({"train": train, "val": val, "seen": seen, "test": test, "whole": whole})
    task = ray.remote(num_cpus=1)(member_forecasts)
    found = ray.get([task.remote(best_model, best, parts, shares, future) for _, best_model, best, _ in chosen])
    actual = grid(test, test.values)
    row = {
        "folder": folder,
        "series": len(test),
        "members": [trial_id for trial_id, _, _, _ in chosen],
        "shapes": [shape for _, _, _, shape in chosen],
        "best_epochs": [best for _, _, best, _ in chosen],
        "test": {"as trained": scores(actual, grid(test, np.mean([f["as trained"] for f in found], 0)), seen)},
        "continue_seconds": {f: round(float(np.sum([m["seconds"][f] for m in found])), 1) for f in shares},
    }
    frame = pd.read_parquet(Path(folder, "forecasts.parquet"))
    tested = frame[frame["part"] == "test"]
    if "answer before refit" in tested:
        row["test"]["refit from scratch (the sweep's)"] = scores(actual, grid(test, tested["answer"].to_numpy()), seen)
    for share in shares:
        mean = np.mean([f["continued"][share]["test"] for f in found], axis=0)
        row["test"][f"continued {share:g} of the best epochs"] = scores(actual, grid(test, mean), seen)
    if future:
        row["future"] = {}
        future_path = Path(folder, "future.parquet")
        if future_path.exists():
            table = pd.read_parquet(future_path)
            table["step"] = table.groupby("unique_id", sort=False).cumcount()
            pivot = table.pivot(index="step", columns="unique_id", values="answer")[list(whole.ids)].to_numpy()
            row["future"]["from scratch (the sweep's)"] = scores(truth, pivot, whole)
            for name in ("AutoETS", "Theta", "AutoCES"):
                if name in table:
                    other = table.pivot(index="step", columns="unique_id", values=name)[list(whole.ids)].to_numpy()
                    row["future"][name] = scores(truth, other, whole)
        for share in shares:
            for again in (False, True):
                mean = np.mean([f["future"][(share, again)] for f in found], axis=0)
                name = f"continued {share:g}, then {'the same again' if again else 'not again'}"
                row["future"][name] = scores(truth, mean, whole)
    if interval_share in shares:
        row["intervals"] = interval_methods(plan, folder, found, interval_share)
    row["seconds"] = round(time.perf_counter() - started, 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--shares", type=float, nargs="+", default=[0.1, 0.25, 0.5])
    parser.add_argument("--future", action="store_true", help="score the future too (inner windows 2 or more back)")
    parser.add_argument("--interval-share", type=float, default=0.25)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()

    import ray

    os.environ.setdefault("RAY_worker_niceness", "0")  # as a sweep's own Ray: its tasks at the driver's priority
    ray.init(num_cpus=args.cpus, include_dashboard=False, logging_level="ERROR")
    rows = []
    for folder in args.folders:
        row = measure(folder, args.shares, args.future, args.interval_share)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    text = json.dumps({"bench": "tail_rules", "rows": rows}, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
