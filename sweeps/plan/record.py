"""A plan as data, as its sweep's folder keeps it: the options, the resolved sweep (its space included), the cut and the
resources as JSON (`sweep_plan.json`), the data as Parquet (`panel.parquet`, its SHA-256 in the JSON; with
covariates, the file is their table: every series' points, then its future's rows, marked, with the covariates'
columns beside y and the static ones repeated on every row of their series). Nothing in
either runs code when read: a sweep read from a shared bucket (`--resume`, sweeps.report, sweeps.refit) is as safe to
read as its checkpoints, which load with weights_only=True.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from forecaster.data.covariates import Covariates
from forecaster.data.panel import Panel
from forecaster.training.parts import Cut, cut_parts
from sweeps.plan.options import PlanError, from_record, to_record
from sweeps.plan.registry import Sweep
from sweeps.plan.resources import TrialResources
from sweeps.plan.space import space_from_data, space_to_data
from sweeps.plan.storage import PANEL_FILE, PLAN_FILE, SweepFolder
from sweeps.plan.sweep_plan import SweepPlan

FORMAT = 1
"""The version of the record's layout; a record of another is refused, not guessed at."""
PANEL_COLUMNS = ("unique_id", "ds", "y")
LINE_COLUMN = "line"
"""Where each point was in the user's file, for messages about it."""
FUTURE_COLUMN = "future"
"""With covariates: true on the rows after a series' end, which hold only its known-ahead values."""
FUTR_PREFIX, HIST_PREFIX, STATIC_PREFIX = "futr:", "hist:", "static:"
"""The covariates' columns in panel.parquet, apart from unique_id, ds and y whatever the user called them."""


def plan_json(plan: SweepPlan, panel_sha256: str) -> bytes:
    """The plan's record (everything but the data, which `panel_parquet` writes)."""
    panel = plan.panel
    record = {
        "format": FORMAT,
        "options": to_record(plan.options),
        "sweep": _sweep_record(plan.sweep),
        "data_label": plan.data_label,
        "data": {
            "metric": plan.parts.metric,
            "cut": dataclasses.asdict(plan.parts.cut),
            "untrained": list(plan.parts.untrained),
            "panel": {
                "sha256": panel_sha256,
                "freq": panel.freq,
                "season": panel.season,
                "origins": None if panel.origins is None else panel.origins.tolist(),
                "source": panel.source,
                "value_name": panel.value_name,
                "horizon": panel.horizon,
                "dropped": list(panel.dropped),
                "line_kind": panel.line_kind,
                "unused_columns": list(panel.unused_columns),
                "covariates": _covariates_record(panel.covariates),
            },
        },
        "resources": dataclasses.asdict(plan.resources),
        "named_by_user": plan.named_by_user,
        "arguments": list(plan.arguments),
    }
    return json.dumps(record, indent=1).encode()


def _sweep_record(sweep: Sweep) -> dict[str, Any]:
    record = {field.name: getattr(sweep, field.name) for field in dataclasses.fields(sweep)}
    return record | {"space": space_to_data(sweep.space), "scheduler_options": dict(sweep.scheduler_options)}


def _covariates_record(covariates: Covariates | None) -> dict[str, Any] | None:
    """The covariates' names (their values are in panel.parquet)."""
    if covariates is None:
        return None
    return {
        "futr_names": list(covariates.futr_names),
        "hist_names": list(covariates.hist_names),
        "static_names": list(covariates.static_names),
        "static_columns": list(covariates.static_columns),
    }


def panel_parquet(panel: Panel) -> bytes:
    """The panel as a long table: unique_id, ds, y, and the line of each point in its file where it is known; with
    covariates, their table (`_covariates_frame`)."""
    frame = panel.to_frame()
    if panel.lines is not None:
        frame[LINE_COLUMN] = panel.lines
    if panel.covariates is not None:
        frame = _covariates_frame(panel, panel.covariates, frame)
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def _covariates_frame(panel: Panel, covariates: Covariates, frame: pd.DataFrame) -> pd.DataFrame:
    """Every series' block of the covariates' table, back to back: its points (the panel's rows), then its future's
    rows (FUTURE_COLUMN true, y NaN, line 0), the covariates beside y and the statics on every row of their series."""
    lengths = panel.lengths
    blocks = covariates.stops - covariates.starts
    first = np.concatenate([[0], np.cumsum(blocks)[:-1]]).astype(np.int64)
    place = np.arange(int(blocks.sum())) - np.repeat(first, blocks)
    future = place >= np.repeat(lengths, blocks)
    data_rows = np.repeat(panel.offsets[:-1], blocks) + place
    known = covariates.known_after(lengths)
    times = np.empty(len(place), dtype=panel.times.dtype)
    times[~future] = panel.times
    if future.any():
        after = panel.future_times(int(known.max()))
        times[future] = after[np.arange(after.shape[1])[None, :] < known[:, None]]
    table = pd.DataFrame({"unique_id": np.repeat(panel.ids, blocks), "ds": times})
    for column in frame.columns.drop(["unique_id", "ds"]):
        values = frame[column].to_numpy()[np.minimum(data_rows, len(frame) - 1)]
        table[column] = np.where(future, 0 if column == LINE_COLUMN else np.nan, values)
    table[FUTURE_COLUMN] = future
    rows = np.repeat(covariates.starts, blocks) + place
    named = [FUTR_PREFIX + name for name in covariates.futr_names] + [HIST_PREFIX + n for n in covariates.hist_names]
    for index, name in enumerate(named):
        table[name] = covariates.table[rows, index]
    if covariates.static is not None:
        for index, name in enumerate(covariates.static_names):
            table[STATIC_PREFIX + name] = np.repeat(covariates.static[:, index], blocks)
    return table


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def store_plan(plan: SweepPlan, command: Sequence[str]) -> None:
    """Claim the plan's folder and store the plan in it (FileExistsError if a sweep holds it already), with
    resolved_sweep.json for people."""
    panel = panel_parquet(plan.panel)
    SweepFolder(plan.experiment_path).save_plan(plan_json(plan, sha256(panel)), panel, plan.resolved(command))


def read_plan(path: str) -> SweepPlan:
    """The plan stored in a sweep's folder (local, s3://, gs://), pointing at that folder wherever it is now.
    FileNotFoundError where there is none (or only one of an older version's, which is never unpickled)."""
    folder = SweepFolder(path)
    record, panel = folder.load_plan()
    storage_path, _, name = folder.path.rpartition("/")
    return plan_from_files(record, panel, storage_path, name)


def plan_from_files(record_bytes: bytes, panel_bytes: bytes, storage_path: str, name: str) -> SweepPlan:
    """The plan `plan_json` and `panel_parquet` wrote, pointing at the folder it was read from (`storage_path`/`name`):
    a local copy of a sweep run on s3://, a folder moved since."""
    try:
        record = json.loads(record_bytes)
        if record.get("format") != FORMAT:
            raise PlanError(f"its plan is of format {record.get('format')!r}; this version reads format {FORMAT}")
        data = record["data"]
        if sha256(panel_bytes) != data["panel"]["sha256"]:
            raise PlanError("panel.parquet is not the data it was planned on (its SHA-256 differs from the plan's)")
        panel = _panel(pd.read_parquet(io.BytesIO(panel_bytes)), data["panel"])
        sweep = Sweep(**{**record["sweep"], "space": space_from_data(record["sweep"]["space"])})
        parts = cut_parts(panel, Cut(**data["cut"]), data["metric"])
        return SweepPlan(
            options=from_record(record["options"]),
            sweep=sweep,
            panel=panel,
            parts=dataclasses.replace(parts, untrained=tuple(data["untrained"])),
            data_label=record["data_label"],
            resources=TrialResources(**record["resources"]),
            name=name,
            storage_path=storage_path,
            named_by_user=record["named_by_user"],
            arguments=tuple(record["arguments"]),
        )
    except PlanError as error:
        raise PlanError(f"{storage_path}/{name}: {error}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:  # JSON or Parquet not as written
        raise PlanError(
            f"{storage_path}/{name}: its {PLAN_FILE} or {PANEL_FILE} is not a plan this version wrote: "
            f"{type(error).__name__}: {error}"
        ) from None


def _panel(frame: pd.DataFrame, described: dict[str, Any]) -> Panel:
    """The Panel of a long table whose series are in consecutive rows (with covariates, their table's)."""
    covariates = None
    if described.get("covariates") is not None:
        covariates = _covariates_of(frame, described["covariates"])
        frame = frame[~frame[FUTURE_COLUMN].to_numpy(dtype=bool)]
    panel = _values_panel(frame, described)
    return dataclasses.replace(panel, covariates=covariates, unused_columns=tuple(described.get("unused_columns", ())))


def _covariates_of(frame: pd.DataFrame, named: dict[str, Any]) -> Covariates:
    """The covariates `_covariates_frame` wrote: its rows are their table, block after block."""
    ids = frame["unique_id"].to_numpy(dtype=object)
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.zeros(0, dtype=np.int64)
    columns = [FUTR_PREFIX + name for name in named["futr_names"]] + [HIST_PREFIX + n for n in named["hist_names"]]
    static_columns = [STATIC_PREFIX + name for name in named["static_names"]]
    return Covariates(
        futr_names=tuple(named["futr_names"]),
        hist_names=tuple(named["hist_names"]),
        table=frame[columns].to_numpy(dtype=np.float64).reshape(len(frame), len(columns)),
        starts=starts.astype(np.int64),
        stops=np.r_[starts[1:], len(ids)].astype(np.int64),
        static_names=tuple(named["static_names"]),
        static=frame[static_columns].to_numpy(dtype=np.float64)[starts] if static_columns else None,
        static_columns=tuple(named["static_columns"]),
    )


def _values_panel(frame: pd.DataFrame, described: dict[str, Any]) -> Panel:
    """The Panel of a long table of values whose series are in consecutive rows."""
    ids = frame["unique_id"].to_numpy(dtype=object)
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.zeros(0, dtype=np.int64)
    times = frame["ds"].to_numpy()
    return Panel(
        ids=np.array([str(series) for series in ids[starts]], dtype=object),
        offsets=np.r_[starts, len(ids)].astype(np.int64),
        times=times.astype("datetime64[ns]") if described["freq"] else times.astype(np.int64),
        values=frame["y"].to_numpy(dtype=np.float64),
        freq=described["freq"],
        season=described["season"],
        origins=None if described["origins"] is None else np.asarray(described["origins"], dtype=np.int64),
        source=described["source"],
        value_name=described["value_name"],
        horizon=described["horizon"],
        dropped=tuple(described["dropped"]),
        lines=frame[LINE_COLUMN].to_numpy(dtype=np.int64) if LINE_COLUMN in frame else None,
        line_kind=described["line_kind"],
    )
