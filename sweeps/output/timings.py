"""Where a sweep's time went, from the command's start to its exit: the summary's lines and timings.json.

The phases follow one another and add up to the whole: the start (imports, the data read and checked), Ray's start,
the trials (Tuner.fit), the wait for the tasks of the answer after the last trial, scoring and writing the results,
and saving the future and the model. The tasks of the answer (sweeps.answer.tasks) run beside those phases, the
baselines from the start of the trials: for each kind (refit, future, baselines), when its first task started and its
last ended, its tasks' seconds added up, how many of them ran before the last trial ended, and on which nodes; and
each task's seconds (how long a baseline held its slot). How parallel the work after the trials was: the seconds its
tasks ran after the last trial, over that wall time.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from sweeps.answer.tasks import TaskTiming

PHASES = {
    "start": "start (imports, the data read and checked)",
    "ray": "Ray's start",
    "trials": "trials",
    "tail": "the answer's tasks after the last trial",
    "scoring": "scoring and writing the results",
    "saving": "the future and the saved model",
}
"""The phases in order, by key, as the summary names them."""


IMPORTED_AT = time.time()


def process_start() -> float:
    """When this process started, in seconds since the epoch (the command's start, before Python's imports), to the
    second, from Linux's /proc; elsewhere when this module was imported."""
    try:
        with open("/proc/self/stat") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # starttime, after the process' name
        with open("/proc/stat") as stat:
            booted = next(int(line.split()[1]) for line in stat if line.startswith("btime"))
        return booted + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration, AttributeError):
        return IMPORTED_AT


@dataclasses.dataclass
class Clock:
    """The moments that end each phase, marked as the command goes, and the tasks' own timings."""

    started: float = dataclasses.field(default_factory=process_start)
    marks: dict[str, float] = dataclasses.field(default_factory=dict)
    tasks: list[TaskTiming] = dataclasses.field(default_factory=list)
    spent_before: float = 0.0
    """Seconds earlier runs of the same sweep spent (a resumed sweep's)."""

    def mark(self, phase: str) -> None:
        """`phase` (a key of PHASES) ends now."""
        self.marks[phase] = time.time()

    def elapsed(self) -> float:
        return time.time() - self.started

    def record(self, ended: float | None = None) -> dict[str, Any]:
        """JSON-ready: every phase's seconds and share of the whole, and every kind of task's."""
        ended = time.time() if ended is None else ended
        whole = ended - self.started
        phases, previous = [], self.started
        for key, name in PHASES.items():
            if key not in self.marks:
                continue
            seconds = max(0.0, self.marks[key] - previous)
            phases.append({"phase": key, "name": name, "seconds": round(seconds, 2), "share": _share(seconds, whole)})
            previous = self.marks[key]
        trials_ended = self.marks.get("trials", ended)
        kinds = {}
        for kind in dict.fromkeys(task.kind for task in self.tasks):
            own = [task for task in self.tasks if task.kind == kind]
            first, last = min(t.started for t in own), max(t.ended for t in own)
            kinds[kind] = {
                "tasks": len(own),
                "first_started_after": round(first - self.started, 2),
                "last_ended_after": round(last - self.started, 2),
                "span_seconds": round(last - first, 2),
                "share": _share(last - first, whole),
                "task_seconds": round(sum(t.seconds for t in own), 2),
                "ended_before_the_last_trial": sum(t.ended <= trials_ended for t in own),
                "nodes": sorted({t.node for t in own}),
            }
        after = max(0.0, ended - trials_ended)
        busy_after = sum(max(0.0, t.ended - max(t.started, trials_ended)) for t in self.tasks)
        return {
            "whole_seconds": round(whole, 2),
            "earlier_runs_seconds": round(self.spent_before, 2),
            "phases": phases,
            "after_the_last_trial": {
                "seconds": round(after, 2),
                "share": _share(after, whole),
                "task_seconds": round(busy_after, 2),
                "tasks_at_once": round(busy_after / after, 2) if after > 0 else None,
                "nodes": sorted({t.node for t in self.tasks if t.ended > trials_ended}),
            },
            "tasks": kinds,
            "each_task": [
                {"kind": task.kind, "label": task.label, "seconds": round(task.seconds, 2)} for task in self.tasks
            ],
        }


def _share(seconds: float, whole: float) -> float:
    return round(seconds / whole, 4) if whole > 0 else 0.0


def timing_lines(record: dict[str, Any]) -> list[str]:
    """The summary's lines of where the time went."""
    whole = record["whole_seconds"]
    lines = [f"Where the time went ({whole:.0f} s from the command's start):"]
    lines += [f"  {p['name']:<46} {p['seconds']:8.1f} s  {p['share']:6.1%}" for p in record["phases"]]
    for kind, tasks in record["tasks"].items():
        during = tasks["ended_before_the_last_trial"]
        lines.append(
            f"  tasks: {kind:<12} {tasks['tasks']:3d}, {tasks['task_seconds']:7.1f} s of work over "
            f"{tasks['span_seconds']:.1f} s on {len(tasks['nodes'])} node(s)"
            + (f"; {during} ended before the last trial" if during else "")
        )
    after = record["after_the_last_trial"]
    if after["tasks_at_once"] is not None:
        lines.append(
            f"  after the last trial: {after['seconds']:.1f} s ({after['share']:.1%} of the whole), its tasks "
            f"{after['tasks_at_once']:.2f} at once on average on {len(after['nodes'])} node(s)"
        )
    return lines
