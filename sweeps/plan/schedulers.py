"""The trial schedulers a sweep can use, each one entry: its settings, the metric it ranks on, where trials
checkpoint, how many checkpoints they keep, what it refuses, and how Ray Tune's scheduler is built.

Adding a scheduler is a subclass of `Scheduler` here and a line in SCHEDULERS; `--scheduler` offers it, the
plan checks it, the Tuner builds it, the banner and the summary name it.

Every scheduler has a trial checkpoint where it may stop the trial, so that a stopped trial's last checkpoint
holds its best model (`CheckpointSchedule`). Besides those, every trial checkpoints by time, early and then
every few seconds of training, so that a trial killed anywhere loses at most that much work.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sweeps.plan.registry import Sweep
from sweeps.plan.space import Choice, LogUniform

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler

CHECKPOINT_EVERY_SECONDS = 2.0
"""Besides the scheduler's own points, a trial checkpoints after this many seconds of training since its last
checkpoint: what a retried trial may lose at most. A checkpoint of these models costs a few milliseconds."""
FIRST_CHECKPOINT_AFTER_SECONDS = 1.0
"""A trial's first checkpoint comes this early, so that a trial killed in its first seconds need not start over."""


class SchedulerError(ValueError):
    """The sweep cannot use this scheduler as configured; the message says what to change."""


@dataclasses.dataclass(frozen=True)
class CheckpointSchedule:
    """When a trial checkpoints: at its last epoch, and wherever any of these says so."""

    every: int = 0
    """Every this many epochs (0: not by epoch count)."""
    at: tuple[int, ...] = ()
    """At these epochs: where the scheduler decides about a trial."""
    on_improvement_from: int = 0
    """From this epoch on (0: never), at every epoch that improves the trial's best score."""
    every_seconds: float = CHECKPOINT_EVERY_SECONDS
    """After this many seconds of training since the trial's last checkpoint."""
    first_after_seconds: float = FIRST_CHECKPOINT_AFTER_SECONDS
    """After this many seconds of training, for a trial that has no checkpoint yet."""

    def due(self, epoch: int, last_epoch: int, improved: bool, seconds_since_checkpoint: float, has_one: bool) -> bool:
        return (
            epoch == last_epoch
            or epoch in self.at
            or (self.every > 0 and epoch % self.every == 0)
            or (improved and 0 < self.on_improvement_from <= epoch)
            or seconds_since_checkpoint >= (self.every_seconds if has_one else self.first_after_seconds)
        )


class Scheduler:
    """A scheduler entry. The defaults suit a scheduler that stops trials on their best score so far."""

    name = ""
    ranks_current_score = False
    """True when it compares trials' current score (it copies current weights) rather than their best."""
    checkpoints_kept = 2
    """Per trial, the latest ones: each holds the training state to resume from and the trial's best model."""
    options: tuple[str, ...] = ()
    """The scheduler_options it reads (--scheduler-option KEY=VALUE)."""

    def settings(self, sweep: Sweep) -> dict[str, Any]:
        """What it runs with, from the sweep's scheduler_options: what `build` uses and the banner shows."""
        return {}

    def checkpoints(self, sweep: Sweep) -> CheckpointSchedule:
        return CheckpointSchedule()

    def check(self, sweep: Sweep) -> None:
        """Raise SchedulerError if the sweep's search or space cannot work with this scheduler."""

    def build(self, sweep: Sweep) -> TrialScheduler:
        """Ray Tune's scheduler for the sweep."""
        raise NotImplementedError

    def metric(self, sweep: Sweep) -> str:
        return f"val_{sweep.metric}" if self.ranks_current_score else sweep.ranked

    def fit_budget(self, options: Mapping[str, Any], max_epochs: int) -> dict[str, Any]:
        """A grace period as long as the budget would judge nothing: a smaller budget shrinks it instead of
        being refused (the banner shows the result)."""
        grace = options.get("grace_period")
        if grace is not None and grace >= max_epochs:
            return {**options, "grace_period": max(1, max_epochs // 4)}
        return dict(options)


class Fifo(Scheduler):
    """Every trial runs to the end."""

    name = "fifo"

    def build(self, sweep: Sweep) -> TrialScheduler:
        from ray.tune.schedulers import FIFOScheduler

        fifo: Callable[[], FIFOScheduler] = FIFOScheduler
        return fifo()


class Asha(Scheduler):
    """At each rung (grace_period * reduction_factor^k epochs) a trial goes on only if it is in the best
    1/reduction_factor of the trials that reached the rung."""

    name = "asha"
    options = ("grace_period", "reduction_factor")

    def settings(self, sweep: Sweep) -> dict[str, Any]:
        options = sweep.scheduler_options
        return {
            "grace_period": int(options.get("grace_period", 1)),
            "reduction_factor": options.get("reduction_factor", 3),
        }

    def rungs(self, sweep: Sweep) -> tuple[int, ...]:
        """The epochs where trials are judged, below the epoch budget."""
        settings = self.settings(sweep)
        found, rung = [], settings["grace_period"]
        while rung < sweep.max_epochs:
            found.append(math.ceil(rung))
            rung *= settings["reduction_factor"]
        return tuple(found)

    def checkpoints(self, sweep: Sweep) -> CheckpointSchedule:
        # ASHA stops a trial right after the report of a rung's epoch: a checkpoint there. (Every HyperBand
        # bracket's rungs are among the first bracket's.)
        return CheckpointSchedule(at=self.rungs(sweep))

    def brackets(self, sweep: Sweep) -> int:
        return 1

    def build(self, sweep: Sweep) -> TrialScheduler:
        from ray.tune.schedulers import AsyncHyperBandScheduler

        return AsyncHyperBandScheduler(
            time_attr="epoch", max_t=sweep.max_epochs, brackets=self.brackets(sweep), **self.settings(sweep)
        )


class HyperBand(Asha):
    """Ray's asynchronous HyperBand: ASHA in several brackets, the later ones judging trials first at
    grace_period * reduction_factor^s, which hedges against a grace period that is too short. (Ray's
    synchronous HyperBandScheduler pauses trials at every milestone and, with a function trainable, left
    some paused for good when the sweep ended.)"""

    name = "hyperband"

    def brackets(self, sweep: Sweep) -> int:
        """As many brackets as ASHA has rungs, plus one that runs every trial to the end."""
        return len(self.rungs(sweep)) + 1


class MedianRule(Scheduler):
    """Stops a trial whose best is worse than the median of the other trials' at the same epoch."""

    name = "median"
    options = ("grace_period",)

    def settings(self, sweep: Sweep) -> dict[str, Any]:
        return {"grace_period": int(sweep.scheduler_options.get("grace_period", 1))}

    def checkpoints(self, sweep: Sweep) -> CheckpointSchedule:
        # It may stop a trial at any epoch after its grace period: a checkpoint there and at every improvement.
        grace = self.settings(sweep)["grace_period"]
        return CheckpointSchedule(at=(grace,), on_improvement_from=grace)

    def build(self, sweep: Sweep) -> TrialScheduler:
        from ray.tune.schedulers import MedianStoppingRule

        return MedianStoppingRule(time_attr="epoch", min_samples_required=3, **self.settings(sweep))


class PopulationBased(Scheduler):
    """Population-based training: every perturbation interval, weak trials take over the weights of good
    ones and mutate what can change mid-training (the learning rate, the batch size)."""

    name = "pbt"
    options = ("perturbation_interval",)
    ranks_current_score = True  # it copies a trial's current weights, so it compares current scores
    checkpoints_kept = 4  # other trials copy checkpoints: keep them a little longer

    def settings(self, sweep: Sweep) -> dict[str, Any]:
        interval = sweep.scheduler_options.get("perturbation_interval", max(1, sweep.max_epochs // 10))
        return {"perturbation_interval": int(interval)}

    def checkpoints(self, sweep: Sweep) -> CheckpointSchedule:
        return CheckpointSchedule(every=self.settings(sweep)["perturbation_interval"])

    def mutations(self, sweep: Sweep) -> dict[str, Any]:
        from ray import tune

        mutations: dict[str, Any] = {}
        lr, batch = sweep.space.get("lr"), sweep.space.get("batch_size")
        if isinstance(lr, LogUniform):
            mutations["lr"] = tune.loguniform(lr.low, lr.high)
        if isinstance(batch, Choice):
            mutations["batch_size"] = list(batch.values)
        return mutations

    def check(self, sweep: Sweep) -> None:
        if sweep.search != "random":
            raise SchedulerError("--scheduler pbt explores by itself: use it with --search random")
        lr, batch = sweep.space.get("lr"), sweep.space.get("batch_size")
        if not isinstance(lr, LogUniform) and not isinstance(batch, Choice):
            raise SchedulerError(
                "--scheduler pbt needs lr (log-uniform) or batch_size (a choice) searched, to mutate them"
            )

    def build(self, sweep: Sweep) -> TrialScheduler:
        from ray.tune.schedulers import PopulationBasedTraining

        return PopulationBasedTraining(
            time_attr="epoch", hyperparam_mutations=self.mutations(sweep), **self.settings(sweep)
        )


SCHEDULERS: dict[str, Scheduler] = {
    scheduler.name: scheduler for scheduler in (Asha(), HyperBand(), MedianRule(), PopulationBased(), Fifo())
}


def scheduler_of(sweep: Sweep) -> Scheduler:
    return SCHEDULERS[sweep.scheduler]
