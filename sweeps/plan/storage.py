"""A sweep's folder, local or on s3:// or gs://: every file a sweep keeps there, by name, written and read back.

    <storage>/<name>/
      sweep_plan.json       the plan as data (sweeps.plan.record): options, the resolved sweep, the cut, the resources
      panel.parquet         the data it runs on, its covariates included: resume, report and refit need nothing but
                            the folder
      resolved_sweep.json   the same for people: options, data, resources, git commit, library versions
      faults.json           every trial failure, retry and watchdog kill, appended as they happen
      <trial folders>/      Tune's: progress.csv, and checkpoints holding checkpoint.ckpt and best_model.ckpt
      results.csv, results.parquet, best_config.json, <metric>_by_epoch.png   written at the end, with the answer's
      forecasts.parquet, metrics_by_series.csv, and forecast.png (one series) or series_forecasts.png and
      errors_by_series.png (a panel); with --levels, calibration.parquet (the points that calibrated the answer's
      intervals)
      future.parquet, future.csv, future.png   the forecast after each series' end (not with --no-future)
      model/                the answer saved as one model: model.json and tensors.pt (forecaster.answer.model)
      test_model/           the answer as it forecast the test window (its nets continued through the validation part)
      timings.json          where the time went, phase by phase, and the tasks after the trials

Every read and write goes through pyarrow's filesystems, so a local folder and a bucket behave alike.
Nothing here knows what a plan or a trial is beyond the bytes it stores.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import pyarrow.fs
    from ray.train._internal.storage import StorageContext
    from ray.tune.experiment import Trial

DEFAULT_STORAGE = "results"
PLAN_FILE = "sweep_plan.json"
PANEL_FILE = "panel.parquet"
PICKLED_PLAN_FILE = "sweep_plan.pkl"
"""Where versions before the plan was data kept it, as a pickle: such a folder is refused, never unpickled."""
RESOLVED_FILE = "resolved_sweep.json"
FAULTS_FILE = "faults.json"
RESULTS_CSV = "results.csv"
RESULTS_PARQUET = "results.parquet"
BEST_CONFIG_FILE = "best_config.json"
FORECAST_PLOT = "forecast.png"
FORECASTS_PARQUET = "forecasts.parquet"
CALIBRATION_PARQUET = "calibration.parquet"
METRICS_CSV = "metrics_by_series.csv"
SERIES_PLOT = "series_forecasts.png"
ERRORS_PLOT = "errors_by_series.png"
FUTURE_PARQUET = "future.parquet"
FUTURE_CSV = "future.csv"
FUTURE_PLOT = "future.png"
MODEL_FOLDER = "model"
"""The answer saved as one model (forecaster.answer.model): model.json and tensors.pt."""
TEST_MODEL_FOLDER = "test_model"
"""The answer as it forecast the test window (its members continued through the validation part), saved the same way:
what sweeps.report forecasts with instead of training again."""
TIMINGS_FILE = "timings.json"
"""Where the sweep's time went (sweeps.output.timings)."""
CHECKPOINT_FILE = "checkpoint.ckpt"
"""In a trial's checkpoint: the full training state of its latest checkpointed epoch, to continue from."""
BEST_MODEL_FILE = "best_model.ckpt"
"""In a trial's checkpoint: its best model so far (lowest validation score), for RNNNet.load_best_model
(or Lightning's load_from_checkpoint)."""


def curves_plot(metric: str) -> str:
    """Every trial's validation score by epoch: mape_by_epoch.png for a sweep ranked on MAPE."""
    return f"{metric}_by_epoch.png"


def located(path: str) -> str:
    """A folder as Ray and pyarrow need it: a URI (s3://, gs://) as it is, a local path made absolute."""
    return path if "://" in path else os.path.abspath(path)


def experiment_path(storage_path: str, name: str) -> str:
    return f"{storage_path.rstrip('/')}/{name}"


class SweepFolder:
    """One sweep's folder. `path` is what users see and pass around; reads and writes go to `filesystem`."""

    def __init__(self, path: str, filesystem: pyarrow.fs.FileSystem | None = None, root: str | None = None) -> None:
        import pyarrow.fs

        self.path = path.rstrip("/") if filesystem else located(path).rstrip("/")
        if filesystem is None:
            filesystem, root = pyarrow.fs.FileSystem.from_uri(self.path)
        self.filesystem, self.root = filesystem, str(root).rstrip("/")

    @classmethod
    def of_trial(cls, trial: Trial) -> SweepFolder:
        """The folder of the sweep a Tune trial belongs to: where it runs now, even after a move and a resume."""
        storage = cast("StorageContext", trial.storage)
        return cls(storage.experiment_fs_path, storage.storage_filesystem, storage.experiment_fs_path)

    def write(self, name: str, data: bytes) -> str:
        self.filesystem.create_dir(f"{self.root}/{name}".rsplit("/", 1)[0], recursive=True)
        with self.filesystem.open_output_stream(f"{self.root}/{name}") as stream:
            stream.write(data)
        return f"{self.path}/{name}"

    def read(self, name: str) -> bytes:
        with self.filesystem.open_input_stream(f"{self.root}/{name}") as stream:
            return cast(bytes, stream.read())

    def exists(self, name: str) -> bool:
        import pyarrow.fs

        return cast(bool, self.filesystem.get_file_info(f"{self.root}/{name}").type != pyarrow.fs.FileType.NotFound)

    def holds_sweep(self) -> bool:
        return self.exists(PLAN_FILE) or self.exists(PICKLED_PLAN_FILE)

    def save_plan(self, record: bytes, panel: bytes, resolved: dict[str, Any]) -> None:
        """Claim the folder for a new sweep: FileExistsError if a sweep holds it already. On a local disk the
        claim is atomic (two sweeps started at once with one name cannot both have it); on a bucket, a check."""
        if self.exists(PICKLED_PLAN_FILE):
            raise FileExistsError(f"{self.path} holds a sweep already")
        if isinstance(self.filesystem, _local_filesystem()):
            os.makedirs(self.root, exist_ok=True)
            with open(os.path.join(self.root, PLAN_FILE), "xb") as stream:  # "x": fails if it exists
                stream.write(record)
        elif self.holds_sweep():
            raise FileExistsError(f"{self.path} holds a sweep already")
        else:
            self.write(PLAN_FILE, record)
        self.write(PANEL_FILE, panel)
        self.write(RESOLVED_FILE, json.dumps(resolved, indent=2, default=str).encode())

    def load_plan(self) -> tuple[bytes, bytes]:
        """The stored plan's record and data, as bytes (sweeps.plan.record reads them); FileNotFoundError saying what
        the folder holds instead. Other errors of the storage (a bucket's permissions) are its own."""
        if self.exists(PLAN_FILE):
            if not self.exists(PANEL_FILE):
                raise FileNotFoundError(
                    f"{self.path} holds {PLAN_FILE} but not {PANEL_FILE}: the sweep stopped while it stored its plan, "
                    "before any trial ran; start it again"
                )
            return self.read(PLAN_FILE), self.read(PANEL_FILE)
        if self.exists(PICKLED_PLAN_FILE):
            raise FileNotFoundError(
                f"{self.path} is a sweep of an earlier version, which stored its plan as a pickle "
                f"({PICKLED_PLAN_FILE}); this version never loads one (unpickling runs whatever code the file "
                "holds). Its results.csv, best_config.json and forecasts.parquet are plain files, readable as they "
                "are; to report, refit or resume it, use the version that ran it (git_commit in its "
                "resolved_sweep.json), or run the sweep again with this one"
            )
        raise FileNotFoundError(f"{self.path} holds no {PLAN_FILE} and {PANEL_FILE}: is it the folder of a sweep?")

    def faults(self) -> list[dict[str, Any]]:
        """Every recorded fault, oldest first: {"trial_id", "event", "time", ...}, the event one of "retried",
        "restarted" (the retry's process is up), "failed" (for good) or "watchdog" (killed as hung)."""
        try:
            return cast(list[dict[str, Any]], json.loads(self.read(FAULTS_FILE)))
        except (FileNotFoundError, OSError):
            return []

    def append_fault(self, trial_id: str, event: str, **details: Any) -> None:
        """Appended to the file, not kept in memory: a resumed sweep's driver starts from what is stored."""
        faults = self.faults()
        faults.append({"trial_id": trial_id, "event": event, "time": time.time(), **details})
        self.write(FAULTS_FILE, json.dumps(faults, indent=2).encode())

    def best_config(self) -> dict[str, Any]:
        return cast(dict[str, Any], json.loads(self.read(BEST_CONFIG_FILE)))


def _local_filesystem() -> type:
    import pyarrow.fs

    return cast(type, pyarrow.fs.LocalFileSystem)


def latest_run(storage_path: str, sweep_name: str) -> str | None:
    """The folder name of the most recently started run of a sweep in the storage, whatever its name."""
    import pyarrow.fs

    try:
        filesystem, root = pyarrow.fs.FileSystem.from_uri(located(storage_path))
        entries = filesystem.get_file_info(pyarrow.fs.FileSelector(root, allow_not_found=True))
    except (OSError, ValueError):
        return None
    runs = []
    for entry in entries:
        if entry.type != pyarrow.fs.FileType.Directory:
            continue
        try:
            with filesystem.open_input_stream(f"{entry.path}/{RESOLVED_FILE}") as stream:
                resolved = json.loads(stream.read())
        except (OSError, ValueError):
            continue  # not a sweep's folder
        if resolved.get("sweep", {}).get("name") == sweep_name:
            runs.append((resolved.get("started", ""), entry.base_name))
    return max(runs)[1] if runs else None
