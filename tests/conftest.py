"""Shared fixtures: a real local Ray started on loopback for the tests that need one; `gpu` tests skip
where torch sees no CUDA device."""

import os
import signal

import pytest

# Ray runs its workers at nice 15; on a machine that other work keeps busy (a CI runner) such workers get a few
# percent of a core and the suite's time limits fire. Every Ray the suite starts (ray.init, `ray start`,
# ray.cluster_utils.Cluster, the CLI's) inherits this, as a sweep's own Ray has it (sweeps/trials/ray_session.py).
os.environ.setdefault("RAY_worker_niceness", "0")
# Ray prestarts a worker per CPU with the job's plain environment when the first driver connects; Tune's trial actors
# run with env_vars of their own, so those workers never serve a trial (sweeps/trials/warm_pool.py) and only take a core
# for their start-up: the sweep's own Ray and the cluster files turn them off, and so does every Ray the suite starts.
os.environ.setdefault("RAY_prestart_worker_first_driver", "0")

# `make test` runs the suite in two pytest-xdist workers, a test module per worker at a time (--dist loadfile). Each
# worker's Rays keep their sessions and their address file (what `ray start` writes and `--address auto` reads) in a
# folder of that worker's, so a test's `ray start` is never the "other Ray" or the `auto` of the other worker's
# tests. Every Ray the suite starts is on free ports and stopped alone (tests/helpers.py).
if worker := os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["RAY_TMPDIR"] = os.path.join(os.environ.get("RAY_TMPDIR", "/tmp"), f"ray-tests-{worker}")
    os.makedirs(os.environ["RAY_TMPDIR"], exist_ok=True)


# A suite started in the background (`make test &`, nohup, a CI step run with `&`) has SIGINT ignored, and every sweep
# it starts would inherit that: the Ctrl+C tests' sweeps would go on where a user's stop. Python's own handler, which
# a process started in the foreground has, is not inherited; its children start with Ctrl+C working.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    end_to_end_first(items)
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; torch sees none here")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


def end_to_end_first(items):
    """The modules with slow tests (real sweeps and clusters, minutes each) first, the quick ones after them, each in
    its own order: the two xdist workers take a module at a time in this order, and quick modules taken last let
    both end together, where a slow module taken last would leave one worker idle for minutes."""
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)  # stable: within a module, the file's order


@pytest.fixture(scope="module")
def local_ray(request):
    """A real Ray on this machine, started once per test module; resources come from the module's RAY_INIT."""
    import ray

    os.environ["RAY_AUTH_MODE"] = "disabled"  # these tests are not about authentication
    options = getattr(request.module, "RAY_INIT", {"num_cpus": 2})
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", include_dashboard=False, log_to_driver=False, **options)
    yield ray
    ray.shutdown()
