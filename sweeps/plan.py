"""Everything a sweep will do, decided and checked before Ray starts: a mistake costs seconds, not cluster time.

`make_plan` turns a registry entry and the command line's overrides into a `SweepPlan`: the data loaded,
checked and split, the search space with its pins, and every corner of that space checked against the
forecaster's rules and the data's length. It raises PlanError (exit code 2) with what to fix.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import os
import platform
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forecaster.config import ConfigError, ForecasterConfig, check_known_keys
from forecaster.data import SeriesError, load_panel, naming
from forecaster.intervals import check_levels
from forecaster.metrics import METRICS
from forecaster.panel import Panel
from forecaster.parts import FIT_PARTS_FIELDS, FitParts, default_metric, fit_parts
from sweeps.registry import ANSWER_SCOPES, SWEEPS, Sweep
from sweeps.resources import ResourceError, TrialResources
from sweeps.schedulers import SCHEDULERS, SchedulerError
from sweeps.searches import SEARCHES
from sweeps.space import DataShape, Horizons, SpaceError, check_structure, extremes, is_searched, resolve
from sweeps.storage import DEFAULT_STORAGE, SweepFolder, experiment_path, located

SMOKE_TEST = {"num_samples": 4, "max_epochs": 6, "scheduler_options": {"grace_period": 2, "reduction_factor": 2}}


class PlanError(ValueError):
    """The sweep cannot run as asked; the message says what to change."""


@dataclasses.dataclass(frozen=True)
class SweepPlan:
    sweep: Sweep
    """The registry entry with the command line's overrides applied (budget, scheduler, space, data, metric)."""
    panel: Panel
    """All the data, every series' test window included (series too short for the space dropped, with
    --drop-short-series: their ids in panel.dropped)."""
    data_label: str
    resources: TrialResources
    name: str
    storage_path: str
    seed: int | None = None
    max_concurrent_trials: int | None = None
    resume: bool = False
    smoke_test: bool = False
    pinned: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    max_failures: int = 1
    """Retries of a failed trial, each from its latest checkpoint, before it ends as ERROR."""
    trial_timeout_s: float = 600.0
    """A running trial that reports nothing for this long is killed by the watchdog (and retried)."""
    mlflow_uri: str | None = None
    """An MLflow tracking URI: every trial is also logged there as a run (--mlflow-uri)."""
    levels: tuple[float, ...] = ()
    """The levels (percent) of the answer's prediction intervals and the baselines', scored on the test windows."""
    address: str | None = None
    """The Ray cluster it runs on (--address; None: a local Ray), for the commands the sweep prints."""
    arguments: tuple[str, ...] = ()
    """The command line's arguments that started the sweep: the command for more trials repeats them."""
    untrained: tuple[str, ...] = ()
    """Series too short for the recurrent shape's training window: its trials forecast them without training on them
    (forecaster.parts.FitParts.untrained)."""
    named_by_user: bool = True
    """False when the name was made up from the sweep and the time: another free one may be taken instead."""

    def parts(self) -> tuple[Panel, Panel, Panel, Panel | None]:
        """(training parts, validation parts, both together: what the trials are given, test windows or None)."""
        sweep = self.sweep
        if sweep.horizon:
            seen, test = self.panel.split_last(sweep.horizon)
            return (*seen.split_last(sweep.horizon), seen, test)
        seen, test = self.panel.cut_after(sweep.test_after) if sweep.test_after else (self.panel, None)
        return (*seen.cut_after(sweep.split_after), seen, test)

    @property
    def seen(self) -> Panel:
        """What the trials are given: every series up to its test window (all of it when there is none)."""
        return self.parts()[2]

    @property
    def test(self) -> Panel | None:
        """Every series' held-out test window, for the final score only."""
        return self.parts()[3]

    @property
    def experiment_path(self) -> str:
        return experiment_path(self.storage_path, self.name)

    @property
    def most_at_once(self) -> int:
        """The most trials the sweep ever runs at once, whatever the cluster holds: no more warm workers than that."""
        return min(self.sweep.num_samples, self.max_concurrent_trials or self.sweep.num_samples)

    @property
    def searched(self) -> list[str]:
        return [key for key, value in self.sweep.space.items() if is_searched(value)]

    def describe_data(self) -> dict[str, Any]:
        """The data as the sweep runs on it, JSON-ready."""
        panel, sweep = self.panel, self.sweep
        _, val, _, test = self.parts()
        shown = (lambda t: str(pd.Timestamp(t).date())) if panel.dated else int
        return {
            "source": self.data_label,
            "series": len(panel),
            "points": len(panel.values),
            "dropped_series": list(panel.dropped),
            "untrained_series": list(self.untrained),
            "first": shown(panel.first_times().min()),
            "last": shown(panel.last_times().max()),
            "freq": panel.freq,
            "season": panel.season,
            "horizon": sweep.horizon,
            "split_after": None if sweep.horizon else sweep.split_after,
            "test_after": None if sweep.horizon else sweep.test_after,
            "validation_points": int(val.lengths.sum()),
            "test_points": None if test is None else int(test.lengths.sum()),
            "metric": sweep.metric,
        }

    def resolved(self, command: Sequence[str]) -> dict[str, Any]:
        """What the sweep was run with, for people (resolved_sweep.json): the options, the data, the
        resources, the command, the git commit and the library versions."""
        return {
            "name": self.name,
            "experiment_path": self.experiment_path,
            "sweep": self.sweep.describe(),
            "pinned": dict(self.pinned),
            "data": self.describe_data(),
            "resources_per_trial": dataclasses.asdict(self.resources) | {"described": self.resources.describe()},
            "seed": self.seed,
            "max_concurrent_trials": self.max_concurrent_trials,
            "smoke_test": self.smoke_test,
            "mlflow_uri": self.mlflow_uri,
            "command": " ".join(command),
            "git_commit": _git_commit(),
            "started": datetime.datetime.now().isoformat(timespec="seconds"),
            "versions": _versions(),
        }


def parse_key_values(pairs: Sequence[str], option: str, example: str) -> dict[str, Any]:
    """KEY=VALUE pairs of a repeatable option: numbers become numbers, anything else stays text."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise PlanError(f"{option} {pair!r}: write KEY=VALUE, e.g. {example}")
        try:
            values[key.strip()] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            values[key.strip()] = text.strip()
    return values


def parse_pins(pairs: Sequence[str]) -> dict[str, Any]:
    """--set KEY=VALUE pairs: the hyperparameters pinned instead of searched; a length may be given in horizons
    (`--set input_chunk_length=3H`)."""
    pins = parse_key_values(pairs, "--set", "--set model=LSTM or --set lr=0.005")
    for key, value in pins.items():
        if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?H", value):
            pins[key] = Horizons(float(value[:-1]))
    if "n_epochs" in pins:
        raise PlanError("--set n_epochs: a sweep's epoch budget is --max-epochs")
    try:
        check_known_keys(list(pins))
    except ConfigError as error:
        raise PlanError(f"--set: {error}") from None
    return pins


def scheduler_options_from(pairs: Sequence[str], sweep_name: str, scheduler: str | None, smoke_test: bool):
    """--scheduler-option KEY=VALUE pairs over the sweep's own options (or the smoke test's); None if none given."""
    if not pairs:
        return None
    given = parse_key_values(pairs, "--scheduler-option", "--scheduler-option grace_period=30")
    sweep = find_sweep(sweep_name)
    name = scheduler or sweep.scheduler
    accepted = SCHEDULERS[name].options if name in SCHEDULERS else ()
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise PlanError(
            f"--scheduler-option {', '.join(unknown)}: the {name} scheduler takes "
            + (", ".join(accepted) if accepted else "no options")
        )
    base = SMOKE_TEST["scheduler_options"] if smoke_test else sweep.scheduler_options
    return {**base, **given}


def find_sweep(name: str) -> Sweep:
    if name not in SWEEPS:
        raise PlanError(f"unknown sweep {name!r}; the sweeps are: {', '.join(SWEEPS)} (python -m sweeps.run --list)")
    return SWEEPS[name]


def make_plan(
    sweep_name: str,
    *,
    num_samples: int | None = None,
    max_epochs: int | None = None,
    scheduler: str | None = None,
    scheduler_options: Mapping[str, Any] | None = None,
    search: str | None = None,
    cpus_per_trial: float | None = None,
    gpus_per_trial: float | None = None,
    tpu_chips_per_trial: int | None = None,
    workers_per_trial: int = 0,
    max_concurrent_trials: int | None = None,
    data: str | None = None,
    id_column: str | None = None,
    date_column: str | None = None,
    value_column: str | None = None,
    freq: str | None = None,
    season_length: int | None = None,
    split_after: str | None = None,
    test_after: str | None = None,
    horizon: int | None = None,
    metric: str | None = None,
    drop_short: bool = False,
    answer_top_k: int | None = None,
    refit_answer: bool | None = None,
    answer_scope: str | None = None,
    pins: Mapping[str, Any] | None = None,
    seed: int | None = None,
    name: str | None = None,
    storage_path: str | None = None,
    smoke_test: bool = False,
    max_failures: int = 1,
    trial_timeout_s: float = 600.0,
    mlflow_uri: str | None = None,
    levels: Sequence[float] = (),
) -> SweepPlan:
    """The plan of a registered sweep with the given overrides; `scheduler_options` replaces the sweep's own."""
    sweep = find_sweep(sweep_name)
    pins = dict(pins or {})
    test_after = test_after or sweep.test_after
    changes: dict[str, Any] = {"space": {**sweep.space, **pins}}
    if smoke_test:
        changes.update(SMOKE_TEST)
    overrides = {
        "num_samples": num_samples,
        "max_epochs": max_epochs,
        "scheduler": scheduler,
        "scheduler_options": scheduler_options,
        "search": search,
        "split_after": split_after,
        "test_after": test_after,
        "answer_top_k": answer_top_k,
        "refit_answer": refit_answer,
        "answer_scope": answer_scope,
    }
    changes.update({field: value for field, value in overrides.items() if value is not None})
    sweep = dataclasses.replace(sweep, **changes)
    _check_budget(sweep)
    scheduler_entry = SCHEDULERS[sweep.scheduler]
    sweep = dataclasses.replace(
        sweep, scheduler_options=scheduler_entry.fit_budget(sweep.scheduler_options, sweep.max_epochs)
    )
    try:
        scheduler_entry.check(sweep)
    except SchedulerError as error:
        raise PlanError(str(error)) from None

    try:
        resources = TrialResources(
            cpus=sweep.cpus_per_trial if cpus_per_trial is None else cpus_per_trial,
            gpus=sweep.gpus_per_trial if gpus_per_trial is None else gpus_per_trial,
            tpu_chips=sweep.tpu_chips_per_trial if tpu_chips_per_trial is None else tpu_chips_per_trial,
            workers=workers_per_trial,
        )
    except ResourceError as error:
        raise PlanError(str(error)) from None
    if max_concurrent_trials is not None and max_concurrent_trials < 1:
        raise PlanError(f"--max-concurrent-trials {max_concurrent_trials} must be at least 1")
    if max_failures < 0:
        raise PlanError(f"--max-failures {max_failures} must be 0 (no retry) or more")
    if mlflow_uri is not None:
        _check_mlflow(mlflow_uri)
    if not trial_timeout_s > 0:
        raise PlanError(f"--trial-timeout {trial_timeout_s} must be a positive number of seconds")

    data_label = data or sweep.dataset
    if data_label is None:
        raise PlanError(
            f"the {sweep.name} sweep runs on your data: give --data FILE (a CSV or Parquet long table, unique_id, ds, "
            "y) and --horizon H (the points to forecast), or a built-in panel such as --data m3_monthly"
        )
    try:
        with naming(data_label):
            panel = load_panel(data_label, id_column, date_column, value_column, freq, season_length)
    except SeriesError as error:
        raise PlanError(str(error)) from None
    sweep = _with_data(sweep, panel, own_data=data is None, horizon=horizon, metric=metric, split_after=split_after)
    sweep = _validation_before_test(sweep, panel, split_after)
    least = _check_data(sweep, data_label, panel)
    if sweep.drops_unusable_series and least.dropped:  # they cannot fill their own validation and test windows
        panel = _without(panel, set(least.dropped))
    sweep = dataclasses.replace(sweep, space=resolve(sweep.space, _data_shape(sweep, panel, least)))
    panel, untrained = _check_space(sweep, data_label, panel, drop_short)

    storage = located(storage_path or DEFAULT_STORAGE)
    named_by_user = name is not None
    if name is None:
        name = free_name(storage, f"{sweep.name}-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    elif SweepFolder(experiment_path(storage, name)).holds_sweep():
        raise PlanError(taken_message(storage, name, sweep.name))
    return SweepPlan(
        sweep=sweep,
        panel=panel,
        data_label=data_label,
        resources=resources,
        name=name,
        storage_path=storage,
        seed=seed,
        max_concurrent_trials=max_concurrent_trials,
        smoke_test=smoke_test,
        pinned=pins,
        max_failures=max_failures,
        trial_timeout_s=trial_timeout_s,
        mlflow_uri=mlflow_uri,
        named_by_user=named_by_user,
        levels=check_interval_levels(levels, sweep),
        untrained=untrained,
    )


def _with_data(
    sweep: Sweep, panel: Panel, *, own_data: bool, horizon: int | None, metric: str | None, split_after: str | None
) -> Sweep:
    """The sweep's cut and metric for this data: --horizon (else the sweep's, else a benchmark panel's official
    hold-out) or the dates; --metric (else the sweep's on its own data, else `default_metric`'s)."""
    metric = metric or (sweep.metric if own_data else default_metric(panel))
    if metric not in METRICS:
        raise PlanError(f"--metric {metric!r} is not one of {', '.join(METRICS)}")
    if horizon is None:
        horizon = sweep.horizon if own_data and sweep.horizon else panel.horizon
    if horizon is not None:
        if horizon < 1:
            raise PlanError(f"--horizon {horizon} must be at least 1 point")
        for option, value in (("--split-after", split_after), ("--test-after", sweep.test_after)):
            if value is not None:
                raise PlanError(
                    f"{option} {value} and a horizon of {horizon} points both cut the series: with a horizon, each "
                    "series' last points are its test window and the ones before them its validation part; give one"
                )
        return dataclasses.replace(sweep, horizon=horizon, metric=metric)
    if not panel.dated:
        raise PlanError(
            f"{panel.label} has a plain time index: give --horizon H (each series' last H points are its test "
            "window, the H before them its validation part)"
        )
    return dataclasses.replace(sweep, horizon=None, metric=metric)


def _validation_before_test(sweep: Sweep, panel: Panel, split_after: str | None) -> Sweep:
    """Dates: without --split-after, the validation part is as long as the test window (that of the longest series),
    just before it; and it must lie before the window."""
    if sweep.horizon or not sweep.test_after:
        return sweep
    try:
        cut = pd.Timestamp(sweep.test_after)
    except (TypeError, ValueError):
        return sweep  # not a date: the data's checks say so
    if split_after is None:
        longest = int(np.argmax(panel.lengths))
        series = panel.series(longest)
        seen, test = series[series.index <= cut], series[series.index > cut]
        if len(seen) and len(test):
            sweep = dataclasses.replace(sweep, split_after=str(seen.index[max(len(seen) - len(test) - 1, 0)].date()))
    if pd.Timestamp(sweep.split_after) >= cut:
        raise PlanError(
            f"--split-after {sweep.split_after} must come before --test-after {sweep.test_after}: the validation part "
            "lies between them"
        )
    return sweep


def _data_shape(sweep: Sweep, panel: Panel, parts: FitParts) -> DataShape:
    """What the space's relative values are resolved on: the horizon (without one, the validation part of the longest
    series), the season, and the shortest training part of the series the sweep can keep at all (`parts`: those that
    fill their validation and test windows)."""
    horizon = sweep.horizon or max(1, int(parts.val.lengths.max()))
    return DataShape(horizon=horizon, season=panel.season, shortest=int(parts.train.lengths.min()))


def _cut(sweep: Sweep) -> dict[str, Any]:
    """How fit_parts cuts every series for this sweep."""
    if sweep.horizon:
        return {"split_after": None, "val_size": sweep.horizon, "test_size": sweep.horizon}
    return {"split_after": sweep.split_after, "test_after": sweep.test_after}


def _check_data(sweep: Sweep, data_label: str, panel: Panel) -> FitParts:
    """The faults of the data whatever the configuration (a cut outside the series, a test window too short, zeros
    where the metric divides by them), said before the space's: checked with the least demanding forecaster, whose
    parts (of every series that fills its validation and test windows) it returns."""
    least = ForecasterConfig(shape="direct", input_chunk_length=1, output_chunk_length=1)  # 2 points a window
    try:
        with naming(data_label):
            return fit_parts(least, panel, **_cut(sweep), metric=sweep.metric, drop_short=len(panel) > 1)
    except SeriesError as error:
        raise PlanError(str(error)) from None


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
    try:
        checked = check_levels(levels)
    except ValueError as error:
        raise PlanError(f"--levels: {error}") from None
    if checked and not (sweep.horizon or sweep.test_after):
        raise PlanError(
            "--levels: the intervals are scored on a test window, and this sweep has none: give --test-after DATE "
            "(one series, or a dated panel) or --horizon H"
        )
    return checked


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


def _check_space(sweep: Sweep, data_label: str, panel: Panel, drop_short: bool) -> tuple[Panel, tuple[str, ...]]:
    """Every corner of the space must be a valid forecaster for this data, or the sweep does not start. With
    `drop_short`, the series too short for some corner are dropped, the same for every trial. Returns the panel and
    the series some corner forecasts without training on them."""
    try:
        check_structure(sweep.space)
        check_known_keys([key for key in sweep.space])
        missing = set(ForecasterConfig.field_names()) - {"n_epochs"} - set(sweep.space)
        if missing:
            raise PlanError(f"the space of {sweep.name!r} leaves {', '.join(sorted(missing))} undefined")
        corners = extremes(sweep.space)
    except (SpaceError, ConfigError) as error:
        raise PlanError(f"search space of {sweep.name!r}: {error}") from None
    dropped: set[str] = set()
    untrained: dict[str, None] = {}
    cut: set[tuple] = set()
    for corner in corners:
        try:
            config = ForecasterConfig.from_dict({**corner, "n_epochs": sweep.max_epochs})
            reads = tuple(getattr(config, field) for field in FIT_PARTS_FIELDS)
            if reads in cut:
                continue  # cut and checked alike already
            cut.add(reads)
            parts = fit_parts(config, panel, **_cut(sweep), metric=sweep.metric, drop_short=drop_short)
        except (ConfigError, SeriesError) as error:
            searched = {k: corner[k] for k in sweep.space if is_searched(sweep.space[k])}
            raise PlanError(
                f"the search space can produce a configuration that cannot train on {data_label}: {error}. "
                f"It arises at {searched}; narrow the space, or pin values with --set KEY=VALUE"
            ) from None
        dropped.update(parts.dropped)
        untrained.update(dict.fromkeys(parts.untrained))
    kept = tuple(series for series in untrained if series not in dropped)
    return (_without(panel, dropped) if dropped else panel), kept


def _without(panel: Panel, dropped: set[str]) -> Panel:
    """The panel without these series, their ids kept in `dropped` (after any dropped before)."""
    kept = panel.take(~np.isin(panel.ids, list(dropped)))
    return dataclasses.replace(kept, dropped=(*panel.dropped, *(str(i) for i in panel.ids if i in dropped)))


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
