"""`python -m sweeps.run` as a user runs it: bad input, Ctrl+C and --resume. Its smoke test, end to end, runs in
test_sharing.py (two at once beside a `ray start` Ray)."""

import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import ray

from sweeps.run import main
from tests.helpers import commands, process_tree, trial_histories, wait_until_gone

# No warm workers: measured here, each sweep of two trial slots ended with one of its two prestarted workers idle
# beside its two trial actors (3 idle in all across the Ctrl+C test's three sweeps), a third import of torch and
# Lightning (about 9 CPU-seconds) per sweep. The CLI's warm workers run in test_sharing.py's smoke tests.
ENV = dict(os.environ, RAY_AUTH_MODE="disabled", SWEEPS_WARM_WORKERS="0")
AIR_PASSENGERS = os.path.join(os.path.dirname(__file__), "..", "forecaster", "data", "datasets", "air_passengers.csv")


def sweeps_run(*args, timeout=300, module="sweeps.run"):
    """`python -m sweeps.run ARGS` (or another command), with Python's log of every module it imports on stderr."""
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", module, *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
    )


def imported(done: subprocess.CompletedProcess) -> set[str]:
    """The top-level packages a command run by `sweeps_run` imported."""
    return {
        line.rsplit("|", 1)[1].strip().partition(".")[0] for line in done.stderr.splitlines() if "import time:" in line
    }


def test_unknown_sweep_exits_2_listing_the_known_ones():
    done = sweeps_run("air_lstm")
    assert done.returncode == 2
    assert "unknown sweep 'air_lstm'; the sweeps are: air_rnn" in done.stderr


LOADED_BY = """import sys
from sweeps.run import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(sorted({name.partition(".")[0] for name in sys.modules} & {"torch", "lightning", "ray", "pandas"}))
"""
"""Runs `python -m sweeps.run` with the arguments given and prints which of the heavy libraries it loaded."""


@pytest.mark.parametrize("arguments", [["--help"], ["--list"]])
def test_help_and_list_load_no_deep_learning_library_and_no_ray(arguments):
    done = subprocess.run([sys.executable, "-c", LOADED_BY, *arguments], capture_output=True, text=True, env=ENV)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_list_names_every_sweep_with_its_budget_and_help_every_option_group():
    from sweeps.plan.options import GROUPS
    from sweeps.plan.registry import SWEEPS

    listing = sweeps_run("--list")
    assert listing.returncode == 0
    for sweep in SWEEPS.values():
        assert f"{sweep.name}: {sweep.num_samples} trials of up to {sweep.max_epochs} epochs" in listing.stdout
    help_text = sweeps_run("--help").stdout
    assert all(f"{heading}:" in help_text for heading in GROUPS.values()) and "Examples:" in help_text


def air_passengers_with(tmp_path, name, change):
    """The shipped series, spoiled by `change` (a function of its DataFrame), as a user's CSV."""
    frame = pd.read_csv(AIR_PASSENGERS, dtype={"#Passengers": object})
    path = tmp_path / f"{name}.csv"
    change(frame).to_csv(path, index=False)
    return str(path)


def swap_rows(frame, first, second):
    frame.iloc[[first, second]] = frame.iloc[[second, first]].to_numpy()
    return frame


def set_value(row, value):
    def change(frame):
        frame.iloc[row, 1] = value
        return frame

    return change


BAD_DATA = {  # name: (how the series is spoiled, what the error says)
    "gap": (
        lambda f: f.drop(index=50),
        "line 52: gap in the 'MS' series, 1 date(s) missing, the first being 1953-03-01",
    ),
    "duplicate": (lambda f: pd.concat([f.iloc[:51], f.iloc[50:]]), "line 53: date 1953-03-01 00:00:00 already appears"),
    "unsorted": (lambda f: swap_rows(f, 50, 51), "comes after 1953-04-01 00:00:00 (line 52); sort the rows by date"),
    "nan": (set_value(60, "NaN"), "line 62: the value in column '#Passengers' is missing ('NaN')"),
    "non-numeric": (set_value(60, "many"), "line 62: 'many' in column '#Passengers' is not a finite number"),
    "zero-in-validation": (
        set_value(130, "0"),
        "the validation part has 1 zero value(s) (at 1959-11-01), where MAPE is undefined",
    ),
    "too-short": (lambda f: f.iloc[100:], "the training part has 21 points, too few for training_length=36"),
}
BAD_OPTIONS = {  # name: (options, what the error says)
    "unknown-set-key": (
        ["--set", "hiden_dim=3"],
        "unknown hyperparameter 'hiden_dim' (did you mean 'hidden_dim'?); valid ones are: model,",
    ),
    "hidden-dim": (["--set", "hidden_dim=0"], "hidden_dim=0 must be at least 1"),
    "dropout": (["--set", "dropout=1.5"], "dropout=1.5 must be in [0, 1)"),
    "windows": (
        ["--set", "training_length=10", "--set", "input_chunk_length=12"],
        "training_length=10 must exceed input_chunk_length=12",
    ),
    "window-longer-than-data": (
        ["--set", "training_length=130"],
        "the training part has 121 points, too few for training_length=130",
    ),
    "space": (
        ["--set", "input_chunk_length=100"],
        "the search space can produce a configuration that cannot train on air_passengers: "
        "the training part has 121 points, too few for training_length=124",
    ),
    "fractional-tpu": (["--tpu-chips-per-trial", "0.5"], "TPU chips whole"),
    "no-samples": (["--num-samples", "0"], "--num-samples 0 must be at least 1"),
    "max-failures": (["--max-failures", "-1"], "--max-failures -1 must be 0 (no retry) or more"),
    "trial-timeout": (["--trial-timeout", "0"], "--trial-timeout 0.0 must be a positive number of seconds"),
    "test-window-outside": (
        ["--test-after", "1961-01-01"],
        "test_after=1961-01-01 is at or after the last date (1960-12-01): the test window is empty",
    ),
    "test-window-too-short": (
        ["--test-after", "1960-06-01"],
        "test_after=1960-06-01 leaves 6 test point(s) after it; a test window needs at least 12",
    ),
    "test-window-before-validation": (
        ["--test-after", "1958-06-01", "--split-after", "1959-01-01"],
        "--split-after 1959-01-01 must come before --test-after 1958-06-01",
    ),
    "test-window-not-a-date": (["--test-after", "soon"], "test_after='soon' is not a date"),
    "answer-top-k": (["--answer-top-k", "0"], "--answer-top-k 0 must be at least 1"),
    "level-100": (
        ["--test-after", "1959-12-01", "--levels", "80", "100"],
        "--levels: level 100.0 must be a percentage strictly between 0 and 100, e.g. 80 or 95",
    ),
    "levels-without-a-test-window": (
        ["--levels", "80"],
        "--levels: the intervals are scored on a test window, and this sweep has none: give --test-after DATE",
    ),
    "quantile-1": (
        ["--test-after", "1959-12-01", "--quantiles", "0.1", "1"],
        "--quantiles: quantile 1.0 must be strictly between 0 and 1, e.g. 0.1 or 0.9",
    ),
    "quantiles-without-a-test-window": (
        ["--quantiles", "0.1", "0.9"],
        "--quantiles: the forecast distribution is scored on a test window, and this sweep has none",
    ),
    "mlflow-folder": (["--mlflow-uri", "mlruns"], "refuses it unless MLFLOW_ALLOW_FILE_STORE=true is set"),
    "time-limit-not-a-duration": (["--time-limit", "soon"], "--time-limit 'soon': give a duration such as 90s, 10m"),
    "time-limit-below-an-epoch": (
        ["--time-limit", "5s"],
        "--time-limit 5s is too short for even one trial's first epoch: ",  # the seconds spent vary: not pinned
    ),
}


@pytest.mark.parametrize("name", BAD_DATA)
def test_bad_data_is_refused_before_ray_starts(tmp_path, capsys, name):
    change, message = BAD_DATA[name]
    path = air_passengers_with(tmp_path, name, change)
    assert main(["air_rnn", "--data", path, "--split-after", "1959-01-01", "--storage-path", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert path in error and message in error
    assert not ray.is_initialized() and not (tmp_path / "air_rnn").exists()


def test_zeros_in_the_test_window_are_refused_before_ray_starts(tmp_path, capsys):
    path = air_passengers_with(tmp_path, "zero-in-test", set_value(140, "0"))
    assert main(["air_rnn", "--data", path, "--test-after", "1959-01-01", "--storage-path", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert (
        "the test window after 1959-01-01 has 1 zero value(s) (first at 1960-09-01), where MAPE is undefined" in error
    )
    assert not ray.is_initialized()


@pytest.mark.parametrize("name", BAD_OPTIONS)
def test_bad_options_are_refused_before_ray_starts(tmp_path, capsys, name):
    options, message = BAD_OPTIONS[name]
    assert main(["air_rnn", "--storage-path", str(tmp_path), *options]) == 2
    error = capsys.readouterr().err
    assert message in error
    assert not ray.is_initialized() and not list(tmp_path.iterdir())
    if name == "time-limit-below-an-epoch":  # it says the least that would do, from the seconds already gone
        spent, least = re.search(r"(\d+) s are spent already .* give at least --time-limit (\d+)s", error).groups()
        assert 45 <= int(least) - int(spent) <= 46  # LEAST_SECONDS after what was spent, rounded


def trial_epochs(folder):
    """{trial folder: list of the epochs it reported, in order}."""
    return {trial: list(history["epoch"]) for trial, history in trial_histories(folder).items()}


def progress_written(folder):
    """{progress.csv of each trial that reported: (its rows, when it was last written)}."""
    return {
        os.path.join(trial, "progress.csv"): (len(history), os.path.getmtime(os.path.join(trial, "progress.csv")))
        for trial, history in trial_histories(folder).items()
    }


def wait_for(process, condition, timeout_s, what):
    """Poll the sweep's progress until `condition()` holds, at most `timeout_s`; fail saying what did not happen."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert process.poll() is None, f"the sweep ended (exit {process.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} after {timeout_s} s"
        time.sleep(0.2)


@pytest.mark.slow
def test_ctrl_c_then_kill_9_lose_nothing_and_resume_finishes_the_planned_trials(tmp_path):
    """One sweep, stopped twice: Ctrl+C stops it cleanly and says how to resume; its resumed driver is then killed
    with kill -9 (no chance to save anything), and the stored state is still enough: the last resume runs the
    planned trials, never a finished trial again, and an interrupted trial from its latest checkpoint."""
    args = [
        "air_rnn",
        "--no-future",
        "--num-samples",
        "5",
        "--max-epochs",
        "100",
        "--scheduler",
        "fifo",
        "--max-concurrent-trials",
        "2",
        "--set",
        "model=GRU",
        "--set",
        "hidden_dim=64",
        "--set",
        "n_rnn_layers=2",
        "--seed",
        "4",
        "--storage-path",
        str(tmp_path),
        "--name",
        "resumable",
    ]
    folder, log = tmp_path / "resumable", tmp_path / "first-run.log"
    with open(log, "w") as output:  # a file, not a pipe nobody reads while the sweep runs
        process = subprocess.Popen([sys.executable, "-m", "sweeps.run", *args], env=ENV, stdout=output, stderr=output)
    wait_for(process, lambda: any(e[-1] == 100 for e in trial_epochs(folder).values()), 180, "trial of 100 epochs")
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)
    output = log.read_text()
    assert process.returncode == 130, output[-3000:]
    assert "stopped before its end" in output
    assert f"python -m sweeps.run air_rnn --resume --name resumable --storage-path {tmp_path}" in output
    stopped = trial_epochs(folder)
    finished_before_ctrl_c = {
        path: written for path, written in progress_written(folder).items() if stopped[os.path.dirname(path)][-1] == 100
    }
    assert 1 <= len(finished_before_ctrl_c) < 5

    refused = sweeps_run(*args, "--resume", "--num-samples", "9")
    assert refused.returncode == 2 and "--num-samples cannot change" in refused.stderr

    resumed_at = time.time()
    process = subprocess.Popen(  # the same command, resumed
        [sys.executable, "-m", "sweeps.run", *args, "--resume"],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def one_more_finished_and_one_midway():
        histories = trial_histories(folder).values()
        ran = [history for history in histories if history["timestamp"].iloc[-1] >= int(resumed_at)]
        finished = sum(history["epoch"].iloc[-1] == 100 for history in histories)
        return finished > len(finished_before_ctrl_c) and any(30 <= h["epoch"].iloc[-1] < 100 for h in ran)

    wait_for(process, one_more_finished_and_one_midway, 240, "trial finished after the resume with another midway")
    # The driver's embedded Ray (GCS, raylet, the trials' workers) notices and goes away with it; Ray's dashboard
    # and runtime-env agents outlive it (seen: still there after 60 s), but they write nothing of the sweep's.
    agents = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")
    tree = process_tree(process.pid)
    driver_and_its_ray = {pid for pid, command in commands(tree).items() if not command.startswith(agents)}
    process.kill()
    process.wait()
    wait_until_gone(driver_and_its_ray, 60, "the killed driver's Ray")
    before = trial_epochs(folder)
    finished = {trial: epochs for trial, epochs in before.items() if epochs[-1] == 100}
    midway = {trial: epochs for trial, epochs in before.items() if 30 <= epochs[-1] < 100}
    assert len(finished) > len(finished_before_ctrl_c) and midway, before

    done = sweeps_run("air_rnn", "--resume", "--name", "resumable", "--storage-path", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Sweep air_rnn - resuming" in done.stdout
    results = pd.read_csv(folder / "results.csv")
    assert len(results) == 5 and results.trial_id.is_unique
    assert (results.status == "COMPLETED").all() and (results.epochs == 100).all()
    # Two trials at a time: the search started the last ones after a resume, with every hyperparameter sampled (the
    # ones that depend on others too, which Tune stores as placeholders).
    assert not results.astype(str).apply(lambda column: column.str.contains("__fn_ph")).any().any()
    after = trial_epochs(folder)
    for trial, epochs in finished.items():
        assert after[trial] == epochs  # not run again
    for path, rows in finished_before_ctrl_c.items():  # nor even written again
        assert (len(pd.read_csv(path)), os.path.getmtime(path)) == rows
    for trial, epochs in midway.items():
        resumed = after[trial][len(epochs) :]
        assert 1 < resumed[0] <= epochs[-1] + 1  # from its latest checkpoint, not from the start
        assert resumed[-1] == 100
