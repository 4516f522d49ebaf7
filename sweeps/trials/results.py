"""The trials of a sweep read back from its storage: one row per trial with its status, best score (on the sweep's
metric) and faults, each trial's history and latest checkpoint, and the best trial.

What is read, from the sweep's folder (local, s3:// or gs://): Tune's newest experiment_state-*.json (each trial's
id, status, configuration, folder, failures and last result), each trial's progress.csv (its history, and the
checkpoint folder of each report that came with one), a failed trial's error.txt, and the sweep's faults.json.
Tune's state is read as plain JSON, never through Tune's own readers, because those unpickle the objects Tune embeds
in it: whoever can write to a sweep's folder would run code on the machine of whoever reads the sweep.

A row's status comes from what Tune recorded and what the trial reported: COMPLETED (all epochs), STOPPED
(by its scheduler), DIVERGED, ERROR (the fault log says so even where Tune's snapshot is stale), UNFINISHED
or PENDING.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import io
import json
import math
from typing import Any

import numpy as np
import pandas as pd

from sweeps.plan.storage import SweepFolder
from sweeps.plan.sweep_plan import SweepPlan

STATUS_ORDER = {"COMPLETED": 0, "STOPPED": 1, "UNFINISHED": 2, "DIVERGED": 3, "ERROR": 4, "PENDING": 5}
CHOOSABLE = ("COMPLETED", "STOPPED", "UNFINISHED")
"""The statuses whose trials can be the best: not failed, not diverged."""

EXPERIMENT_STATE = "experiment_state-*.json"
"""Tune's snapshots of a sweep's state, named by the time its run started: the newest is the latest run's."""
PROGRESS_FILE = "progress.csv"
NOT_JSON = "<not JSON>"
"""What a configuration shows for a value Tune could only store pickled: never unpickled here."""


@dataclasses.dataclass(frozen=True)
class BestTrial:
    """The sweep's best trial: the usable trial (not failed, not diverged) with the best validation score."""

    trial_id: str
    config: dict[str, Any]
    """Its configuration, as Tune's experiment state records it (a pickled value shows as NOT_JSON)."""
    metric: str
    """The sweep's ranking metric (mape, smape, mase, ...)."""
    score: float
    """Its best validation score on the metric, over all its epochs (best_val_<metric>)."""
    best_epoch: int
    """The epoch of that score."""
    epochs: int
    """How many epochs it ran."""
    status: str
    """COMPLETED, STOPPED or UNFINISHED (CHOOSABLE)."""
    checkpoint: str | None
    """Its latest checkpoint folder, which holds its best model so far (BEST_MODEL_FILE); None if it has none in
    the storage."""

    def record(self) -> dict[str, Any]:
        """The trial as best_config.json holds it: trial_id, config, metric, best_val_<metric>, best_epoch, epochs,
        status, checkpoint."""
        return {
            "trial_id": self.trial_id,
            "config": dict(self.config),
            "metric": self.metric,
            f"best_val_{self.metric}": self.score,
            "best_epoch": self.best_epoch,
            "epochs": self.epochs,
            "status": self.status,
            "checkpoint": self.checkpoint,
        }


@dataclasses.dataclass
class SweepResults:
    trials: pd.DataFrame
    """One row per trial, best first."""
    histories: dict[str, pd.DataFrame]
    """Each trial's reported rows (epoch, val_mape, val_smape, val_mase, best_val_<metric>, train_loss, ...)."""
    best: BestTrial | None
    """The best trial; None if no usable trial reported."""
    metric: str = "mape"
    """The sweep's ranking metric: the columns best_val_<metric> and last_val_<metric>."""
    checkpoints: dict[str, str] = dataclasses.field(default_factory=dict)
    """Trial id -> its latest checkpoint folder (which holds its best model so far, BEST_MODEL_FILE), for the trials
    that have one in the storage."""


@dataclasses.dataclass
class _Trial:
    """A trial as Tune's experiment state records it, in plain JSON fields only."""

    trial_id: str
    status: str
    config: dict[str, Any]
    relative_logdir: str | None
    """Its folder, relative to the sweep's; None until Tune started it."""
    num_failures: int
    error_filename: str | None
    last_result: dict[str, Any]


def read_results(folder: str) -> SweepResults:
    """The trials of the sweep in `folder` (local, s3:// or gs://), finished, stopped or still running.

    Args:
        folder: The sweep's folder, as the sweep printed it.

    Returns:
        One row per trial, best first, each trial's history and latest checkpoint, and the best trial.

    Raises:
        FileNotFoundError: The folder holds no sweep's plan.
    """
    from sweeps.plan.record import read_plan

    return collect(read_plan(folder))


def collect(plan: SweepPlan) -> SweepResults:
    """Read every trial of the sweep back from its storage."""
    metric = plan.sweep.metric
    ranked = plan.sweep.ranked
    folder = SweepFolder(plan.experiment_path)
    records = _read_trials(folder)
    faults: dict[str, list[str]] = {}
    for fault in folder.faults():
        faults.setdefault(fault["trial_id"], []).append(fault["event"])
    histories, checkpoints, rows = {}, {}, []
    for trial in records:
        history = _read_history(folder, trial)
        checkpoint = _latest_checkpoint(folder, trial, history)
        if checkpoint is not None:
            checkpoints[trial.trial_id] = checkpoint
        if "epoch" in history:
            # A trial resumed from a checkpoint reports some epochs twice: keep the latest of each.
            history = history.drop_duplicates("epoch", keep="last").sort_values("epoch").reset_index(drop=True)
            histories[trial.trial_id] = history
        rows.append(_trial_row(trial, history, plan, faults.get(trial.trial_id, []), folder))
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
    return SweepResults(
        trials=trials,
        histories=histories,
        best=_best(trials, records, checkpoints, metric),
        metric=metric,
        checkpoints=checkpoints,
    )


def _read_trials(folder: SweepFolder) -> list[_Trial]:
    """Every trial of Tune's newest experiment state. Its `trial_data` holds, for each trial, two JSON documents
    (the trial's state and its run's metadata); of them only plain JSON fields are used. A field Tune stored pickled
    (a {"_type": "CLOUDPICKLE_FALLBACK"} object) is never decoded: it counts as missing."""
    name = _newest_state(folder)
    state = json.loads(folder.read(name))
    trial_data = state.get("trial_data") if isinstance(state, dict) else None
    if not isinstance(trial_data, list):
        raise ValueError(f"{folder.path}/{name} lists no trials (no trial_data): not Tune's experiment state")
    trials = []
    for entry in trial_data:
        try:
            trial_state, run_metadata = (json.loads(document) for document in entry)
        except (TypeError, ValueError):
            raise ValueError(f"{folder.path}/{name} holds a trial that is not a pair of JSON documents") from None
        trial_id = _field(trial_state, "trial_id", str, None)
        if not trial_id:
            raise ValueError(f"{folder.path}/{name} holds a trial without a trial_id")
        run_metadata = run_metadata if isinstance(run_metadata, dict) else {}
        trials.append(
            _Trial(
                trial_id=trial_id,
                status=_field(trial_state, "status", str, ""),
                config={key: _without_pickles(value) for key, value in _field(trial_state, "config", dict, {}).items()},
                relative_logdir=_inside_name(_field(trial_state, "relative_logdir", str, None)),
                num_failures=_field(run_metadata, "num_failures", int, 0),
                error_filename=_inside_name(_field(run_metadata, "error_filename", str, None)),
                last_result=_field(run_metadata, "last_result", dict, {}),
            )
        )
    return trials


def _newest_state(folder: SweepFolder) -> str:
    """The name of Tune's newest experiment state in the folder (Tune's own choice: the greatest name)."""
    import pyarrow.fs

    selector = pyarrow.fs.FileSelector(folder.root, allow_not_found=True, recursive=False)
    names = [
        entry.base_name
        for entry in folder.filesystem.get_file_info(selector)
        if entry.type == pyarrow.fs.FileType.File and fnmatch.fnmatch(entry.base_name, EXPERIMENT_STATE)
    ]
    if not names:
        raise FileNotFoundError(
            f"{folder.path} holds no Ray Tune experiment state ({EXPERIMENT_STATE}): is it a sweep's folder, "
            "and did the sweep start?"
        )
    return str(max(names))


def _field(record: Any, key: str, kind: type, default: Any) -> Any:
    """record[key] if it is a plain JSON value of that kind; the default if it is missing, pickled or of another
    kind (a bool is no int here)."""
    value = record.get(key) if isinstance(record, dict) else None
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)) and not _pickled(value):
        return value
    return default


def _pickled(value: Any) -> bool:
    return isinstance(value, dict) and value.get("_type") == "CLOUDPICKLE_FALLBACK"


def _without_pickles(value: Any) -> Any:
    """A configuration value as plain JSON: anything Tune stored pickled shows as NOT_JSON."""
    if _pickled(value):
        return NOT_JSON
    if isinstance(value, dict):
        return {key: _without_pickles(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_pickles(item) for item in value]
    return value


def _inside_name(name: str | None) -> str | None:
    """A path from Tune's state or a trial's files, relative to the folder it names a part of; None if it is empty
    or would lead out of that folder."""
    if not name or name.startswith("/") or "\\" in name or ".." in name.split("/"):
        return None
    return name.rstrip("/")


def _read_history(folder: SweepFolder, trial: _Trial) -> pd.DataFrame:
    """Every row the trial reported, as its progress.csv holds them (a trial id read as text, never as a number);
    empty if it has none to read. Read whatever the trial's last result in Tune's state says, as ExperimentAnalysis
    does: that snapshot can be older than the file."""
    if trial.relative_logdir is None:
        return pd.DataFrame()
    try:
        text = folder.read(f"{trial.relative_logdir}/{PROGRESS_FILE}").decode("utf-8")
        return pd.read_csv(io.StringIO(text), dtype={"trial_id": str})
    except (OSError, ValueError, pd.errors.ParserError):  # missing, empty (EmptyDataError) or unreadable
        return pd.DataFrame()


def _latest_checkpoint(folder: SweepFolder, trial: _Trial, history: pd.DataFrame) -> str | None:
    """The folder of the trial's latest checkpoint, where it still exists: Tune writes into progress.csv, with each
    report that came with a checkpoint, the name of the folder it stored that checkpoint in."""
    import pyarrow.fs

    if trial.relative_logdir is None or "checkpoint_dir_name" not in history:
        return None
    names = [name for name in history["checkpoint_dir_name"] if isinstance(name, str) and name.strip()]
    name = _inside_name(names[-1].strip()) if names else None
    if name is None:
        return None
    where = f"{folder.root}/{trial.relative_logdir}/{name}"
    if folder.filesystem.get_file_info(where).type != pyarrow.fs.FileType.Directory:
        return None
    return f"{folder.path}/{trial.relative_logdir}/{name}"


def _trial_row(trial: _Trial, history: Any, plan: SweepPlan, faults: list[str], folder: SweepFolder) -> dict[str, Any]:
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
    row: dict[str, Any] = {"trial_id": trial.trial_id, "status": status}
    row.update({key: trial.config.get(key) for key in plan.sweep.space})
    row.update(
        {
            f"best_val_{metric}": best_score,
            "best_epoch": best_epoch,
            f"last_val_{metric}": float(history[f"val_{metric}"].iloc[-1]) if reported else math.nan,
            "epochs": epochs,
            "train_loss": float(history["train_loss"].iloc[-1]) if reported else math.nan,
            "seconds": _seconds(trial.last_result),
            # Each retried from the latest checkpoint while retries remain.
            "failures": max(trial.num_failures, faults.count("retried") + faults.count("failed")),
            "node": str(history["node"].iloc[-1]) if reported and "node" in history else "",
            "error": _error_line(_error_text(folder, trial)) if status == "ERROR" else "",
            "notes": _notes(status, history, faults.count("watchdog"), plan),
        }
    )
    return row


def _seconds(last_result: dict[str, Any]) -> float:
    """The trial's training time as its last result says (time_total_s)."""
    value = last_result.get("time_total_s")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


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


def _notes(status: str, history: Any, watchdog_kills: int, plan: SweepPlan) -> str:
    notes = []
    if status == "DIVERGED":
        row = history.iloc[-1]
        notes.append(
            f"diverged at epoch {int(row['epoch'])} (training loss {row['train_loss']:.3g}): stopped, "
            "never chosen as best"
        )
    if watchdog_kills:
        notes.append(
            f"reported nothing for {plan.tune_settings.trial_timeout:g} s and was killed by the watchdog "
            f"{watchdog_kills} time(s)"
        )
    return "; ".join(notes)


def _error_text(folder: SweepFolder, trial: _Trial) -> str:
    """The text of the trial's latest error, as Tune wrote it into the trial's folder (error.txt); empty if none."""
    if trial.relative_logdir is None or trial.error_filename is None:
        return ""
    try:
        return folder.read(f"{trial.relative_logdir}/{trial.error_filename}").decode("utf-8", errors="replace")
    except OSError:
        return ""


def _error_line(text: str) -> str:
    """The last line of the trial's error that names the exception: what went wrong, in one line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    named = [line for line in lines if "Error" in line.split(":", 1)[0] or "Exception" in line.split(":", 1)[0]]
    return (named or lines or ["unknown error"])[-1][:500]


def _best(trials: pd.DataFrame, records: list[_Trial], checkpoints: dict[str, str], metric: str) -> BestTrial | None:
    ranked = f"best_val_{metric}"
    usable = trials[trials["status"].isin(CHOOSABLE) & trials[ranked].notna()] if len(trials) else trials
    if not len(usable):
        return None
    row = usable.iloc[0]
    trial = next(t for t in records if t.trial_id == row["trial_id"])
    return BestTrial(
        trial_id=str(row["trial_id"]),
        config=dict(trial.config),
        metric=metric,
        score=float(row[ranked]),
        best_epoch=int(row["best_epoch"]),
        epochs=int(row["epochs"]),
        status=str(row["status"]),
        checkpoint=checkpoints.get(trial.trial_id),  # holds the trial's best model so far (BEST_MODEL_FILE)
    )
