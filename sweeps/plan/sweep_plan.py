"""Everything a sweep will do, decided and checked before Ray starts: a mistake costs seconds, not cluster time.

`make_plan` turns a registry entry and the options (sweeps.plan.options) into a `SweepPlan`: the data loaded, checked
and cut once into its parts (training, validation, seen, test), the search space with its pins resolved for that data,
every corner of the space checked against the forecaster's rules and the data's lengths, and the trials' resources.
It raises PlanError (exit code 2) with what to fix. The plan is stored as data in the sweep's folder
(sweeps.plan.record), where --resume, sweeps.report and sweeps.refit read it.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forecaster.answer.intervals import check_levels, check_quantiles
from forecaster.config import ConfigError, ForecasterConfig, check_known_keys
from forecaster.data.panel import Panel
from forecaster.data.read import SeriesError, load_panel, naming
from forecaster.data.seasons import usable_seasons
from forecaster.metrics import METRICS
from forecaster.training.parts import (
    FIT_PARTS_FIELDS,
    Cut,
    FitParts,
    check_parts,
    cut_parts,
    default_metric,
    no_cut_message,
)
from sweeps.plan.options import SMOKE_TEST, PlanError, SweepOptions, parse_duration
from sweeps.plan.registry import ANSWER_SCOPES, SWEEPS, Sweep
from sweeps.plan.resources import ResourceError, TrialResources
from sweeps.plan.schedulers import SCHEDULERS, SchedulerError
from sweeps.plan.searches import SEARCHES
from sweeps.plan.space import DataShape, SpaceError, check_structure, extremes, is_searched, resolve, to_data
from sweeps.plan.storage import DEFAULT_STORAGE, SweepFolder, experiment_path, located

LEAST_DEMANDING = ForecasterConfig(shape="direct", input_chunk_length=1, output_chunk_length=1)
"""The forecaster that asks least of the data (2 points a window): the faults of the data whatever the configuration
are found with it, before the space's."""


@dataclasses.dataclass(frozen=True)
class TuneSettings:
    """What Ray Tune's run of the trials (sweeps.trials) is told of the options: the layers below the driver read
    these, never the options themselves."""

    seed: int | None
    time_limit: float | None
    """--time-limit, seconds: the stopper's budget, and the trials ranked as they end rather than by the metric."""
    max_concurrent_trials: int | None
    trial_timeout: float
    max_failures: int
    resume: bool
    mlflow_uri: str | None


@dataclasses.dataclass(frozen=True)
class AnswerSettings:
    """What the answer made after the trials (sweeps.answer) and what the user gets (sweeps.output) are told of the
    options."""

    levels: tuple[float, ...]
    """The prediction intervals asked for (--levels), in order."""
    quantiles: tuple[float, ...]
    future: bool
    """Forecast the horizon after the data and save the answer as one model (not --no-future)."""
    time_limit: float | None
    columns: dict[str, str | None]
    """The id, date and value columns of the data, where named (--id-column, ...): the saved model reads new data
    by them."""
    futr_exog: tuple[str, ...]
    hist_exog: tuple[str, ...]
    seed: int | None
    address: str | None
    """The cluster the sweep ran on (--address): the command that resumes it names it."""


@dataclasses.dataclass(frozen=True)
class SweepPlan:
    """Everything a sweep will run, decided and checked before Ray starts: the options, the registry entry with them
    applied and its space resolved on the data, the data cut once into its parts, and the resources per trial."""

    options: SweepOptions
    """What the sweep was asked, as checked (its levels in order)."""
    sweep: Sweep
    """The registry entry with the options applied: budget, scheduler, space (its pins in, resolved for the data), the
    data's cut and metric."""
    panel: Panel
    """All the data, every series' test window included (series too short for the space left out, with
    --drop-short-series or by a sweep for any panel: their ids in panel.dropped)."""
    parts: FitParts
    """The panel cut once: every series' training part, validation part, both together (`seen`, what the trials are
    given) and test window (None without one); `untrained`, the series some configuration of the space forecasts
    without training on them."""
    data_label: str
    resources: TrialResources
    name: str
    storage_path: str
    named_by_user: bool = True
    """False when the name was made up from the sweep and the time: another free one may be taken instead."""
    arguments: tuple[str, ...] = ()
    """The command line's arguments that started the sweep: the command for more trials repeats them."""
    tune_settings: TuneSettings = dataclasses.field(init=False)
    """What the trials are told of `options`."""
    answer_settings: AnswerSettings = dataclasses.field(init=False)
    """What the answer and the output are told of `options`."""

    def __post_init__(self) -> None:
        options = self.options
        trials = TuneSettings(
            options.seed,
            options.time_limit,
            options.max_concurrent_trials,
            options.trial_timeout,
            options.max_failures,
            options.resume,
            options.mlflow_uri,
        )
        answer = AnswerSettings(
            tuple(options.levels),
            tuple(options.quantiles),
            options.future,
            options.time_limit,
            {"id": options.id_column, "date": options.date_column, "value": options.value_column},
            tuple(options.futr_exog),
            tuple(options.hist_exog),
            options.seed,
            options.address,
        )
        object.__setattr__(self, "tune_settings", trials)
        object.__setattr__(self, "answer_settings", answer)

    @property
    def experiment_path(self) -> str:
        return experiment_path(self.storage_path, self.name)

    @property
    def distribution_quantiles(self) -> tuple[float, ...]:
        """The quantiles every method forecasts on the test window: those WQL scores (0.1-0.9) and those asked for
        (--quantiles); none without a test window."""
        from forecaster.metrics import WQL_QUANTILES

        return tuple(sorted(set(WQL_QUANTILES) | set(self.options.quantiles))) if self.parts.test is not None else ()

    @property
    def distribution_levels(self) -> tuple[float, ...]:
        """The levels of every method's intervals on the test window: those asked for (--levels) and the central
        intervals whose bounds are the distribution_quantiles (20, 40, 60 and 80 % for 0.1-0.9)."""
        from forecaster.answer.intervals import quantile_levels

        return tuple(sorted(set(self.options.levels) | set(quantile_levels(self.distribution_quantiles))))

    @property
    def future_levels(self) -> tuple[float, ...]:
        """The levels of the intervals around the future forecast: those asked for and those --quantiles needs."""
        from forecaster.answer.intervals import quantile_levels

        return tuple(sorted(set(self.options.levels) | set(quantile_levels(self.options.quantiles))))

    @property
    def most_at_once(self) -> int:
        """The most trials the sweep ever runs at once, whatever the cluster holds: no more warm workers than that."""
        limit = self.options.max_concurrent_trials
        return min(self.sweep.num_samples, limit or self.sweep.num_samples)

    @property
    def searched(self) -> list[str]:
        return [key for key, value in self.sweep.space.items() if is_searched(value)]

    def describe_data(self) -> dict[str, Any]:
        """The data as the sweep runs on it, JSON-ready."""
        panel, sweep, parts = self.panel, self.sweep, self.parts
        shown = (lambda t: str(pd.Timestamp(t).date())) if panel.dated else int
        return {
            "source": self.data_label,
            "series": len(panel),
            "points": len(panel.values),
            "dropped_series": list(panel.dropped),
            "untrained_series": list(parts.untrained),
            "first": shown(panel.first_times().min()),
            "last": shown(panel.last_times().max()),
            "freq": panel.freq,
            "season": panel.season,
            "horizon": sweep.horizon,
            "split_after": None if sweep.horizon else sweep.split_after,
            "test_after": None if sweep.horizon else sweep.test_after,
            "validation_points": int(parts.val.lengths.sum()),
            "test_points": None if parts.test is None else int(parts.test.lengths.sum()),
            "metric": sweep.metric,
            "covariates": _describe_covariates(panel),
            "unused_columns": list(panel.unused_columns),
        }

    def resolved(self, command: Sequence[str]) -> dict[str, Any]:
        """What the sweep was run with, for people (resolved_sweep.json): the options, the data, the resources, the
        command, the git commit and the library versions."""
        from sweeps.plan.space import describe

        options = self.options
        return {
            "name": self.name,
            "experiment_path": self.experiment_path,
            "sweep": self.sweep.describe(),
            "pinned": describe(options.pins),
            "data": self.describe_data(),
            "resources_per_trial": dataclasses.asdict(self.resources) | {"described": self.resources.describe()},
            "seed": options.seed,
            "max_concurrent_trials": options.max_concurrent_trials,
            "smoke_test": options.smoke_test,
            "mlflow_uri": options.mlflow_uri,
            "command": " ".join(command),
            "git_commit": _git_commit(),
            "started": datetime.datetime.now().isoformat(timespec="seconds"),
            "versions": _versions(),
        }


def _describe_covariates(panel: Panel) -> dict[str, Any] | None:
    """The panel's covariates, JSON-ready: their columns, and how many points after each series' end are known."""
    covariates = panel.covariates
    if covariates is None:
        return None
    known = covariates.known_after(panel.lengths)
    return {
        "futr_exog": list(covariates.futr_names),
        "hist_exog": list(covariates.hist_names),
        "static": list(covariates.static_columns),
        "static_inputs": list(covariates.static_names),
        "known_ahead_points": int(known.min()) if len(known) else 0,
    }


def find_sweep(name: str | None) -> Sweep:
    if name not in SWEEPS:
        raise PlanError(f"unknown sweep {name!r}; the sweeps are: {', '.join(SWEEPS)} (python -m sweeps.run --list)")
    return SWEEPS[name]


def make_plan(sweep: str | SweepOptions, **options: Any) -> SweepPlan:
    """The plan of a sweep, made and checked before Ray starts: its data loaded, checked and cut once, every corner of
    its space checked against the forecaster's rules and the data's lengths, its resources per trial.

    Args:
        sweep: A registered sweep's name (with `options` as keyword arguments:
            `make_plan("air_rnn", num_samples=8, pins={"model": "GRU"})`), or the SweepOptions of a command line.
        **options: Fields of SweepOptions, with a sweep's name.

    Returns:
        The plan `run_sweep` runs.

    Raises:
        PlanError: What in the options or the data cannot make the sweep, and what to change."""
    given = dataclasses.replace(sweep, **options) if isinstance(sweep, SweepOptions) else SweepOptions(sweep, **options)
    if given.resume:
        raise PlanError(
            "make_plan plans a new sweep; a stopped one continues from its folder: python -m sweeps.run SWEEP --resume "
            "--name NAME"
        )
    entry = find_sweep(given.sweep)
    pins = _checked_pins(given.pins)
    changes = {**(SMOKE_TEST if given.smoke_test else {}), **given.sweep_overrides()}
    resolved = dataclasses.replace(entry, space={**entry.space, **pins}, **changes)
    resolved = dataclasses.replace(resolved, scheduler_options=_scheduler_options(resolved, entry, given))
    _check_budget(resolved)
    scheduler_entry = SCHEDULERS[resolved.scheduler]
    resolved = dataclasses.replace(
        resolved, scheduler_options=scheduler_entry.fit_budget(resolved.scheduler_options, resolved.max_epochs)
    )
    try:
        scheduler_entry.check(resolved)
        resources = TrialResources(
            cpus=resolved.cpus_per_trial,
            gpus=resolved.gpus_per_trial,
            tpu_chips=resolved.tpu_chips_per_trial,
            workers=given.workers_per_trial,
            train_on_cpu=given.train_on_cpu,
        )
    except (SchedulerError, ResourceError) as error:
        raise PlanError(str(error)) from None
    if given.time_limit is not None:  # from Python: a duration as the command line takes it, or seconds
        given = dataclasses.replace(given, time_limit=parse_duration(given.time_limit))
    _check_run(given)

    source = resolved.dataset if given.data is None else given.data
    data_label = _source_label(source, "data")
    if source is None or data_label is None:
        raise PlanError(
            f"the {resolved.name} sweep runs on your data: give --data FILE (a CSV or Parquet long table, unique_id, "
            "ds, y) and --horizon H (the points to forecast), or a built-in panel such as --data m3_monthly"
        )
    given = dataclasses.replace(given, futr_exog=_columns(given.futr_exog), hist_exog=_columns(given.hist_exog))
    _check_future_covariates(given)
    try:
        with naming(data_label):
            panel = load_panel(
                source,
                given.id_column,
                given.date_column,
                given.value_column,
                given.freq,
                given.season_length,
                futr_exog=given.futr_exog,
                hist_exog=given.hist_exog,
                static_data=given.static_data,
                futr_data=given.futr_data,
            )
    except SeriesError as error:
        raise PlanError(str(error)) from None
    own_data = given.data is None or (isinstance(given.data, str) and given.data == entry.dataset)
    # From here on the options are a record (sweep_plan.json): a table given in place of a file is named, not kept;
    # its rows are in the panel, which the sweep's folder keeps (panel.parquet).
    given = dataclasses.replace(
        given,
        data=_source_label(given.data, "data"),
        futr_data=_source_label(given.futr_data, "futr_data"),
        static_data=_source_label(given.static_data, "static_data"),
    )
    resolved = _with_data(resolved, panel, given, own_data=own_data)
    parts = _cut(resolved, data_label, panel)
    least = _check(LEAST_DEMANDING, data_label, parts, drop_short=len(panel) > 1)
    if resolved.drops_unusable_series and least.dropped:  # they cannot fill their own validation and test windows
        parts = parts.without(least.dropped)
    resolved = dataclasses.replace(resolved, space=resolve(resolved.space, _data_shape(resolved, panel, least)))
    parts = _check_space(resolved, data_label, parts, given.drop_short_series)
    kept = np.isin(panel.ids, parts.train.ids)
    panel = dataclasses.replace(panel.take(kept), dropped=parts.dropped)
    _check_known_ahead(given, resolved, panel, parts)
    given = dataclasses.replace(
        given,
        pins=pins,
        levels=check_interval_levels(given.levels, resolved),
        quantiles=check_distribution_quantiles(given.quantiles, resolved),
    )

    storage = given.storage()
    name = given.name
    if name is None:
        name = free_name(storage, f"{resolved.name}-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    elif SweepFolder(experiment_path(storage, name)).holds_sweep():
        raise PlanError(taken_message(storage, name, resolved.name))
    return SweepPlan(
        options=given,
        sweep=resolved,
        panel=panel,
        parts=parts,
        data_label=data_label,
        resources=resources,
        name=name,
        storage_path=storage,
        named_by_user=given.name is not None,
    )


def _source_label(source: Any, option: str) -> str | None:
    """How the plan and its messages name a data option: a file by its path, a DataFrame given from Python by what
    it is (its rows are read into the panel)."""
    if isinstance(source, pd.DataFrame):
        return f"the DataFrame given as {option}= ({len(source):,} rows)"
    return None if source is None else str(source)


def _columns(given: Sequence[str] | str) -> tuple[str, ...]:
    """Covariate columns as the plan stores them: a tuple (one name given as a string is one column)."""
    return (given,) if isinstance(given, str) else tuple(given)


def _check_future_covariates(given: SweepOptions) -> None:
    """The future forecast needs the known-ahead columns after each series' end: refused before any data is read."""
    if given.future and given.futr_exog and given.futr_data is None:
        raise PlanError(
            f"--futr-exog {' '.join(given.futr_exog)}: the sweep ends by forecasting the points after each series' "
            "end (future.parquet), which needs these columns' values there: give them with --futr-data FILE (id, "
            "date and those columns), or skip the future forecast with --no-future"
        )


def _check_known_ahead(given: SweepOptions, sweep: Sweep, panel: Panel, parts: FitParts) -> None:
    """--futr-data must reach as far as the future forecast does (sweeps.answer.intervals.future_horizon)."""
    covariates = panel.covariates
    if not given.future or given.futr_data is None or covariates is None or not len(panel):
        return
    known = int(covariates.known_after(panel.lengths).min())
    horizon = int(sweep.horizon or parts.val.lengths.max())
    if known < horizon:
        raise PlanError(
            f"--futr-data {given.futr_data}: holds {known} point(s) after each series' end, and the future forecast "
            f"(future.parquet) reaches {horizon}: give the --futr-exog columns at the {horizon} points after each "
            "series' end, or skip the future forecast with --no-future"
        )


def _checked_pins(pins: Mapping[str, Any]) -> dict[str, Any]:
    """Pins of known hyperparameters, as values a stored plan holds (a list as a tuple, a NumPy number as Python's);
    the epoch budget is --max-epochs."""
    if "n_epochs" in pins:
        raise PlanError("--set n_epochs: a sweep's epoch budget is --max-epochs")
    try:
        check_known_keys(list(pins))
        checked = {key: _plain(value) for key, value in pins.items()}
        for value in checked.values():
            to_data(value)
    except (ConfigError, SpaceError) as error:
        raise PlanError(f"--set: {error}") from None
    return checked


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_plain(item) for item in value)
    return value.item() if isinstance(value, np.generic) else value


def _scheduler_options(sweep: Sweep, entry: Sweep, given: SweepOptions) -> dict[str, Any]:
    """The scheduler's settings: the sweep's own (the smoke test's with --smoke-test), with --scheduler-option's over
    them, which must be settings of the scheduler."""
    base = SMOKE_TEST["scheduler_options"] if given.smoke_test else entry.scheduler_options
    if not given.scheduler_options:
        return dict(base)
    accepted = SCHEDULERS[sweep.scheduler].options if sweep.scheduler in SCHEDULERS else ()
    unknown = sorted(set(given.scheduler_options) - set(accepted))
    if unknown:
        raise PlanError(
            f"--scheduler-option {', '.join(unknown)}: the {sweep.scheduler} scheduler takes "
            + (", ".join(accepted) if accepted else "no options")
        )
    return {**base, **given.scheduler_options}


def _with_data(sweep: Sweep, panel: Panel, given: SweepOptions, own_data: bool) -> Sweep:
    """The sweep's cut and metric for this data: --horizon (else the sweep's own, else a benchmark panel's official
    hold-out) or dates (--split-after, else a validation part as long as the --test-after window, else the sweep's own
    on its own data); --metric (else the sweep's on its own data, else `default_metric`'s)."""
    metric = given.metric or (sweep.metric if own_data else default_metric(panel))
    if metric not in METRICS:
        raise PlanError(f"--metric {metric!r} is not one of {', '.join(METRICS)}")
    horizon = given.horizon
    if horizon is None:
        horizon = sweep.horizon if own_data and sweep.horizon else panel.horizon
    test_after = given.test_after or (sweep.test_after if own_data else None)
    if horizon is not None:
        if horizon < 1:
            raise PlanError(f"--horizon {horizon} must be at least 1 point")
        for option, value in (("--split-after", given.split_after), ("--test-after", test_after)):
            if value is not None:
                raise PlanError(
                    f"{option} {value} and a horizon of {horizon} points both cut the series: with a horizon, each "
                    "series' last points are its test window and the ones before them its validation part; give one"
                )
        windows = _windows(panel, horizon, given.val_windows, sweep.space.get("val_origins", 1))
        return dataclasses.replace(
            sweep, horizon=horizon, metric=metric, split_after=None, test_after=None, val_windows=windows
        )
    if given.val_windows is not None and given.val_windows != 1:
        raise PlanError(
            f"--val-windows {given.val_windows} cuts the validation part into windows of a horizon each: give "
            "--horizon H (the data is cut by dates here)"
        )
    if not panel.dated:
        raise PlanError(
            f"{panel.label} has a plain time index: give --horizon H (each series' last H points are its test "
            "window, the H before them its validation part)"
        )
    split_after = given.split_after or _validation_before(test_after, panel)
    if split_after is None and own_data:
        split_after = sweep.split_after
    if split_after is None and test_after is not None:  # no validation part before it: what is wrong with it
        _refuse_test_after(sweep, panel, test_after)
    if split_after is None:
        raise PlanError(no_cut_message(panel.label, panel.dated, test_option=True))
    if test_after is not None and _before(test_after, split_after):
        raise PlanError(
            f"--split-after {split_after} must come before --test-after {test_after}: the validation part lies "
            "between them"
        )
    return dataclasses.replace(sweep, horizon=None, metric=metric, split_after=split_after, test_after=test_after)


WINDOWS_BY_SERIES = ((20, 5), (100, 3), (None, 2))
"""The default number of backtest windows by the panel's number of series (fewer than 20: 5; fewer than 100: 3;
else 2), as AutoGluon-TimeSeries' best_quality chooses num_val_windows, capped by what the shortest series holds
(`windows_held`)."""


def windows_held(panel: Panel, horizon: int) -> np.ndarray:
    """(S,) how many backtest windows of `horizon` points each series holds before its test window (its last
    `horizon` points) while keeping a training part of at least two horizons and two seasons: at least 1 (the one
    validation part a horizon cut always had)."""
    least = 2 * max(horizon, panel.season)
    seen = panel.lengths - horizon
    held: np.ndarray = np.maximum(1, (seen - least) // horizon)
    return held


def _windows(panel: Panel, horizon: int, asked: int | None, origins: Any = 1) -> int:
    """The backtest windows of a sweep cut by `horizon`: `asked` (--val-windows), refused where a series cannot hold
    them, else by WINDOWS_BY_SERIES up to what the shortest usable series holds (a series that could not fill even one
    window and its test window is dropped or refused by the checks after). A sweep whose space scores several origins
    in one validation part (`origins`, its val_origins: air_rnn's 4) keeps that part whole: one window."""
    if asked is not None and asked < 1:
        raise PlanError(f"--val-windows {asked} must be at least 1")
    several_origins = not (isinstance(origins, (int, np.integer)) and origins <= 1)
    if several_origins:
        if asked is not None and asked > 1:
            raise PlanError(
                f"--val-windows {asked}: this sweep scores {origins} origins in one validation part (val_origins); "
                "give --set val_origins=1 with backtest windows"
            )
        return 1
    usable = panel.lengths > 2 * horizon
    held = windows_held(panel, horizon)
    if not usable.any():
        return 1 if asked is None else asked  # the checks after say what the series are too short for
    shortest = int(np.flatnonzero(usable)[np.argmin(held[usable])])
    if asked is None:
        wanted = next(windows for below, windows in WINDOWS_BY_SERIES if below is None or len(panel) < below)
        return int(min(wanted, held[shortest]))
    if asked > held[shortest]:
        name = "the series" if len(panel) == 1 else f"series {panel.ids[shortest]!r}"
        raise PlanError(
            f"--val-windows {asked}: {name} ({panel.lengths[shortest]} points) holds at most {held[shortest]} "
            f"backtest window(s) of {horizon} points before its test window, keeping a training part of two horizons "
            f"and two seasons ({2 * max(horizon, panel.season)} points); give --val-windows {held[shortest]} or fewer"
            + ("" if len(panel) == 1 else ", or leave that series out")
        )
    return asked


def _validation_before(test_after: str | None, panel: Panel) -> str | None:
    """Without --split-after, a validation part as long as the test window (that of the longest series), just before
    it; None without a test window, or where the window is no date (the data's checks say so)."""
    if test_after is None:
        return None
    try:
        cut = pd.Timestamp(test_after)
    except (TypeError, ValueError):
        return None
    series = panel.series(int(np.argmax(panel.lengths)))
    seen, test = series[series.index <= cut], series[series.index > cut]
    if not (len(seen) and len(test)):
        return None
    return str(seen.index[max(len(seen) - len(test) - 1, 0)].date())


def _refuse_test_after(sweep: Sweep, panel: Panel, test_after: str) -> None:
    """A --test-after with no validation part before it: the data's own message (no date, a single series' window
    outside it), or where the window falls in a panel."""
    probe = _cut(sweep, panel.label, panel, Cut(val_size=1, test_after=test_after))
    if probe.test is None or not probe.test.lengths.any():
        last = panel.describe_time(panel.last_times().max())
        raise PlanError(
            f"{panel.label}: test_after={test_after} is at or after the last date of every series (the latest {last}): "
            "the test window is empty; move --test-after earlier"
        )
    if not probe.seen.lengths.any():
        first = panel.describe_time(panel.first_times().min())
        raise PlanError(
            f"{panel.label}: test_after={test_after} is before the first date of every series ({first}): nothing is "
            "left to train on; move --test-after later"
        )


def _before(test_after: str, split_after: str) -> bool:
    """Whether the test window starts at or before the validation part (dates that do not parse: the data's checks)."""
    try:
        return pd.Timestamp(split_after) >= pd.Timestamp(test_after)
    except (TypeError, ValueError):
        return False


def cut_of(sweep: Sweep) -> Cut:
    """How every series is cut for this sweep: by its horizon, or by its dates."""
    if sweep.horizon:
        return Cut.last(sweep.horizon, sweep.val_windows)
    return Cut(split_after=sweep.split_after, test_after=sweep.test_after)


def _cut(sweep: Sweep, data_label: str, panel: Panel, cut: Cut | None = None) -> FitParts:
    """The panel cut once (as the sweep cuts it, or as `cut` says), for every trial, the answer and the report."""
    try:
        with naming(data_label):
            return cut_parts(panel, cut or cut_of(sweep), sweep.metric)
    except SeriesError as error:
        raise PlanError(str(error)) from None


def _check(config: ForecasterConfig, data_label: str, parts: FitParts, drop_short: bool) -> FitParts:
    try:
        with naming(data_label):
            return check_parts(config, parts, drop_short=drop_short)
    except SeriesError as error:
        raise PlanError(str(error)) from None


def _data_shape(sweep: Sweep, panel: Panel, least: FitParts) -> DataShape:
    """What the space's relative values are resolved on: the horizon (without one, the validation part of the longest
    series), the season, and the shortest training part of the series the sweep can keep at all (`least`: those that
    fill their validation and test windows)."""
    horizon = sweep.horizon or max(1, int(least.val.lengths.max()))
    covariates = panel.covariates
    known_ahead = covariates is not None and covariates.futr_count > 0
    block = covariates.table[:, : covariates.futr_count + covariates.hist_count] if covariates is not None else None
    numeric = block is not None and bool((np.isfinite(block) & ~np.isin(block, (0.0, 1.0))).any())
    shortest = int(least.train.lengths.min())
    seasons = usable_seasons(panel.freq, shortest, panel.season)
    return DataShape(
        horizon=horizon,
        season=panel.season,
        shortest=shortest,
        known_ahead=known_ahead,
        numeric_covariates=numeric,
        seasons=seasons,
    )


def _check_space(sweep: Sweep, data_label: str, parts: FitParts, drop_short: bool) -> FitParts:
    """Every corner of the space must be a valid forecaster for this data, or the sweep does not start; each distinct
    corner (by FIT_PARTS_FIELDS) is checked once. With `drop_short`, the series too short for some corner are dropped,
    the same for every trial. Returns the parts every trial gets, with the series some corner forecasts without
    training on them."""
    try:
        check_structure(sweep.space)
        check_known_keys(list(sweep.space))
        missing = set(ForecasterConfig.shared_names()) - {"n_epochs", "settings"} - set(sweep.space)
        if missing:
            raise PlanError(f"the space of {sweep.name!r} leaves {', '.join(sorted(missing))} undefined")
        corners = extremes(sweep.space)
    except (SpaceError, ConfigError) as error:
        raise PlanError(f"search space of {sweep.name!r}: {error}") from None
    dropped: dict[str, None] = {}
    untrained: dict[str, None] = {}
    checked: set[tuple[Any, ...]] = set()
    for corner in corners:
        try:
            config = ForecasterConfig.from_dict({**corner, "n_epochs": sweep.max_epochs})
            reads = (*(getattr(config, field) for field in FIT_PARTS_FIELDS), config.settings)
            if reads in checked:
                continue
            checked.add(reads)
            found = check_parts(config, parts, drop_short=drop_short)
        except (ConfigError, SeriesError) as error:
            searched = {k: corner[k] for k in sweep.space if is_searched(sweep.space[k])}
            raise PlanError(
                f"the search space can produce a configuration that cannot train on {data_label}: {error}. "
                f"It arises at {searched}; narrow the space, or pin values with --set KEY=VALUE"
            ) from None
        dropped.update(dict.fromkeys(series for series in found.dropped if series not in parts.dropped))
        untrained.update(dict.fromkeys(found.untrained))
    kept = parts.without([series for series in parts.train.ids if series in dropped])
    return dataclasses.replace(kept, untrained=tuple(series for series in untrained if series not in dropped))


def free_name(storage: str, name: str) -> str:
    """`name`, or `name-2`, `name-3`, ... : the first that no sweep in the storage holds."""
    candidate, number = name, 1
    while SweepFolder(experiment_path(storage, candidate)).holds_sweep():
        number += 1
        candidate = f"{name}-{number}"
    return candidate


def taken_message(storage: str, name: str, sweep_name: str) -> str:
    return (
        f"--name {name}: a sweep of that name is already in {storage} (running or finished); "
        f"`python -m sweeps.run {sweep_name} --resume --name {name}"
        f"{'' if storage == located(DEFAULT_STORAGE) else f' --storage-path {storage}'}` continues it, "
        "another --name starts a new one"
    )


def check_interval_levels(levels: Sequence[float], sweep: Sweep) -> tuple[float, ...]:
    """Interval levels in (0, 100), where there is a test window to judge the intervals on."""
    return _scored_on_the_test_window("--levels", "the intervals are", check_levels, levels, sweep)


def check_distribution_quantiles(quantiles: Sequence[float], sweep: Sweep) -> tuple[float, ...]:
    """Quantiles in (0, 1), where there is a test window to score them on."""
    return _scored_on_the_test_window("--quantiles", "the forecast distribution is", check_quantiles, quantiles, sweep)


def _scored_on_the_test_window(
    flag: str,
    what: str,
    check: Callable[[Sequence[float]], tuple[float, ...]],
    values: Sequence[float],
    sweep: Sweep,
) -> tuple[float, ...]:
    try:
        checked = check(values)
    except ValueError as error:
        raise PlanError(f"{flag}: {error}") from None
    if checked and not (sweep.horizon or sweep.test_after):
        raise PlanError(
            f"{flag}: {what} scored on a test window, and this sweep has none: give --test-after DATE (one series, "
            "or a dated panel) or --horizon H"
        )
    return checked


def _check_run(given: SweepOptions) -> None:
    """The options of how the sweep runs that no later step would check before Ray starts."""
    if given.max_concurrent_trials is not None and given.max_concurrent_trials < 1:
        raise PlanError(f"--max-concurrent-trials {given.max_concurrent_trials} must be at least 1")
    if given.max_failures < 0:
        raise PlanError(f"--max-failures {given.max_failures} must be 0 (no retry) or more")
    if given.mlflow_uri is not None:
        _check_mlflow(given.mlflow_uri)
    if not given.trial_timeout > 0:
        raise PlanError(f"--trial-timeout {given.trial_timeout} must be a positive number of seconds")


def _check_mlflow(uri: str) -> None:
    """MLflow must be installed, and MLflow 3 accepts a folder (a file store) only when told to."""
    try:
        import mlflow  # noqa: F401
    except ImportError:
        raise PlanError("--mlflow-uri needs MLflow: pip install mlflow-skinny (the [mlflow] extra)") from None
    is_folder = "://" not in uri or uri.startswith("file:")
    if is_folder and os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() != "true":
        raise PlanError(
            f"--mlflow-uri {uri}: MLflow 3 keeps a folder store only in maintenance mode and refuses it unless "
            "MLFLOW_ALLOW_FILE_STORE=true is set; set it, or give a tracking server (http://host:5000) or a "
            "database (sqlite:///mlflow.db)"
        )


def _check_budget(sweep: Sweep) -> None:
    if sweep.num_samples < 1:
        raise PlanError(f"--num-samples {sweep.num_samples} must be at least 1")
    if sweep.max_epochs < 1:
        raise PlanError(f"--max-epochs {sweep.max_epochs} must be at least 1")
    if sweep.scheduler not in SCHEDULERS:
        raise PlanError(f"--scheduler {sweep.scheduler!r} is not one of {', '.join(SCHEDULERS)}")
    if sweep.search not in SEARCHES:
        raise PlanError(f"--search {sweep.search!r} is not one of {', '.join(SEARCHES)}")
    if sweep.answer_top_k < 1:
        raise PlanError(
            f"--answer-top-k {sweep.answer_top_k} must be at least 1 (the best trial's model); a sweep of fewer "
            "trials averages all of them"
        )
    if sweep.answer_scope not in ANSWER_SCOPES:
        raise PlanError(f"--answer-scope {sweep.answer_scope!r} is not one of {', '.join(ANSWER_SCOPES)}")


def _git_commit() -> str | None:
    try:
        root = Path(__file__).resolve().parent.parent
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _versions() -> dict[str, str]:
    """From the installed metadata: importing torch here would delay the sweep's start by seconds."""
    from importlib import metadata

    return {"python": platform.python_version()} | {
        name: metadata.version(name) for name in ("ray", "torch", "lightning", "pandas")
    }
