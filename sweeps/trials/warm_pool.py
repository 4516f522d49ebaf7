"""Warm trial processes: a trial placed on any node, new or retried, trains within a second or two.

A trial runs in a Ray actor, in a worker process of the sweep's job. A fresh one first imports torch and
Lightning (which brings torch._dynamo, torchmetrics, scipy and matplotlib with it): seconds, more on a busy node,
on the critical path of every new and every retried trial. Two Ray settings and one call take
it off that path:

- `preload_python_modules` (sweeps/trials/warm.py): every worker a node starts imports torch, Lightning and the
  trial's code as it starts, before it takes work;
- the raylet's PrestartWorkers call, asked with the runtime environment that Tune gives its trial actors. The
  environment must match to the byte: Ray hands a worker only to actors of the same environment, and Tune
  gives its actors env_vars of their own (PL_DISABLE_FORK), so the workers Ray prestarts by itself, with the
  job's plain environment, never serve a trial (`prestart_worker_first_driver` turns those off).

`WarmPool`, a Tune callback on the driver, asks every node for as many warm workers as it has trial slots (no
more than the sweep runs at once), when the sweep starts and when a node joins (a replacement for a preempted
one, one the autoscaler adds), and one more where a trial failed or (on a shared cluster, where actors are not
reused) ended. Each idle warm worker holds torch in memory: bench/sweep.py reports how much. The settings are
sweeps.trials.ray_session.WARM_WORKERS; SWEEPS_WARM_WORKERS=0 turns it all off.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ray import tune

from sweeps.plan.resources import TrialResources
from sweeps.trials.cluster_probe import prestart_workers, ray_nodes, trials_at_once

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

KEEP_ALIVE_S = 3600
"""How long an idle warm worker waits for a trial; the workers of a sweep's job end with the sweep anyway."""
LOOK_EVERY_S = 0.5
"""How often the driver looks for new nodes."""

logger = logging.getLogger(__name__)

warmed_nodes: set[str] = set()
"""The nodes this driver has asked for warm workers, by the early `warm_up` and by every WarmPool."""
warmed_for_the_tail: set[str] = set()
"""The nodes this driver has asked for warm workers for the answer's tasks after the trials."""


def trial_env_vars() -> dict[str, str]:
    """Tune's env_vars for its trainables (ray.tune.execution.class_cache): what the sweep's trial actors, and the
    answer's tasks that train after them (sweeps.answer.tasks), run with, so that a warm worker serves either."""
    from ray.tune.execution.class_cache import DEFAULT_ENV_VARS, ENV_VARS_TO_PROPAGATE

    propagated = {name: os.environ[name] for name in ENV_VARS_TO_PROPAGATE if name in os.environ}
    return {**DEFAULT_ENV_VARS, **propagated}


def trial_runtime_env() -> str:
    """The runtime environment of the sweep's trial actors, serialized as the raylet compares it: Tune's env_vars
    for its trainables merged over the job's own environment."""
    import ray

    tune_env_vars = trial_env_vars()
    runtime_env_string: Callable[[], str] = ray.get_runtime_context().get_runtime_env_string
    job = json.loads(runtime_env_string() or "{}")
    if not job:  # nothing to merge: Python serializes the actor's own environment
        return json.dumps({"env_vars": tune_env_vars}, sort_keys=True)
    # Merged with the job's by Ray's C++ core, which writes compact JSON with sorted keys.
    merged = {**job, "env_vars": {**job.get("env_vars", {}), **tune_env_vars}}
    return json.dumps(merged, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def warm_up(resources: TrialResources, most_at_once: int, tail_too: bool = False) -> None:
    """Ask every node for its warm workers now, before the Tuner is even built: the imports in the workers then
    overlap with the driver's own setup. `tail_too` (--time-limit, whose stopper may end the trials at any moment):
    as many again for the answer's tasks, in the same request (a node's raylet starts only what it lacks of the
    count asked for, so a second request for as many would start none)."""
    WarmPool(resources, most_at_once, actors_reused=True, per_slot=2 if tail_too else 1).setup()


def warm_for_the_tail(resources: TrialResources, most_at_once: int) -> None:
    """As many warm workers on every node as it has trial slots, once per node, for the answer's tasks after the
    trials (sweeps.answer.refits): asked while the last trials still run, so that the tasks take them when the trials
    end instead of waiting for new processes to import torch and Lightning (seconds each, more on a busy node). Asked
    any earlier, the trials' actors would take them."""
    WarmPool(resources, most_at_once, actors_reused=True)._warm_for_the_tail()


class WarmPool(tune.Callback):
    """Keeps warm workers ready on every node (see the module's docstring)."""

    def __init__(self, resources: TrialResources, most_at_once: int, actors_reused: bool, per_slot: int = 1) -> None:
        self.resources, self.most_at_once, self.actors_reused = resources, most_at_once, actors_reused
        self.per_slot = per_slot
        """Warm workers asked for a new node per trial slot."""
        self.looked = 0.0
        self.runtime_env: str | None = None

    def setup(self, **info: Any) -> None:  # type: ignore[override]  # Tune passes its settings by keyword
        self._look_for_new_nodes()

    def on_step_begin(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        if time.monotonic() - self.looked >= LOOK_EVERY_S:
            self._look_for_new_nodes()

    def on_trial_start(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        nodes = ray_nodes()
        if all(node["NodeID"] in warmed_for_the_tail for node in nodes if node.get("Alive")):
            return
        slots = min(trials_at_once(self.resources, nodes), self.most_at_once)
        if sum(other.status == "PENDING" for other in trials) <= slots:
            self._warm_for_the_tail()

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._replace(trial)

    def on_trial_recover(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._replace(trial)

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        if not self.actors_reused:  # its actor, and the worker it took, end with it
            self._replace(trial)

    def __getstate__(self) -> dict[str, Any]:
        # Restored by a resumed sweep in a new Ray session and process: its environment is found again.
        return {**self.__dict__, "runtime_env": None}

    def _look_for_new_nodes(self) -> None:
        self.looked = time.monotonic()
        for node in ray_nodes():
            if node.get("Alive") and node["NodeID"] not in warmed_nodes:
                warmed_nodes.add(node["NodeID"])
                slots = min(trials_at_once(self.resources, [node]), self.most_at_once)
                self._prestart(node, self.per_slot * slots)

    def _warm_for_the_tail(self) -> None:
        """`warm_for_the_tail`, once the last round of trials has started (or a time limit is near: sweeps.trials.tuner
        .BudgetStopper)."""
        for node in ray_nodes():
            if node.get("Alive") and node["NodeID"] not in warmed_for_the_tail:
                warmed_for_the_tail.add(node["NodeID"])
                self._prestart(node, min(trials_at_once(self.resources, [node]), self.most_at_once))

    def _replace(self, trial: Trial) -> None:
        node_id = (trial.last_result or {}).get("node")
        node = next((n for n in ray_nodes() if n["NodeID"] == node_id and n.get("Alive")), None)
        if node is not None:
            self._prestart(node, 1)

    def _prestart(self, node: dict[str, Any], count: int) -> None:
        if count < 1:
            return
        try:
            self.runtime_env = self.runtime_env or trial_runtime_env()
            prestart_workers(node, count, self.runtime_env, KEEP_ALIVE_S)
        except Exception as error:  # a node that died meanwhile: its trials go elsewhere, and start cold
            logger.debug("could not prestart workers on node %s: %s", node["NodeID"], error)
