"""The sweep's answer and how far to trust it: what a forecaster would deploy, scored where it was not chosen.

The answer is the mean forecast, series by series, of the best models (each trial's best checkpoint,
`best_model.ckpt`) of the sweep's top `answer_top_k` trials, less any too far behind the best to have learnt the data
(`FAR_BEHIND`); with k = 1, the best trial's model. It is used as a
forecaster deploys it: trained on what the sweep saw, forecasting on from the end of it with everything before as
context.

- On the validation parts it forecasts from the end of the training parts, as the trials' single-origin score
  does. That number was *selected* on those same points (the best of every epoch of every trial), so it is
  optimistic; the summary says so, with the spread of the best trial's score over the epochs around its best.
- On the test windows (`--test-after`, `--horizon`), which no trial, scheduler or ranking saw, it forecasts from
  the end of the validation parts: the honest score.
- Beside it, the baselines (forecaster.baselines: seasonal naive, AutoETS, Theta, AutoCES) on the same points: fit
  on everything seen for the test windows; on the training parts for the validation parts too where that is cheap
  (one series, or no test window: a panel's statistical fits cost minutes, and only the test windows judge).

- For a panel, the combination: the equal-weight mean, point by point, of the answer, AutoETS, Theta and AutoCES on
  the test windows, beside the statistical combination (the same without the answer) as one more baseline.
  Combining forecasts of different kinds is what won the M4 competition; on an inner split of M3 monthly (each
  series' in-sample part, its last 18 points as the test) the combination scored 10.78 against the answer's 11.58,
  Theta's 11.21 and the statistical combination's 11.13 (see README).

Every score is MAPE, sMAPE and MASE, per series and as the mean over series (forecaster.metrics); beside each
baseline, the share of series on which the answer (and the combination) beats it.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forecaster.data import SeriesError
from forecaster.metrics import METRIC_LABELS, METRIC_NAMES, METRICS, format_score, mase_scales, series_scores
from forecaster.panel import Panel
from sweeps.plan import SweepPlan
from sweeps.results import CHOOSABLE, SweepResults
from sweeps.storage import BEST_MODEL_FILE

AROUND_BEST_EPOCHS = 10
"""The best trial's score is summarised over its epochs within this many of its best one."""
PARTS = ("validation", "test")
COMBINATION = "combination"
"""The column and key of the combination: the mean of the answer and COMBINED's forecasts."""
COMBINED = ("AutoETS", "Theta", "AutoCES")
AS_TRAINED = "answer before refit"
"""With `refit_answer`: the answer as the trials trained it (on the training parts only), reported beside the refit
one, which is the answer."""
STATISTICAL_COMBINATION = "statistical combination"
"""A baseline for the combination: the mean of COMBINED's forecasts alone, which says what the answer adds to it."""


@dataclasses.dataclass
class Answer:
    trial_ids: list[str]
    """The trials whose best models make the answer, best first."""
    forecasts: dict[str, dict[str, np.ndarray]]
    """Per part ("validation", "test"): per method ("answer", each baseline that ran, and for a panel the
    combination), its forecast of every point of the part, flat in the part's row order (forecaster.panel.Panel)."""
    unavailable: dict[str, str]
    """Baselines that did not run, and why."""
    fell_back: dict[str, list[str]]
    """Per baseline: the series it could not fit (seasonal naive's forecast stands in for them)."""
    selection: dict[str, Any]
    """How the best validation score was found: evaluations, and the best trial's score around its best epoch."""
    bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]] = dataclasses.field(default_factory=dict)
    """The prediction intervals on the test windows (--levels): per method (the answer, each baseline that gives
    them), {level: (lower, upper)}, flat in the test part's row order."""
    calibration: dict[str, Any] = dataclasses.field(default_factory=dict)
    """How the answer's intervals were calibrated (`_answer_bounds`), or why they could not be."""
    calibration_points: pd.DataFrame | None = None
    """The points that calibrated the answer's intervals, with the mean forecast of the calibrating models
    (forecaster.intervals.Calibration.to_frame): calibration.parquet."""
    refit: dict[str, Any] = dataclasses.field(default_factory=dict)
    """With the sweep's `refit_answer`: which configurations were trained again through the validation parts, for
    how many epochs, on which devices, and how long it took (`_refit_answer`)."""

    def per_series(self, plan: SweepPlan) -> pd.DataFrame:
        """One row per series, part and method: unique_id, part, method, mape, smape, mase (NaN where undefined)."""
        train, val, seen, test = plan.parts()
        rows = []
        for part_name, part, history in (("validation", val, train), ("test", test, seen)):
            if part is None:
                continue
            scales = mase_scales(history)
            for method, forecast in self.forecasts[part_name].items():
                scores = _series_scores(part, forecast, scales)
                rows.append(pd.DataFrame({"unique_id": part.ids, "part": part_name, "method": method, **scores}))
        return pd.concat(rows, ignore_index=True)

    def scores(self, plan: SweepPlan) -> dict[str, Any]:
        """JSON-ready: the mean over series of every metric for the answer and every baseline, on both parts, and
        the share of series on which the answer beats each baseline (on the test windows where there are)."""
        _, val, _, test = plan.parts()
        table = self.per_series(plan)
        means = {
            (part, method): {metric: _mean(group[metric]) for metric in METRICS}
            for (part, method), group in table.groupby(["part", "method"], sort=False)
        }

        def flat(method: str) -> dict[str, Any]:
            values = {}
            for part in PARTS:
                for metric in METRICS:
                    values[f"{part}_{metric}"] = means.get((part, method), {}).get(metric)
            return values

        judged = "test" if test is not None else "validation"

        def judged_scores(method: str) -> pd.DataFrame:
            return table[(table["part"] == judged) & (table["method"] == method)].set_index("unique_id")

        def shares(ours: pd.DataFrame, name: str) -> dict[str, float | None]:
            theirs = judged_scores(name)
            return {metric: _share_beaten(ours[metric], theirs[metric]) for metric in METRICS}

        answer = judged_scores("answer")
        names = [name for name in self.forecasts[judged] if name not in ("answer", COMBINATION)]
        baselines: dict[str, Any] = {
            name: flat(name) | {f"{judged}_beaten_by_answer": shares(answer, name), "fell_back": self.fell_back[name]}
            for name in names
        }
        baselines.update({name: {"unavailable": why} for name, why in self.unavailable.items()})
        extra = {}
        if COMBINATION in self.forecasts[judged]:
            combined = judged_scores(COMBINATION)
            extra[COMBINATION] = (
                {"of": ["answer", *COMBINED]}
                | flat(COMBINATION)
                | {f"{judged}_beats": {name: shares(combined, name) for name in ["answer", *names]}}
            )
        if self.bounds:
            extra["intervals"] = self.interval_scores(plan)
        return {
            "trials": self.trial_ids,
            **flat("answer"),
            "metric": plan.sweep.metric,
            "series": len(val),
            "dropped_series": list(plan.panel.dropped),
            "horizon": plan.sweep.horizon,
            "test_after": None if plan.sweep.horizon else plan.sweep.test_after,
            "validation_points": int(val.lengths.max()),
            "test_points": None if test is None else int(test.lengths.max()),
            "baselines": dict(sorted(baselines.items(), key=lambda item: _order(item[0]))),
            "selection": self.selection,
            **({"refit": self.refit} if self.refit else {}),
            **extra,
        }

    def interval_scores(self, plan: SweepPlan) -> dict[str, Any]:
        """JSON-ready: for the answer and each baseline, at each level, the coverage of the test points (pooled over
        series and steps), the mean width relative to each series' scale, and MSIS; and how the answer's were
        calibrated."""
        from forecaster.intervals import interval_scores, level_name

        _, _, seen, test = plan.parts()
        scales = mase_scales(seen)
        scales = np.where(scales > 0, scales, np.nan)  # MSIS is undefined where MASE is
        steps, columns = int(test.lengths.max()), np.repeat(np.arange(len(test)), test.lengths)

        def grid(flat: np.ndarray) -> np.ndarray:
            values = np.full((steps, len(test)), np.nan)
            values[test.positions, columns] = flat
            return values

        actual, count = grid(test.values), len(test.values)
        methods = {}
        for method, by_level in self.bounds.items():
            found = {}
            for level, (lower, upper) in by_level.items():
                name = level_name(level)
                scores = interval_scores(actual, grid(lower), grid(upper), scales, level)
                inside = (test.values >= lower) & (test.values <= upper)
                found[f"coverage_{name}"] = float(inside.sum() / count)
                found[f"width_{name}"] = _mean(pd.Series(scores["width"]))
                found[f"msis_{name}"] = _mean(pd.Series(scores["msis"]))
            methods[method] = found
        return {"levels": list(plan.levels), "calibration": self.calibration, **methods}

    def long_table(self, plan: SweepPlan) -> pd.DataFrame:
        """Every validation and test point with its truth and every forecast: unique_id, ds, y, part, answer and one
        column per baseline (NaN where it did not forecast that part)."""
        _, val, _, test = plan.parts()
        frames = []
        for part_name, part in (("validation", val), ("test", test)):
            if part is None:
                continue
            frame = part.to_frame()
            frame["part"] = part_name
            for method, forecast in self.forecasts[part_name].items():
                frame[method] = forecast
            if part_name == "test":  # Nixtla's names: answer-lo-80, answer-hi-80, AutoETS-lo-80, ...
                from forecaster.intervals import level_name

                for method, by_level in self.bounds.items():
                    for level, (lower, upper) in by_level.items():
                        frame[f"{method}-lo-{level_name(level)}"] = lower
                        frame[f"{method}-hi-{level_name(level)}"] = upper
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)


def build_answer(plan: SweepPlan, results: SweepResults) -> Answer | None:
    """The answer of a sweep whose trials reported; None if no trial has a best model to forecast with."""
    top = _top_models(plan, results)
    if not top:
        return None
    models = [model for _, model in top]
    train, val, seen, test = plan.parts()
    forecasts: dict[str, dict[str, np.ndarray]] = {
        "validation": {"answer": np.mean([model.forecast_part(train, val) for model in models], axis=0)}
    }
    bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]] = {}
    calibration: dict[str, Any] = {}
    calibration_points = None
    refit: dict[str, Any] = {}
    if test is not None:
        forecasts["test"] = {"answer": np.mean([model.forecast_part(seen, test) for model in models], axis=0)}
        if plan.sweep.refit_answer:
            refit = _refit_answer(plan, results, top, forecasts["test"])
        if plan.levels:
            calibration, calibration_points = _answer_bounds(plan, results, top, forecasts, bounds)
    unavailable, fell_back = _baselines(plan, forecasts, bounds)
    if refit:
        fell_back[AS_TRAINED] = []
    if test is not None and len(test) > 1 and all(name in forecasts["test"] for name in COMBINED):
        statistical = [forecasts["test"][name] for name in COMBINED]
        forecasts["test"][STATISTICAL_COMBINATION] = np.mean(statistical, axis=0)
        fell_back[STATISTICAL_COMBINATION] = sorted({series for name in COMBINED for series in fell_back[name]})
        forecasts["test"][COMBINATION] = np.mean([forecasts["test"]["answer"], *statistical], axis=0)
    return Answer(
        trial_ids=[trial_id for trial_id, _ in top],
        forecasts=forecasts,
        unavailable=unavailable,
        fell_back=fell_back,
        selection={**_selection(results), "far_behind": _ranking(plan, results)[1]},
        bounds=bounds,
        calibration=calibration,
        calibration_points=calibration_points,
        refit=refit,
    )


FAR_BEHIND = 2.0
"""A trial whose ranking score is over this many times the best trial's has not learnt the data and is left out of
the answer, which otherwise takes the top k whatever their scores: a sweep of fewer trials than k would average in
every one (air_rnn, 4 trials of 10 epochs: two ASHA stopped at epoch 2 with 35-76 % validation MAPE beside the best's
8-11 %, and a test MAPE of 29-57 %; README). Whole default sweeps never come near it."""


def _ranking(plan: SweepPlan, results: SweepResults) -> tuple[pd.DataFrame, list[str]]:
    """The trials that can be chosen, best first (by their best validation score, or by their last epoch's:
    `Sweep.answer_scope`), and the ids of those of the top k left out as `FAR_BEHIND`."""
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


def _top_checkpoints(plan: SweepPlan, results: SweepResults) -> list[tuple[str, str]]:
    """(trial id, checkpoint folder) of the top trials that can be chosen and kept a checkpoint, best first
    (`_ranking`)."""
    from ray.tune import ExperimentAnalysis

    usable, _ = _ranking(plan, results)
    if not len(usable):
        return []
    analysis = ExperimentAnalysis(plan.experiment_path, default_metric=plan.sweep.ranked, default_mode="min")
    by_id = {trial.trial_id: trial for trial in analysis.trials}
    found = []
    for trial_id in usable["trial_id"]:
        checkpoint = analysis.get_last_checkpoint(by_id[trial_id]) if trial_id in by_id else None
        if checkpoint is not None:
            found.append((trial_id, checkpoint.path))
        if len(found) == plan.sweep.answer_top_k:
            break
    return found


def _top_models(plan: SweepPlan, results: SweepResults) -> list[tuple[str, Any]]:
    """(trial id, its best model) of the top trials, best first."""
    from ray.tune import Checkpoint

    from forecaster.net import RNNNet

    models = []
    for trial_id, path in _top_checkpoints(plan, results):
        with Checkpoint(path).as_directory() as folder:
            if (Path(folder) / BEST_MODEL_FILE).exists():
                models.append((trial_id, RNNNet.load_best_model(Path(folder) / BEST_MODEL_FILE)))
    return models


CALIBRATION_REFITS = 2
"""How many of the answer's top configurations are trained again to calibrate its intervals (each for its trial's
best epoch count; their mean forecast stands for the answer's mean of models). They run at once where Ray has room:
two fit beside each other on a laptop's two cores."""


def _best_epochs(results: SweepResults, top: list) -> list[tuple[Any, int]]:
    """(configuration, its trial's best epoch count) of each of the `top` trials' models."""
    epochs = results.trials.set_index("trial_id")["best_epoch"]
    return [(model.config, int(epochs[trial_id])) for trial_id, model in top]


def _refit_answer(plan: SweepPlan, results: SweepResults, top: list, test_forecasts: dict) -> dict:
    """The answer refit: each of the `top` configurations trained again on every point before the test windows (its
    validation part too) for its trial's best epoch count, their mean forecast replacing the answer's in
    `test_forecasts`; the answer as the trials trained it stays beside it as AS_TRAINED. A series no refit kept (too
    short for a training window, which the sweep's own models read anyway) keeps the as-trained forecast. Returns
    what was done."""
    import time

    from forecaster.train import fit_through

    started = time.perf_counter()
    _, _, seen, test = plan.parts()
    steps = int(test.lengths.max())
    jobs = _best_epochs(results, top)
    found = _fits_on_ray(plan, fit_through, jobs, seen, steps)
    columns = np.repeat(np.arange(len(test)), test.lengths)
    as_trained = test_forecasts["answer"]
    grid = np.full((steps, len(test)), np.nan)
    grid[test.positions, columns] = as_trained
    totals, counts = np.zeros_like(grid), np.zeros(len(test))
    rows = {series_id: index for index, series_id in enumerate(test.ids)}
    for ids, forecast, _ in found:
        where = np.array([rows[series_id] for series_id in ids], dtype=np.int64)
        totals[:, where] += forecast
        counts[where] += 1
    refit = np.where(counts > 0, totals / np.maximum(counts, 1), grid)
    test_forecasts[AS_TRAINED] = as_trained
    test_forecasts["answer"] = refit[test.positions, columns]
    return {
        "trials": [trial_id for trial_id, _ in top],
        "epochs": [epochs for _, epochs in jobs],
        "series_as_trained": [str(i) for i in test.ids[counts == 0]],
        "trained_on": sorted({trained_on for _, _, trained_on in found}),
        "seconds": round(time.perf_counter() - started, 1),
    }


def _answer_bounds(
    plan: SweepPlan, results: SweepResults, top: list, forecasts: dict, bounds: dict
) -> tuple[dict, pd.DataFrame | None]:
    """The answer's intervals on the test windows, into `bounds["answer"]`, by conformal calibration
    (forecaster.intervals): the top configurations trained again on each series' training part less its last
    horizon and the gap the answer forecasts across, forecasting that last horizon, which ranked no trial; their
    errors, scaled by each series' scale (forecaster.intervals.interval_scales over each series' training part, for
    the calibration points over what their fits trained on, with the answer's validation errors in `forecasts`),
    give each step's half-width. The gap is the validation part for an answer
    as the trials trained it, one point for a refit answer (which trains through all but the last point it reads).
    With few series, forecasts from every point of the gap too, every step's errors pooled. Returns how it was
    done, and the calibration points with their mean forecast."""
    import time

    from forecaster.intervals import (
        POOLED_BELOW,
        bands,
        calibration_forecast,
        conformal_quantiles,
        interval_scales,
        mean_calibration,
        scaled_errors,
    )

    started = time.perf_counter()
    train, val, seen, test = plan.parts()
    horizon = int(test.lengths.max())
    gap = 1 if plan.sweep.refit_answer else int(val.lengths.max())
    jobs = _best_epochs(results, top[:CALIBRATION_REFITS])
    few = len(test) < POOLED_BELOW
    missed = np.abs(val.values - forecasts["validation"]["answer"])
    validation_error = np.add.reduceat(missed, val.offsets[:-1]) / val.lengths
    origins = gap + 1 if few else 1
    try:
        calibrations = _fits_on_ray(plan, calibration_forecast, jobs, train, horizon, gap, origins, validation_error)
    except SeriesError as error:  # no series has room for a calibration window
        return {"unavailable": f"no series is long enough to calibrate intervals: {error}"}, None
    errors, ids = scaled_errors(calibrations)
    quantiles = conformal_quantiles(errors, plan.levels)
    unbounded = [level for level, half in quantiles.items() if not np.isfinite(half).all()]
    columns = np.repeat(np.arange(len(test)), test.lengths)
    grid = np.full((horizon, len(test)), np.nan)
    grid[test.positions, columns] = forecasts["test"]["answer"]
    lowest = np.minimum.reduceat(seen.values, seen.offsets[:-1])
    bounded = {level: half for level, half in quantiles.items() if level not in unbounded}
    found = bands(
        grid, interval_scales(train, horizon, validation_error), bounded, floor=np.where(lowest >= 0, 0.0, -np.inf)
    )
    where = test.positions, columns
    bounds["answer"] = {level: (lower[where], upper[where]) for level, (lower, upper) in found.items()}
    return {
        "method": (
            "conformal: scaled errors of the top configurations trained again, on points that ranked no trial; each "
            "series' scale the geometric mean of its MASE scale, the same over its last horizon, and the answer's "
            "validation error"
        ),
        "refit_trials": [trial_id for trial_id, _ in top[: len(jobs)]],
        "calibration_series": len(set(ids)),
        "series": len(test),
        "calibration_errors": int(errors.size),
        "steps_pooled": errors.shape[1] < POOLED_BELOW,
        "unbounded_levels": unbounded,
        "seconds": round(time.perf_counter() - started, 1),
    }, mean_calibration(calibrations).to_frame()


def _fits_on_ray(plan: SweepPlan, function, jobs: list, panel: Panel, *arguments) -> list:
    """`function(config, epochs, panel, *arguments)` for each of `jobs` ((config, epochs) each): Ray tasks of a
    trial's resources, all at once, on the sweep's Ray; in this process, one after the other, without one
    (sweeps.report)."""
    import os

    import ray

    from sweeps.trial import LOGICAL_ACCELERATORS

    resources = plan.resources
    options: dict[str, Any] = {"threads": max(1, int(resources.cpus)), "accelerator": "cpu"}
    if not ray.is_initialized():
        return [function(config, epochs, panel, *arguments, **options) for config, epochs in jobs]
    task: dict[str, Any] = {"num_cpus": resources.cpus}
    if resources.gpus and os.environ.get(LOGICAL_ACCELERATORS) != "1":  # on a GPU fraction, as a trial
        task["num_gpus"] = min(resources.gpus, 1.0)
        options.update(accelerator="gpu", devices=1)
    remote = ray.remote(**task)(function)
    shared = ray.put(panel)
    return ray.get([remote.remote(config, epochs, shared, *arguments, **options) for config, epochs in jobs])


def _baselines(plan: SweepPlan, forecasts: dict[str, dict[str, np.ndarray]], bounds: dict):
    """Every baseline's forecasts of the test windows (fit on everything seen, with its own intervals at the plan's
    levels, into `bounds`) and, for one series or without test windows, of the validation parts (fit on the training
    parts), added to `forecasts`; every series in parallel."""
    from forecaster.baselines import BASELINES, BaselineUnavailable, forecast

    train, val, seen, test = plan.parts()
    jobs = [("test", seen, test)] if test is not None else []
    if test is None or len(val) == 1:
        jobs.insert(0, ("validation", train, val))
    unavailable: dict[str, str] = {}
    fell_back: dict[str, list[str]] = {}
    for name in BASELINES:
        try:
            for part_name, history, part in jobs:
                levels = plan.levels if part_name == "test" else ()
                result = forecast(name, history, int(part.lengths.max()), levels=levels)
                where = part.positions, np.repeat(np.arange(len(part)), part.lengths)
                forecasts[part_name][name] = result.values[where]
                if result.bounds:
                    bounds[name] = {level: (lo[where], hi[where]) for level, (lo, hi) in result.bounds.items()}
                fell_back[name] = sorted({*fell_back.get(name, []), *result.fell_back})
        except BaselineUnavailable as error:
            unavailable[name] = str(error)
            for part_name, _, _ in jobs:
                forecasts[part_name].pop(name, None)
    return unavailable, fell_back


def _series_scores(part: Panel, forecast: np.ndarray, scales: np.ndarray) -> dict[str, np.ndarray]:
    """Per series of `part`: MAPE (NaN where the part has a zero), sMAPE and MASE (NaN where the series' training part
    has no seasonal naive error: a constant series) of a flat forecast."""
    import torch

    steps, columns = int(part.lengths.max()), np.repeat(np.arange(len(part)), part.lengths)
    actual, predicted, weights = np.ones((steps, len(part))), np.ones((steps, len(part))), np.zeros((steps, len(part)))
    actual[part.positions, columns] = part.values
    predicted[part.positions, columns] = forecast
    weights[part.positions, columns] = 1.0
    scores = series_scores(
        *(torch.as_tensor(x) for x in (actual, predicted, weights)),
        torch.arange(len(part)),
        len(part),
        torch.as_tensor(scales),
    )
    values = {name: value.numpy() for name, value in scores.items()}
    for name in ("mape", "mase"):  # undefined alike for every method, not inf for some and NaN for an exact one
        values[name] = np.where(np.isfinite(values[name]), values[name], np.nan)
    return values


def _mean(values: pd.Series) -> float | None:
    """The mean over series, None where the metric is undefined on some series (MAPE with a zero, MASE of a constant
    series)."""
    return None if values.isna().any() else float(values.mean())


def _share_beaten(ours: pd.Series, theirs: pd.Series) -> float | None:
    """The share of series on which the answer's error is lower than the baseline's."""
    if ours.isna().any() or theirs.isna().any():
        return None
    return float((ours < theirs.reindex(ours.index)).mean())


def _order(name: str) -> int:
    from forecaster.baselines import BASELINES

    return BASELINES.index(name) if name in BASELINES else len(BASELINES)


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
    scores = f"val_{results.metric}"
    near = history[(history["epoch"] - best["best_epoch"]).abs() <= AROUND_BEST_EPOCHS]
    near = near[np.isfinite(near[scores])]
    if len(near):
        values = near[scores]
        selection["around_best"] = {
            "first_epoch": int(near["epoch"].min()),
            "last_epoch": int(near["epoch"].max()),
            "mean": float(values.mean()),
            "std": float(values.std(ddof=0)),
            "min": float(values.min()),
            "max": float(values.max()),
        }
    return selection


def describe(scores: dict[str, Any], plan: SweepPlan) -> list[str]:
    """The answer's lines of the summary: for one series its MAPE and each baseline's margin; for a panel a table of
    every metric's mean over series, and the share of series on which the answer beats each baseline; with
    intervals, their coverage, width and MSIS."""
    lines = _describe_one(scores, plan) if scores["series"] == 1 else _describe_panel(scores, plan)
    return lines + _describe_intervals(scores.get("intervals"))


def _describe_intervals(intervals: dict[str, Any] | None) -> list[str]:
    """A table of every method's intervals on the test windows, and how the answer's were calibrated."""
    if not intervals:
        return []
    from forecaster.intervals import level_name

    names = [level_name(level) for level in intervals["levels"]]
    columns = [(f"coverage_{n}", f"cover {n} %", "{:.1%}") for n in names]
    columns += [(f"width_{n}", f"width {n}", "{:.2f}") for n in names]
    columns += [(f"msis_{n}", f"MSIS {n}", "{:.2f}") for n in names if n == "95" or len(names) == 1]
    lines = [
        "Prediction intervals on the test window: coverage (the share of its points inside), mean width and MSIS (in "
        "each series' scale)",
        "  " + f"{'':<24}" + "".join(f"{label:>12}" for _, label, _ in columns),
    ]
    calibration = intervals["calibration"]
    for method, values in intervals.items():
        if method in ("levels", "calibration"):
            continue
        cells = [
            ("-" if values.get(key) is None else form.format(values[key]).replace("%", " %"))
            for key, _, form in columns
        ]
        lines.append("  " + f"{method:<24}" + "".join(f"{cell:>12}" for cell in cells))
    if "unavailable" in calibration:
        lines.append(f"  the answer's: none, {calibration['unavailable']}")
    elif calibration:
        pooled = ", every step's pooled" if calibration["steps_pooled"] else ""
        lines.append(
            f"  the answer's: conformal, from {len(calibration['refit_trials'])} of its configurations trained again, "
            f"forecasting points that ranked no trial ({calibration['calibration_errors']} errors of "
            f"{calibration['calibration_series']} series{pooled}; {calibration['seconds']:.0f} s)"
        )
        short = calibration.get("series", 0) - calibration["calibration_series"]
        if short > 0:
            lines.append(
                f"  {short} series, too short to train with a horizon and a validation part's length less, take the "
                "others' quantiles, in their own scale"
            )
        lines += [
            f"  no {level_name(level)} % interval for the answer: {calibration['calibration_errors']} calibration "
            f"errors cannot bound it (it takes {math.ceil(100 / (100 - level)) - 1}); lower the level"
            for level in calibration["unbounded_levels"]
        ]
    return lines


def _describe_refit(scores: dict[str, Any]) -> list[str]:
    """How the answer was refit before the test window, where it was."""
    refit = scores.get("refit")
    if not refit:
        return []
    epochs = ", ".join(str(count) for count in refit["epochs"])
    devices = refit.get("trained_on")  # a sweep of the day before says nothing of it
    where = f" on {' and '.join(devices)}" if devices else ""
    lines = [
        f"  refit: its {len(refit['trials'])} configurations trained again through the validation part ({epochs} "
        f"epochs, each its trial's best; {refit['seconds']:.0f} s{where}), then forecasting the test window; "
        f"'{AS_TRAINED}' is the answer as the trials trained it"
    ]
    if refit["series_as_trained"]:
        lines.append(
            f"  {len(refit['series_as_trained'])} series too short for a refit's training window keep the "
            "as-trained forecast"
        )
    return lines


def _where(plan: SweepPlan, scores: dict[str, Any]) -> tuple[str, str]:
    """How the summary names the validation part and the test window."""
    if plan.sweep.horizon:
        h = plan.sweep.horizon
        return f"the {h} points before the test window", f"the last {h} points"
    return f"{scores['validation_points']} points after {plan.sweep.split_after}", (
        f"{scores['test_points']} points after {scores['test_after']}"
    )


def _who(k: int, plan: SweepPlan) -> str:
    """What the answer is, in words."""
    if k == 1:
        return (
            "the best trial's model"
            if plan.sweep.answer_scope == "all"
            else "the model of the best trial by its last epoch"
        )
    last = " (ranked on their last epoch's validation)" if plan.sweep.answer_scope == "last" else ""
    return f"the mean forecast of the top {k} trials' best models{last}"


def _left_out(scores: dict[str, Any], plan: SweepPlan) -> list[str]:
    """The summary's line naming the trials of the top k too far behind the best to be in the answer, if any."""
    far = scores["selection"].get("far_behind")  # a sweep of the day before says nothing of it
    if not far:
        return []
    return [
        f"  left out: {', '.join(far)}, {'its' if len(far) == 1 else 'their'} validation "
        f"{METRIC_NAMES[plan.sweep.metric]} over {FAR_BEHIND:g} times the best trial's (too far behind to average in)"
    ]


def _describe_one(scores: dict[str, Any], plan: SweepPlan) -> list[str]:
    """One series, in the sweep's ranking metric: the answer on both parts, and each baseline's margin (the answer
    before a refit forecasts the test window only)."""
    k = len(scores["trials"])
    who = _who(k, plan)
    metric = scores["metric"]
    has_test = scores[f"test_{metric}"] is not None
    validation, test = _where(plan, scores)
    lines = [
        f"Answer: {who}, forecasting on from what the sweep saw ({METRIC_NAMES[metric]})",
        *_left_out(scores, plan),
        f"  on the validation part ({validation}, from the end of training): "
        f"{format_score(metric, scores[f'validation_{metric}'])} (chosen on these points: optimistic)",
    ]
    if has_test:
        lines.append(
            f"  on the test window ({test}, which no trial saw): {format_score(metric, scores[f'test_{metric}'])}"
        )
        lines += _describe_refit(scores)
    else:
        lines.append(
            "  no test window: give --test-after DATE to hold out the end of the series and score the answer on it"
        )
    lines.append("Baselines on the same points, and the answer's margin over each:")
    window = "test" if has_test else "validation"
    ours = scores[f"{window}_{metric}"]
    for name, baseline in scores["baselines"].items():
        if "unavailable" in baseline:
            lines.append(f"  {name:<19} not run: {baseline['unavailable']}")
            continue
        theirs = baseline[f"{window}_{metric}"]
        scored = [(part, baseline[f"{part}_{metric}"]) for part in ("validation", "test")[: 1 + has_test]]
        lines.append(
            f"  {name:<19} "
            + "   ".join(f"{part} {format_score(metric, value):>8}" for part, value in scored if value is not None)
            + f"   the answer is {abs(theirs - ours):.{3 if metric == 'mase' else 2}f} points "
            f"{'better' if ours <= theirs else 'worse'} on {window} ({ours / theirs:.2f}x its error)"
        )
    return lines


def _describe_panel(scores: dict[str, Any], plan: SweepPlan) -> list[str]:
    k = len(scores["trials"])
    who = _who(k, plan)
    validation, test = _where(plan, scores)
    has_test = scores["test_smape"] is not None
    judged = "test" if has_test else "validation"
    dropped = len(scores["dropped_series"])
    metric = plan.sweep.metric

    def cell(value, metric_name):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return f"{'-':>8}"
        return f"{value:8.3f}" if metric_name == "mase" else f"{value:8.2f}"

    header = "".join(f"{METRIC_LABELS[name]:>8}" for name in ("smape", "mase", "mape"))
    lines = [
        f"Answer: {who}, series by series, forecasting on from what the sweep saw",
        *_left_out(scores, plan),
        f"  {scores['series']} series{f' ({dropped} dropped as too short)' if dropped else ''}; validation: "
        f"{validation} of each (chosen on them: optimistic)"
        + (f"; test: {test} of each, which no trial saw" if has_test else ""),
        f"  {'means over series':<38}{header}   answer better on (by {METRIC_LABELS[metric]})",
    ]
    for part in ("validation", "test") if has_test else ("validation",):
        row = "".join(cell(scores[f"{part}_{name}"], name) for name in ("smape", "mase", "mape"))
        lines.append(f"  {'answer, ' + part:<38}{row}")
    lines += _describe_refit(scores)
    if COMBINATION in scores:
        row = "".join(cell(scores[COMBINATION][f"{judged}_{name}"], name) for name in ("smape", "mase", "mape"))
        lines.append(f"  {'combination, ' + judged:<38}{row}")
    for name, baseline in scores["baselines"].items():
        if "unavailable" in baseline:
            lines.append(f"  {name:<15} not run: {baseline['unavailable']}")
            continue
        row = "".join(
            cell(baseline[f"{judged}_{metric_name}"], metric_name) for metric_name in ("smape", "mase", "mape")
        )
        share = baseline[f"{judged}_beaten_by_answer"][metric]
        fell_back = f" ({len(baseline['fell_back'])} series by seasonal naive)" if baseline["fell_back"] else ""
        lines.append(
            f"  {name + ', ' + judged:<38}{row}   "
            + (f"{100 * share:.0f} % of series" if share is not None else "-")
            + fell_back
        )
    if COMBINATION in scores:
        combined = scores[COMBINATION]
        beats = [
            f"{'the answer' if name == 'answer' else name} {100 * share[metric]:.0f} %"
            for name, share in combined[f"{judged}_beats"].items()
            if share[metric] is not None
        ]
        lines += [
            f"  combination: the mean of the answer, {', '.join(COMBINED[:-1])} and {COMBINED[-1]}, point by point",
            f"  combination better on (by {METRIC_LABELS[metric]}): {', '.join(beats)} of series",
        ]
    if not has_test:
        lines.append("  no test window: give --horizon H to hold out every series' last H points and score on them")
    return lines
