"""Which trials make the answer, how they were chosen, and their best models.

The members are the sweep's top `answer_top_k` trials (by their best validation score over their epochs, or by their
last epoch's: `Sweep.answer_scope`), less any too far behind the best to have learnt the data (`FAR_BEHIND`); each
brings its best model (its latest checkpoint's `best_model.ckpt`, as bytes: the task that continues it loads it, with
weights_only=True) and its best epoch count, which sets how long it is continued (sweeps.answer.refits).
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import numpy as np
import pandas as pd

from sweeps.plan.budget import start_seconds
from sweeps.plan.storage import BEST_MODEL_FILE, located
from sweeps.plan.sweep_plan import SweepPlan
from sweeps.trials.results import CHOOSABLE, SweepResults

FAR_BEHIND = 2.0
"""A trial whose ranking score is over this many times the best trial's has not learnt the data and is left out of
the answer, which otherwise takes the top k whatever their scores: a sweep of fewer trials than k would average in
trials its scheduler stopped before they learnt anything (docs/design-notes.md, "The air_rnn sweep")."""
AROUND_BEST_EPOCHS = 10
"""The best trial's score is summarised over its epochs within this many of its best one."""


@dataclasses.dataclass(frozen=True)
class Member:
    trial_id: str
    best_model: bytes
    """Its trial's best model, as the trial saved it (forecaster.training.net.RNNNet.load_best_model reads it)."""
    epochs: int
    """Its trial's best epoch count: a share of it is how long the net is continued on newer points."""
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Its trial's configuration, as Tune recorded it."""
    epoch_seconds: float = 0.0
    """Its trial's median seconds per epoch: what a continued epoch is expected to cost (--time-limit)."""
    start_seconds: float = 0.0
    """What its trial took before its epochs (sweeps.plan.budget.start_seconds): what its task after the trials is
    expected to take before its first epoch (--time-limit)."""


def ranking(plan: SweepPlan, results: SweepResults) -> tuple[pd.DataFrame, list[str]]:
    """The trials that can be chosen, best first (`Sweep.answer_scope`), and the ids of those of the top k left out as
    `FAR_BEHIND`."""
    trials = results.trials
    if not len(trials):
        return trials, []
    ranked = plan.sweep.ranked
    usable = trials[trials["status"].isin(CHOOSABLE) & trials[ranked].notna()]
    if plan.sweep.answer_scope == "last":
        ranked = f"last_val_{plan.sweep.metric}"
        usable = usable.sort_values(ranked, kind="stable", na_position="last")
    far = usable[ranked] > FAR_BEHIND * usable[ranked].min()
    left_out = usable["trial_id"].head(plan.sweep.answer_top_k)[far.head(plan.sweep.answer_top_k)]
    return usable[~far], left_out.tolist()


def top_checkpoints(plan: SweepPlan, results: SweepResults) -> list[tuple[str, str]]:
    """(trial id, checkpoint folder) of the top trials that can be chosen and kept a checkpoint, best first."""
    usable, _ = ranking(plan, results)
    found = []
    for trial_id in usable.get("trial_id", ()):  # a sweep no trial of which reported has no columns
        if trial_id in results.checkpoints:
            found.append((trial_id, results.checkpoints[trial_id]))
        if len(found) == plan.sweep.answer_top_k:
            break
    return found


def members(plan: SweepPlan, results: SweepResults) -> list[Member]:
    """The answer's members, best first: the top trials whose checkpoint holds a best model."""
    import pyarrow.fs

    if not len(results.trials):
        return []
    trials = results.trials.set_index("trial_id")
    found = []
    for trial_id, path in top_checkpoints(plan, results):
        filesystem, root = pyarrow.fs.FileSystem.from_uri(located(path))
        try:
            with filesystem.open_input_stream(f"{root}/{BEST_MODEL_FILE}") as stream:
                best_model = stream.read()
        except FileNotFoundError:  # a checkpoint from before its trial's first improvement
            continue
        history = results.histories.get(trial_id)
        seconds: Any = history["time_this_iter_s"] if history is not None and "time_this_iter_s" in history else []
        found.append(
            Member(
                trial_id,
                best_model,
                int(cast(Any, trials.at[trial_id, "best_epoch"])),
                {key: trials.at[trial_id, key] for key in plan.sweep.space if key in trials},
                float(np.median(seconds)) if len(seconds) else 0.0,
                start_seconds([float(value) for value in seconds]),
            )
        )
    return found


def selection(results: SweepResults) -> dict[str, Any]:
    """How many validation scores the best was the lowest of, and the best trial's scores around its best epoch."""
    found: dict[str, Any] = {
        "evaluations": int(sum(len(history) for history in results.histories.values())),
        "trials": len(results.trials),
    }
    best = results.best
    history = results.histories.get(best.trial_id) if best else None
    if history is None or best is None:
        return found
    scores = f"val_{results.metric}"
    near = history[(history["epoch"] - best.best_epoch).abs() <= AROUND_BEST_EPOCHS]
    near = near[np.isfinite(near[scores])]
    if len(near):
        values = near[scores]
        found["around_best"] = {
            "first_epoch": int(near["epoch"].min()),
            "last_epoch": int(near["epoch"].max()),
            "mean": float(values.mean()),
            "std": float(values.std(ddof=0)),
            "min": float(values.min()),
            "max": float(values.max()),
        }
    return found
