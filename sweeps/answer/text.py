"""The answer's lines of the summary: for one series its score and each baseline's margin; for a panel a table of
every metric's mean over series and the share of series on which the answer beats each baseline; with intervals,
their coverage, width and MSIS, and how the answer's were calibrated. They read the answer's scores
(sweeps.answer.scores.AnswerScores), as best_config.json stores them.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

from forecaster.metrics import METRIC_LABELS, METRIC_NAMES, format_score
from sweeps.answer.combination import COMBINED
from sweeps.answer.members import FAR_BEHIND
from sweeps.answer.refits import AS_TRAINED
from sweeps.answer.scores import AnswerScores
from sweeps.plan.sweep_plan import SweepPlan


def describe(scores: AnswerScores, plan: SweepPlan) -> list[str]:
    """The answer's lines of the summary: for one series its MAPE and each baseline's margin; for a panel a table of
    every metric's mean over series, and the share of series on which the answer beats each baseline; with
    intervals, their coverage, width and MSIS."""
    lines = _describe_one(scores, plan) if scores.series == 1 else _describe_panel(scores, plan)
    lines += _describe_leaderboard(scores)
    return lines + _describe_distributions(scores) + _describe_intervals(scores.intervals)


def _describe_leaderboard(scores: AnswerScores) -> list[str]:
    """The leaderboard: every candidate of the ensemble, the nets' mean (the answer) and the ensemble, best on the
    validation parts first, with their test scores, weights and seconds."""
    rows = scores.leaderboard
    if not rows:
        return []
    metric = scores.metric
    label = METRIC_NAMES[metric]

    def cell(value: float | None, width: int) -> str:
        return f"{'-':>{width}}" if value is None else f"{format_score(metric, value).rstrip(' %'):>{width}}"

    ensemble = scores.ensemble
    windows, weighed = (1, 1) if ensemble is None else (ensemble.windows, ensemble.weighed_on_windows)
    latest = "the latest" if weighed == 1 else f"the latest {weighed}"
    where = (
        "the validation parts"
        if windows == 1
        else f"{latest} of the {windows} backtest windows, which no trial was ranked on"
    )
    width = max(len(row["model"]) for row in rows) + 2
    lines = [
        f"Leaderboard: the ensemble's candidates, weighed by greedy selection on {where} (best there first; {label})",
        f"  {'model':<{width}}{'kind':<13}{'validation':>11}{'test':>9}{'weight':>8}{'seconds':>9}",
    ]
    for row in rows:
        weight = "" if row["weight"] is None else f"{row['weight']:.2f}"
        seconds = "" if row["seconds"] is None else f"{row['seconds']:.1f}"
        lines.append(
            f"  {row['model']:<{width}}{row['kind']:<13}{cell(row[f'validation_{metric}'], 11)}"
            f"{cell(row[f'test_{metric}'], 9)}{weight:>8}{seconds:>9}"
        )
    left_out = {} if ensemble is None else ensemble.left_out
    lines += [f"  {name} left out of the ensemble: {why}" for name, why in left_out.items()]
    return lines


def _describe_distributions(scores: AnswerScores) -> list[str]:
    """Every method's WQL on the test windows, where it gives a forecast distribution."""
    found = {"answer": scores.answer["test_wql"]} | {
        name: baseline.get("test_wql") for name, baseline in scores.baselines.items() if "unavailable" not in baseline
    }
    scored = {name: value for name, value in found.items() if value is not None and math.isfinite(value)}
    if not scored:
        return []
    cells = ", ".join(f"{name} {value:.4f}" for name, value in scored.items())
    lines = textwrap.wrap(
        "Forecast distributions on the test window, WQL (quantiles 0.1-0.9, pooled over every point; lower is "
        f"better): {cells}",
        118,
        subsequent_indent="  ",
    )
    missing = [name for name in found if name not in scored]
    if missing:
        lines.append(f"  none from {', '.join(missing)}: no intervals to read quantiles from")
    return lines


def _describe_intervals(intervals: dict[str, Any] | None) -> list[str]:
    """A table of every method's intervals on the test windows, and how the answer's were calibrated."""
    if not intervals:
        return []
    from forecaster.answer.intervals import level_name

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
        windows = calibration.get("windows", 1)
        over = f" over {windows} windows" if windows > 1 else ""
        lines.append(
            f"  the answer's: conformal, on its validation errors ({calibration['calibration_errors']} errors of "
            f"{calibration['calibration_series']} series{over}{pooled}, its {calibration['members']} members'), in "
            f"each series' scale{', wider where the members disagree' if calibration.get('spread_floor') else ''}; "
            "no model trained for them"
        )
        lines += [
            f"  no {level_name(level)} % interval for the answer: {calibration['calibration_errors']} calibration "
            f"errors cannot bound it (it takes {math.ceil(100 / (100 - level)) - 1}); lower the level"
            for level in calibration["unbounded_levels"]
        ]
    return lines


def _describe_refit(scores: AnswerScores) -> list[str]:
    """How the answer's nets were continued before the test window, where they were."""
    refit = scores.refit
    if not refit:
        return []
    if refit.get("read_from"):
        return [
            f"  refit: its {len(refit['trials'])} nets as continued through the validation part, from "
            f"{refit['read_from']}"
        ]
    epochs = ", ".join(str(count) for count in refit["continued_epochs"])
    devices = refit.get("trained_on")
    where = f" on {' and '.join(devices)}" if devices else ""
    took = f"; {refit['seconds']:.0f} s{where}" if refit.get("seconds") is not None else ""
    return [
        f"  refit: its {len(refit['trials'])} trials' nets continued through the validation part ({epochs} epochs, a "
        f"share of each trial's best{took}), then forecasting the test window; '{AS_TRAINED}' is the answer as the "
        "trials trained it"
    ]


def _where(plan: SweepPlan, scores: AnswerScores) -> tuple[str, str]:
    """How the summary names the validation part and the test window."""
    if plan.sweep.horizon:
        h, windows = plan.sweep.horizon, plan.sweep.val_windows
        before = f"{windows} backtest windows of {h} points" if windows > 1 else f"the {h} points"
        return f"{before} before the test window", f"the last {h} points"
    return f"{scores.validation_points} points after {plan.sweep.split_after}", (
        f"{scores.test_points} points after {scores.test_after}"
    )


def _who(k: int, plan: SweepPlan, scores: AnswerScores) -> str:
    """What the answer is, in words: the ensemble and its weights, or the mean of the nets."""
    last = " (ranked on their last epoch's validation)" if plan.sweep.answer_scope == "last" else ""
    weights = None if scores.ensemble is None else scores.ensemble.weights
    if weights:
        chosen = sorted(((weight, name) for name, weight in weights.items() if weight > 0), reverse=True)
        named = " + ".join(f"{weight:.2f} {name}" for weight, name in chosen)
        return f"the ensemble of the top {k} trials' best models{last} and the baselines ({named})"
    if k == 1:
        return (
            "the best trial's model"
            if plan.sweep.answer_scope == "all"
            else "the model of the best trial by its last epoch"
        )
    return f"the mean forecast of the top {k} trials' best models{last}"


def _left_out(selection: dict[str, Any], plan: SweepPlan) -> list[str]:
    """The summary's line naming the trials of the top k too far behind the best to be in the answer, if any
    (`selection`: AnswerScores.selection)."""
    far = selection.get("far_behind")  # a sweep of the day before says nothing of it
    if not far:
        return []
    return [
        f"  left out: {', '.join(far)}, {'its' if len(far) == 1 else 'their'} validation "
        f"{METRIC_NAMES[plan.sweep.metric]} over {FAR_BEHIND:g} times the best trial's (too far behind to average in)"
    ]


def _describe_one(scores: AnswerScores, plan: SweepPlan) -> list[str]:
    """One series, in the sweep's ranking metric: the answer on both parts, and each baseline's margin (the answer
    before a refit forecasts the test window only)."""
    k = len(scores.trials)
    who = _who(k, plan, scores)
    metric = scores.metric
    on_validation, on_test = scores.score("validation", metric), scores.score("test", metric)
    assert on_validation is not None, "the trials were ranked on this metric of the validation part"
    has_test = on_test is not None
    validation, test = _where(plan, scores)
    lines = [
        f"Answer: {who}, forecasting on from what the sweep saw ({METRIC_NAMES[metric]})",
        *_left_out(scores.selection, plan),
        f"  on the validation part ({validation}, from the end of training): "
        f"{format_score(metric, on_validation)} (chosen on these points: optimistic)",
    ]
    if on_test is not None:
        lines.append(f"  on the test window ({test}, which no trial saw): {format_score(metric, on_test)}")
        lines += _describe_refit(scores)
    else:
        lines.append(
            "  no test window: give --test-after DATE to hold out the end of the series and score the answer on it"
        )
    lines.append("Baselines on the same points, and the answer's margin over each:")
    window = "test" if has_test else "validation"
    ours = on_test if on_test is not None else on_validation
    for name, baseline in scores.baselines.items():
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
    return lines + _fit_notes(scores)


def _fit_notes(scores: AnswerScores) -> list[str]:
    """How the baselines were fit where not on the series as given (on the points their seasons need, on fewer
    within their budget, with a season taken off first): one line per note, naming every baseline it holds for."""
    notes: dict[str, list[str]] = {}
    for name, baseline in scores.baselines.items():
        if "fit" in baseline:
            notes.setdefault(baseline["fit"], []).append(name)
    return [f"  {', '.join(names)}: {note}" for note, names in notes.items()]


def _describe_panel(scores: AnswerScores, plan: SweepPlan) -> list[str]:
    k = len(scores.trials)
    who = _who(k, plan, scores)
    validation, test = _where(plan, scores)
    judged = scores.judged
    has_test = judged == "test"
    dropped = len(scores.dropped_series)
    metric = plan.sweep.metric

    def cell(value: float | None, metric_name: str) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return f"{'-':>8}"
        return f"{value:8.3f}" if metric_name == "mase" else f"{value:8.2f}"

    header = "".join(f"{METRIC_LABELS[name]:>8}" for name in ("smape", "mase", "mape"))
    lines = [
        f"Answer: {who}, series by series, forecasting on from what the sweep saw",
        *_left_out(scores.selection, plan),
        f"  {scores.series} series{f' ({dropped} dropped as too short)' if dropped else ''}; validation: "
        f"{validation} of each (chosen on them: optimistic)"
        + (f"; test: {test} of each, which no trial saw" if has_test else ""),
        f"  {'means over series':<38}{header}   answer better on (by {METRIC_LABELS[metric]})",
    ]
    for part in ("validation", "test") if has_test else ("validation",):
        row = "".join(cell(scores.score(part, name), name) for name in ("smape", "mase", "mape"))
        lines.append(f"  {'answer, ' + part:<38}{row}")
    lines += _describe_refit(scores)
    if scores.combination is not None:
        row = "".join(cell(scores.combination[f"{judged}_{name}"], name) for name in ("smape", "mase", "mape"))
        lines.append(f"  {'combination, ' + judged:<38}{row}")
    for name, baseline in scores.baselines.items():
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
    lines += _fit_notes(scores)
    if scores.combination is not None:
        combined = scores.combination
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
