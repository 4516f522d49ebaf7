"""Real multi-node Ray clusters on one machine (ray.cluster_utils.Cluster): where trials run, what happens
when a node dies mid-sweep, and what a cluster that cannot hold a trial answers."""

import os
import subprocess
import sys
import threading
import time

import pytest

from sweeps.driver import run_sweep
from sweeps.plan.sweep_plan import make_plan
from sweeps.run import main
from tests.helpers import SLOW_TRIAL, cluster_head_args, ray_env, ray_head, trial_histories


@pytest.fixture
def cluster():
    import ray
    from ray.cluster_utils import Cluster

    os.environ["RAY_AUTH_MODE"] = "disabled"
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args=cluster_head_args())  # the driver's node trains nothing
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def connect(cluster):
    import ray

    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)


@pytest.mark.slow
def test_trials_and_the_answers_tasks_spread_over_nodes_and_a_big_trial_runs_where_it_fits(cluster, tmp_path):
    small = cluster.add_node(num_cpus=1)
    big = cluster.add_node(num_cpus=3)
    connect(cluster)
    plan = make_plan(  # as many trials as slots: all start at once, and no node holds them all
        "air_rnn",
        num_samples=4,
        max_epochs=8,
        scheduler="fifo",
        seed=0,
        pins={"hidden_dim": 8},
        storage_path=str(tmp_path),
        name="spread",
    )
    run = run_sweep(plan, ["test"], progress=False)
    assert set(run.results.trials.node) == {small.node_id, big.node_id}
    # The tasks after the trials (the members' nets continued for the future, the baselines) ran on both nodes too.
    tasks = run.timings["tasks"]
    assert tasks["refit"]["tasks"] == tasks["future"]["tasks"] == len(run.scores.trials) >= 2
    assert set(run.timings["after_the_last_trial"]["nodes"]) == {small.node_id, big.node_id}
    assert (tmp_path / "spread" / "model" / "model.json").exists()
    plan = make_plan(
        "air_rnn",
        num_samples=1,
        max_epochs=4,
        scheduler="fifo",
        seed=0,
        cpus_per_trial=3,
        pins={"hidden_dim": 8},
        storage_path=str(tmp_path),
        name="big",
        future=False,
    )
    placed = run_sweep(plan, ["test"], progress=False).results.trials
    assert set(placed.node) == {big.node_id}  # only that node has 3 CPUs


@pytest.mark.slow
def test_a_node_lost_mid_sweep_costs_its_trials_only_the_epochs_since_their_checkpoints(cluster, tmp_path):
    first, second = cluster.add_node(num_cpus=2), cluster.add_node(num_cpus=2)
    connect(cluster)
    plan = make_plan(  # four trials on four slots: the lost node's trials have a slot to move to once others end
        "air_rnn",
        num_samples=4,
        max_epochs=100,
        scheduler="fifo",
        seed=1,
        pins=SLOW_TRIAL,
        max_failures=2,
        storage_path=str(tmp_path),
        name="node-loss",
        future=False,
    )
    removed = {}

    def kill_a_busy_node():
        deadline = time.time() + 240
        while time.time() < deadline:
            for history in trial_histories(plan.experiment_path).values():
                if history["epoch"].iloc[-1] >= 30:
                    node = history["node"].iloc[-1]
                    victim = first if node == first.node_id else second
                    cluster.remove_node(victim, allow_graceful=False)
                    removed["node"] = victim.node_id
                    return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_a_busy_node, daemon=True)
    killer.start()
    results = run_sweep(plan, ["test"], progress=False).results
    killer.join(timeout=5)
    trials = results.trials
    assert removed, "no trial got far enough to lose its node"
    assert len(trials) == 4 and trials.trial_id.is_unique  # none lost, none duplicated
    assert (trials.status == "COMPLETED").all() and (trials.epochs == 100).all()
    moved = trials[trials.failures > 0]
    assert len(moved) >= 1 and (moved.node != removed["node"]).all()  # restarted on the surviving node
    for trial_id in moved.trial_id:
        history = results.histories[trial_id]
        assert list(history.epoch) == list(range(1, 101))


@pytest.fixture(scope="module")
def fixed_cluster():
    """A head that trains nothing and one node of 2 CPUs, no autoscaler, shared by the refusals below; its head's
    monitor has reported (from its read-only provider), so that a sweep sees no autoscaler there instead of giving
    up waiting for the report."""
    import ray
    from ray.cluster_utils import Cluster

    from sweeps.trials.cluster_probe import _autoscaler_node_types

    os.environ["RAY_AUTH_MODE"] = "disabled"
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args=cluster_head_args())
    try:
        cluster.add_node(num_cpus=2)
        connect(cluster)
        deadline = time.monotonic() + 60
        while not _autoscaler_node_types():
            assert time.monotonic() < deadline, "the head's monitor reported no node types in 60 s"
            time.sleep(0.2)
        ray.shutdown()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.mark.slow
@pytest.mark.timeout(120)  # a cluster taken for an autoscaling one would leave the trials pending forever
@pytest.mark.parametrize(
    "request_, message",
    [
        (["--cpus-per-trial", "8"], "no node of this Ray cluster can hold a trial of 8 CPU"),
        (["--gpus-per-trial", "0.5"], "no node of this Ray cluster can hold a trial of 1 CPU, 0.5 GPU"),
        (["--tpu-chips-per-trial", "4"], "1 CPU, 4 TPU chips"),
    ],
)
def test_a_fixed_cluster_refuses_what_no_node_can_hold(fixed_cluster, tmp_path, capsys, request_, message):
    code = main(["air_rnn", "--address", fixed_cluster.address, "--storage-path", str(tmp_path), *request_])
    assert code == 2
    error = capsys.readouterr().err
    assert message in error and "no autoscaler can add a node" in error


AUTOSCALES = (
    "import sys, ray; ray.init(address=sys.argv[1], log_to_driver=False); "
    "from sweeps.trials.cluster_probe import cluster_autoscales; print(cluster_autoscales(wait_s=20))"
)


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    "head_env, autoscales",
    [({}, False), ({"RAY_NODE_TYPE_NAME": "ray.head.default", "RAY_CLOUD_INSTANCE_ID": "i-head"}, True)],
    ids=["fixed", "as-ray-up-starts-it"],
)
def test_autoscaler_v2_is_told_apart_from_a_fixed_cluster(tmp_path, head_env, autoscales):
    """`ray up` starts Ray's autoscaler v2 since Ray 2.50, which publishes no v1 report: a cluster of it whose
    head is of a named node type autoscales, one started by hand does not."""
    env = ray_env(RAY_AUTH_MODE="disabled", RAY_enable_autoscaler_v2="1", **head_env)
    with ray_head(env, num_cpus=1) as head:
        answer = subprocess.run(
            [sys.executable, "-c", AUTOSCALES, head.address], env=env, capture_output=True, text=True, timeout=90
        )
        assert answer.stdout.strip().splitlines()[-1] == str(autoscales), answer.stderr[-2000:]
