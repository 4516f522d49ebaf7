"""`--time-limit DURATION`: the whole command, from its start to its exit, search and the work after it, within a
budget (AutoGluon's `time_limit`).

The search gets what the work after the trials will not need: as Ray Tune's `time_budget_s` would stop it, but at a
moment that moves with what the trials show. sweeps.trials.tuner.BudgetStopper stops every trial as soon as the time
left is what the answer's tasks would take as the trials stand: each member's continued epochs (a share of its best
epoch count: sweeps.answer.refits) at its trial's own measured seconds per epoch, spread over the slots the cluster runs
at once, the baselines' work not yet done, and `TAIL_SECONDS` of reading, scoring, writing and saving. It never stops
the search before a trial has reported an epoch (Tune's own time budget would, and leave no model).

When the trials end, `give_way` fits the answer's tasks into the time left, cutting in this order until they fit
(`GIVE_WAY`); the summary says what was cut:

1. the statistical baselines that have not finished, the one with the most work left first (seasonal
   naive costs nothing and always stays). These give way while the trials run too: where the time left comes down
   to the estimate, the stopper cuts one before it stops the trials, for their tasks hold slots the trials could use
   (on 2 CPUs, M3 monthly's baselines are about 110 s of work);
2. the answer's members, from the last (the least good) down to one;
3. the continuation through the validation part: the trials' own nets forecast the test window;
4. the continuation through the test window, down to one epoch (one, not none: its transforms fit again on the newer
   points, which a net cannot always read as it stands: a series logged before may hold a 0 there).

That fit is an estimate. The tasks then run to a deadline `WRITE_SECONDS` before the limit (less its margin): each
continuation stops after the epoch that passes it (a refit earlier, by what its future needs at least), and what has
not ended by it is left out, its tasks cancelled: the members whose refit or future still runs (the first member to end
is always waited for, and it ends an epoch or two after the deadline at most), then the statistical baselines still
running (sweeps.answer.run_tail). A node busier than the trials found it would otherwise carry the command past its
limit.

The command always ends with an answer, the future and the saved model; a limit too short for even one trial's
first epoch exits 2 before Ray starts, saying the least that would do (`check_time_limit`). `--resume` counts the time
earlier runs of the sweep spent (`time_spent.json` in its folder).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sweeps.plan.options import PlanError, shown_duration

if TYPE_CHECKING:
    from sweeps.answer import TailPlan
    from sweeps.plan.storage import SweepFolder

LEAST_SECONDS = 45.0
"""What a sweep needs at least after its start, for Ray's start, a trial's first epoch and its answer (the smoke panel
cut to one epoch took 30-40 s on 2 CPUs, 2026-11-29)."""
TAIL_SECONDS = 15.0
"""What the command takes after the last trial besides the answer's tasks: reading the trials, scoring, writing the
results and plots, saving the model, stopping Ray (5-8 s on the smoke panel and M3 monthly on 2 idle CPUs, 12-15 s
with both busy, 2026-11-29)."""
WRITE_SECONDS = 12.0
"""What the command takes after the answer's tasks: scoring, writing the results and plots, saving the model and the
future, stopping Ray and exiting (7 s on a small panel with three busy processes beside it on 2 CPUs, 2026-11-29).
The tasks' deadline is this long before the limit (`deadline`)."""
STOP_SECONDS = 5.0
"""How long Tune takes to stop the trials once told to (their last epoch, their actors' end)."""
WARM_AHEAD_SECONDS = 20.0
"""How long before it stops the trials the stopper asks for the answer's warm workers: what a worker takes to start
and import torch and Lightning on a busy node."""
MARGIN_SHARE = 0.03
"""The time kept back, as a share of the limit: the end lands before it rather than just after."""
GIVE_WAY = (
    "the statistical baselines not yet finished",
    "the answer's members, from the last",
    "the continuation through the validation part",
    "the continuation through the test window, down to one epoch",
)
"""What gives way when time runs short, in order (the module's docstring)."""
TIME_SPENT_FILE = "time_spent.json"
"""Seconds the sweep's runs have spent, kept in its folder while it runs: what a resumed sweep counts."""


def check_time_limit(limit: float | None, spent: float) -> None:
    """PlanError (exit 2, before Ray starts) where `limit` leaves less than the least a sweep needs after the
    `spent` seconds already gone (this command's start, and a resumed sweep's earlier runs)."""
    if limit is None:
        return
    least = spent + LEAST_SECONDS
    if limit < least:
        raise PlanError(
            f"--time-limit {shown_duration(limit)} is too short for even one trial's first epoch: {spent:.0f} s are "
            f"spent already and Ray's start, an epoch and the answer need about {LEAST_SECONDS:.0f} s more; give at "
            f"least --time-limit {shown_duration(least)}"
        )


@dataclasses.dataclass
class TimeBudget:
    """The limit of a sweep (None: none), and what it has spent: earlier runs (a resumed sweep's) and this command
    so far."""

    limit: float | None
    started: float
    """When this command started (seconds since the epoch)."""
    spent_before: float = 0.0

    def spent(self) -> float:
        return self.spent_before + time.time() - self.started

    def left(self) -> float:
        """Seconds left before the limit, less the margin kept back (infinite without a limit)."""
        return math.inf if self.limit is None else self.limit * (1 - MARGIN_SHARE) - self.spent()

    def deadline(self) -> float | None:
        """When the answer's tasks must have ended (time.time()), for the command to end within its limit; None
        without one."""
        return None if self.limit is None else time.time() + self.left() - WRITE_SECONDS


def start_seconds(seconds: list[float]) -> float:
    """What a trial took before its epochs, from its seconds per reported epoch: its first, less the median of the
    rest. That is its process's imports (torch and Lightning, where no warm worker had them) and its fit's setup,
    which each of the answer's tasks pays again, measured on this cluster as busy as it is (0 before a second
    epoch)."""
    return max(0.0, seconds[0] - statistics.median(seconds[1:])) if len(seconds) > 1 else 0.0


def epochs_cost(epochs: list[int], epoch_seconds: list[float], slots: int) -> float:
    """Seconds to run tasks of `epochs` at `epoch_seconds` each, `slots` at once: the work over the slots, at least
    the longest task. Each task costs an epoch more than it trains: its forecasts of the parts and its net's
    in-sample errors pass over the panel about as often as an epoch does (sweeps.answer.refits)."""
    work = [(count + 1) * seconds for count, seconds in zip(epochs, epoch_seconds)]
    return max(sum(work) / max(1, slots), max(work, default=0.0))


@dataclasses.dataclass
class Active:
    """What the stopper of a sweep running in this process reads (sweeps.trials.tuner.BudgetStopper): its budget, the
    estimate of the answer's time as the trials stand, and where the time spent is kept. Looked up by the sweep's
    folder, so that a stopper Tune restores for a resumed sweep reads the budget of the run that resumed it."""

    budget: TimeBudget
    tail_seconds: Callable[[dict[str, dict[str, Any]]], float]
    spent: Callable[[float], None]
    warm: Callable[[], None]
    """Asks for warm workers for the answer's tasks (sweeps.trials.warm_pool.warm_for_the_tail), once the end is
    near."""
    cut_baseline: Callable[[], str | None]
    """Cancels the statistical baseline with the most work left and names it (None: none is left to cut): the first to
    give way, before the trials are stopped (sweeps.answer.baselines.cut_slowest)."""
    written: float = 0.0
    warmed: bool = False


ACTIVE: dict[str, Active] = {}


@dataclasses.dataclass(frozen=True)
class Cut:
    """What `give_way` took away, for the summary and best_config.json."""

    baselines: tuple[str, ...] = ()
    members: int = 0
    """How many of the answer's members were left out."""
    refit: bool = False
    future: bool = False
    late: tuple[str, ...] = ()
    """The trials whose members were left out at the deadline, their tasks not ended (sweeps.answer.run_tail)."""
    shortened: tuple[str, ...] = ()
    """The trials whose members' continuations stopped at the deadline, short of their epochs."""

    def lines(self) -> list[str]:
        found = []
        if self.baselines:
            found.append(f"{', '.join(self.baselines)} (not finished)")
        if self.members:
            found.append(f"the last {self.members} of the answer's members")
        if self.refit:
            found.append("the continuation through the validation part (the trials' nets forecast the test window)")
        if self.future:
            found.append("the continuation through the test window, to one epoch")
        if self.late:
            found.append(f"the members of {', '.join(self.late)}: their tasks had not ended by the deadline")
        if self.shortened:
            found.append(
                f"the continuations of {', '.join(self.shortened)}: stopped at the deadline, short of their epochs"
            )
        return found


def give_way(tail: TailPlan, left: float, slots: int, baselines: dict[str, float]) -> tuple[TailPlan, Cut]:
    """`tail` (sweeps.answer.TailPlan) cut in GIVE_WAY's order until its tasks, `baselines` (the seconds of work each
    unfinished baseline has left) and TAIL_SECONDS fit in `left` seconds; and what was cut."""
    seconds = [member.epoch_seconds for member in tail.members]
    cut_baselines: list[str] = []
    pending = dict(baselines)

    def cost(plan: TailPlan) -> float:
        epochs = list(plan.refit_epochs) + list(plan.future_epochs or [])
        each = seconds[: len(plan.members)] * (2 if plan.future_epochs is not None else 1)
        # One start per member (its future takes its refit's worker), the members' at once.
        start = max((member.start_seconds for member in plan.members), default=0.0)
        return TAIL_SECONDS + start + epochs_cost(epochs, each, slots) + sum(pending.values()) / max(1, slots)

    for name in sorted(baselines, key=baselines.__getitem__, reverse=True):
        if cost(tail) <= left:
            break
        pending.pop(name)
        cut_baselines.append(name)
    members = 0
    while cost(tail) > left and len(tail.members) > 1:
        tail = dataclasses.replace(
            tail,
            members=tail.members[:-1],
            refit_epochs=tail.refit_epochs[:-1],
            future_epochs=None if tail.future_epochs is None else tail.future_epochs[:-1],
        )
        members += 1
    refit = cost(tail) > left and any(tail.refit_epochs)
    if refit:
        tail = dataclasses.replace(tail, refit_epochs=[0] * len(tail.members))
    future = cost(tail) > left and tail.future_epochs is not None and any(epochs > 1 for epochs in tail.future_epochs)
    if future:
        tail = dataclasses.replace(tail, future_epochs=[1] * len(tail.members))
    return tail, Cut(tuple(cut_baselines), members, refit, future)


def read_spent(folder: SweepFolder) -> float:
    """Seconds the sweep's earlier runs spent (0 for a new sweep)."""
    try:
        return float(json.loads(folder.read(TIME_SPENT_FILE))["seconds"])
    except (OSError, ValueError, KeyError):
        return 0.0


def spent_writer(folder: SweepFolder) -> Callable[[float], None]:
    """Keeps the seconds the sweep has spent in its folder."""

    def write(seconds: float) -> None:
        with contextlib.suppress(OSError):  # a storage that failed once: the next write tries again
            folder.write(TIME_SPENT_FILE, json.dumps({"seconds": round(seconds, 1)}).encode())

    return write
