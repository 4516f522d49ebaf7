"""What a user gets at the end of a sweep: the summary printed, the tables and plots written to its folder,
and the commands that follow (refit, report, resume, more trials).

`python -m sweeps.run` prints it when the sweep ends, `python -m sweeps.report` rebuilds it from storage.
"""

from __future__ import annotations

import io
import json
import math
import shlex
import textwrap
from typing import Any

import numpy as np
import pandas as pd

from forecaster.baselines import REFERENCE
from forecaster.metrics import METRIC_NAMES, format_score
from sweeps.answer import Answer, Tail
from sweeps.answer.combination import COMBINATION
from sweeps.answer.future import Future
from sweeps.answer.scores import AnswerScores
from sweeps.answer.scores import per_series as series_scores
from sweeps.answer.text import describe
from sweeps.output.timings import timing_lines
from sweeps.plan.options import shown_duration
from sweeps.plan.storage import (
    BEST_CONFIG_FILE,
    CALIBRATION_PARQUET,
    ERRORS_PLOT,
    FORECAST_PLOT,
    FORECASTS_PARQUET,
    FUTURE_CSV,
    FUTURE_PARQUET,
    FUTURE_PLOT,
    METRICS_CSV,
    MODEL_FOLDER,
    RESOLVED_FILE,
    RESULTS_CSV,
    RESULTS_PARQUET,
    SERIES_PLOT,
    TEST_MODEL_FOLDER,
    TIMINGS_FILE,
    SweepFolder,
    curves_plot,
)
from sweeps.plan.sweep_plan import SweepPlan
from sweeps.trials.results import SweepResults

STATUS_WORDING = {
    "COMPLETED": "ran all epochs",
    "STOPPED": "stopped early by {scheduler}",
    "DIVERGED": "diverged (stopped, never chosen)",
    "ERROR": "failed",
    "UNFINISHED": "unfinished",
    "PENDING": "not started",
}


def interrupted(plan: SweepPlan, results: SweepResults) -> bool:
    """Some trials never finished or never started: the sweep was stopped (Ctrl+C, a lost driver) and can
    be resumed. A search that proposes trials one at a time (Optuna) has not created the rest yet."""
    trials = results.trials
    return len(trials) < plan.sweep.num_samples or bool(trials["status"].isin(["UNFINISHED", "PENDING"]).any())


def report_command(plan: SweepPlan) -> str:
    return f"python -m sweeps.report {plan.experiment_path}"


def resume_command(plan: SweepPlan) -> str:
    address = f" --address {plan.answer_settings.address}" if plan.answer_settings.address else ""
    return (
        f"python -m sweeps.run {plan.sweep.name} --resume --name {plan.name} "
        f"--storage-path {plan.storage_path}{address}"
    )


def more_trials_command(plan: SweepPlan) -> str:
    """The sweep's own command with another seed and name: more trials of the same search, beside this one."""
    arguments, given = [], iter(plan.arguments)
    for argument in given:
        if argument.split("=", 1)[0] in ("--name", "--seed", "--storage-path"):
            if "=" not in argument:
                next(given, None)  # its value
            continue
        arguments.append(shlex.quote(argument))
    seed = (plan.answer_settings.seed if plan.answer_settings.seed is not None else 0) + 1
    arguments += [
        "--seed",
        str(seed),
        "--name",
        f"{plan.name}-seed{seed}",
        "--storage-path",
        shlex.quote(plan.storage_path),
    ]
    return " ".join(["python -m sweeps.run", *arguments])


def summary(
    plan: SweepPlan,
    results: SweepResults,
    written: dict[str, str],
    took: str,
    scores: AnswerScores | None = None,
    future: Future | None = None,
    timings: dict[str, Any] | None = None,
) -> str:
    """What the sweep prints at its end; `scores`: the answer's (sweeps.answer.scores.scores); `timings`: where the
    time went (sweeps.output.timings)."""
    counts = results.trials["status"].value_counts().to_dict() if len(results.trials) else {}
    wording = {status: words.format(scheduler=plan.sweep.scheduler) for status, words in STATUS_WORDING.items()}
    ended = "stopped before its end" if interrupted(plan, results) else "finished"
    lines = [
        f"Sweep {plan.name} {ended} {took}: {len(results.trials)} trials, "
        + ", ".join(f"{counts[k]} {wording[k]}" for k in wording if counts.get(k)),
        "",
    ]
    metric = plan.sweep.metric
    if len(results.trials):
        lines += [
            f"Top trials (best validation {METRIC_NAMES[metric]} over all their epochs):",
            textwrap.indent(summary_table(results.trials, plan.searched, plan.sweep.ranked), "  "),
            "",
        ]
    trials = results.trials
    if len(trials):
        for _, row in trials[trials["status"] == "ERROR"].head(3).iterrows():
            lines.append(f"Trial {row['trial_id']} failed {row['failures']} time(s), the last for good: {row['error']}")
        for _, row in trials[trials["notes"] != ""].head(5).iterrows():
            lines.append(f"Trial {row['trial_id']}: {row['notes']}")
        recovered = trials[(trials["failures"] > 0) & (trials["status"] != "ERROR")]
        if len(recovered):
            lines.append(
                f"{len(recovered)} trial(s) failed and were resumed from their latest checkpoint "
                f"({int(recovered['failures'].sum())} failure(s) in all)"
            )
        lines.append("")
    if results.best:
        best = results.best
        config = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in best.config.items())
        lines += [
            f"Best: trial {best.trial_id}, validation {METRIC_NAMES[metric]} "
            f"{format_score(metric, best.score)} at epoch {best.best_epoch} (of {best.epochs} run)",
            f"  {config}",
            *_selection_lines(plan, scores),
            "",
        ]
        if scores is not None:
            lines += [*describe(scores, plan), ""]
        if future is not None:
            lines += [*future_lines(plan, future), ""]
    else:
        lines += ["No trial reported a result.", ""]
    limit = None if scores is None else scores.time_limit
    if limit is not None:
        cut = "; ".join(limit.cut)
        done = f"to end in time, cut in this order: {cut}" if cut else "the answer's work fitted, nothing was cut"
        lines += [f"--time-limit {shown_duration(limit.seconds)}: {done}", ""]
    if timings:
        lines += [*timing_lines(timings), ""]
    lines.append(f"Written to {plan.experiment_path}:")
    lines += [f"  {name}" for name in [RESOLVED_FILE, *written]]
    lines += [
        "",
        f"Refit the best configuration:  python -m sweeps.refit {plan.experiment_path}",
        f"Rebuild this report:           {report_command(plan)}",
    ]
    if interrupted(plan, results):
        lines.append(f"Finish the sweep:              {resume_command(plan)}")
    if plan.arguments:
        lines.append(f"Run more trials of it:         {more_trials_command(plan)}")
    return "\n".join(lines)


FUTURE_ROWS_SHOWN = 3


def future_lines(plan: SweepPlan, future: Future) -> list[str]:
    """Where the forecast of the future is, what made it, its first rows, and how to forecast again."""
    record, table = future.record, future.table
    horizon, path = record["horizon"], plan.experiment_path
    last = table["ds"].max()
    shown_last = str(pd.Timestamp(last).date()) if plan.panel.dated else str(int(last))
    lines = [
        f"Future: {horizon} points after each series' end (to {shown_last}), in {FUTURE_PARQUET} and {FUTURE_CSV}: "
        f"{record['rows']:,} rows, {record['series']:,} series",
    ]
    if "read_from" in record:
        lines.append(f"  from {record['read_from']}, without training")
    else:
        count = len(record["trials"])
        last = [steps[-1][1] if steps else 0 for steps in record["continued"]]
        through = "the test window" if plan.parts.test is not None else "the validation part"
        lines.append(
            f"  the answer's {count} net{'s' if count > 1 else ''}, each continued through {through} "
            f"({', '.join(map(str, last))} epochs"
            + (f"; {record['seconds']:.1f} s on {', '.join(record['trained_on'])})" if record["seconds"] else ")")
        )
    statistical = [member.name for member in future.model.statistical]
    if statistical:
        lines.append(f"  and its statistical members, fit on each series by statsforecast: {', '.join(statistical)}")
    unavailable = record.get("calibration", {}).get("unavailable")
    if plan.answer_settings.levels and not record["levels"]:
        lines.append(f"  the answer without bounds: {unavailable or 'its saved model holds no calibration'}")
    columns = [c for c in ("unique_id", "ds", "answer", "answer-lo-80", "answer-hi-80", REFERENCE) if c in table]
    shown = table[columns].head(FUTURE_ROWS_SHOWN).copy()
    if plan.panel.dated:
        shown["ds"] = shown["ds"].dt.strftime("%Y-%m-%d")
    lines.append(textwrap.indent(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"), "  "))
    lines += [
        f"The answer is saved as one model in {path}/{MODEL_FOLDER}; forecast newer data with it (no training, no "
        "Ray):",
        f"  python -m sweeps.forecast {path} --data NEWER.csv"
        + (
            " --futr-data FUTURE.csv  (the known-ahead covariates of the points to forecast)"
            if future.model.futr_exog
            else ""
        ),
    ]
    return lines


def _selection_lines(plan: SweepPlan, scores: AnswerScores | None) -> list[str]:
    """What the best validation score is: the lowest of many, so luck is in it; how it varied around its epoch."""
    if scores is None:
        return []
    selection = scores.selection
    origins = plan.sweep.space.get("val_origins", 1)
    pooled = f", each pooling forecasts from {origins} origins" if isinstance(origins, int) and origins > 1 else ""
    lines = [
        f"  selected on validation: the lowest of {selection['evaluations']} validation scores "
        f"({selection['trials']} trials x their epochs{pooled}), so optimistic"
    ]
    around = selection.get("around_best")
    if around:
        metric = plan.sweep.metric
        low, high = format_score(metric, around["min"]), format_score(metric, around["max"])
        lines.append(
            f"  its {METRIC_NAMES[metric]} over epochs {around['first_epoch']}-{around['last_epoch']}: "
            f"{format_score(metric, around['mean'])} mean, {around['std']:.2f} standard deviation, "
            f"{low.removesuffix(' %')}-{high}"
        )
    return lines


def summary_table(trials: pd.DataFrame, searched: list[str], ranked: str = "best_val_mape", rows: int = 10) -> str:
    """The top trials as a text table, for the terminal."""
    columns = ["trial_id", "status", ranked, "best_epoch", "epochs", *[c for c in searched if c in trials]]
    shown = trials[columns].head(rows).copy()
    for column in (ranked, "lr", "dropout"):
        if column in shown:
            shown[column] = shown[column].map(lambda v: f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else v)
    return shown.to_string(index=False)


def write_results(
    plan: SweepPlan, results: SweepResults, answer: Answer | None = None, scores: AnswerScores | None = None
) -> dict[str, str]:
    """Write the tables, the best configuration (with the answer's scores) and the plots to the sweep's folder;
    return their paths."""
    folder = SweepFolder(plan.experiment_path)
    written = {RESULTS_CSV: folder.write(RESULTS_CSV, results.trials.to_csv(index=False).encode())}
    buffer = io.BytesIO()
    results.trials.to_parquet(buffer, index=False)
    written[RESULTS_PARQUET] = folder.write(RESULTS_PARQUET, buffer.getvalue())
    if results.best:
        best = results.best.record() | {
            "max_epochs": plan.sweep.max_epochs,
            "split_after": None if plan.sweep.horizon else plan.sweep.split_after,
            "test_after": None if plan.sweep.horizon else plan.sweep.test_after,
            "horizon": plan.sweep.horizon,
            "answer": None if scores is None else scores.record(),
            "refit": f"python -m sweeps.refit {plan.experiment_path}",
        }
        written[BEST_CONFIG_FILE] = folder.write(BEST_CONFIG_FILE, json.dumps(best, indent=2).encode())
        if answer is not None and scores is not None:
            written.update(_answer_files(plan, answer, scores, folder))
    if results.histories:
        name = curves_plot(plan.sweep.metric)
        written[name] = folder.write(name, _curves_plot(plan, results))
    return written


def _answer_files(plan: SweepPlan, answer: Answer, scores: AnswerScores, folder: SweepFolder) -> dict[str, str]:
    """What a forecaster looks at: every forecast in one long table, every series' errors, and the pictures (one
    series: its forecast; a panel: a few series, and the spread of the errors over series)."""
    written = {}
    buffer = io.BytesIO()
    answer.long_table(plan).to_parquet(buffer, index=False)
    written[FORECASTS_PARQUET] = folder.write(FORECASTS_PARQUET, buffer.getvalue())
    if answer.calibration_points is not None:
        buffer = io.BytesIO()
        answer.calibration_points.to_parquet(buffer, index=False)
        written[CALIBRATION_PARQUET] = folder.write(CALIBRATION_PARQUET, buffer.getvalue())
    per_series = series_scores(answer, plan)
    written[METRICS_CSV] = folder.write(METRICS_CSV, per_series.to_csv(index=False).encode())
    if len(plan.panel) == 1:
        written[FORECAST_PLOT] = folder.write(FORECAST_PLOT, _forecast_plot(plan, answer, scores))
        return written
    written[SERIES_PLOT] = folder.write(SERIES_PLOT, _series_plot(plan, answer, per_series, scores))
    written[ERRORS_PLOT] = folder.write(ERRORS_PLOT, _errors_plot(plan, per_series, scores))
    return written


def write_future(plan: SweepPlan, future: Future) -> dict[str, str]:
    """future.parquet, future.csv and future.png, and the model that made them (unless it was read from there)."""
    folder = SweepFolder(plan.experiment_path)
    written = {}
    buffer = io.BytesIO()
    future.table.to_parquet(buffer, index=False)
    written[FUTURE_PARQUET] = folder.write(FUTURE_PARQUET, buffer.getvalue())
    written[FUTURE_CSV] = folder.write(FUTURE_CSV, future.table.to_csv(index=False).encode())
    written[FUTURE_PLOT] = folder.write(FUTURE_PLOT, _future_plot(plan, future))
    if "read_from" not in future.record:
        for name, content in future.model.to_files().items():
            folder.write(f"{MODEL_FOLDER}/{name}", content)
    written[f"{MODEL_FOLDER}/"] = f"{folder.path}/{MODEL_FOLDER}"
    return written


def write_test_model(plan: SweepPlan, tail: Tail) -> dict[str, str]:
    """test_model/: the nets that forecast the test window, where they were continued through the validation part
    (sweeps.report forecasts with them instead of training again)."""
    from sweeps.answer.future import test_model

    model = test_model(plan, tail)
    if model is None:
        return {}
    folder = SweepFolder(plan.experiment_path)
    for name, content in model.to_files().items():
        folder.write(f"{TEST_MODEL_FOLDER}/{name}", content)
    return {f"{TEST_MODEL_FOLDER}/": f"{folder.path}/{TEST_MODEL_FOLDER}"}


def write_timings(plan: SweepPlan, record: dict[str, Any]) -> dict[str, str]:
    """timings.json: where the time went (sweeps.output.timings)."""
    folder = SweepFolder(plan.experiment_path)
    return {TIMINGS_FILE: folder.write(TIMINGS_FILE, json.dumps(record, indent=1).encode())}


FUTURE_SERIES_DRAWN = 4


def _future_plot(plan: SweepPlan, future: Future) -> bytes:
    """A few series' recent history with the answer's forecast of the future, its bands and the reference baseline's
    (forecaster.baselines.REFERENCE, AutoETS)."""
    from forecaster.answer.intervals import level_name
    from forecaster.plot import plot_future

    table, panel = future.table, plan.panel
    horizon = future.record["horizon"]
    picks = np.unique(np.linspace(0, len(panel) - 1, min(FUTURE_SERIES_DRAWN, len(panel))).round().astype(int))
    items = []
    for index in picks:
        rows = table.iloc[index * horizon : (index + 1) * horizon]
        methods = {name: rows[name].to_numpy() for name in ("answer", REFERENCE) if name in rows}
        bands = {
            f"{level_name(level)} %": (rows[f"answer-lo-{level_name(level)}"], rows[f"answer-hi-{level_name(level)}"])
            for level in sorted(future.record["levels"], reverse=True)
        }
        index_of = pd.DatetimeIndex(rows["ds"]) if panel.dated else pd.Index(rows["ds"])
        items.append((str(panel.ids[index]), panel.series(index), index_of, methods, bands))
    buffer = io.BytesIO()
    plot_future(items, buffer, title=f"{plan.name}: the next {horizon} points of {len(picks)} of {len(panel)} series")
    return buffer.getvalue()


def _forecast_plot(plan: SweepPlan, answer: Answer, scores: AnswerScores) -> bytes:
    """The answer forecasting the validation part from the end of training, and the test window from the end of
    the validation part, against the truth."""
    from forecaster.plot import plot_forecast

    train, val, test = plan.parts.train, plan.parts.val, plan.parts.test
    title = f"{plan.name}: validation MAPE {scores.answer['validation_mape']:.2f} % (chosen on it)"
    test_forecast, test_bands = None, None
    if test is not None:
        title += f", test MAPE {scores.answer['test_mape']:.2f} % (never seen)"
        test_forecast = pd.Series(answer.forecasts["test"]["answer"], index=test.series(0).index)
        test_bands = _answer_bands(answer, np.ones(len(test.values), dtype=bool))
    validation = pd.Series(answer.forecasts["validation"]["answer"], index=val.series(0).index)
    buffer = io.BytesIO()
    plot_forecast(
        train.series(0),
        val.series(0),
        validation,
        buffer,
        title=title,
        test=None if test is None else test.series(0),
        test_forecast=test_forecast,
        test_bands=test_bands,
    )
    return buffer.getvalue()


def _answer_bands(answer: Answer, rows: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The answer's intervals at the rows of the test part chosen by the mask `rows`, widest first, for a plot."""
    from forecaster.answer.intervals import level_name

    found = answer.bounds.get("answer", {})
    return {f"{level_name(level)} %": (found[level][0][rows], found[level][1][rows]) for level in sorted(found)[::-1]}


def _best_baseline(scores: AnswerScores, metric: str) -> str | None:
    part = scores.judged
    ran = {
        name: values[f"{part}_{metric}"]
        for name, values in scores.baselines.items()
        if "unavailable" not in values and values.get(f"{part}_{metric}") is not None
    }
    return min(ran, key=ran.__getitem__) if ran else None


def _series_plot(plan: SweepPlan, answer: Answer, per_series: pd.DataFrame, scores: AnswerScores) -> bytes:
    """The series on which the answer does best, at the median and worst (by the sweep's metric, on the test
    windows where there are): their recent history, the truth, the answer and the best baseline."""
    from forecaster.plot import plot_series_forecasts

    metric, part = plan.sweep.metric, scores.judged
    parts = plan.parts
    window, history = (parts.test, parts.seen) if part == "test" else (parts.val, parts.train)
    assert window is not None, "an answer judged on its test window has one"
    ours = per_series[(per_series["part"] == part) & (per_series["method"] == "answer")].reset_index(drop=True)
    order = ours[metric].sort_values(kind="stable").index
    picks = {"best": order[0], "median": order[len(order) // 2], "worst": order[-1]}
    baseline = _best_baseline(scores, metric)
    flat = answer.forecasts[part]
    rows = np.repeat(np.arange(len(window)), window.lengths)
    panels, bands = [], []
    for label, index in picks.items():
        mine = rows == index
        bands.append(_answer_bands(answer, mine) if part == "test" else {})
        lines = {"answer": flat["answer"][mine]}
        if baseline:
            lines[baseline] = flat[baseline][mine]
        errors = per_series[(per_series["part"] == part) & (per_series["unique_id"] == window.ids[index])]
        error_text = ", ".join(
            f"{method} {format_score(metric, value)}"
            for method, value in zip(errors["method"], errors[metric])
            if method in lines
        )
        panels.append(
            (
                f"{label}: {window.ids[index]} ({METRIC_NAMES[metric]}: {error_text})",
                history.series(index),
                window.series(index),
                lines,
            )
        )
    buffer = io.BytesIO()
    plot_series_forecasts(
        panels, buffer, title=f"{plan.name}: the answer on its best, median and worst series ({part})", bands=bands
    )
    return buffer.getvalue()


def _errors_plot(plan: SweepPlan, per_series: pd.DataFrame, scores: AnswerScores) -> bytes:
    """Every method's error on every series (the sweep's metric), as box plots with the mean marked."""
    from forecaster.plot import plot_error_spread

    metric, part = plan.sweep.metric, scores.judged
    judged = per_series[per_series["part"] == part]
    shown = [*scores.baselines, COMBINATION]
    methods = ["answer", *[name for name in shown if name in set(judged["method"])]]
    spread = {method: judged.loc[judged["method"] == method, metric].to_numpy() for method in methods}
    buffer = io.BytesIO()
    plot_error_spread(
        spread,
        buffer,
        label=f"{METRIC_NAMES[metric]} per series ({part})",
        title=f"{plan.name}: {METRIC_NAMES[metric]} of every series, {len(judged['unique_id'].unique())} series",
    )
    return buffer.getvalue()


def _curves_plot(plan: SweepPlan, results: SweepResults) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = plan.sweep.metric
    figure, axes = plt.subplots(figsize=(10, 5), layout="constrained")
    best_id = results.best.trial_id if results.best else None
    status = dict(zip(results.trials["trial_id"], results.trials["status"]))
    ceiling = 0.0
    for trial_id, history in results.histories.items():
        values = history[f"val_{metric}"].where(np.isfinite(history[f"val_{metric}"]))
        is_best = trial_id == best_id
        axes.plot(
            history["epoch"],
            values,
            linewidth=2.0 if is_best else 0.7,
            alpha=1.0 if is_best else 0.45,
            color="tab:red" if is_best else ("0.55" if status.get(trial_id) == "STOPPED" else "tab:blue"),
            label=f"best trial {trial_id}" if is_best else None,
            zorder=3 if is_best else 1,
        )
        ceiling = max(ceiling, float(np.nanpercentile(values, 90)) if values.notna().any() else 0.0)
    axes.set_ylim(0, max(ceiling, 1.0) * 1.1)
    axes.set_xlabel("epoch")
    axes.set_ylabel(f"validation {METRIC_NAMES[metric]}{' (%)' if metric == 'mape' else ''}")
    axes.set_title(
        f"{plan.name}: validation {METRIC_NAMES[metric]} of every trial (grey: stopped early, blue: ran to the end)"
    )
    if best_id:
        axes.legend(loc="upper right")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()
