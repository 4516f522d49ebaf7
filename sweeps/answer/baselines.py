"""The baselines beside the answer, on the same points (forecaster.baselines: those that run on the plan's data), as
Ray tasks that wait on nothing but the data: a sweep submits them before its trials, and they take a trial's CPUs as
they come free.

Each task fits one baseline on one chunk of the series: on the training parts, forecasting the validation parts (on
which the ensemble weighs it), and on everything before the test window, forecasting it with the baseline's own
intervals at the plan's levels; then, without fitting again, it runs the fitted models on over the newer
points to forecast the future (Baseline.forward, statsforecast's forward). A baseline is fit
once per series.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from forecaster.data.panel import Panel
from sweeps.answer.tasks import Handle, Runner
from sweeps.plan.sweep_plan import SweepPlan
from sweeps.trials.trial import by_value

if TYPE_CHECKING:
    import pandas as pd

    from forecaster.baselines import Baseline, BaselineForecast, PanelBaselines

SERIES_SECONDS = 60.0
"""The most one series' work of a baseline (its fits and its run on for the future) is planned to take on one CPU:
on a long series, a baseline whose estimate at the points its seasons need is more fits on fewer points
(`within_budget`), so that its task holds a slot for about a minute at most, not the tens of minutes the trials would
wait for."""
TIME_LIMIT_SHARE = 0.05
"""Under --time-limit, one series' work of a baseline is planned to take at most this share of the limit, where that
is less than SERIES_SECONDS."""
SERIES_PER_CHUNK = 20
"""A chunk holds at least this many series: fewer would cost more in tasks than in fits."""
CHUNKS_PER_SLOT = 4
"""At most this many chunks per task the cluster runs at once: small enough to fill the CPUs the trials leave."""


@dataclasses.dataclass(frozen=True)
class BaselineJobs:
    """The baselines' tasks, per baseline one per chunk of series."""

    handles: dict[str, list[Handle]]
    chunks: list[np.ndarray]
    """The series of each chunk, as row numbers of the plan's panel."""
    parts: tuple[str, ...]
    """The parts each task forecasts, in the order fit ("validation", "test")."""
    future: bool
    cut: dict[str, str] = dataclasses.field(default_factory=dict)
    """Baselines whose tasks were cancelled, and why (--time-limit)."""
    not_run: dict[str, str] = dataclasses.field(default_factory=dict)
    """Baselines of the data's seasons that its series are too short for, or that would outlast the trials
    (within_the_trials_time), and why."""
    priors: dict[str, float] = dataclasses.field(default_factory=dict)
    """Per baseline, its expected seconds per series on one CPU on this data (Baseline.seconds_per_series), until its
    own chunks say."""
    cuttable: tuple[str, ...] = ()
    """The baselines that fit models (Baseline.fits), whose tasks --time-limit and the trials' time may cut; the rest
    cost nothing and are always waited for."""


@dataclasses.dataclass(frozen=True)
class BaselineForecasts:
    forecasts: dict[str, dict[str, np.ndarray]]
    """Per part ("validation", "test"): per baseline that ran, its forecast of every point, flat in the part's order."""
    bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]]
    """Per baseline that gives them: its intervals on the test windows, {level: (lower, upper)}."""
    unavailable: dict[str, str]
    """Baselines that did not run, and why."""
    fell_back: dict[str, list[str]]
    """Per baseline that ran: the series it could not fit (seasonal naive's forecast stands in for them)."""
    future: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Per baseline that ran: its forecast after every series' end (forecaster.baselines.BaselineForecast, (H, S)):
    run on from its fit for the test window; on a date cut, for the answer's statistical members, fit on every point."""
    read_back: bool = False
    """Read from the sweep's folder (`saved_baselines`), where the answer's statistical members' future is their fit on
    every point (sweeps.answer.future), not made again here."""


def shipped(fitting: PanelBaselines) -> PanelBaselines:
    """`fitting`, its baselines of the user's own (forecaster.baselines.register) set to travel to the tasks by value
    (sweeps.trials.trial.by_value)."""
    by_value(fitting.baselines)
    return fitting


def scored_parts(plan: SweepPlan) -> list[tuple[str, Panel, Panel]]:
    """(part name, history, part) of every part the baselines forecast, in the order fit: the validation part, which
    the ensemble weighs every candidate on (sweeps.answer.ensemble), then the test window where there is one."""
    parts = plan.parts
    jobs = [("validation", parts.train, parts.val)]
    if parts.test is not None:
        jobs.append(("test", parts.seen, parts.test))
    return jobs


def later_windows(plan: SweepPlan) -> list[Panel]:
    """The histories of the validation part's backtest windows after its first (FitParts.backtest_windows): a
    baseline fit for the first runs on over each to forecast the next, without fitting again."""
    return [history for history, _ in plan.parts.backtest_windows()[1:]]


def submit_baselines(plan: SweepPlan, runner: Runner, future_steps: int | None) -> BaselineJobs:
    """Every baseline's tasks, chunk by chunk: forecasting the parts `scored_parts` names and, with `future_steps`,
    that many points after each series' end."""
    series = len(plan.panel)
    chunks = series_chunks(series, runner)
    jobs = scored_parts(plan)
    fitting = shipped(plan_baselines(plan))
    handles: dict[str, list[Handle]] = {}
    inputs = []
    later, size = later_windows(plan), plan.parts.window_size
    for rows in chunks:
        mask = _mask(rows, series)
        taken = [
            (name, history.take(mask), size if name == "validation" else int(part.lengths.max()))
            for name, history, part in jobs
        ]
        newer = plan.panel.take(mask) if future_steps else None
        inputs.append(runner.put((taken, [history.take(mask) for history in later], newer)))
    for baseline in fitting.baselines:
        handles[baseline.name] = [
            runner.submit(
                "baselines",
                f"{baseline.name}, series {rows[0] + 1}-{rows[-1] + 1}",
                baseline_chunk,
                baseline,
                chunk,
                future_steps or 0,
                plan.distribution_levels,
                plan.future_levels,
                fitting.fit_points.get(baseline.name),
                trains=False,
            )
            for rows, chunk in zip(chunks, inputs)
        ]
    parts = tuple(name for name, _, _ in jobs)
    fits = len(jobs) + bool(future_steps)  # a run on over a later window costs a few % of a fit: not counted
    cuttable = tuple(baseline.name for baseline in fitting.baselines if baseline.fits)
    priors = {
        baseline.name: baseline.seconds_per_series(plan.panel, fitting.fit_points.get(baseline.name), fits)
        for baseline in fitting.baselines
    }
    return BaselineJobs(
        handles, chunks, parts, bool(future_steps), not_run=dict(fitting.not_run), priors=priors, cuttable=cuttable
    )


def plan_baselines(plan: SweepPlan) -> PanelBaselines:
    """The baselines that fit the plan's seasons (forecaster.baselines.panel_baselines), decided on the shortest
    history any part fits them on, so that every chunk and part runs the same ones, each on the points its seasons
    need or fewer, within its budget (`within_budget`)."""
    from forecaster.baselines import panel_baselines

    shortest = min(int(history.lengths.min()) for _, history, _ in scored_parts(plan))
    return within_budget(panel_baselines(plan.panel, shortest), plan)


def within_budget(fitting: PanelBaselines, plan: SweepPlan) -> PanelBaselines:
    """`fitting` with each baseline whose work per series would take longer than SERIES_SECONDS (or TIME_LIMIT_SHARE of
    --time-limit) fit on fewer points, as many as the budget allows; one that would need fewer than two cycles of its
    longest season and two horizons is not run. The summary says which, and the estimate."""
    limit = plan.answer_settings.time_limit
    budget = SERIES_SECONDS if limit is None else min(SERIES_SECONDS, TIME_LIMIT_SHARE * limit)
    whose = f"{100 * TIME_LIMIT_SHARE:.0f} % of --time-limit" if budget < SERIES_SECONDS else "its budget"
    parts = scored_parts(plan)
    fits = len(parts) + 1  # each part, and the run on for the future (one over a later window costs a few % of a fit)
    horizon = max([plan.parts.window_size, *(int(part.lengths.max()) for name, _, part in parts if name == "test")])
    longest_series = int(plan.panel.lengths.max())
    points, notes, not_run = dict(fitting.fit_points), dict(fitting.notes), dict(fitting.not_run)
    for name, wanted in fitting.fit_points.items():
        baseline = fitting.of(name)
        planned = baseline.seconds_per_series(plan.panel, wanted, fits)
        read = min(wanted, longest_series)
        if planned <= budget or read <= 0:
            continue
        affordable = int(read * budget / planned)
        least = 2 * max((*baseline.seasons_read(plan.panel.season), horizon))
        estimate = f"about {planned:.0f} s a series on {read:,} points, more than the {budget:.0f} s of {whose}"
        if affordable < least:
            not_run[name] = f"{estimate}, and fewer than {least} points are too few for it"
            points.pop(name)
            notes.pop(name, None)
            continue
        points[name] = affordable
        notes[name] = f"fit on each series' last {affordable:,} points, not the {read:,} its seasons need: {estimate}"
    kept = tuple(baseline for baseline in fitting.baselines if baseline.name not in not_run)
    return dataclasses.replace(fitting, baselines=kept, not_run=not_run, fit_points=points, notes=notes)


def series_chunks(series: int, runner: Runner) -> list[np.ndarray]:
    """The row numbers of each chunk of `series` that one task takes: at least SERIES_PER_CHUNK series, at most
    CHUNKS_PER_SLOT chunks per slot."""
    count = min(math.ceil(series / SERIES_PER_CHUNK), CHUNKS_PER_SLOT * runner.slots())
    return np.array_split(np.arange(series), max(1, count))


def _mask(rows: np.ndarray, series: int) -> np.ndarray:
    mask = np.zeros(series, dtype=bool)
    mask[rows] = True
    return mask


def baseline_chunk(
    baseline: Baseline,
    chunk: tuple[Any, ...],
    future_steps: int,
    levels: tuple[float, ...],
    future_levels: tuple[float, ...] = (),
    points: int | None = None,
) -> dict[str, Any]:
    """One baseline on one chunk ((part name, history, steps) of each part, the histories of the later backtest
    windows, and the chunk's every point or None): its forecast of each part (the validation part window by window,
    the models fit for the first run on over the later ones; the test window with its intervals at `levels`), then
    of `future_steps` points after every point with its intervals at `future_levels`, from the models fit for the last
    part (as made for the plan's data: MSTL at the plan's seasons, not the chunk's own), each fit on each series' last
    `points` points (the plan's). {"unavailable": why} where it cannot run."""
    from forecaster.baselines import BaselineUnavailable

    scored, later, newer = chunk
    found: dict[str, Any] = {"parts": {}}
    fitted = None
    try:
        for name, history, steps in scored:
            bounded = levels if name == "test" else ()
            found["parts"][name], fitted = baseline.fit(history, steps, bounded, points)
            if name == "validation" and later:
                windows = [baseline.forward(fitted, grown, steps) for grown in later]
                found["parts"][name] = _one_after_another([found["parts"][name], *windows])
        if newer is not None:
            found["future"] = baseline.forward(fitted, newer, future_steps, future_levels)
    except BaselineUnavailable as error:
        return {"unavailable": str(error)}
    return found


def future_fits(plan: SweepPlan, runner: Runner, names: list[str]) -> dict[str, Any]:
    """The answer's statistical members (`names`) fit on every point of every series, as the saved model fits them
    (forecaster.answer.model.StatisticalMember), each forecasting the future with its intervals at the plan's
    future_levels: tasks chunk by chunk, as the baselines'. Per name, a forecaster.baselines.BaselineForecast of
    (horizon, S)."""
    from sweeps.answer.intervals import future_horizon

    if not names:
        return {}
    series = len(plan.panel)
    chunks = series_chunks(series, runner)
    fitting = shipped(plan_baselines(plan))
    panels = [runner.put(plan.panel.take(_mask(rows, series))) for rows in chunks]
    handles = {
        name: [
            runner.submit(
                "future",
                f"{name}, series {rows[0] + 1}-{rows[-1] + 1}",
                fitted_future,
                fitting.of(name),
                panel,
                future_horizon(plan),
                plan.future_levels,
                fitting.fit_points.get(name),
                trains=False,
            )
            for rows, panel in zip(chunks, panels)
        ]
        for name in names
    }
    return {name: _joined([runner.get(handle) for handle in found]) for name, found in handles.items()}


def fitted_future(
    baseline: Baseline, panel: Panel, steps: int, levels: tuple[float, ...], points: int | None = None
) -> BaselineForecast:
    """One statistical member on one chunk: fit on every point of each series (its last `points`), forecasting
    `steps` after it with its intervals at `levels`."""
    return baseline.fit(panel, steps, levels, points)[0]


def gather_baselines(plan: SweepPlan, runner: Runner, jobs: BaselineJobs) -> BaselineForecasts:
    """The baselines' forecasts, once their tasks have ended, put together in the parts' row order."""
    wanted = {name: part for name, _, part in scored_parts(plan)}
    forecasts: dict[str, dict[str, np.ndarray]] = {name: {} for name in jobs.parts}
    bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]] = {}
    unavailable: dict[str, str] = {**jobs.not_run, **jobs.cut}
    fell_back: dict[str, list[str]] = {}
    future: dict[str, Any] = {}
    for method, handles in jobs.handles.items():
        results = [runner.get(handle) for handle in handles]
        why = next((result["unavailable"] for result in results if "unavailable" in result), None)
        if why is not None:
            unavailable[method] = why
            continue
        failed: set[str] = set()
        for part_name in jobs.parts:
            pieces = [result["parts"][part_name] for result in results]
            whole = _joined(pieces)
            part = wanted[part_name]
            where = part.cells
            forecasts[part_name][method] = whole.values[where]
            if whole.bounds:
                bounds[method] = {level: (lo[where], hi[where]) for level, (lo, hi) in whole.bounds.items()}
            failed.update(whole.fell_back)
        if jobs.future:
            whole = _joined([result["future"] for result in results])
            future[method] = whole
            failed.update(whole.fell_back)
        fell_back[method] = sorted(failed)
    return BaselineForecasts(forecasts, bounds, unavailable, fell_back, future)


def _one_after_another(windows: list[BaselineForecast]) -> BaselineForecast:
    """The backtest windows' forecasts (no intervals) as one forecast of the validation part, (windows * steps, S)."""
    from forecaster.baselines import BaselineForecast

    return BaselineForecast(
        np.concatenate([window.values for window in windows], axis=0),
        sorted({series for window in windows for series in window.fell_back}),
    )


def _joined(pieces: list[BaselineForecast]) -> BaselineForecast:
    """The chunks' forecasts of a part side by side, (steps, S) in the panel's series order."""
    from forecaster.baselines import BaselineForecast

    levels = pieces[0].bounds
    return BaselineForecast(
        np.concatenate([piece.values for piece in pieces], axis=1),
        [series for piece in pieces for series in piece.fell_back],
        {
            level: (
                np.concatenate([piece.bounds[level][0] for piece in pieces], axis=1),
                np.concatenate([piece.bounds[level][1] for piece in pieces], axis=1),
            )
            for level in levels
        },
    )


def saved_baselines(plan: SweepPlan, future: bool) -> BaselineForecasts | None:
    """The baselines' forecasts as the sweep wrote them (forecasts.parquet, with `future` future.parquet too, and
    best_config.json for what did not run or fell back), at the plan's levels; None where the folder does not hold
    them all (a sweep stopped before it wrote them, or levels it did not bound)."""
    import io
    import json

    import pandas as pd

    from forecaster.baselines import BaselineForecast
    from sweeps.plan.storage import BEST_CONFIG_FILE, FORECASTS_PARQUET, FUTURE_PARQUET, SweepFolder

    folder = SweepFolder(plan.experiment_path)
    try:
        answer = json.loads(folder.read(BEST_CONFIG_FILE))["answer"] or {}
        frame = pd.read_parquet(io.BytesIO(folder.read(FORECASTS_PARQUET)))
        table = pd.read_parquet(io.BytesIO(folder.read(FUTURE_PARQUET))) if future else None
    except (OSError, KeyError, ValueError):
        return None
    recorded = answer.get("baselines", {})
    names = [part for part, _, _ in scored_parts(plan)]
    levels, future_levels = plan.distribution_levels, plan.future_levels
    forecasts: dict[str, dict[str, np.ndarray]] = {part: {} for part in names}
    bounds, unavailable, fell_back, found_future = {}, {}, {}, {}
    horizon = None if table is None else len(table) // len(plan.panel)
    fitting = plan_baselines(plan)
    for name in (*fitting.names, *fitting.not_run):
        if "unavailable" in recorded.get(name, {}):
            unavailable[name] = recorded[name]["unavailable"]
            continue
        for part in names:
            rows = frame[frame["part"] == part]
            if name not in rows or rows[name].isna().any():
                return None
            forecasts[part][name] = rows[name].to_numpy()
            if part == "test" and levels:
                found = stored_bounds(name, levels, rows, functools.partial(_column, rows))
                if found is None:
                    return None
                bounds[name] = found
        if table is not None:
            if name not in table:
                return None

            def grid(column: str) -> np.ndarray:
                return table[column].to_numpy().reshape(len(plan.panel), cast(int, horizon)).T

            future_bounds = stored_bounds(name, future_levels, table, grid)
            if future_bounds is None:
                return None
            found_future[name] = BaselineForecast(grid(name), bounds=future_bounds)
        fell_back[name] = list(recorded.get(name, {}).get("fell_back", []))
    return BaselineForecasts(forecasts, bounds, unavailable, fell_back, found_future, read_back=True)


def _column(frame: pd.DataFrame, column: str) -> np.ndarray:
    return frame[column].to_numpy()


def stored_bounds(
    name: str, levels: tuple[float, ...], frame: pd.DataFrame, read: Callable[[str], np.ndarray]
) -> dict[float, tuple[np.ndarray, np.ndarray]] | None:
    """A method's intervals at `levels` as a table of the sweep's stores them: by Nixtla's columns (AutoETS-lo-80),
    or, for the levels only the distribution needed, by the quantile columns that bound them (AutoETS_ql0.1 and
    AutoETS_ql0.9 for 80 %); None where a column is missing."""
    from forecaster.answer.intervals import level_name, quantile_column

    found = {}
    for level in levels:
        sides = [f"{name}-{side}-{level_name(level)}" for side in ("lo", "hi")]
        if not all(column in frame for column in sides):
            sides = [quantile_column(name, round(0.5 + sign * level / 200, 9)) for sign in (-1, 1)]
        if not all(column in frame for column in sides):
            return None
        found[level] = (read(sides[0]), read(sides[1]))
    return found


def baselines_left(jobs: BaselineJobs, runner: Runner) -> dict[str, float]:
    """Per baseline not finished: the seconds of work its unfinished chunks have left, on one CPU (each as long as
    its finished chunks were per series, or as expected before any has ended: BaselineJobs.priors)."""
    left = {}
    for method, handles in jobs.handles.items():
        done = [runner.done(handle) for handle in handles]
        if all(done):
            continue
        per_series = _seconds_per_series(jobs, runner, method, done)
        left[method] = per_series * sum(len(rows) for rows, ended in zip(jobs.chunks, done) if not ended)
    return left


def _seconds_per_series(jobs: BaselineJobs, runner: Runner, method: str, done: list[bool]) -> float:
    """A baseline's seconds per series on one CPU: as its ended chunks took, or as expected (BaselineJobs.priors)."""
    finished = [
        runner.get_timing(handle).seconds / len(rows)
        for handle, rows, ended in zip(jobs.handles[method], jobs.chunks, done)
        if ended
    ]
    if finished:
        return float(np.mean(finished))
    return jobs.priors.get(method, 0.0)


def within_the_trials_time(jobs: BaselineJobs, runner: Runner, trials_seconds: float) -> BaselineJobs:
    """The jobs without the statistical baselines whose fits would take longer than the trials did, their tasks
    cancelled: a baseline runs where it fits in the time the trials take (its tasks hold slots the trials could use).
    Their budget (`within_budget`) keeps them to about a minute a series; AutoARIMA with covariates, whose cost grows
    with the series' length, their season and the covariates, is the one this cuts most. The summary says why it did
    not run. Judged when the trials end, on each one's whole work (what ran and what is left) over the cluster's slots,
    at the pace of its ended chunks."""
    slots, cut = runner.slots(), {}
    for name in jobs.cuttable:
        handles = jobs.handles.get(name)
        if not handles:
            continue
        done = [runner.done(handle) for handle in handles]
        if all(done):
            continue
        per_series = _seconds_per_series(jobs, runner, name, done)
        whole = per_series * sum(len(rows) for rows in jobs.chunks) / slots
        if whole <= trials_seconds:
            continue
        for handle in handles:
            runner.cancel(handle)
        cut[name] = (
            f"its fits would take about {whole:.0f} s on {slots} task slot(s) ({per_series:.2f} s a series), longer "
            f"than the trials' {trials_seconds:.0f} s: it runs where it fits in the time the trials take"
        )
    if not cut:
        return jobs
    kept = {name: value for name, value in jobs.handles.items() if name not in cut}
    return dataclasses.replace(jobs, handles=kept, not_run={**jobs.not_run, **cut})


def cancel_baselines(jobs: BaselineJobs, runner: Runner, names: tuple[str, ...], why: str) -> BaselineJobs:
    """The jobs without the baselines `names`, their tasks cancelled; gather_baselines reports them unavailable."""
    for name in names:
        for handle in jobs.handles[name]:
            runner.cancel(handle)
    kept = {name: handles for name, handles in jobs.handles.items() if name not in names}
    return dataclasses.replace(jobs, handles=kept, cut={**jobs.cut, **dict.fromkeys(names, why)})


def finished_baselines(jobs: BaselineJobs, runner: Runner) -> BaselineJobs:
    """The jobs without the statistical baselines still running, their tasks cancelled (--time-limit's deadline);
    seasonal naive, which costs nothing, is always waited for."""
    running = tuple(
        name for name in jobs.cuttable if name in jobs.handles and not all(map(runner.done, jobs.handles[name]))
    )
    return cancel_baselines(jobs, runner, running, "cut by --time-limit: it had not finished by the deadline")


def cut_slowest(jobs: BaselineJobs, runner: Runner, why: str) -> str | None:
    """The statistical baseline with the most work left (`baselines_left`), its tasks cancelled and left out of
    `jobs`, in place: the stopper gives it way while the trials run, and the sweep reads the same jobs after them.
    None when every one has finished or been cut."""
    left = {name: seconds for name, seconds in baselines_left(jobs, runner).items() if name in jobs.cuttable}
    if not left:
        return None
    name = max(left, key=left.__getitem__)
    for handle in jobs.handles.pop(name):
        runner.cancel(handle)
    jobs.cut[name] = why
    return name
