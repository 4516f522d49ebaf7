"""What went wrong during a sweep, recorded by the driver: failed trials, their retries, and hung trials.

Two Tune callbacks, both in Tune's driver loop (a watch inside a trial's own process would hang with it):
- `FaultLog` records each trial failure as Tune handles it: retried from the latest checkpoint, or final; and
  when a retried trial's new process has started.
  The results read this log rather than Tune's saved trial state, which Ray 2.60 leaves stale for a trial
  whose last failure arrives after its actor is gone (it stays RUNNING in the snapshot, with fewer failures).
- `HangWatchdog` kills the actor of a running trial that has reported nothing for `timeout_s` seconds
  (a deadlocked collective, a GPU that stopped answering, a frozen process): Tune then sees a failed trial
  and retries it, or ends it as ERROR once its retries are spent. An attempt that has not reported yet is
  still starting, and gets at least STARTUP_ALLOWANCE_S.
The log lives in the sweep's folder (faults.json), next to Tune's state, so a resumed sweep appends to it;
the callbacks find that folder through each trial's storage, which Tune points at the folder a sweep is
resumed from, even when it has moved since.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import ray
from ray import tune

from sweeps.plan.storage import SweepFolder

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

logger = logging.getLogger(__name__)


def record_fault(trial: Trial, event: str, **details: object) -> None:
    """Appended to the sweep's faults.json, not kept in the callback: a resumed sweep unpickles callbacks as
    they were."""
    SweepFolder.of_trial(trial).append_fault(trial.trial_id, event, after_epoch=_last_epoch(trial), **details)


class FaultLog(tune.Callback):
    def on_trial_recover(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        record_fault(trial, "retried")

    def on_trial_start(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        if trial.num_failures:  # a retry's process is up: it trains again from its checkpoint
            record_fault(trial, "restarted")

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        record_fault(trial, "failed")


STARTUP_ALLOWANCE_S = 120.0
"""Before its first report, an attempt is given at least this long: a fresh process on a busy node may take tens of
seconds to import torch and restore its checkpoint, which is not a hang."""


class HangWatchdog(tune.Callback):
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.last_seen: dict[str, float] = {}
        self.starting: set[str] = set()
        """Trials whose current attempt has not reported yet."""

    def on_trial_start(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self.last_seen[trial.trial_id] = time.monotonic()
        self.starting.add(trial.trial_id)

    def on_trial_result(
        self, iteration: int, trials: list[Trial], trial: Trial, result: dict[str, Any], **info: Any
    ) -> None:
        self.last_seen[trial.trial_id] = time.monotonic()
        self.starting.discard(trial.trial_id)

    def on_step_begin(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        now = time.monotonic()
        for trial in trials:
            if trial.status != "RUNNING":
                continue
            seen = self.last_seen.setdefault(trial.trial_id, now)
            limit = max(self.timeout_s, STARTUP_ALLOWANCE_S) if trial.trial_id in self.starting else self.timeout_s
            if now - seen <= limit:
                continue
            # Ray Tune keeps the actor of a running trial here (Ray is pinned to one version).
            actor = trial.temporary_state.ray_actor
            if actor is None:
                continue
            logger.warning(
                "Trial %s reported nothing for %.0f s (last epoch %s): killing it so that Tune "
                "retries it from its checkpoint",
                trial.trial_id,
                now - seen,
                _last_epoch(trial),
            )
            ray.kill(actor, no_restart=True)
            self.last_seen[trial.trial_id] = now  # the retry gets a full timeout of its own
            self.starting.add(trial.trial_id)
            record_fault(trial, "watchdog", silent_seconds=round(now - seen, 1))


def _last_epoch(trial: Trial) -> int:
    return int((trial.last_result or {}).get("epoch", 0))
