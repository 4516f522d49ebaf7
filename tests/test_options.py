"""Every option declared once (sweeps.plan.options): each one in `--help`, in the stored plan and back; `--resume`
refusing every option it may not change by the flag the user typed; and data that comes with no cut of its own asked for
one. None of it starts Ray."""

import argparse
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import ray

from forecaster.fit import main as fit_cli
from sweeps.plan.options import (
    GROUPS,
    SweepOptions,
    build_parser,
    declared,
    default_of,
    flag_of,
    from_args,
    from_record,
    parse_duration,
    parse_pins,
    parse_scheduler_options,
    shown_duration,
    to_record,
)
from sweeps.plan.record import read_plan, store_plan
from sweeps.plan.space import Horizons
from sweeps.plan.sweep_plan import PlanError, make_plan
from sweeps.run import main, plan_from_args


def typed(field: dataclasses.Field) -> list[str]:
    """A command line's words that give the option a value other than its default (the flag, and a value)."""
    flag, options = flag_of(field), field.metadata["argparse"]
    if options.get("action") is argparse.BooleanOptionalAction and field.default is True:
        return ["--no-" + flag.removeprefix("--")]
    if options.get("action") in ("store_true", argparse.BooleanOptionalAction):
        return [flag]
    if field.name == "pins":
        return [flag, "model=GRU"]
    if field.name == "scheduler_options":
        return [flag, "grace_period=3"]
    if field.name == "time_limit":
        return [flag, "10m"]
    if "choices" in options:
        return [flag, list(options["choices"])[-1]]
    value = {int: "7", float: "0.5"}.get(options.get("type"), "elsewhere")
    return [flag, value]


def test_every_option_is_in_help_and_parses_into_its_field():
    text = build_parser().format_help()
    for field in declared():
        if flag_of(field) is None:
            continue
        assert flag_of(field) in text, field.name
        given = from_args(build_parser().parse_args(["air_rnn", *typed(field)]))
        changed = [other.name for other in declared() if getattr(given, other.name) != default_of(other)]
        assert changed == ["sweep", field.name]


def test_every_option_round_trips_through_the_stored_record():
    """Each option given a value other than its default, the whole record through JSON and back."""
    words = ["air_rnn"]
    for field in declared():
        if flag_of(field):
            words += typed(field)
    given = from_args(build_parser().parse_args(words))
    assert all(getattr(given, f.name) != default_of(f) for f in declared())
    given = dataclasses.replace(given, pins={"input_chunk_length": Horizons(1.5), "hidden_fc_sizes": (32, 16)})
    record = json.loads(json.dumps(to_record(given)))
    assert {name for options in record.values() for name in options} == {field.name for field in declared()}
    assert record["run"]["max_failures"] == 7 and record["data"]["horizon"] == 7  # under where each goes
    assert from_record(record) == given
    with pytest.raises(PlanError, match="options this version does not know: colour"):
        from_record({**record, "data": {**record["data"], "colour": "blue"}})


@pytest.fixture
def stored(tmp_path):
    """A planned air_rnn sweep stored in its folder, as a sweep's first step leaves it (no trial run)."""
    arguments = ["air_rnn", "--num-samples", "3", "--seed", "4", "--name", "first", "--storage-path", str(tmp_path)]
    plan = plan_from_args(build_parser().parse_args(arguments), arguments)
    store_plan(plan, ["python", "-m", "sweeps.run", *arguments])
    return plan, arguments


def test_the_stored_plan_reads_back_as_it_was_planned(stored):
    plan, _ = stored
    again = read_plan(plan.experiment_path)
    assert again.options == plan.options and again.sweep == plan.sweep and again.resources == plan.resources
    for part in ("train", "val", "seen"):
        mine, theirs = getattr(plan.parts, part), getattr(again.parts, part)
        assert np.array_equal(mine.values, theirs.values) and np.array_equal(mine.times, theirs.times)
    assert again.parts.cut == plan.parts.cut and again.arguments == plan.arguments


@pytest.mark.parametrize("field", [f for f in declared() if not f.metadata["resumable"]], ids=lambda f: f.name)
def test_resume_refuses_every_option_it_may_not_change_by_the_flag_typed(stored, capsys, field):
    _, arguments = stored
    assert main([*arguments, "--resume", *typed(field)]) == 2
    assert f"{flag_of(field)} cannot change" in capsys.readouterr().err
    assert not ray.is_initialized()


def test_resume_takes_the_same_command_and_where_it_runs_may_change(stored, capsys):
    plan, arguments = stored
    resumed = plan_from_args(build_parser().parse_args([*arguments, "--resume"]), [*arguments, "--resume"])
    assert resumed.options.resume and resumed.options.num_samples == 3
    assert resumed.experiment_path == plan.experiment_path
    moved = [*arguments, "--resume", "--address", "auto", "--dashboard-port", "8300"]
    assert plan_from_args(build_parser().parse_args(moved), moved).options.address == "auto"
    assert main([*arguments, "--resume", "--no-refit-answer", "--max-e", "9"]) == 2  # as typed, abbreviations too
    assert "--max-epochs, --no-refit-answer cannot change" in capsys.readouterr().err


def monthly_stores(tmp_path) -> str:
    """A user's panel of monthly sales from 2018 to 2022: dates, and no official hold-out."""
    dates = pd.date_range("2018-01-01", "2022-12-01", freq="MS")
    frame = pd.concat(
        pd.DataFrame({"unique_id": store, "ds": dates, "y": 100.0 + np.arange(len(dates)) + 10 * number})
        for number, store in enumerate(("north", "south"))
    )
    path = tmp_path / "stores.csv"
    frame.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize("sweep", ["panel", "air_rnn"])
def test_data_with_no_cut_of_its_own_is_asked_for_one(tmp_path, capsys, sweep):
    path = monthly_stores(tmp_path)
    assert main([sweep, "--data", path, "--storage-path", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert f"{path} comes with no horizon or split: give --horizon H" in error
    assert "--split-after DATE" in error and "1959" not in error
    assert not ray.is_initialized() and not list(tmp_path.glob(f"{sweep}-*"))
    if sweep == "panel":  # air_rnn's windows are longer than these series
        plan = make_plan(sweep, data=path, horizon=6, storage_path=str(tmp_path))
        assert plan.parts.cut.val_size == 6 * plan.sweep.val_windows and len(plan.panel) == 2


def test_more_backtest_windows_than_the_shortest_series_holds_exit_2_naming_it(tmp_path, capsys):
    """60 months, 6 held out: 54 before the test window, of which 24 (two seasons, and more than two horizons)
    stay for training, so 5 windows of 6 at most; the shorter store of 46 months holds 2. Asked for more, the
    command names the series and the most it holds before Ray starts; windows need a horizon, not dates."""
    path = monthly_stores(tmp_path)
    frame = pd.read_csv(path)
    frame = frame[(frame["unique_id"] == "north") | (frame.groupby("unique_id").cumcount() < 46)]
    frame.to_csv(path, index=False)
    plan = make_plan("panel", data=path, horizon=6, val_windows=2, storage_path=str(tmp_path))
    assert plan.parts.windows == 2 and (plan.parts.val.lengths == 12).all()
    assert make_plan("panel", data=path, horizon=6, storage_path=str(tmp_path)).parts.windows == 2  # its default
    assert main(["panel", "--data", path, "--horizon", "6", "--val-windows", "3", "--storage-path", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert "--val-windows 3: series 'south' (46 points) holds at most 2 backtest window(s) of 6 points" in error
    assert "give --val-windows 2 or fewer" in error
    assert not ray.is_initialized() and not list(tmp_path.glob("panel-*"))
    # air_rnn scores 4 origins in one validation part: with a horizon it keeps one window, and asks before more.
    assert make_plan("air_rnn", horizon=12, storage_path=str(tmp_path)).parts.windows == 1
    assert main(["air_rnn", "--horizon", "12", "--val-windows", "2", "--storage-path", str(tmp_path)]) == 2
    assert "give --set val_origins=1 with backtest windows" in capsys.readouterr().err
    dated = ["--split-after", "2021-12-01", "--test-after", "2022-06-01", "--val-windows", "2"]
    assert main(["panel", "--data", path, *dated, "--storage-path", str(tmp_path)]) == 2
    assert "--val-windows 2 cuts the validation part into windows of a horizon each: give --horizon H" in (
        capsys.readouterr().err
    )


def test_the_fit_command_asks_for_a_cut_too_and_air_passengers_keeps_its_own(tmp_path, capsys):
    path = monthly_stores(tmp_path)
    assert fit_cli(["--data", path]) == 2
    assert f"{path} comes with no horizon or split: give --horizon H" in capsys.readouterr().err
    assert make_plan("air_rnn", storage_path=str(tmp_path)).parts.cut.split_after == "1959-01-01"


def test_options_given_from_python_are_the_command_lines(tmp_path):
    arguments = ["air_rnn", "--set", "model=GRU", "--max-failures", "3", "--storage-path", str(tmp_path)]
    from_cli = plan_from_args(build_parser().parse_args(arguments), arguments)
    from_python = make_plan(SweepOptions("air_rnn", pins={"model": "GRU"}, max_failures=3, storage_path=str(tmp_path)))
    assert from_cli.options == from_python.options and from_cli.sweep == from_python.sweep


def test_resume_takes_the_levels_in_any_order_as_they_were_planned(tmp_path, capsys):
    arguments = ["air_rnn", "--test-after", "1959-12-01", "--levels", "95", "80", "--name", "levels"]
    arguments += ["--storage-path", str(tmp_path)]
    plan = plan_from_args(build_parser().parse_args(arguments), arguments)
    store_plan(plan, ["python", "-m", "sweeps.run", *arguments])
    resumed = plan_from_args(build_parser().parse_args([*arguments, "--resume"]), [*arguments, "--resume"])
    assert resumed.options.levels == plan.options.levels == (80.0, 95.0)
    assert main([*arguments, "--resume", "--levels", "90"]) == 2
    assert "--levels cannot change" in capsys.readouterr().err


def test_pins_are_stored_as_given_in_any_form_a_user_gives_them(tmp_path):
    """--set hidden_fc_sizes=[64] (the form its own error asks for) and NumPy numbers from Python: refused or stored
    before Ray starts, never a traceback after it."""
    plan = make_plan(
        "air_rnn",
        pins={**parse_pins(["hidden_fc_sizes=[64]"]), "hidden_dim": np.int64(8)},
        storage_path=str(tmp_path),
        name="pinned",
    )
    assert plan.options.pins == {"hidden_fc_sizes": (64,), "hidden_dim": 8}
    store_plan(plan, ["test"])
    assert read_plan(plan.experiment_path).options.pins == plan.options.pins
    with pytest.raises(PlanError, match=r"--set: .*cannot be stored"):
        make_plan("air_rnn", pins={"model": {"a": "GRU"}}, storage_path=str(tmp_path))


def test_the_banner_says_the_budget_and_what_is_pinned(tmp_path):
    from sweeps.driver import banner
    from sweeps.trials.ray_session import RaySession

    plan = make_plan("air_rnn", pins={"model": "GRU"}, seed=3, storage_path=str(tmp_path))
    session = RaySession(own=True, address="127.0.0.1:6379", how="", dashboard_url="http://127.0.0.1:8265")
    lines = banner(plan, 2, "this machine (2 CPUs)", session).splitlines()
    assert lines[0].startswith("Sweep air_rnn: Find the RNN, LSTM or GRU forecasters")
    assert lines[2] == (
        "  budget     64 trials of up to 300 epochs; random search (seed 3); asha scheduler (grace period 60, "
        "reduction factor 3), ranking on best_val_mape"
    )
    assert lines[3].startswith("  searching  hidden_dim, n_rnn_layers") and lines[3].endswith("; pinned model=GRU")


def test_a_test_window_after_the_data_says_so_on_data_with_no_cut_of_its_own(tmp_path):
    path = monthly_stores(tmp_path)
    with pytest.raises(PlanError, match=r"test_after=2030-01-01 is at or after the last date of every series"):
        make_plan("panel", data=path, test_after="2030-01-01", storage_path=str(tmp_path))
    with pytest.raises(PlanError, match="test_after='soon' is not a date"):
        make_plan("panel", data=path, test_after="soon", storage_path=str(tmp_path))
    plan = make_plan("panel", data=path, test_after="2022-06-01", storage_path=str(tmp_path))
    assert (plan.parts.cut.split_after, plan.parts.test.lengths.tolist()) == ("2021-12-01", [6, 6])


def test_durations_read_as_a_command_line_gives_them_and_shown_as_it_takes_them():
    assert [parse_duration(text) for text in ("1s", "90s", "10m", "2h", "1h30m", "0.5", 45)] == [
        1.0,
        90.0,
        600.0,
        7200.0,
        5400.0,
        0.5,
        45.0,
    ]
    assert [shown_duration(seconds) for seconds in (0, 0.2, 45, 120, 150, 3723)] == [
        "0s",
        "1s",
        "45s",
        "2m",
        "2m30s",
        "1h2m3s",
    ]
    for text in ("0s", "-5", "soon", ""):
        with pytest.raises(PlanError, match="--time-limit"):
            parse_duration(text)


def test_a_pair_without_its_value_names_its_flag_and_an_example_and_a_value_may_hold_equals_signs():
    with pytest.raises(PlanError) as pin:
        parse_pins(["lr"])
    assert str(pin.value) == "--set 'lr': write KEY=VALUE, e.g. --set model=LSTM or --set lr=0.005"
    with pytest.raises(PlanError) as option:
        parse_scheduler_options(["=30"])
    assert str(option.value) == "--scheduler-option '=30': write KEY=VALUE, e.g. --scheduler-option grace_period=30"
    assert parse_scheduler_options(["metric=a=b", "grace_period=3"]) == {"metric": "a=b", "grace_period": 3}


def test_help_shows_every_option_in_its_groups_section():
    sections = {
        group.title: [action.dest for action in group._group_actions] for group in build_parser()._action_groups
    }
    for field in declared():
        if flag_of(field):
            assert field.name in sections[GROUPS[field.metadata["group"]]], field.name


def test_a_stored_plan_with_options_this_version_lacks_names_them_all():
    with pytest.raises(PlanError) as unknown:
        from_record({"sweep": {"seed": 1, "warp_drive": True}, "answer": {"flux": 2}})
    assert str(unknown.value) == "the stored plan has options this version does not know: flux, warp_drive"
