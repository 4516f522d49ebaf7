"""Several sweeps on one cluster: while others are starting trials too, each sweep runs at most its fair share.

Ray gives a freed slot to whichever waiting trial its scheduler retries first, and retries long-waiting ones
ever more rarely, so the sweep that started first would keep the cluster until it runs out of trials. Instead,
a sweep that joins a cluster announces itself in the cluster's key-value store while it still has trials to
start (a heartbeat every few seconds), and its search algorithm starts a new trial only while the sweep runs
fewer than ceil(slots / sweeps announced) (and fewer than --max-concurrent-trials). Its trials also release
their slots when they end (no actor reuse), so the next trial to start may be another sweep's.

A sweep that has started all its trials stops announcing: its running trials keep their slots until they end,
and the others may grow into what it frees.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ray.tune.search import BasicVariantGenerator, ConcurrencyLimiter

from sweeps.plan.resources import TrialResources
from sweeps.trials.cluster_probe import announce_sweep, announced_sweeps, trial_slots, withdraw_sweep

if TYPE_CHECKING:
    from ray.tune.experiment import Trial
    from ray.tune.search import Searcher

PREFIX = "sweep:"
HEARTBEAT_S = 2.0
"""How often a sweep refreshes its announcement and its share."""
GONE_AFTER_S = 15.0
"""An announcement older than this is of a sweep that ended or died."""


class FairShare:
    """A sweep's share of the cluster's trial slots, recomputed every HEARTBEAT_S seconds."""

    def __init__(self, sweep_key: str, resources: TrialResources, limit: int | None) -> None:
        self.key, self.resources, self.limit = PREFIX + sweep_key, resources, limit
        self.share, self.refreshed = limit or 1, -math.inf

    def current(self) -> int:
        now = time.time()
        if now - self.refreshed >= HEARTBEAT_S:
            self.refreshed = now
            announce_sweep(self.key, {"heartbeat": now})
            live = 0
            for key, record in announced_sweeps(PREFIX).items():
                if now - record.get("heartbeat", 0) <= GONE_AFTER_S:
                    live += 1
                elif key != self.key:
                    withdraw_sweep(key)  # a sweep that died without withdrawing
            self.share = max(1, math.ceil(trial_slots(self.resources) / max(live, 1)))
            if self.limit:
                self.share = min(self.share, self.limit)
        return self.share

    def withdraw(self) -> None:
        withdraw_sweep(self.key)

    def __getstate__(self) -> dict[str, Any]:
        # Restored in a new driver (--resume): announce at once.
        return {**self.__dict__, "refreshed": -math.inf}


class FairShareVariants(BasicVariantGenerator):
    """Random search that starts a trial only within the sweep's fair share of the cluster."""

    def __init__(self, fair_share: FairShare, **options: Any) -> None:
        super().__init__(**options)
        self.fair_share = fair_share

    def next_trial(self) -> Trial | None:
        if self.is_finished():
            return None
        self.max_concurrent = self.fair_share.current()
        next_variant: Callable[[], Trial | None] = super().next_trial
        trial = next_variant()
        if self.is_finished():
            self.fair_share.withdraw()
        return trial


class FairShareLimiter(ConcurrencyLimiter):
    """A searcher (Optuna) asked for a new trial only within the sweep's fair share of the cluster."""

    def __init__(self, searcher: Searcher, fair_share: FairShare) -> None:
        super().__init__(searcher, max_concurrent=fair_share.limit or 1)
        self.fair_share = fair_share

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        self.max_concurrent = self.fair_share.current()
        suggestion = super().suggest(trial_id)
        if suggestion == self.searcher.FINISHED:  # type: ignore[comparison-overlap]  # Tune's marker string
            self.fair_share.withdraw()
        return suggestion
