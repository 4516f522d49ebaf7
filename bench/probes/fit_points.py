"""How many of a long series' last points each statistical baseline needs (issue 73): each baseline fit on the last N
points before each of several inner windows, its sMAPE on the window and its seconds, for N from a few weeks to the
whole history. Only inner windows: the points before the data's test window (its last `horizon`), never the test
window itself, so the rule chosen here is not chosen on a hold-out.

The data: the generated year of hourly demand of bench/long_series.py (horizon 48, seasons 24 and 168, two known-ahead
covariates, which AutoARIMA with covariates reads), and taylor (R forecast's half-hourly demand, 4,032 points, horizon
48, seasons 48 and 336; read from pmdarima's wheel, as bench/covariates.py does: `--data-dir`).

Each fit is forecaster.baselines.fit_baseline, what a sweep's baseline task runs, on one CPU.

    python bench/probes/fit_points.py [--data-dir DIR] [--windows 4] [--points 336 672 1344 2688 5376 0]
        [--methods AutoETS Theta AutoCES MSTL "AutoARIMA with covariates"] [--out FILE]

--points 0 is the whole history. Prints JSON: per dataset, method and N, the mean sMAPE over the windows, the mean
seconds per fit, and N in cycles of the longest season the method reads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

METHODS = ("AutoETS", "Theta", "AutoCES", "MSTL", "AutoARIMA with covariates")
ARIMA_MOST = 2688
"""AutoARIMA with covariates is not fit on more (its fit on the whole year takes over 15 minutes)."""


def smape(actual: np.ndarray, forecast: np.ndarray) -> float:
    return float(np.mean(200 * np.abs(actual - forecast) / (np.abs(actual) + np.abs(forecast))))


def datasets(data_dir: str | None, folder: str) -> dict:
    from long_series import COVARIATES, HORIZON, write_data

    from forecaster.data.read import load_panel

    data, _ = write_data(folder, 365, 0)
    found = {"generated hourly": (load_panel(data, futr_exog=list(COVARIATES)), HORIZON)}
    if data_dir:
        from covariates import write_taylor

        found["taylor"] = (load_panel(write_taylor(data_dir, folder)), 48)
    return found


def probe(panel, horizon: int, windows: int, points: list[int], methods: list[str]) -> dict:
    from forecaster.baselines import fit_baseline, panel_baselines

    inner, _ = panel.split_last(horizon)  # the test window never takes part
    fitting = panel_baselines(inner)
    seasons = fitting.of("MSTL").seasons if "MSTL" in fitting.names else ()
    rows = {}
    for method in methods:
        if method == "AutoARIMA with covariates" and (inner.covariates is None or not inner.covariates.futr_count):
            continue
        for count in points:
            if method == "AutoARIMA with covariates" and (count == 0 or count > ARIMA_MOST):
                continue
            scores, seconds = [], []
            for back in range(windows, 0, -1):
                history, window = inner.split_last(back * horizon)
                window = window.split_at(np.array([horizon]))[0]
                if count:
                    history = history.split_at(np.maximum(history.lengths - count, 0))[1]
                started = time.perf_counter()
                found, _ = fit_baseline(method, history, horizon, (), seasons if method == "MSTL" else ())
                seconds.append(time.perf_counter() - started)
                scores.append(smape(window.values, found.values[:, 0]))
            rows[f"{method} @ {count or 'all'}"] = {
                "method": method,
                "points": count or int(inner.lengths[0]) - horizon,
                "smape": round(float(np.mean(scores)), 3),
                "smape_by_window": [round(score, 2) for score in scores],
                "seconds": round(float(np.mean(seconds)), 2),
            }
            print(json.dumps({method: rows[f"{method} @ {count or 'all'}"]}), file=sys.stderr, flush=True)
    return {"seasons": {"panel": panel.season, "mstl": list(seasons)}, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", help="where pmdarima's wheel is, for taylor (pip download --no-deps ...)")
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--points", type=int, nargs="+", default=[336, 672, 1344, 2688, 5376, 0])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--datasets", nargs="+", help="some of: 'generated hourly' taylor")
    parser.add_argument("--out")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    report = {"bench": "fit_points", "windows": args.windows, "cpus": os.cpu_count(), "datasets": {}}
    with tempfile.TemporaryDirectory() as folder:
        for name, (panel, horizon) in datasets(args.data_dir, folder).items():
            if args.datasets and name not in args.datasets:
                continue
            report["datasets"][name] = probe(panel, horizon, args.windows, args.points, args.methods)
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
