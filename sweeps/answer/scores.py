"""How good the answer and every baseline are: MAPE, sMAPE and MASE per series and as the mean over series
(forecaster.metrics), on the validation parts and the test windows; WQL on the test windows, of every method that
gives a distribution (the answer's conformal intervals, the baselines' own); beside each baseline, the share of series
on which the answer (and the combination) beats it; and the intervals' coverage, width and MSIS.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from forecaster.data.panel import Panel
from forecaster.metrics import (
    METRICS,
    WQL_QUANTILES,
    mase_scales,
    series_scores,
    series_weighted_quantile_loss,
    weighted_quantile_loss,
)
from sweeps.answer import Answer
from sweeps.answer.baselines import plan_baselines
from sweeps.answer.combination import COMBINATION, COMBINED
from sweeps.answer.ensemble import NETS_MEAN
from sweeps.answer.intervals import grid
from sweeps.plan.sweep_plan import SweepPlan

PARTS = ("validation", "test")


def per_series(answer: Answer, plan: SweepPlan) -> pd.DataFrame:
    """One row per series, part and method: unique_id, part, method, mape, smape, mase, and on the test windows wql
    (NaN where undefined, or where a method gives no distribution)."""
    parts = plan.parts
    rows = []
    for part_name, part, history in (("validation", parts.val, parts.train), ("test", parts.test, parts.seen)):
        if part is None:
            continue
        scales = mase_scales(history)
        for method, forecast in answer.forecasts[part_name].items():
            scores = part_scores(part, forecast, scales)
            if part_name == "test":
                quantiles = test_quantiles(answer, method)
                scores["wql"] = (
                    np.full(len(part), np.nan)
                    if quantiles is None
                    else series_weighted_quantile_loss(part.values, quantiles, part.offsets)
                )
            rows.append(pd.DataFrame({"unique_id": part.ids, "part": part_name, "method": method, **scores}))
    return pd.concat(rows, ignore_index=True)


def test_quantiles(answer: Answer, method: str) -> dict[float, np.ndarray] | None:
    """A method's forecasts of the test windows at WQL's quantiles (flat); None where it gives no distribution."""
    found = answer.quantiles.get(method)
    return None if found is None else {q: found[q] for q in WQL_QUANTILES}


def wql(answer: Answer, plan: SweepPlan, method: str) -> float | None:
    """A method's WQL over every point of the test windows, pooled as the field pools it; None without a test window
    or a distribution."""
    test = plan.parts.test
    if test is None or method not in answer.forecasts.get("test", {}):
        return None
    quantiles = test_quantiles(answer, method)
    return None if quantiles is None else weighted_quantile_loss(test.values, quantiles)


@dataclasses.dataclass(frozen=True)
class EnsembleScores:
    """How the ensemble was weighed (sweeps.answer.ensemble), as best_config.json records it."""

    weights: dict[str, float]
    """Per candidate, its weight (0 for those not chosen): the nets by their trials' ids, then the baselines."""
    left_out: dict[str, str]
    """Candidates that could not be weighed, and why."""
    weighed_on_windows: int
    """How many of the latest backtest windows the weights were chosen on (1 with one validation part)."""
    windows: int
    """The validation parts' backtest windows in all."""

    def record(self) -> dict[str, Any]:
        """JSON-ready, as best_config.json's answer holds it under "ensemble"."""
        return {
            "weights": self.weights,
            "left_out": self.left_out,
            "weighed_on_windows": self.weighed_on_windows,
            "windows": self.windows,
        }


@dataclasses.dataclass(frozen=True)
class TimeLimitCut:
    """What --time-limit cut from the work after the trials (sweeps.plan.budget.Cut), for the summary."""

    seconds: float
    """The limit asked for."""
    cut: list[str]
    """What gave way, in the order it did (Cut.lines); empty where everything fitted."""

    def record(self) -> dict[str, Any]:
        """JSON-ready, as best_config.json's answer holds it under "time_limit"."""
        return {"seconds": self.seconds, "cut": self.cut}


@dataclasses.dataclass(frozen=True)
class AnswerScores:
    """How good the answer is, beside the baselines: what `scores` finds, written to best_config.json as its
    "answer" (`record`) and read by the summary (sweeps.answer.text, sweeps.output.summary).

    The nested parts stay JSON-like dicts: each baseline's scores (keys named by the judged part, "unavailable" for
    one that did not run), the combination's, the leaderboard's rows (keys named by the sweep's metric), the
    intervals (keyed by method and level), `selection` and `refit` (as sweeps.answer.members and .refits give
    them)."""

    trials: list[str]
    """The trials whose best models make the answer, best first."""
    answer: dict[str, float | None]
    """The answer's own scores, the mean over series: validation_mape, validation_smape, validation_mase, test_mape,
    test_smape, test_mase (None where a part is missing or a metric undefined on some series) and test_wql (None
    without a test window or intervals)."""
    metric: str
    """The sweep's ranking metric (mape, smape or mase)."""
    series: int
    """How many series were scored (the validation part's)."""
    dropped_series: list[str]
    """The series dropped as too short."""
    horizon: int | None
    """The sweep's horizon (None for a split by dates)."""
    test_after: str | None
    """Where the test window starts, for a split by dates (None with a horizon)."""
    validation_points: int
    """The longest series' points in the validation part."""
    test_points: int | None
    """The longest series' points in the test window; None without one."""
    baselines: dict[str, dict[str, Any]]
    """Per baseline, in forecaster.baselines' order: its scores as `answer`'s, the share of series on which the
    answer beats it ("{judged}_beaten_by_answer", per metric), the series it fell back on and how it was fit; or
    {"unavailable": why} for one that did not run."""
    selection: dict[str, Any]
    """How the best validation score was found (sweeps.answer.members.selection)."""
    refit: dict[str, Any] | None = None
    """How the answer's nets were continued through the validation part (sweeps.answer.refits); None where not."""
    combination: dict[str, Any] | None = None
    """A panel's combination (the mean of the answer and the statistical baselines): what it is the mean of ("of"),
    its scores as `answer`'s and the share of series on which it beats each method ("{judged}_beats"); None
    without."""
    ensemble: EnsembleScores | None = None
    """How the ensemble was weighed; None where the answer is the nets' mean."""
    leaderboard: list[dict[str, Any]] | None = None
    """Every candidate of the ensemble, best on validation first (`leaderboard`); None without an ensemble."""
    intervals: dict[str, Any] | None = None
    """The intervals' coverage, width and MSIS per method, their levels and the answer's calibration
    (`interval_scores`); None without --levels."""
    time_limit: TimeLimitCut | None = None
    """What --time-limit cut (set by the driver); None without one."""

    def score(self, part: str, metric: str) -> float | None:
        """The answer's mean over series of `metric` on `part` ("validation", "test")."""
        return self.answer[f"{part}_{metric}"]

    @property
    def judged(self) -> str:
        """The part the summary judges the answer on: "test" where its test sMAPE is scored, else "validation"."""
        return "test" if self.answer["test_smape"] is not None else "validation"

    def record(self) -> dict[str, Any]:
        """JSON-ready: best_config.json's "answer", key by key as it has always been written."""
        found: dict[str, Any] = {
            "trials": self.trials,
            **self.answer,
            "metric": self.metric,
            "series": self.series,
            "dropped_series": self.dropped_series,
            "horizon": self.horizon,
            "test_after": self.test_after,
            "validation_points": self.validation_points,
            "test_points": self.test_points,
            "baselines": self.baselines,
            "selection": self.selection,
        }
        if self.refit is not None:
            found["refit"] = self.refit
        if self.combination is not None:
            found[COMBINATION] = self.combination
        if self.ensemble is not None:
            found["ensemble"] = self.ensemble.record()
        if self.leaderboard is not None:
            found["leaderboard"] = self.leaderboard
        if self.intervals is not None:
            found["intervals"] = self.intervals
        if self.time_limit is not None:
            found["time_limit"] = self.time_limit.record()
        return found


def scores(answer: Answer, plan: SweepPlan) -> AnswerScores:
    """The mean over series of every metric for the answer and every baseline, on both parts, and the share of series
    on which the answer beats each baseline (on the test windows where there are)."""
    val, test = plan.parts.val, plan.parts.test
    table = per_series(answer, plan)
    means = {
        (part, method): {metric: mean(group[metric]) for metric in METRICS}
        for (part, method), group in table.groupby(["part", "method"], sort=False)
    }

    def flat(method: str) -> dict[str, float | None]:
        found = {f"{part}_{metric}": means.get((part, method), {}).get(metric) for part in PARTS for metric in METRICS}
        return found | {"test_wql": wql(answer, plan, method)}

    judged = "test" if test is not None else "validation"

    def judged_scores(method: str) -> pd.DataFrame:
        return table[(table["part"] == judged) & (table["method"] == method)].set_index("unique_id")

    def shares(ours: pd.DataFrame, name: str) -> dict[str, float | None]:
        theirs = judged_scores(name)
        return {metric: share_beaten(ours[metric], theirs[metric]) for metric in METRICS}

    ours = judged_scores("answer")
    names = sorted((name for name in answer.forecasts[judged] if name not in ("answer", COMBINATION)), key=_order)
    notes = plan_baselines(plan).notes
    baselines: dict[str, dict[str, Any]] = {
        name: flat(name)
        | {f"{judged}_beaten_by_answer": shares(ours, name), "fell_back": answer.fell_back[name]}
        | ({"fit": notes[name]} if name in notes else {})
        for name in names
    }
    baselines.update({name: {"unavailable": why} for name, why in answer.unavailable.items()})
    combination = None
    if COMBINATION in answer.forecasts[judged]:
        combined = judged_scores(COMBINATION)
        combination = (
            {"of": ["answer", *COMBINED]}
            | flat(COMBINATION)
            | {f"{judged}_beats": {name: shares(combined, name) for name in ["answer", *names]}}
        )
    ensemble = board = None
    if answer.ensemble is not None:
        ensemble = EnsembleScores(
            weights=answer.ensemble.weights,
            left_out=answer.ensemble.left_out,
            weighed_on_windows=plan.parts.weighing_windows or 1,
            windows=plan.parts.windows,
        )
        board = leaderboard(answer, plan)
    sweep = plan.sweep
    return AnswerScores(
        trials=answer.trial_ids,
        answer=flat("answer"),
        metric=sweep.metric,
        series=len(val),
        dropped_series=list(plan.panel.dropped),
        horizon=sweep.horizon,
        test_after=None if sweep.horizon else sweep.test_after,
        validation_points=int(val.lengths.max()),
        test_points=None if test is None else int(test.lengths.max()),
        baselines=dict(sorted(baselines.items(), key=lambda item: _order(item[0]))),
        selection=answer.selection,
        refit=answer.refit or None,
        combination=combination,
        ensemble=ensemble,
        leaderboard=board,
        intervals=interval_scores(answer, plan) if answer.bounds else None,
    )


ANSWER_ROW = "answer (the ensemble)"
"""The leaderboard's row of the answer."""


def leaderboard(answer: Answer, plan: SweepPlan) -> list[dict[str, Any]]:
    """JSON-ready, as AutoGluon-TimeSeries' `leaderboard()`: one row per candidate of the ensemble (each member's net,
    each baseline that ran), the nets' plain mean and the answer, best on validation first: the sweep's metric on the
    validation points the ensemble was weighed on (FitParts.weighing_part: the latest backtest windows, which no trial
    ranked on; the mean over series) and on the test window, the weight in the ensemble, and the seconds it took (for
    the answer, its selection)."""
    ensemble = answer.ensemble
    assert ensemble is not None, "a leaderboard ranks the ensemble's candidates"
    metric = plan.sweep.metric
    parts = plan.parts
    weighed, rows_weighed = parts.weighing_part()
    scored_parts = {
        "validation": (weighed, mase_scales(parts.train)),
        "test": (parts.test, None if parts.test is None else mase_scales(parts.seen)),
    }

    def score(part_name: str, forecast: np.ndarray | None) -> float | None:
        part, scales = scored_parts[part_name]
        if part is None or forecast is None or scales is None:
            return None
        points = forecast[rows_weighed] if part_name == "validation" else forecast
        return mean(pd.Series(part_scores(part, points, scales)[metric]))

    rows = []
    for index, trial_id in enumerate(answer.trial_ids):
        row: dict[str, Any] = {"model": trial_id, "kind": "net"}
        for part_name in PARTS:
            forecasts = answer.member_forecasts.get(part_name)
            row[f"{part_name}_{metric}"] = score(part_name, None if forecasts is None else forecasts[index])
        rows.append(row | {"weight": ensemble.weights.get(trial_id, 0.0), "seconds": answer.seconds.get(trial_id)})
    named = [(name, kind, ensemble.weights.get(name, 0.0)) for name, kind in ensemble.kinds.items() if kind != "net"]
    for name, kind, weight in [*named, (NETS_MEAN, "mean", None), (ANSWER_ROW, "ensemble", 1.0)]:
        method = "answer" if name == ANSWER_ROW else name
        seconds = ensemble.seconds if name == ANSWER_ROW else answer.seconds.get(name)
        rows.append(
            {"model": name, "kind": kind}
            | {f"{part}_{metric}": score(part, answer.forecasts.get(part, {}).get(method)) for part in PARTS}
            | {"weight": weight, "seconds": seconds}
        )
    for row in rows:
        row["seconds"] = None if row["seconds"] is None else round(row["seconds"], 1)
    key = f"validation_{metric}"
    return sorted(rows, key=lambda row: math.inf if row[key] is None else row[key])


def interval_scores(answer: Answer, plan: SweepPlan) -> dict[str, Any]:
    """JSON-ready: for the answer and each baseline, at each level, the coverage of the test points (pooled over
    series and steps), the mean width relative to each series' scale, and MSIS; and how the answer's were
    calibrated."""
    from forecaster.answer.intervals import interval_scores as scored
    from forecaster.answer.intervals import level_name

    seen, test = plan.parts.seen, plan.parts.test
    assert test is not None, "intervals are scored on the test window"
    scales = mase_scales(seen)
    scales = np.where(scales > 0, scales, np.nan)  # MSIS is undefined where MASE is
    actual, count = grid(test, test.values), len(test.values)
    methods = {}
    for method, by_level in answer.bounds.items():
        found: dict[str, float | None] = {}
        for level, (lower, upper) in by_level.items():
            name = level_name(level)
            result = scored(actual, grid(test, lower), grid(test, upper), scales, level)
            inside = (test.values >= lower) & (test.values <= upper)
            found[f"coverage_{name}"] = float(inside.sum() / count)
            found[f"width_{name}"] = mean(pd.Series(result["width"]))
            found[f"msis_{name}"] = mean(pd.Series(result["msis"]))
        methods[method] = found
    return {"levels": list(plan.answer_settings.levels), "calibration": answer.calibration, **methods}


def part_scores(part: Panel, forecast: np.ndarray, scales: np.ndarray) -> dict[str, np.ndarray]:
    """Per series of `part`: MAPE (NaN where the part has a zero), sMAPE and MASE (NaN where the series' training part
    has no seasonal naive error: a constant series) of a flat forecast."""
    import torch

    steps, cells = int(part.lengths.max()), part.cells
    actual, predicted, weights = np.ones((steps, len(part))), np.ones((steps, len(part))), np.zeros((steps, len(part)))
    actual[cells] = part.values
    predicted[cells] = forecast
    weights[cells] = 1.0
    found = series_scores(
        torch.as_tensor(actual),
        torch.as_tensor(predicted),
        torch.as_tensor(weights),
        torch.arange(len(part)),
        len(part),
        torch.as_tensor(scales),
    )
    values = {name: value.numpy() for name, value in found.items()}
    for name in ("mape", "mase"):  # undefined alike for every method, not inf for some and NaN for an exact one
        values[name] = np.where(np.isfinite(values[name]), values[name], np.nan)
    return values


def mean(values: pd.Series) -> float | None:
    """The mean over series, None where the metric is undefined on some series (MAPE with a zero, MASE of a constant
    series)."""
    return None if values.isna().any() else float(values.mean())


def share_beaten(ours: pd.Series, theirs: pd.Series) -> float | None:
    """The share of series on which the answer's error is lower than the baseline's."""
    if ours.isna().any() or theirs.isna().any():
        return None
    return float((ours < theirs.reindex(ours.index)).mean())


def _order(name: str) -> int:
    from forecaster.baselines import baseline_names

    names = baseline_names()
    return names.index(name) if name in names else len(names)
