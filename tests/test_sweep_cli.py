"""`python -m sweeps.run` as a user runs it: a smoke test end to end, bad input, Ctrl+C and --resume."""

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

ENV = dict(os.environ, RAY_AUTH_MODE="disabled")


def sweeps_run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "sweeps.run", *args], capture_output=True, text=True, env=ENV,
                          timeout=timeout)


def test_unknown_sweep_exits_2_listing_the_known_ones():
    done = sweeps_run("air_lstm")
    assert done.returncode == 2
    assert "unknown sweep 'air_lstm'; the sweeps are: air_rnn" in done.stderr


def test_list_and_help_say_what_there_is():
    listing = sweeps_run("--list")
    assert listing.returncode == 0 and listing.stdout.startswith("air_rnn: 64 trials of up to 300 epochs")
    help_text = sweeps_run("--help").stdout
    for option in ("--num-samples", "--max-epochs", "--scheduler", "--search", "--cpus-per-trial", "--gpus-per-trial",
                   "--tpu-chips-per-trial", "--max-concurrent-trials", "--address", "--storage-path", "--name",
                   "--resume", "--data", "--split-after", "--seed", "--set", "--smoke-test", "Examples:"):
        assert option in help_text


def test_bad_input_is_refused_before_ray_starts(tmp_path):
    bad = tmp_path / "gappy.csv"
    bad.write_text("month,sales\n2000-01,1\n2000-02,2\n2000-04,4\n2000-05,5\n")
    for args, message in [
        (["--data", str(bad)], "gap in the 'MS' series"),
        (["--set", "dropout=1.5"], "dropout=1.5 must be in [0, 1)"),
        (["--tpu-chips-per-trial", "0.5"], "TPU chips whole"),
        (["--num-samples", "0"], "--num-samples 0 must be at least 1"),
    ]:
        done = sweeps_run("air_rnn", "--storage-path", str(tmp_path), *args, timeout=60)
        assert done.returncode == 2, args
        assert message in done.stderr and "Ray" not in done.stdout


def test_smoke_test_runs_the_whole_cli(tmp_path):
    started = time.time()
    done = sweeps_run("air_rnn", "--smoke-test", "--storage-path", str(tmp_path), "--name", "smoke")
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.time() - started < 60
    out = done.stdout
    assert "Sweep air_rnn (smoke test)" in out and "dashboard" in out
    assert "4 trials of up to 6 epochs" in out and "Best: trial" in out
    assert f"python -m sweeps.refit {tmp_path}/smoke" in out
    results = pd.read_csv(tmp_path / "smoke" / "results.csv")
    assert len(results) == 4 and results.status.isin(["COMPLETED", "STOPPED"]).all()
    assert json.loads((tmp_path / "smoke" / "best_config.json").read_text())["config"]["model"] in ("RNN", "LSTM", "GRU")


def finished_trials(folder, epochs):
    finished = {}
    for path in glob.glob(f"{folder}/*/progress.csv"):
        try:
            history = pd.read_csv(path)
        except (pd.errors.EmptyDataError, pd.errors.ParserError):
            continue
        if len(history) and history["epoch"].max() >= epochs:
            finished[path] = (len(history), os.path.getmtime(path))
    return finished


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_resume_finishes_without_rerunning_finished_trials(tmp_path):
    args = ["air_rnn", "--num-samples", "6", "--max-epochs", "100", "--scheduler", "fifo", "--max-concurrent-trials",
            "1", "--set", "hidden_dim=8", "--seed", "3", "--storage-path", str(tmp_path), "--name", "resumable"]
    process = subprocess.Popen([sys.executable, "-m", "sweeps.run", *args], env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 180
    while len(finished_trials(tmp_path / "resumable", 100)) < 2 and time.time() < deadline and process.poll() is None:
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 130, output[-3000:]
    assert "stopped before its end" in output
    assert f"python -m sweeps.run air_rnn --resume --name resumable --storage-path {tmp_path}" in output
    before = finished_trials(tmp_path / "resumable", 100)
    assert 2 <= len(before) < 6

    done = sweeps_run("air_rnn", "--resume", "--storage-path", str(tmp_path))  # the latest run of air_rnn
    assert done.returncode == 0, done.stderr[-3000:]
    results = pd.read_csv(tmp_path / "resumable" / "results.csv")
    assert len(results) == 6 and (results.status == "COMPLETED").all() and (results.epochs == 100).all()
    for path, (rows, modified) in before.items():  # finished trials were not run again
        assert (len(pd.read_csv(path)), os.path.getmtime(path)) == (rows, modified)
