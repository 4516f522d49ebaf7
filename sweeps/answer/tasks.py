"""Where the work after the trials runs: Ray tasks of a trial's resources, or this process.

Each piece of the answer (a member's refit, its future, a chunk of a baseline) is one task. On a sweep's Ray they are
all submitted at once, each waiting only on the results it takes (Ray resolves an argument that is another task's
result when that task ends), and spread over the cluster's nodes as the trials were: the same CPUs, GPU fraction or
TPU chips per task. Without Ray (`python -m sweeps.report` on a folder that holds no saved answer) they run here, one
after the other, in the order submitted.

Every task reports when it started and ended and on which node (`TaskTiming`), for the timings record
(sweeps.output.timings).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from sweeps.plan.resources import TrialResources
from sweeps.trials.trial import known_shapes, shipped_shapes

if TYPE_CHECKING:
    from forecaster.shapes.base import Shape


@dataclasses.dataclass(frozen=True)
class TaskTiming:
    kind: str
    """What the task did: refit, future or baselines."""
    label: str
    """Which one: a trial's id, a baseline and its chunk of series."""
    started: float
    """Seconds since the epoch, as time.time() on the node that ran it."""
    ended: float
    node: str
    """The Ray node's id; "local" in a process without Ray."""

    @property
    def seconds(self) -> float:
        return self.ended - self.started


def timed(kind: str, label: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, TaskTiming]:
    """`function(*args, **kwargs)` and when and where it ran."""
    started = time.time()
    value = function(*args, **kwargs)
    return value, TaskTiming(kind, label, started, time.time(), _node())


def timed_with(
    shapes: tuple[Shape, ...], kind: str, label: str, function: Callable[..., Any], *args: Any, **kwargs: Any
) -> tuple[Any, TaskTiming]:
    """`timed` in a worker that first registers the shapes the driver registered (sweeps.trials.trial.known_shapes)."""
    known_shapes(shapes)
    return timed(kind, label, function, *args, **kwargs)


def _node() -> str:
    try:
        import ray

        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else "local"
    except ImportError:
        return "local"


@dataclasses.dataclass(frozen=True)
class Handle:
    """A submitted task: its result (an ObjectRef on Ray, the value here), which another task may take as an
    argument, and its timing."""

    value: Any
    timing: Any


class Runner:
    """Submits the tasks of the answer: on the sweep's Ray where it runs (`on_ray`), else in this process."""

    def __init__(self, resources: TrialResources, on_ray: bool):
        self.resources, self.on_ray = resources, on_ray
        self.handles: list[Handle] = []
        self.shapes = shipped_shapes() if on_ray else ()
        """The shapes registered in this process, which each task registers in its worker."""

    def slots(self) -> int:
        """How many tasks of a trial's CPUs the cluster runs at once (1 here)."""
        if not self.on_ray:
            return 1
        import ray

        cluster_resources: Callable[[], dict[str, float]] = ray.cluster_resources
        return max(1, int(cluster_resources().get("CPU", 1) // self.resources.cpus))

    def put(self, value: Any) -> Any:
        """`value` where every task that takes it reads it: once in Ray's object store (each node maps one copy)."""
        if not self.on_ray:
            return value
        import ray

        return ray.put(value)

    def fit_options(self) -> dict[str, Any]:
        """What a task that trains tells forecaster.training.train.fit: its threads and accelerator, as a trial's."""
        return self.resources.task_fit_options() if self.on_ray else {"threads": max(1, int(self.resources.cpus))}

    def submit(
        self, kind: str, label: str, function: Callable[..., Any], *args: Any, trains: bool = True, **kwargs: Any
    ) -> Handle:
        """`function(*args, **kwargs)` as a task: one that `trains` takes a trial's accelerator too, the others its
        CPUs only. An argument that is another task's `Handle.value` waits for that task."""
        if not self.on_ray:
            handle = Handle(*timed(kind, label, function, *args, **kwargs))
        else:
            import ray

            options = self.resources.task_options(accelerated=trains)
            if trains:  # the trials' environment: a warm worker that imported torch and Lightning takes it
                from sweeps.trials.warm_pool import trial_env_vars

                options["runtime_env"] = {"env_vars": trial_env_vars()}
            remote = ray.remote(timed_with).options(num_returns=2, scheduling_strategy="SPREAD", **options)
            handle = Handle(*remote.remote(self.shapes, kind, label, function, *args, **kwargs))
        self.handles.append(handle)
        return handle

    def get(self, handle: Handle) -> Any:
        """A task's result, once it has ended."""
        if not self.on_ray:
            return handle.value
        import ray

        return ray.get(handle.value)

    def done(self, handle: Handle) -> bool:
        """Whether a task has ended."""
        if not self.on_ray:
            return True
        import ray

        ready, _ = ray.wait([handle.timing], timeout=0)
        return bool(ready)

    def ended_by(self, groups: list[list[Handle]], deadline: float) -> list[int]:
        """The positions of the `groups` of tasks that have all ended by `deadline` (time.time()); where none has,
        the first group to end, waited for past it (an answer needs one member)."""
        if not self.on_ray:
            return list(range(len(groups)))
        import ray

        pending = [handle.timing for group in groups for handle in group]
        while pending and time.time() < deadline:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=max(0.0, deadline - time.time()))
        ended = [index for index, group in enumerate(groups) if all(map(self.done, group))]
        while not ended and groups:
            ray.wait([handle.timing for group in groups for handle in group if not self.done(handle)], num_returns=1)
            ended = [index for index, group in enumerate(groups) if all(map(self.done, group))]
        return ended

    def get_timing(self, handle: Handle) -> TaskTiming:
        """When and where an ended task ran."""
        if not self.on_ray:
            return cast(TaskTiming, handle.timing)
        import ray

        return cast(TaskTiming, ray.get(handle.timing))

    def timings(self) -> list[TaskTiming]:
        """When and where every task that ended ran (one that failed or was cancelled is left out)."""
        if not self.on_ray:
            return [handle.timing for handle in self.handles]
        import ray

        found = []
        for handle in self.handles:
            try:
                found.append(ray.get(handle.timing, timeout=0))
            except (ray.exceptions.GetTimeoutError, ray.exceptions.RayError):
                continue
        return found

    def cancel(self, handle: Handle) -> None:
        """Stop a task that is no longer needed (its result will not be read)."""
        if self.on_ray:
            import ray

            ray.cancel(handle.value, force=True)
