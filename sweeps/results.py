"""The trials of a sweep read back from its storage: one row per trial with its status, best score (on the sweep's
metric) and faults, each trial's history, and the best trial.

A row's status comes from what Tune recorded and what the trial reported: COMPLETED (all epochs), STOPPED
(by its scheduler), DIVERGED, ERROR (the fault log says so even where Tune's snapshot is stale), UNFINISHED
or PENDING.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from sweeps.plan import SweepPlan
from sweeps.storage import SweepFolder

STATUS_ORDER = {"COMPLETED": 0, "STOPPED": 1, "UNFINISHED": 2, "DIVERGED": 3, "ERROR": 4, "PENDING": 5}
CHOOSABLE = ("COMPLETED", "STOPPED", "UNFINISHED")
"""The statuses whose trials can be the best: not failed, not diverged."""


@dataclasses.dataclass
class SweepResults:
    trials: pd.DataFrame
    """One row per trial, best first."""
    histories: dict[str, pd.DataFrame]
    """Each trial's reported rows (epoch, val_mape, val_smape, val_mase, best_val_<metric>, train_loss, ...)."""
    best: dict[str, Any] | None
    """The best trial: config, best_val_<metric>, best_epoch, trial_id, checkpoint; None if no trial reported."""
    metric: str = "mape"
    """The sweep's ranking metric: the columns best_val_<metric> and last_val_<metric>."""


def collect(plan: SweepPlan) -> SweepResults:
    """Read every trial of the sweep back from its storage."""
    import logging

    from ray.tune import ExperimentAnalysis

    # Trials that never started have no metrics yet; the table says PENDING, the warning would only repeat it.
    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)

    metric = plan.sweep.metric
    ranked = plan.sweep.ranked
    analysis = ExperimentAnalysis(plan.experiment_path, default_metric=ranked, default_mode="min")
    faults: dict[str, list[str]] = {}
    for fault in SweepFolder(plan.experiment_path).faults():
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
        # Under PBT a trial that took over another's weights reports the donor's best: between equal bests, the
        # trial whose own epochs produced it comes first (its configuration trained that model; a refit of it
        # reproduces it).
        trials["_inherited"] = [
            not _trained_its_best(histories.get(trial_id), best, metric)
            for trial_id, best in zip(trials["trial_id"], trials[ranked])
        ]
        trials = (
            trials.sort_values(
                [ranked, "_inherited", "status"],
                key=lambda c: c.map(STATUS_ORDER) if c.name == "status" else c,
                na_position="last",
            )
            .drop(columns="_inherited")
            .reset_index(drop=True)
        )
    return SweepResults(trials=trials, histories=histories, best=_best(trials, analysis, metric), metric=metric)


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
    metric = plan.sweep.metric
    best_score, best_epoch = _trial_best(history, metric) if reported else (math.nan, None)
    row = {"trial_id": trial.trial_id, "status": status}
    row.update({key: trial.config.get(key) for key in plan.sweep.space})
    row.update(
        {
            f"best_val_{metric}": best_score,
            "best_epoch": best_epoch,
            f"last_val_{metric}": float(history[f"val_{metric}"].iloc[-1]) if reported else math.nan,
            "epochs": epochs,
            "train_loss": float(history["train_loss"].iloc[-1]) if reported else math.nan,
            "seconds": float(trial.last_result.get("time_total_s", math.nan)) if trial.last_result else math.nan,
            # Each retried from the latest checkpoint while retries remain.
            "failures": max(int(trial.num_failures), faults.count("retried") + faults.count("failed")),
            "node": str(history["node"].iloc[-1]) if reported and "node" in history else "",
            "error": _error_line(trial) if status == "ERROR" else "",
            "notes": _notes(status, history, faults.count("watchdog"), plan),
        }
    )
    return row


def _trained_its_best(history: pd.DataFrame | None, best: float, metric: str) -> bool:
    return history is not None and bool(np.isclose(history[f"val_{metric}"].min(), best))


def _trial_best(history: pd.DataFrame, metric: str) -> tuple[float, int | None]:
    """The trial's best score and its epoch, as its last report says: the lowest over all its epochs, and the
    model its latest checkpoint holds. (After a PBT exploitation that is the donor's best, whose weights the
    trial took over; the history's own minimum may be of weights that exist no more.) A diverged trial's
    report says inf: its best is then its lowest finite score before it diverged, for the table only."""
    last = history.iloc[-1]
    ranked, scores = f"best_val_{metric}", f"val_{metric}"
    if ranked in history and np.isfinite(last[ranked]) and last.get("diverged", 0) != 1:
        return float(last[ranked]), int(last["best_epoch"])
    finite = history[np.isfinite(history[scores]) & (history.get("diverged", 0) != 1)]
    if not len(finite):
        return math.nan, None
    row = finite.loc[finite[scores].idxmin()]
    return float(row[scores]), int(row["epoch"])


def _notes(status: str, history, watchdog_kills: int, plan: SweepPlan) -> str:
    notes = []
    if status == "DIVERGED":
        row = history.iloc[-1]
        notes.append(
            f"diverged at epoch {int(row['epoch'])} (training loss {row['train_loss']:.3g}): stopped, "
            "never chosen as best"
        )
    if watchdog_kills:
        notes.append(
            f"reported nothing for {plan.trial_timeout_s:g} s and was killed by the watchdog {watchdog_kills} time(s)"
        )
    return "; ".join(notes)


def _error_line(trial) -> str:
    """The last line of the trial's error that names the exception: what went wrong, in one line."""
    error = trial.get_error()
    text = str(error) if error else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    named = [line for line in lines if "Error" in line.split(":", 1)[0] or "Exception" in line.split(":", 1)[0]]
    return (named or lines or ["unknown error"])[-1][:500]


def _best(trials: pd.DataFrame, analysis, metric: str) -> dict[str, Any] | None:
    ranked = f"best_val_{metric}"
    usable = trials[trials["status"].isin(CHOOSABLE) & trials[ranked].notna()] if len(trials) else trials
    if not len(usable):
        return None
    row = usable.iloc[0]
    trial = next(t for t in analysis.trials if t.trial_id == row["trial_id"])
    checkpoint = analysis.get_last_checkpoint(trial)  # holds the trial's best model so far (BEST_MODEL_FILE)
    return {
        "trial_id": row["trial_id"],
        "config": {key: _plain(value) for key, value in trial.config.items()},
        "metric": metric,
        ranked: float(row[ranked]),
        "best_epoch": int(row["best_epoch"]),
        "epochs": int(row["epochs"]),
        "status": row["status"],
        "checkpoint": checkpoint.path if checkpoint else None,
    }


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
