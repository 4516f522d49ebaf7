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
from typing import Any

from sweeps.plan import PlanError, SweepPlan
from sweeps.resources import TrialResources


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
        return [node.ray_node_type_name for node in nodes]
    raw = _internal_kv_get(ray_constants.DEBUG_AUTOSCALING_STATUS)
    report = (json.loads(raw).get("autoscaler_report") or {}) if raw else {}
    return [
        *(report.get("active_nodes") or {}),
        *(report.get("idle_nodes") or {}),
        *(report.get("pending_launches") or {}),
    ]


def cluster_capacity(plan: SweepPlan, local: bool) -> tuple[int, str]:
    """How many trials run at once, and the cluster's resources in words.

    A request that no node can hold is refused, unless an autoscaler may add such a node.
    """
    import ray

    nodes = [node for node in ray.nodes() if node.get("Alive")]
    totals: dict[str, float] = {}
    for node in nodes:
        for key, value in node["Resources"].items():
            if key in ("CPU", "GPU", "TPU"):
                totals[key] = totals.get(key, 0.0) + value
    described = ", ".join(f"{value:g} {key}" for key, value in sorted(totals.items())) + f" on {len(nodes)} node(s)"
    at_once = trials_at_once(plan.resources, nodes)
    if at_once == 0:
        if local or not cluster_autoscales():
            raise PlanError(
                f"no node of this Ray cluster can hold a trial of {plan.resources.describe()}: it has {described}, "
                "and no autoscaler can add a node. Ask for less per trial (--cpus-per-trial, --gpus-per-trial, "
                "--tpu-chips-per-trial), or run on a cluster that has it (--address)"
            )
        print(
            f"note: no node holds a trial of {plan.resources.describe()} yet; trials wait for the autoscaler "
            "to add one (Ctrl+C stops, --resume continues)",
            flush=True,
        )
    if plan.max_concurrent_trials:
        at_once = min(at_once, plan.max_concurrent_trials)
    return at_once, described
