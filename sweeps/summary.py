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

from sweeps.answer import Answer, describe
from sweeps.plan import SweepPlan
from sweeps.results import SweepResults
from sweeps.storage import (
    BEST_CONFIG_FILE,
    CURVES_PLOT,
    FORECAST_PLOT,
    RESOLVED_FILE,
    RESULTS_CSV,
    RESULTS_PARQUET,
    SweepFolder,
)

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


def resume_command(plan: SweepPlan) -> str:
    address = f" --address {plan.address}" if plan.address else ""
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
    seed = (plan.seed if plan.seed is not None else 0) + 1
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
    scores: dict[str, Any] | None = None,
) -> str:
    """What the sweep prints at its end; `scores`: the answer's (sweeps.answer.Answer.scores)."""
    counts = results.trials["status"].value_counts().to_dict() if len(results.trials) else {}
    wording = {status: words.format(scheduler=plan.sweep.scheduler) for status, words in STATUS_WORDING.items()}
    ended = "stopped before its end" if interrupted(plan, results) else "finished"
    lines = [
        f"Sweep {plan.name} {ended} {took}: {len(results.trials)} trials, "
        + ", ".join(f"{counts[k]} {wording[k]}" for k in wording if counts.get(k)),
        "",
    ]
    if len(results.trials):
        lines += [
            "Top trials (best validation MAPE over all their epochs):",
            textwrap.indent(summary_table(results.trials, plan.searched), "  "),
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
        config = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in best["config"].items())
        lines += [
            f"Best: trial {best['trial_id']}, validation MAPE {best['best_val_mape']:.2f} % at epoch "
            f"{best['best_epoch']} (of {best['epochs']} run)",
            f"  {config}",
            *_selection_lines(plan, scores),
            "",
        ]
        if scores:
            lines += [*describe(scores, plan), ""]
    else:
        lines += ["No trial reported a result.", ""]
    lines.append(f"Written to {plan.experiment_path}:")
    lines += [f"  {name}" for name in [RESOLVED_FILE, *written]]
    lines += [
        "",
        f"Refit the best configuration:  python -m sweeps.refit {plan.experiment_path}",
        f"Rebuild this report:           python -m sweeps.report {plan.experiment_path}",
    ]
    if interrupted(plan, results):
        lines.append(f"Finish the sweep:              {resume_command(plan)}")
    if plan.arguments:
        lines.append(f"Run more trials of it:         {more_trials_command(plan)}")
    return "\n".join(lines)


def _selection_lines(plan: SweepPlan, scores: dict[str, Any] | None) -> list[str]:
    """What the best validation score is: the lowest of many, so luck is in it; how it varied around its epoch."""
    if not scores:
        return []
    selection = scores["selection"]
    origins = plan.sweep.space.get("val_origins", 1)
    pooled = f", each pooling forecasts from {origins} origins" if isinstance(origins, int) and origins > 1 else ""
    lines = [
        f"  selected on validation: the lowest of {selection['evaluations']} validation scores "
        f"({selection['trials']} trials x their epochs{pooled}), so optimistic"
    ]
    around = selection.get("around_best")
    if around:
        lines.append(
            f"  its MAPE over epochs {around['first_epoch']}-{around['last_epoch']}: {around['mean']:.2f} % mean, "
            f"{around['std']:.2f} standard deviation, {around['min']:.2f}-{around['max']:.2f} %"
        )
    return lines


def summary_table(trials: pd.DataFrame, searched: list[str], rows: int = 10) -> str:
    """The top trials as a text table, for the terminal."""
    columns = ["trial_id", "status", "best_val_mape", "best_epoch", "epochs", *[c for c in searched if c in trials]]
    shown = trials[columns].head(rows).copy()
    for column in ("best_val_mape", "lr", "dropout"):
        if column in shown:
            shown[column] = shown[column].map(lambda v: f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else v)
    return shown.to_string(index=False)


def write_results(
    plan: SweepPlan, results: SweepResults, answer: Answer | None = None, scores: dict[str, Any] | None = None
) -> dict[str, str]:
    """Write the tables, the best configuration (with the answer's scores) and the plots to the sweep's folder;
    return their paths."""
    folder = SweepFolder(plan.experiment_path)
    written = {RESULTS_CSV: folder.write(RESULTS_CSV, results.trials.to_csv(index=False).encode())}
    buffer = io.BytesIO()
    results.trials.to_parquet(buffer, index=False)
    written[RESULTS_PARQUET] = folder.write(RESULTS_PARQUET, buffer.getvalue())
    if results.best:
        best = results.best | {
            "max_epochs": plan.sweep.max_epochs,
            "split_after": plan.sweep.split_after,
            "test_after": plan.sweep.test_after,
            "answer": scores,
            "refit": f"python -m sweeps.refit {plan.experiment_path}",
        }
        written[BEST_CONFIG_FILE] = folder.write(BEST_CONFIG_FILE, json.dumps(best, indent=2).encode())
        if answer is not None and scores is not None:
            written[FORECAST_PLOT] = folder.write(FORECAST_PLOT, _forecast_plot(plan, answer, scores))
    if results.histories:
        written[CURVES_PLOT] = folder.write(CURVES_PLOT, _curves_plot(plan, results))
    return written


def _forecast_plot(plan: SweepPlan, answer: Answer, scores: dict[str, Any]) -> bytes:
    """The answer forecasting the validation part from the end of training, and the test window from the end of
    the validation part, against the truth."""
    from forecaster.data import split_series
    from forecaster.plot import plot_forecast

    train, val = split_series(plan.seen_series, plan.sweep.split_after)
    title = f"{plan.name}: validation MAPE {scores['validation_mape']:.2f} % (chosen on it)"
    if answer.test is not None:
        title += f", test MAPE {scores['test_mape']:.2f} % (never seen)"
    buffer = io.BytesIO()
    plot_forecast(train, val, answer.validation, buffer, title=title, test=plan.test_series, test_forecast=answer.test)
    return buffer.getvalue()


def _curves_plot(plan: SweepPlan, results: SweepResults) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(10, 5), layout="constrained")
    best_id = results.best["trial_id"] if results.best else None
    status = dict(zip(results.trials["trial_id"], results.trials["status"]))
    ceiling = 0.0
    for trial_id, history in results.histories.items():
        values = history["val_mape"].where(np.isfinite(history["val_mape"]))
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
    axes.set_ylabel("validation MAPE (%)")
    axes.set_title(f"{plan.name}: validation MAPE of every trial (grey: stopped early, blue: ran to the end)")
    if best_id:
        axes.legend(loc="upper right")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()
