"""Which trials make the answer, how they were chosen, and their best models.

The members are the sweep's top `answer_top_k` trials (by their best validation score over their epochs, or by their
last epoch's: `Sweep.answer_scope`), less any too far behind the best to have learnt the data (`FAR_BEHIND`); each
brings its best model (its latest checkpoint's `best_model.ckpt`, loaded with weights_only=True) and its best epoch
count, for which it is trained again (sweeps.answer.refits).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sweeps.plan import SweepPlan
from sweeps.results import CHOOSABLE, SweepResults
from sweeps.storage import BEST_MODEL_FILE

FAR_BEHIND = 2.0
"""A trial whose ranking score is over this many times the best trial's has not learnt the data and is left out of
the answer, which otherwise takes the top k whatever their scores: a sweep of fewer trials than k would average in
trials its scheduler stopped before they learnt anything (docs/design-notes.md, "The air_rnn sweep")."""
AROUND_BEST_EPOCHS = 10
"""The best trial's score is summarised over its epochs within this many of its best one."""


@dataclasses.dataclass(frozen=True)
class Member:
    trial_id: str
    model: Any
    """Its trial's best model, as forecaster.net.RNNNet."""
    epochs: int
    """Its trial's best epoch count: how long a refit of its configuration trains."""


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
    from ray.tune import Checkpoint

    from forecaster.net import RNNNet

    if not len(results.trials):
        return []
    epochs = results.trials.set_index("trial_id")["best_epoch"]
    found = []
    for trial_id, path in top_checkpoints(plan, results):
        with Checkpoint(path).as_directory() as folder:
            if (Path(folder) / BEST_MODEL_FILE).exists():
                model = RNNNet.load_best_model(Path(folder) / BEST_MODEL_FILE)
                found.append(Member(trial_id, model, int(epochs[trial_id])))
    return found


def selection(results: SweepResults) -> dict[str, Any]:
    """How many validation scores the best was the lowest of, and the best trial's scores around its best epoch."""
    found: dict[str, Any] = {
        "evaluations": int(sum(len(history) for history in results.histories.values())),
        "trials": len(results.trials),
    }
    best = results.best
    history = results.histories.get(best["trial_id"]) if best else None
    if history is None:
        return found
    scores = f"val_{results.metric}"
    near = history[(history["epoch"] - best["best_epoch"]).abs() <= AROUND_BEST_EPOCHS]
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
