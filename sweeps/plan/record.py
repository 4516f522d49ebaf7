"""A plan as data, as its sweep's folder keeps it: the options, the resolved sweep (its space included), the cut and the
resources as JSON (`sweep_plan.json`), the data as Parquet (`panel.parquet`, its SHA-256 in the JSON). Nothing in
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

from forecaster.panel import Panel
from forecaster.parts import Cut, cut_parts
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


def panel_parquet(panel: Panel) -> bytes:
    """The panel as a long table: unique_id, ds, y, and the line of each point in its file where it is known."""
    frame = panel.to_frame()
    if panel.lines is not None:
        frame[LINE_COLUMN] = panel.lines
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


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
    """The Panel of a long table whose series are in consecutive rows."""
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
