"""How good the answer and every baseline are: MAPE, sMAPE and MASE per series and as the mean over series
(forecaster.metrics), on the validation parts and the test windows; WQL on the test windows, of every method that
gives a distribution (the answer's conformal intervals, the baselines' own); beside each baseline, the share of series
on which the answer (and the combination) beats it; and the intervals' coverage, width and MSIS.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from forecaster.metrics import (
    METRICS,
    WQL_QUANTILES,
    mase_scales,
    series_scores,
    series_weighted_quantile_loss,
    weighted_quantile_loss,
)
from forecaster.panel import Panel
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


def scores(answer: Answer, plan: SweepPlan) -> dict[str, Any]:
    """JSON-ready: the mean over series of every metric for the answer and every baseline, on both parts, and the share
    of series on which the answer beats each baseline (on the test windows where there are)."""
    val, test = plan.parts.val, plan.parts.test
    table = per_series(answer, plan)
    means = {
        (part, method): {metric: mean(group[metric]) for metric in METRICS}
        for (part, method), group in table.groupby(["part", "method"], sort=False)
    }

    def flat(method: str) -> dict[str, Any]:
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
    baselines: dict[str, Any] = {
        name: flat(name)
        | {f"{judged}_beaten_by_answer": shares(ours, name), "fell_back": answer.fell_back[name]}
        | ({"fit": notes[name]} if name in notes else {})
        for name in names
    }
    baselines.update({name: {"unavailable": why} for name, why in answer.unavailable.items()})
    extra: dict[str, Any] = {}
    if COMBINATION in answer.forecasts[judged]:
        combined = judged_scores(COMBINATION)
        extra[COMBINATION] = (
            {"of": ["answer", *COMBINED]}
            | flat(COMBINATION)
            | {f"{judged}_beats": {name: shares(combined, name) for name in ["answer", *names]}}
        )
    if answer.ensemble is not None:
        extra["ensemble"] = {
            "weights": answer.ensemble.weights,
            "left_out": answer.ensemble.left_out,
            "weighed_on_windows": plan.parts.weighing_windows or 1,
            "windows": plan.parts.windows,
        }
        extra["leaderboard"] = leaderboard(answer, plan)
    if answer.bounds:
        extra["intervals"] = interval_scores(answer, plan)
    sweep = plan.sweep
    return {
        "trials": answer.trial_ids,
        **flat("answer"),
        "metric": sweep.metric,
        "series": len(val),
        "dropped_series": list(plan.panel.dropped),
        "horizon": sweep.horizon,
        "test_after": None if sweep.horizon else sweep.test_after,
        "validation_points": int(val.lengths.max()),
        "test_points": None if test is None else int(test.lengths.max()),
        "baselines": dict(sorted(baselines.items(), key=lambda item: _order(item[0]))),
        "selection": answer.selection,
        **({"refit": answer.refit} if answer.refit else {}),
        **extra,
    }


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
    from forecaster.intervals import interval_scores as scored
    from forecaster.intervals import level_name

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
