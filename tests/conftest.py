"""Shared fixtures: a real local Ray started on loopback for the tests that need one; `gpu` tests skip
where torch sees no CUDA device."""

import os

import pytest

# Ray runs its workers at nice 15; on a machine that other work keeps busy (a CI runner) such workers get a few
# percent of a core and the suite's time limits fire. Every Ray the suite starts (ray.init, `ray start`,
# ray.cluster_utils.Cluster, the CLI's) inherits this, as a sweep's own Ray has it (sweeps/ray_session.py).
os.environ.setdefault("RAY_worker_niceness", "0")


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; torch sees none here")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


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
