"""The sweep's answer and how far to trust it: what a forecaster would deploy, scored where it was not chosen.

The answer is the mean forecast of the best models (each trial's best checkpoint, `best_model.ckpt`) of the
sweep's top `answer_top_k` trials; with k = 1, the best trial's model. It is used as a forecaster deploys it:
trained on what the sweep saw, forecasting on from the end of it with everything before as context.

- On the validation part it forecasts from the end of the training part, as the trials' single-origin score
  does. That number was *selected* on those same points (the best of every epoch of every trial), so it is
  optimistic; the summary says so, with the spread of the best trial's score over the epochs around its best.
- On the test window (`--test-after`), which no trial, scheduler or ranking saw, it forecasts from the end of
  the validation part: the honest score.
- Beside it, the baselines (forecaster.baselines) on the same points: fit on the training part for the
  validation months, on everything seen for the test window.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forecaster.data import split_series
from forecaster.metrics import mape
from sweeps.plan import SweepPlan
from sweeps.results import CHOOSABLE, SweepResults
from sweeps.storage import BEST_MODEL_FILE

AROUND_BEST_EPOCHS = 10
"""The best trial's score is summarised over its epochs within this many of its best one."""


@dataclasses.dataclass
class Answer:
    trial_ids: list[str]
    """The trials whose best models make the answer, best first."""
    validation: pd.Series
    """The answer's forecast of the validation part, from the end of the training part."""
    test: pd.Series | None
    """Its forecast of the test window, from the end of the validation part (None without one)."""
    baselines: dict[str, dict[str, Any]]
    """Per baseline: its forecasts ("validation", "test") or why it did not run ("unavailable")."""
    selection: dict[str, Any]
    """How the best validation score was found: evaluations, and the best trial's MAPE around its best epoch."""

    def scores(self, plan: SweepPlan) -> dict[str, Any]:
        """JSON-ready MAPEs of the answer and of every baseline, on the validation part and the test window."""
        _, val = split_series(plan.seen_series, plan.sweep.split_after)
        test = plan.test_series

        def score(forecast, actual):
            return None if forecast is None else float(mape(actual.to_numpy(), np.asarray(forecast, np.float64)))

        baselines = {}
        for name, forecasts in self.baselines.items():
            if "unavailable" in forecasts:
                baselines[name] = {"unavailable": forecasts["unavailable"]}
                continue
            baselines[name] = {
                "validation_mape": score(forecasts["validation"], val),
                "test_mape": score(forecasts.get("test"), test) if test is not None else None,
            }
        return {
            "trials": self.trial_ids,
            "validation_mape": score(self.validation, val),
            "test_mape": score(self.test, test) if test is not None else None,
            "test_after": plan.sweep.test_after,
            "test_points": None if test is None else len(test),
            "baselines": baselines,
            "selection": self.selection,
        }


def build_answer(plan: SweepPlan, results: SweepResults) -> Answer | None:
    """The answer of a sweep whose trials reported; None if no trial has a best model to forecast with."""
    models = _top_models(plan, results)
    if not models:
        return None
    seen, test = plan.seen_series, plan.test_series
    train, val = split_series(seen, plan.sweep.split_after)
    validation = np.mean([model.forecast(train, len(val)) for model in models], axis=0)
    test_forecast = None
    if test is not None:
        test_forecast = pd.Series(np.mean([model.forecast(seen, len(test)) for model in models], axis=0), test.index)
    return Answer(
        trial_ids=[trial_id for trial_id, _ in _top_checkpoints(plan, results)][: len(models)],
        validation=pd.Series(validation, val.index),
        test=test_forecast,
        baselines=_baselines(train, val, seen, test),
        selection=_selection(results),
    )


def _top_checkpoints(plan: SweepPlan, results: SweepResults) -> list[tuple[str, str]]:
    """(trial id, checkpoint folder) of the top trials that can be chosen and kept a checkpoint, best first."""
    from ray.tune import ExperimentAnalysis

    trials = results.trials
    if not len(trials):
        return []
    usable = trials[trials["status"].isin(CHOOSABLE) & trials["best_val_mape"].notna()]
    analysis = ExperimentAnalysis(plan.experiment_path, default_metric="best_val_mape", default_mode="min")
    by_id = {trial.trial_id: trial for trial in analysis.trials}
    found = []
    for trial_id in usable["trial_id"]:
        checkpoint = analysis.get_last_checkpoint(by_id[trial_id]) if trial_id in by_id else None
        if checkpoint is not None:
            found.append((trial_id, checkpoint.path))
        if len(found) == plan.sweep.answer_top_k:
            break
    return found


def _top_models(plan: SweepPlan, results: SweepResults) -> list:
    from ray.tune import Checkpoint

    from forecaster.model import RNNForecaster

    models = []
    for _, path in _top_checkpoints(plan, results):
        with Checkpoint(path).as_directory() as folder:
            if (Path(folder) / BEST_MODEL_FILE).exists():
                models.append(RNNForecaster.load_from_checkpoint(Path(folder) / BEST_MODEL_FILE, map_location="cpu"))
    return models


def _baselines(train: pd.Series, val: pd.Series, seen: pd.Series, test: pd.Series | None) -> dict[str, dict]:
    from forecaster.baselines import BASELINES, BaselineUnavailable, forecast

    found: dict[str, dict] = {}
    for name in BASELINES:
        try:
            found[name] = {"validation": forecast(name, train, len(val))}
            if test is not None:
                found[name]["test"] = forecast(name, seen, len(test))
        except BaselineUnavailable as error:
            found[name] = {"unavailable": str(error)}
    return found


def _selection(results: SweepResults) -> dict[str, Any]:
    """How many validation scores the best was the lowest of, and the best trial's scores around its best epoch."""
    selection: dict[str, Any] = {
        "evaluations": int(sum(len(history) for history in results.histories.values())),
        "trials": len(results.trials),
    }
    best = results.best
    history = results.histories.get(best["trial_id"]) if best else None
    if history is None:
        return selection
    near = history[(history["epoch"] - best["best_epoch"]).abs() <= AROUND_BEST_EPOCHS]
    near = near[np.isfinite(near["val_mape"])]
    if len(near):
        scores = near["val_mape"]
        selection["around_best"] = {
            "first_epoch": int(near["epoch"].min()),
            "last_epoch": int(near["epoch"].max()),
            "mean": float(scores.mean()),
            "std": float(scores.std(ddof=0)),
            "min": float(scores.min()),
            "max": float(scores.max()),
        }
    return selection


def describe(scores: dict[str, Any], plan: SweepPlan) -> list[str]:
    """The answer's lines of the summary: its scores, and one line per baseline with the answer's margin over it."""
    _, val = split_series(plan.seen_series, plan.sweep.split_after)
    k = len(scores["trials"])
    who = "the best trial's model" if k == 1 else f"the mean forecast of the top {k} trials' best models"
    has_test = scores["test_mape"] is not None
    lines = [
        f"Answer: {who}, forecasting on from what the sweep saw",
        f"  on the validation part ({len(val)} points after {plan.sweep.split_after}, from the end of training): "
        f"{scores['validation_mape']:.2f} % (chosen on these points: optimistic)",
    ]
    if has_test:
        lines.append(
            f"  on the test window ({scores['test_points']} points after {scores['test_after']}, which no trial saw): "
            f"{scores['test_mape']:.2f} %"
        )
    else:
        lines.append(
            "  no test window: give --test-after DATE to hold out the end of the series and score the answer on it"
        )
    lines.append("Baselines on the same points, and the answer's margin over each:")
    ours = scores["test_mape"] if has_test else scores["validation_mape"]
    for name, baseline in scores["baselines"].items():
        if "unavailable" in baseline:
            lines.append(f"  {name:<15} not run: {baseline['unavailable']}")
            continue
        theirs = baseline["test_mape"] if has_test else baseline["validation_mape"]
        window = "test" if has_test else "validation"
        lines.append(
            f"  {name:<15} validation {baseline['validation_mape']:6.2f} %"
            + (f"   test {baseline['test_mape']:6.2f} %" if has_test else "")
            + f"   the answer is {abs(theirs - ours):.2f} points {'better' if ours <= theirs else 'worse'} on {window} "
            f"({ours / theirs:.2f}x its error)"
        )
    return lines
