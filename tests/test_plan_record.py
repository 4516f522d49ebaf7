"""The plan stored as data (sweeps.plan.record): JSON and Parquet that read back into the plan that was made, a panel
that is not the planned one refused, and a folder of an earlier version, whose plan is a pickle, refused without ever
being unpickled. None of it starts Ray."""

import dataclasses
import json
import pickle

import numpy as np
import pytest
import ray

from sweeps.plan.record import panel_parquet, read_plan, store_plan
from sweeps.plan.storage import PANEL_FILE, PICKLED_PLAN_FILE, PLAN_FILE, RESOLVED_FILE, SweepFolder
from sweeps.plan.sweep_plan import PlanError, make_plan
from tests.helpers import LeavesAMark


def same_panels(mine, theirs) -> bool:
    arrays = ("ids", "offsets", "times", "values")
    return all(np.array_equal(getattr(mine, name), getattr(theirs, name)) for name in arrays) and (
        mine.freq,
        mine.season,
        mine.dropped,
    ) == (theirs.freq, theirs.season, theirs.dropped)


@pytest.mark.parametrize(
    "sweep, options",
    [
        ("air_rnn", {"test_after": "1959-12-01", "levels": [95, 80], "pins": {"model": "GRU"}}),
        ("m3_monthly", {"smoke_test": True}),
        # Series dropped as too short, others forecast without training on them, a lookback pinned in horizons.
        ("panel", {"data": "tourism_quarterly", "pins": {"input_chunk_length": "1.5H"}, "drop_short_series": True}),
    ],
)
def test_a_stored_plan_reads_back_as_the_plan_that_was_made(tmp_path, sweep, options):
    from sweeps.plan.options import parse_pins

    options = {**options, "pins": parse_pins([f"{k}={v}" for k, v in options.get("pins", {}).items()])}
    plan = make_plan(sweep, storage_path=str(tmp_path), name="stored", **options)
    store_plan(plan, ["python", "-m", "sweeps.run", sweep])
    assert sorted(path.name for path in (tmp_path / "stored").iterdir()) == sorted(
        [PLAN_FILE, PANEL_FILE, RESOLVED_FILE]
    )
    again = read_plan(str(tmp_path / "stored"))
    assert (again.options, again.sweep, again.resources, again.data_label) == (
        plan.options,
        plan.sweep,
        plan.resources,
        plan.data_label,
    )
    assert same_panels(again.panel, plan.panel)
    for part in ("train", "val", "seen", "test"):
        assert same_panels(getattr(again.parts, part), getattr(plan.parts, part))
    assert (again.parts.cut, again.parts.metric, again.parts.untrained) == (
        plan.parts.cut,
        plan.parts.metric,
        plan.parts.untrained,
    )
    record = json.loads((tmp_path / "stored" / PLAN_FILE).read_text())
    assert record["options"]["sweep"]["smoke_test"] == plan.options.smoke_test


def test_a_panel_that_is_not_the_planned_one_is_refused(tmp_path):
    plan = make_plan("air_rnn", storage_path=str(tmp_path), name="stored")
    store_plan(plan, ["test"])
    spoiled = plan.panel.values.copy()
    spoiled[3] += 1.0
    (tmp_path / "stored" / PANEL_FILE).write_bytes(panel_parquet(dataclasses.replace(plan.panel, values=spoiled)))
    with pytest.raises(PlanError, match=r"stored: panel\.parquet is not the data it was planned on"):
        read_plan(str(tmp_path / "stored"))


def test_a_folder_whose_plan_is_a_pickle_is_refused_and_never_unpickled(tmp_path, capsys):
    from sweeps.refit import main as refit
    from sweeps.report import main as report
    from sweeps.run import main as run

    folder, mark = tmp_path / "old", tmp_path / "unpickled"
    folder.mkdir()
    (folder / PICKLED_PLAN_FILE).write_bytes(pickle.dumps(LeavesAMark(mark)))
    (folder / RESOLVED_FILE).write_text(json.dumps({"sweep": {"name": "air_rnn"}, "started": "2026-11-27T10:00:00"}))
    pickle.loads((folder / PICKLED_PLAN_FILE).read_bytes())  # the payload works: loading it would leave the mark
    assert mark.exists()
    mark.unlink()
    assert report([str(folder)]) == 2
    assert f"{folder} is a sweep of an earlier version, which stored its plan as a pickle" in capsys.readouterr().err
    assert refit([str(folder)]) == 2
    assert "never loads one" in capsys.readouterr().err
    assert run(["air_rnn", "--resume", "--storage-path", str(tmp_path)]) == 2  # the latest air_rnn sweep there
    assert "--resume: " in (error := capsys.readouterr().err) and "is a sweep of an earlier version" in error
    with pytest.raises(PlanError, match="--name old: a sweep of that name is already in"):
        make_plan("air_rnn", storage_path=str(tmp_path), name="old")
    assert not mark.exists() and not ray.is_initialized()


def test_a_plan_stored_in_a_bucket_reads_back(tmp_path):
    """Through a filesystem that is not the local one, as s3:// and gs:// are: claimed by a check, not an exclusive
    create, and read back the same."""
    import fsspec
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    from sweeps.plan.record import plan_from_files, plan_json, sha256

    bucket = PyFileSystem(FSSpecHandler(fsspec.filesystem("memory")))
    plan = make_plan("panel", data="tourism_quarterly", storage_path=str(tmp_path), name="remote")
    root = f"/bucket{tmp_path}/remote"  # fsspec's memory is the process's, over pytest sessions: a folder of its own
    folder = SweepFolder("s3://bucket/sweeps/remote", filesystem=bucket, root=root)
    panel = panel_parquet(plan.panel)
    folder.save_plan(plan_json(plan, sha256(panel)), panel, {"sweep": {"name": "panel"}})
    with pytest.raises(FileExistsError):
        folder.save_plan(plan_json(plan, sha256(panel)), panel, {})
    again = plan_from_files(*folder.load_plan(), "s3://bucket/sweeps", "remote")
    assert again.experiment_path == "s3://bucket/sweeps/remote" and again.options == plan.options
    assert same_panels(again.parts.seen, plan.parts.seen) and again.parts.untrained == plan.parts.untrained


def test_a_folder_that_stopped_while_storing_its_plan_says_so(tmp_path):
    plan = make_plan("air_rnn", storage_path=str(tmp_path), name="stopped")
    store_plan(plan, ["test"])
    (tmp_path / "stopped" / PANEL_FILE).unlink()
    with pytest.raises(FileNotFoundError, match=r"holds sweep_plan\.json but not panel\.parquet"):
        read_plan(str(tmp_path / "stopped"))
    (tmp_path / "stopped" / PLAN_FILE).write_text('{"format": 1}')
    store_plan(make_plan("air_rnn", storage_path=str(tmp_path), name="other"), ["test"])
    (tmp_path / "stopped" / PANEL_FILE).write_bytes((tmp_path / "other" / PANEL_FILE).read_bytes())
    with pytest.raises(PlanError, match="is not a plan this version wrote: KeyError"):
        read_plan(str(tmp_path / "stopped"))
