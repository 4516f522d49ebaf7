"""Warm workers on a real local Ray started as the sweep's own is (sweeps/trials/warm_pool.py): the trials take the
workers that imported torch and Lightning before them, also when the job has a runtime environment of its own; a worker
whose imports fail leaves its trial to fail with that error, and the sweep ends."""

import contextlib
import os
import re
import time

import pytest

from sweeps.driver import run_sweep
from sweeps.plan.sweep_plan import make_plan
from sweeps.trials.ray_session import WARM_WORKERS
from sweeps.trials.warm_pool import warm_up
from tests.helpers import commands, process_tree

pytestmark = pytest.mark.slow  # every test here runs a real sweep


def workers_started() -> list[int]:
    """The process id of each worker this session's raylet has started, in order (its log says so for each)."""
    from ray._private.worker import _global_node

    with open(os.path.join(_global_node.get_session_dir_path(), "logs", "raylet.out")) as log:
        return [int(found[1]) for line in log if (found := re.search(r"Started worker process with pid (\d+)", line))]


def idle_workers() -> int:
    """This session's idle workers: its raylet's (workers of another test's Ray, still exiting, would otherwise
    count, and the sweep would start before its own warm workers were up)."""
    from ray._private import ray_constants
    from ray._private.worker import _global_node

    raylet = _global_node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
    return sum(command.startswith("ray::IDLE") for command in commands(process_tree(raylet)).values())


@contextlib.contextmanager
def ray_with(runtime_env):
    import ray

    os.environ["RAY_AUTH_MODE"] = "disabled"
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env=runtime_env,
        _system_config=WARM_WORKERS,
    )
    try:
        yield
    finally:
        ray.shutdown()


def small_sweep(tmp_path, name, num_samples=4, max_concurrent_trials=None):
    return make_plan(
        "air_rnn",
        num_samples=num_samples,
        max_epochs=3,
        seed=5,
        max_concurrent_trials=max_concurrent_trials,
        pins={"hidden_dim": 8, "n_rnn_layers": 1},
        storage_path=str(tmp_path),
        name=name,
        future=False,
    )


@pytest.mark.parametrize(
    "runtime_env, at_once",
    [(None, None), ({"env_vars": {"A_JOB_VARIABLE": "1"}}, 1)],
    ids=["plain-job-two-at-once", "job-with-env-vars-one-at-a-time"],
)
def test_every_trial_starts_in_a_worker_that_imported_torch_and_lightning_before_it(tmp_path, runtime_env, at_once):
    """Trials run in the prestarted warm workers: a worker of another runtime environment than Tune's trial actors
    would never be handed one, and every trial would start cold. A sweep gets a warm worker per trial slot, but no
    more than it runs at once. Which trial runs where, and how many workers a sweep of two trials at once starts in
    all, is Tune's: it starts an actor for each staged trial, may evict one it cached, and on a busy machine these
    3-epoch trials can all end on one actor while another never gets a trial; so this asserts no count there. One
    trial at a time, the one worker runs them all, reused."""
    with ray_with(runtime_env):
        plan = small_sweep(tmp_path, "warm", max_concurrent_trials=at_once)
        warm_up(plan.resources, plan.most_at_once)  # the sweep asks for them too; asked here, the test can wait
        warm = at_once or 2  # the 2 CPUs' slots
        deadline = time.monotonic() + 120
        while idle_workers() < warm:
            assert time.monotonic() < deadline, f"only {idle_workers()} of {warm} warm workers idle after 120 s"
            time.sleep(0.2)
        prestarted = set(workers_started())  # all that were asked for were started at once, with the first
        run = run_sweep(plan, ["test"], progress=False)
    histories = run.results.histories
    assert len(histories) == 4
    assert all(history["warm_start"].iloc[0] == 1 for history in histories.values())
    assert len(prestarted) == warm
    served = {int(pid) for history in histories.values() for pid in history["pid"]}
    assert served & prestarted, f"no trial ran in a prestarted worker {prestarted}: they ran in {served}"
    if at_once == 1:
        assert served == prestarted


def test_a_worker_whose_imports_fail_fails_its_trial_with_that_error(tmp_path):
    """The workers' Lightning is broken (a package of that name earlier on their path): each trial fails with the
    import's own error, retried once and then ERROR, and the sweep ends instead of waiting for workers that
    never come up."""
    broken = tmp_path / "broken"
    (broken / "lightning").mkdir(parents=True)
    (broken / "lightning" / "__init__.py").write_text("raise ImportError('this Lightning is broken')\n")
    with ray_with({"env_vars": {"PYTHONPATH": str(broken)}}):
        run = run_sweep(small_sweep(tmp_path, "broken", num_samples=2), ["test"], progress=False)
    trials = run.results.trials
    assert list(trials.status) == ["ERROR", "ERROR"]
    assert trials.error.str.contains("this Lightning is broken").all()
    assert run.results.best is None and run.scores is None
