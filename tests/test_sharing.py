"""Sweeps that share a machine or a cluster: two at once on a laptop beside a Ray started with `ray start`, two
drivers on one multi-node cluster, and the same name asked for twice."""

import json
import os
import re
import socket
import subprocess
import sys

import pandas as pd
import pytest

from sweeps.driver import claim_folder
from sweeps.plan.sweep_plan import PlanError, make_plan
from sweeps.run import main
from tests.helpers import ROOT, cluster_head_args, ray_env, ray_head, without_dashboard_packages

# Two processes of a 2-layer GRU of 64 units, about 40 ms an epoch: long enough for trials to overlap.
SLOW = ["--set", "model=GRU", "--set", "hidden_dim=64", "--set", "n_rnn_layers=2", "--set", "batch_size=8"]


def start_sweep(*args, env=None):
    return subprocess.Popen(
        [sys.executable, "-m", "sweeps.run", "air_rnn", "--no-future", *args],  # the future: test_panel_sweep.py
        cwd=ROOT,
        env=env or ray_env(RAY_AUTH_MODE="disabled"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(process, timeout=900):
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output[-3000:]
    return output


def banner_line(output, label):
    return re.search(rf"^  {label} +(.*)$", output, re.MULTILINE).group(1)


def trial_spans(folder):
    """[(first report, last report)] of every trial of a finished sweep, in seconds since the epoch."""
    spans = []
    for trial in os.listdir(folder):
        progress = os.path.join(folder, trial, "progress.csv")
        if os.path.exists(progress):
            history = pd.read_csv(progress)
            spans.append((history.timestamp.min(), history.timestamp.max()))
    return spans


@pytest.mark.slow
def test_two_smoke_tests_side_by_side_beside_a_ray_started_here_each_run_on_a_ray_of_their_own_and_say_so(tmp_path):
    """The second runs where the dashboard's packages cannot be imported (`ray[tune]` without `ray[default]`, a slim
    image): its Ray starts without a dashboard, and the banner says so and how to get one."""
    env = ray_env(RAY_AUTH_MODE="disabled")
    slim = without_dashboard_packages(env, tmp_path / "slim")
    with ray_head(env) as head:  # a dashboard and no CPU at all
        first = start_sweep("--smoke-test", "--seed", "1", "--name", "a", "--storage-path", str(tmp_path), env=env)
        second = start_sweep("--smoke-test", "--seed", "2", "--name", "b", "--storage-path", str(tmp_path), env=slim)
        outputs = [finish(first), finish(second)]
        dashboards = [banner_line(output, "dashboard") for output in outputs]
        assert dashboards[0].startswith("http://127.0.0.1:") and dashboards[0] != head.dashboard
        assert dashboards[1] == (
            "off: this Ray's environment lacks the dashboard's packages (No module named 'aiohttp'); "
            "pip install 'ray[default]' for it"
        )
        for output in outputs:
            ray_line = banner_line(output, "ray")
            assert "a new local Ray of this sweep's own" in ray_line
            assert f"another Ray runs here at {head.address} (--address auto runs the sweep on it)" in ray_line
        for name, seed in (("a", 1), ("b", 2)):
            results = pd.read_csv(tmp_path / name / "results.csv")
            assert len(results) == 4 and results.status.isin(["COMPLETED", "STOPPED"]).all()
            assert json.loads((tmp_path / name / "resolved_sweep.json").read_text())["seed"] == seed
            best = json.loads((tmp_path / name / "best_config.json").read_text())
            assert best["config"]["model"] in ("RNN", "LSTM", "GRU")
        # What the whole CLI's smoke test says, end to end.
        assert "Sweep air_rnn (smoke test)" in outputs[0] and "4 trials of up to 6 epochs" in outputs[0]
        assert "Best: trial" in outputs[0] and f"python -m sweeps.refit {tmp_path}/a" in outputs[0]

        joined = subprocess.run(
            [sys.executable, "-m", "sweeps.run", "air_rnn", "--smoke-test", "--no-future", "--address", "auto"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert joined.returncode == 2, joined.stderr[-2000:]
        assert re.search(
            rf"no node of this Ray cluster can hold a trial of 1 CPU: the cluster at {re.escape(head.address)} has no "
            r"CPUs, GPUs or TPU chips on 1 node\(s\)",
            joined.stderr,
        )


def test_a_dashboard_port_that_is_taken_is_refused_before_ray_starts(tmp_path, capsys):
    import ray

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code = main(["air_rnn", "--smoke-test", "--dashboard-port", str(port), "--storage-path", str(tmp_path)])
    assert code == 2
    assert f"--dashboard-port {port}: 127.0.0.1:{port} is taken" in capsys.readouterr().err
    assert not ray.is_initialized()


NICENESS_OF_A_WORKER = (
    "import os, ray; from sweeps.trials.ray_session import start_ray; start_ray(None, '127.0.0.1', None); "
    "print('worker niceness', ray.get(ray.remote(lambda: os.nice(0)).remote()))"
)


@pytest.mark.slow
@pytest.mark.parametrize("users_setting, niceness", [(None, 0), ("7", 7)])
def test_a_sweeps_own_ray_trains_at_normal_priority_unless_the_user_sets_rays_niceness(users_setting, niceness):
    """Ray's default, nice 15, starves trials on a machine that anything else keeps busy."""
    env = ray_env(RAY_AUTH_MODE="disabled")
    env.pop("RAY_worker_niceness", None)  # the suite's own setting (conftest.py)
    env["SWEEPS_WARM_WORKERS"] = "0"  # a worker that imported torch and Lightning first tells no more of its niceness
    if users_setting:
        env["RAY_worker_niceness"] = users_setting
    done = subprocess.run(
        [sys.executable, "-c", NICENESS_OF_A_WORKER], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"worker niceness {niceness}" in done.stdout


@pytest.mark.slow
def test_two_sweeps_on_one_cluster_share_it_and_keep_to_their_own_folders(tmp_path):
    from ray.cluster_utils import Cluster

    os.environ["RAY_AUTH_MODE"] = "disabled"
    cluster = Cluster(initialize_head=True, head_node_args=cluster_head_args())
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        # Three trials each on two slots: the sweep that gets going first cannot start them all before the other
        # announces itself, and then each keeps to one slot.
        common = ["--address", cluster.address, "--num-samples", "3", "--max-epochs", "60", "--scheduler", "fifo"]
        sweeps = {
            name: start_sweep(*common, *SLOW, "--seed", str(seed), "--name", name, "--storage-path", str(tmp_path))
            for seed, name in enumerate(("first", "second"))
        }
        outputs = {name: finish(process) for name, process in sweeps.items()}
    finally:
        cluster.shutdown()
    for name, output in outputs.items():
        assert "the existing Ray cluster at" in banner_line(output, "ray")
        folder = tmp_path / name
        results = pd.read_csv(folder / "results.csv")
        assert len(results) == 3 and results.trial_id.is_unique
        assert (results.status == "COMPLETED").all() and (results.epochs == 60).all()
        trial_folders = [entry for entry in os.listdir(folder) if (folder / entry / "progress.csv").exists()]
        for trial_id in results.trial_id:  # every row is a trial of this sweep, stored in this sweep's folder
            [trial_folder] = [entry for entry in trial_folders if f"_{trial_id}_" in f"_{entry}"]
            history = pd.read_csv(folder / trial_folder / "progress.csv")
            assert list(history.epoch) == list(range(1, 61))
    assert not set(pd.read_csv(tmp_path / "first" / "results.csv").trial_id) & set(
        pd.read_csv(tmp_path / "second" / "results.csv").trial_id
    )
    # Interleaved: the second sweep's trials did not wait for the first's to be done.
    first, second = trial_spans(tmp_path / "first"), trial_spans(tmp_path / "second")
    assert min(start for start, _ in second) < max(start for start, _ in first)


def test_the_name_of_a_sweep_in_the_storage_is_refused_for_a_new_one(tmp_path, capsys):
    plan = make_plan("air_rnn", name="taken", storage_path=str(tmp_path))
    claim_folder(plan, ["test"])
    assert main(["air_rnn", "--name", "taken", "--storage-path", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert f"--name taken: a sweep of that name is already in {tmp_path} (running or finished)" in error
    assert f"python -m sweeps.run air_rnn --resume --name taken --storage-path {tmp_path}` continues it" in error
    with pytest.raises(PlanError, match="a sweep of that name is already in"):
        claim_folder(plan, ["test"])  # two sweeps started at once with one name: the second finds it taken


def test_a_made_up_name_moves_on_to_a_free_one(tmp_path):
    import dataclasses

    plan = make_plan("air_rnn", storage_path=str(tmp_path))
    assert not plan.named_by_user and plan.name.startswith("air_rnn-")
    assert claim_folder(plan, ["test"]).name == plan.name
    # A second sweep started in the same second made up the same name: it takes the next free one.
    assert claim_folder(dataclasses.replace(plan), ["test"]).name == f"{plan.name}-2"
