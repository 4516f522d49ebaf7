"""What the Ray cluster can hold and whether it can grow: asked before the sweep starts.

Ray itself would leave a trial that no node can hold pending forever, warning every minute; on a cluster
that cannot grow the sweep refuses it instead. This is the one module that reads Ray's private APIs (the
autoscaler's status, v1 and v2): Ray is pinned to one version, and a test covers each.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sweeps.plan.resources import TrialResources

if TYPE_CHECKING:
    import grpc


class CapacityError(ValueError):
    """No node of the cluster can hold a trial, and none can be added; the message says what to change."""


def trials_at_once(resources: TrialResources, nodes: list[dict[str, Any]]) -> int:
    """How many trials the cluster's nodes can hold at the same time (0: not one, anywhere)."""

    def fits(bundle: dict[str, float], capacity: dict[str, float]) -> int:
        counts = [math.floor(capacity.get(key, 0.0) / need + 1e-9) for key, need in bundle.items() if need > 0]
        return min(counts) if counts else 0

    capacities = [node["Resources"] for node in nodes if node.get("Alive")]
    workers = resources.data_parallel_workers
    if workers > 1:
        slots = sum(fits(resources.worker_bundle(), capacity) for capacity in capacities)
        return slots // workers
    return sum(fits(resources.trial_bundle(), capacity) for capacity in capacities)


def cluster_autoscales(wait_s: float = 6.0) -> bool:
    """Whether an autoscaler with a cluster config runs, which may add the nodes a trial needs.

    Ray's autoscaler runs on every head; without a cluster config it only watches, through a read-only
    provider whose node types are the nodes' ids ("node_<id>"), while a cluster config names them
    ("ray.worker.gpu"). The head's monitor says which it is a few seconds after the head starts.
    """
    deadline = time.monotonic() + wait_s
    while True:
        node_types = _autoscaler_node_types()
        if node_types:
            return any(not re.fullmatch(r"node_[0-9a-f]+", node_type) for node_type in node_types)
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def _autoscaler_node_types() -> list[str]:
    """The node types the autoscaler sees: autoscaler v2 (what `ray up` starts since Ray 2.50) answers
    through its SDK; v1 publishes a report in Ray's internal store, as `ray status` reads it."""
    import ray
    from ray._private import ray_constants
    from ray.autoscaler.v2.utils import is_autoscaler_v2
    from ray.experimental.internal_kv import _internal_kv_get

    if is_autoscaler_v2(fetch_from_server=True):
        from ray.autoscaler.v2.sdk import get_cluster_status

        status = get_cluster_status(ray.get_runtime_context().gcs_address)
        nodes = [*status.active_nodes, *status.idle_nodes, *status.pending_nodes, *status.pending_launches]
        return [node.ray_node_type_name for node in nodes]  # type: ignore[attr-defined]  # v2's node records
    raw = _internal_kv_get(ray_constants.DEBUG_AUTOSCALING_STATUS)
    report = (json.loads(raw).get("autoscaler_report") or {}) if raw else {}
    return [
        *(report.get("active_nodes") or {}),
        *(report.get("idle_nodes") or {}),
        *(report.get("pending_launches") or {}),
    ]


def ray_started_on_this_machine() -> str | None:
    """The address of a Ray started on this machine with `ray start` that still runs, if there is one."""
    from ray._private.services import find_bootstrap_address, find_gcs_addresses

    gcs_addresses: Callable[[], frozenset[str]] = find_gcs_addresses
    address = find_bootstrap_address(None)
    return address if address and address in gcs_addresses() else None


def describe_resources(nodes: list[dict[str, Any]]) -> str:
    """The CPUs, GPUs and TPU chips of the live nodes, in words."""
    totals: dict[str, float] = {}
    for node in nodes:
        for key, value in node["Resources"].items():
            if key in ("CPU", "GPU", "TPU") and value > 0:
                totals[key] = totals.get(key, 0.0) + value
    held = ", ".join(f"{value:g} {key}" for key, value in sorted(totals.items())) or "no CPUs, GPUs or TPU chips"
    return f"{held} on {len(nodes)} node(s)"


def cluster_capacity(
    resources: TrialResources, max_concurrent_trials: int | None, address: str, own: bool
) -> tuple[int, str]:
    """How many trials run at once on the cluster at `address`, and its resources in words.

    A request that no node can hold is refused, unless an autoscaler may add such a node (a Ray of the
    sweep's own has none).
    """
    nodes = [node for node in ray_nodes() if node.get("Alive")]
    described = describe_resources(nodes)
    at_once = trials_at_once(resources, nodes)
    if at_once == 0:
        if own or not cluster_autoscales():
            raise CapacityError(
                f"no node of this Ray cluster can hold a trial of {resources.describe()}: the cluster at "
                f"{address} has {described}, and no autoscaler can add a node. Ask for less per trial "
                "(--cpus-per-trial, --gpus-per-trial, --tpu-chips-per-trial), or run on a cluster that has it "
                "(--address)"
            )
        print(
            f"note: no node holds a trial of {resources.describe()} yet; trials wait for the autoscaler "
            "to add one (Ctrl+C stops, --resume continues)",
            flush=True,
        )
    if max_concurrent_trials:
        at_once = min(at_once, max_concurrent_trials)
    return at_once, described


def announce_sweep(key: str, record: dict[str, Any]) -> None:
    """Record in the cluster's own key-value store (the GCS) that a sweep is here: other sweeps read it."""
    from ray.experimental.internal_kv import _internal_kv_put

    _internal_kv_put(key, json.dumps(record), overwrite=True, namespace=SWEEPS_NAMESPACE)


def announced_sweeps(prefix: str) -> dict[str, dict[str, Any]]:
    """Every record announced under `prefix`, by key."""
    from ray.experimental.internal_kv import _internal_kv_get, _internal_kv_list

    records = {}
    for key in _internal_kv_list(prefix, namespace=SWEEPS_NAMESPACE):
        raw = _internal_kv_get(key, namespace=SWEEPS_NAMESPACE)
        if raw:
            records[key.decode() if isinstance(key, bytes) else key] = json.loads(raw)
    return records


def withdraw_sweep(key: str) -> None:
    from ray.experimental.internal_kv import _internal_kv_del

    _internal_kv_del(key, namespace=SWEEPS_NAMESPACE)


SWEEPS_NAMESPACE = "rnn-sweeps"


def trial_slots(resources: TrialResources) -> int:
    """How many trials of `resources` the cluster's live nodes hold now."""
    return trials_at_once(resources, ray_nodes())


def ray_nodes() -> list[dict[str, Any]]:
    """`ray.nodes()`, typed: every node the cluster knows of, alive or not."""
    import ray

    nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
    return nodes()


def prestart_workers(node: dict[str, Any], count: int, serialized_runtime_env: str, keep_alive_s: int) -> None:
    """Ask a node's raylet to start `count` idle workers for this driver's job with the given runtime environment,
    kept alive `keep_alive_s` seconds: Ray's own PrestartWorkers call, which its Python API does not expose. An actor
    of the job with that runtime environment placed on the node then takes one of them instead of a new process."""
    import ray
    from ray._private.grpc_utils import init_grpc_channel
    from ray.core.generated import common_pb2, node_manager_pb2, node_manager_pb2_grpc, runtime_environment_pb2

    stub: Callable[[grpc.Channel], node_manager_pb2_grpc.NodeManagerServiceStub] = (
        node_manager_pb2_grpc.NodeManagerServiceStub
    )
    channel = init_grpc_channel(f"{node['NodeManagerAddress']}:{node['NodeManagerPort']}")
    try:
        stub(channel).PrestartWorkers(
            node_manager_pb2.PrestartWorkersRequest(  # type: ignore[attr-defined]  # generated protobuf classes
                language=common_pb2.Language.PYTHON,  # type: ignore[attr-defined]
                job_id=bytes.fromhex(ray.get_runtime_context().get_job_id()),
                runtime_env_info=runtime_environment_pb2.RuntimeEnvInfo(  # type: ignore[attr-defined]
                    serialized_runtime_env=serialized_runtime_env
                ),
                keep_alive_duration_secs=keep_alive_s,
                num_workers=count,
            ),
            timeout=10,
        )
    finally:
        channel.close()
