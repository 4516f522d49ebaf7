"""What a sweep leaves in its folder, and how it is read back.

At the start: `sweep_plan.pkl` (the plan, the series included, so that resume, report and refit need
nothing but the folder) and `resolved_sweep.json` (the same for people, with the git commit).
At the end: `results.csv` and `results.parquet` (one row per trial), `best_config.json`, `forecast.png`
(the best trial's forecast of the validation months) and `mape_by_epoch.png` (every trial's curve; the
early-stopped ones end early). The folder may be local or on s3:// or gs:// (pyarrow's filesystems).
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import json
import math
import pickle
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sweeps.plan import SweepPlan, located

PLAN_FILE = "sweep_plan.pkl"
STATUS_ORDER = {"COMPLETED": 0, "STOPPED": 1, "UNFINISHED": 2, "DIVERGED": 3, "ERROR": 4, "PENDING": 5}
CHOOSABLE = ("COMPLETED", "STOPPED", "UNFINISHED")
"""The statuses whose trials can be the best: not failed, not diverged."""


# --- the folder, wherever it is ------------------------------------------------------------------------

def _filesystem(path: str):
    """pyarrow's filesystem and path for a folder: a local path (relative ones too), s3://... or gs://..."""
    import pyarrow.fs

    return pyarrow.fs.FileSystem.from_uri(located(path))


def write_bytes(folder: str, name: str, data: bytes) -> str:
    filesystem, root = _filesystem(folder)
    filesystem.create_dir(root, recursive=True)
    with filesystem.open_output_stream(f"{root}/{name}") as stream:
        stream.write(data)
    return f"{folder.rstrip('/')}/{name}"


def read_bytes(folder: str, name: str) -> bytes:
    filesystem, root = _filesystem(folder)
    with filesystem.open_input_stream(f"{root}/{name}") as stream:
        return stream.read()


def save_plan(plan: SweepPlan, command: list[str]) -> None:
    write_bytes(plan.experiment_path, PLAN_FILE, pickle.dumps(plan))
    resolved = {
        "name": plan.name,
        "experiment_path": plan.experiment_path,
        "sweep": plan.sweep.describe(),
        "pinned": dict(plan.pinned),
        "data": {"source": plan.data_label, "points": len(plan.series), "first": str(plan.series.index[0].date()),
                 "last": str(plan.series.index[-1].date()), "freq": plan.series.index.freqstr,
                 "split_after": plan.sweep.split_after},
        "resources_per_trial": dataclasses.asdict(plan.resources) | {"described": plan.resources.describe()},
        "seed": plan.seed,
        "max_concurrent_trials": plan.max_concurrent_trials,
        "smoke_test": plan.smoke_test,
        "command": " ".join(command),
        "git_commit": _git_commit(),
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "versions": _versions(),
    }
    write_bytes(plan.experiment_path, "resolved_sweep.json", json.dumps(resolved, indent=2, default=str).encode())


def load_plan(experiment_path: str) -> SweepPlan:
    """The plan stored in a sweep's folder, pointing at that folder wherever it is now (a local copy of a
    sweep run on s3://, a folder moved since)."""
    experiment_path = located(experiment_path)
    try:
        plan = pickle.loads(read_bytes(experiment_path, PLAN_FILE))
    except (FileNotFoundError, OSError):
        raise FileNotFoundError(f"{experiment_path} holds no {PLAN_FILE}: is it the folder of a sweep?") from None
    storage_path, _, name = experiment_path.rstrip("/").rpartition("/")
    return dataclasses.replace(plan, storage_path=storage_path, name=name)


def _git_commit() -> str | None:
    try:
        root = Path(__file__).resolve().parent.parent
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _versions() -> dict[str, str]:
    """From the installed metadata: importing torch here would delay the sweep's start by seconds."""
    from importlib import metadata

    return {"python": platform.python_version()} | {name: metadata.version(name) for name in ("ray", "torch", "lightning", "pandas")}


# --- the trials ----------------------------------------------------------------------------------------

@dataclasses.dataclass
class SweepResults:
    trials: pd.DataFrame
    """One row per trial, best first."""
    histories: dict[str, pd.DataFrame]
    """Each trial's reported rows (epoch, val_mape, best_val_mape, train_loss, ...)."""
    best: dict[str, Any] | None
    """The best trial: config, best_val_mape, best_epoch, trial_id, checkpoint; None if no trial reported."""


def collect(plan: SweepPlan) -> SweepResults:
    """Read every trial of the sweep back from its storage."""
    import logging

    from ray.tune import ExperimentAnalysis

    # Trials that never started have no metrics yet; the table says PENDING, the warning would only repeat it.
    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
    from sweeps.faults import load_faults

    analysis = ExperimentAnalysis(plan.experiment_path, default_metric="best_val_mape", default_mode="min")
    faults: dict[str, list[str]] = {}
    for fault in load_faults(plan.experiment_path):
        faults.setdefault(fault["trial_id"], []).append(fault["event"])
    histories, rows = {}, []
    for trial in analysis.trials:
        history = analysis.trial_dataframes.get(trial.trial_id)
        if history is not None and "epoch" in history:
            # A trial resumed from a checkpoint reports some epochs twice: keep the latest of each.
            history = history.drop_duplicates("epoch", keep="last").sort_values("epoch").reset_index(drop=True)
            histories[trial.trial_id] = history
        rows.append(_trial_row(trial, history, plan, faults.get(trial.trial_id, [])))
    trials = pd.DataFrame(rows)
    if len(trials):
        trials["best_epoch"] = trials["best_epoch"].astype("Int64")
        trials = trials.sort_values(["best_val_mape", "status"], key=lambda c: c.map(STATUS_ORDER) if c.name == "status" else c,
                                    na_position="last").reset_index(drop=True)
    return SweepResults(trials=trials, histories=histories, best=_best(trials, analysis))


def _trial_row(trial, history, plan: SweepPlan, faults: list[str]) -> dict[str, Any]:
    reported = history is not None and len(history) > 0
    epochs = int(history["epoch"].max()) if reported else 0
    if reported and "diverged" in history and history["diverged"].iloc[-1] == 1:
        status = "DIVERGED"
    elif trial.status == "TERMINATED":
        status = "COMPLETED" if epochs >= plan.sweep.max_epochs else "STOPPED"
    elif trial.status == "ERROR" or faults[-1:] == ["failed"]:  # the fault log: Tune's snapshot can be stale
        status = "ERROR"
    else:
        status = "UNFINISHED" if reported else "PENDING"
    best_val_mape, best_epoch = _trial_best(history) if reported else (math.nan, None)
    row = {"trial_id": trial.trial_id, "status": status}
    row.update({key: trial.config.get(key) for key in plan.sweep.space})
    row.update({
        "best_val_mape": best_val_mape,
        "best_epoch": best_epoch,
        "last_val_mape": float(history["val_mape"].iloc[-1]) if reported else math.nan,
        "epochs": epochs,
        "train_loss": float(history["train_loss"].iloc[-1]) if reported else math.nan,
        "seconds": float(trial.last_result.get("time_total_s", math.nan)) if trial.last_result else math.nan,
        # Each retried from the latest checkpoint while retries remain.
        "failures": max(int(trial.num_failures), faults.count("retried") + faults.count("failed")),
        "node": str(history["node"].iloc[-1]) if reported and "node" in history else "",
        "error": _error_line(trial) if status == "ERROR" else "",
        "notes": _notes(status, history, faults.count("watchdog"), plan),
    })
    return row


def _trial_best(history: pd.DataFrame) -> tuple[float, int | None]:
    """The trial's best MAPE and its epoch, as its last report says: the lowest over all its epochs, and the
    model its latest checkpoint holds. (After a PBT exploitation that is the donor's best, whose weights the
    trial took over; the history's own minimum may be of weights that exist no more.) A diverged trial's
    report says inf: its best is then its lowest finite MAPE before it diverged, for the table only."""
    last = history.iloc[-1]
    if "best_val_mape" in history and np.isfinite(last["best_val_mape"]) and last.get("diverged", 0) != 1:
        return float(last["best_val_mape"]), int(last["best_epoch"])
    finite = history[np.isfinite(history["val_mape"]) & (history.get("diverged", 0) != 1)]
    if not len(finite):
        return math.nan, None
    row = finite.loc[finite["val_mape"].idxmin()]
    return float(row["val_mape"]), int(row["epoch"])


def _notes(status: str, history, watchdog_kills: int, plan: SweepPlan) -> str:
    notes = []
    if status == "DIVERGED":
        row = history.iloc[-1]
        notes.append(f"diverged at epoch {int(row['epoch'])} (training loss {row['train_loss']:.3g}): stopped, "
                     "never chosen as best")
    if watchdog_kills:
        notes.append(f"reported nothing for {plan.trial_timeout_s:g} s and was killed by the watchdog "
                     f"{watchdog_kills} time(s)")
    return "; ".join(notes)


def _error_line(trial) -> str:
    """The last line of the trial's error that names the exception: what went wrong, in one line."""
    error = trial.get_error()
    text = str(error) if error else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    named = [line for line in lines if "Error" in line.split(":", 1)[0] or "Exception" in line.split(":", 1)[0]]
    return (named or lines or ["unknown error"])[-1][:500]


def _best(trials: pd.DataFrame, analysis) -> dict[str, Any] | None:
    usable = trials[trials["status"].isin(CHOOSABLE) & trials["best_val_mape"].notna()] if len(trials) else trials
    if not len(usable):
        return None
    row = usable.iloc[0]
    trial = next(t for t in analysis.trials if t.trial_id == row["trial_id"])
    checkpoint = analysis.get_last_checkpoint(trial)  # holds the trial's best model so far (BEST_MODEL_FILE)
    return {
        "trial_id": row["trial_id"],
        "config": {key: _plain(value) for key, value in trial.config.items()},
        "best_val_mape": float(row["best_val_mape"]),
        "best_epoch": int(row["best_epoch"]),
        "epochs": int(row["epochs"]),
        "status": row["status"],
        "checkpoint": checkpoint.path if checkpoint else None,
    }


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


# --- files and pictures --------------------------------------------------------------------------------

def write_results(plan: SweepPlan, results: SweepResults) -> dict[str, str]:
    """Write the tables, the best configuration and the plots to the sweep's folder; return their paths."""
    folder = plan.experiment_path
    written = {
        "results.csv": write_bytes(folder, "results.csv", results.trials.to_csv(index=False).encode()),
    }
    buffer = io.BytesIO()
    results.trials.to_parquet(buffer, index=False)
    written["results.parquet"] = write_bytes(folder, "results.parquet", buffer.getvalue())
    if results.best:
        best = results.best | {"max_epochs": plan.sweep.max_epochs, "split_after": plan.sweep.split_after,
                               "refit": f"python -m sweeps.refit {folder}"}
        written["best_config.json"] = write_bytes(folder, "best_config.json", json.dumps(best, indent=2).encode())
        forecast_png = _forecast_plot(plan, results.best)
        if forecast_png:
            written["forecast.png"] = write_bytes(folder, "forecast.png", forecast_png)
    if results.histories:
        written["mape_by_epoch.png"] = write_bytes(folder, "mape_by_epoch.png", _curves_plot(plan, results))
    return written


def _forecast_plot(plan: SweepPlan, best: dict[str, Any]) -> bytes | None:
    """The best trial's best checkpoint, forecasting the validation months."""
    if not best.get("checkpoint"):
        return None
    from ray.tune import Checkpoint

    from forecaster.data import split_series
    from forecaster.model import RNNForecaster
    from forecaster.plot import plot_forecast
    from sweeps.reporting import BEST_MODEL_FILE

    train, val = split_series(plan.series, plan.sweep.split_after)
    with Checkpoint(best["checkpoint"]).as_directory() as folder:
        if not (Path(folder) / BEST_MODEL_FILE).exists():
            return None
        model = RNNForecaster.load_from_checkpoint(Path(folder) / BEST_MODEL_FILE, map_location="cpu")
    forecast = pd.Series(model.forecast(train.to_numpy(), len(val)), index=val.index)
    mape = 100 * float(np.mean(np.abs(val.to_numpy() - forecast.to_numpy()) / np.abs(val.to_numpy())))
    buffer = io.BytesIO()
    c = best["config"]
    plot_forecast(train, val, forecast, buffer, title=f"{plan.name}: best trial {best['trial_id']} ({c['model']}, "
                  f"hidden {c['hidden_dim']} x {c['n_rnn_layers']}), its best model: MAPE {mape:.2f} %")
    return buffer.getvalue()


def _curves_plot(plan: SweepPlan, results: SweepResults) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(10, 5), layout="constrained")
    best_id = results.best["trial_id"] if results.best else None
    status = dict(zip(results.trials["trial_id"], results.trials["status"]))
    ceiling = 0.0
    for trial_id, history in results.histories.items():
        values = history["val_mape"].where(np.isfinite(history["val_mape"]))
        is_best = trial_id == best_id
        axes.plot(history["epoch"], values, linewidth=2.0 if is_best else 0.7, alpha=1.0 if is_best else 0.45,
                  color="tab:red" if is_best else ("0.55" if status.get(trial_id) == "STOPPED" else "tab:blue"),
                  label=f"best trial {trial_id}" if is_best else None, zorder=3 if is_best else 1)
        ceiling = max(ceiling, float(np.nanpercentile(values, 90)) if values.notna().any() else 0.0)
    axes.set_ylim(0, max(ceiling, 1.0) * 1.1)
    axes.set_xlabel("epoch")
    axes.set_ylabel("validation MAPE (%)")
    axes.set_title(f"{plan.name}: validation MAPE of every trial (grey: stopped early, blue: ran to the end)")
    if best_id:
        axes.legend(loc="upper right")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()


def summary_table(trials: pd.DataFrame, searched: list[str], rows: int = 10) -> str:
    """The top trials as a text table, for the terminal."""
    columns = ["trial_id", "status", "best_val_mape", "best_epoch", "epochs", *[c for c in searched if c in trials]]
    shown = trials[columns].head(rows).copy()
    for column in ("best_val_mape", "lr", "dropout"):
        if column in shown:
            shown[column] = shown[column].map(lambda v: f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else v)
    return shown.to_string(index=False)
