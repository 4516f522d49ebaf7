"""Every option of a sweep, declared once: its flag, type, default, help, group, whether `--resume` may change it, and
where it goes (`DESTINATIONS`). From `SweepOptions`' fields come the command line (`build_parser`, `from_args`), what
sweeps.plan.sweep_plan.make_plan reads, the resume check (`changed_on_resume`, by the flag the user typed) and the
record stored with the plan (`to_record`, `from_record`). Adding an option is one field here plus its use; an option
that overrides a field of the registry entry (`sweep_field`) needs no use of its own.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from forecaster.cli import add_options, default_of, flag_of, levels_option, option, quantiles_option, read_options
from forecaster.metrics import METRICS

if TYPE_CHECKING:
    import pandas as pd
from sweeps.plan.registry import ANSWER_SCOPES
from sweeps.plan.schedulers import SCHEDULERS
from sweeps.plan.searches import SEARCHES
from sweeps.plan.space import Horizons, from_data, to_data
from sweeps.plan.storage import DEFAULT_STORAGE, located


class PlanError(ValueError):
    """The sweep cannot run as asked; the message says what to change."""


DESTINATIONS = {
    "sweep": "what the sweep tries and how it spends its budget",
    "data": "the data, how every series is cut and what ranks the trials",
    "resources": "the hardware of every trial",
    "answer": "how the answer is made and judged",
    "run": "where and how the sweep runs: the cluster, the storage, faults",
}
"""Where an option goes: the `goes` of every declaration."""

GROUPS = {
    "budget": "budget and search (defaults: the sweep's own)",
    "hardware": "hardware per trial (defaults: the sweep's own)",
    "faults": "faults",
    "cluster": "cluster and storage",
    "data": "data (default: the sweep's dataset)",
    "answer": "the answer (defaults: the sweep's own)",
}
"""The sections of `--help`, in order."""

DASHBOARD_PORT = 8265
"""Where a Ray of the sweep's own serves its dashboard, unless --dashboard-port says otherwise (Ray's own default)."""
SMOKE_TEST: dict[str, Any] = {
    "num_samples": 4,
    "max_epochs": 6,
    "scheduler_options": {"grace_period": 2, "reduction_factor": 2},
}
"""What --smoke-test sets, before the options given beside it."""


def key_values(pairs: Sequence[str] | None, flag: str, example: str) -> dict[str, Any]:
    """KEY=VALUE pairs of a repeatable option: numbers (and Python literals) become values, anything else stays
    text."""
    values: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise PlanError(f"{flag} {pair!r}: write KEY=VALUE, e.g. {example}")
        try:
            values[key.strip()] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            values[key.strip()] = text.strip()
    return values


def parse_pins(pairs: Sequence[str] | None) -> dict[str, Any]:
    """--set KEY=VALUE pairs: a length may be given in horizons (`--set input_chunk_length=3H`). The keys are checked by
    the plan, as for pins given from Python."""
    pins = key_values(pairs, "--set", "--set model=LSTM or --set lr=0.005")
    for key, value in pins.items():
        if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?H", value):
            pins[key] = Horizons(float(value[:-1]))
    return pins


def parse_scheduler_options(pairs: Sequence[str] | None) -> dict[str, Any]:
    return key_values(pairs, "--scheduler-option", "--scheduler-option grace_period=30")


def parse_duration(text: str | float) -> float:
    """Seconds of a duration: 90s, 10m, 2h, 1h30m, or a plain number of seconds."""
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        spoken = str(text).strip().lower()
        parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?", spoken)
        if not spoken or parts is None or not any(parts.groups()):
            raise PlanError(f"--time-limit {text!r}: give a duration such as 90s, 10m, 2h or 1h30m")
        hours, minutes, seconds = (float(part) if part else 0.0 for part in parts.groups())
        seconds += 60 * minutes + 3600 * hours
    if not seconds > 0:
        raise PlanError(f"--time-limit {text!r}: the limit must be longer than 0 s")
    return seconds


def shown_duration(seconds: float) -> str:
    """A duration as a command line takes it: 45s, 5m, 2m30s, 1h5m."""
    seconds = math.ceil(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return "".join(f"{value}{unit}" for value, unit in ((hours, "h"), (minutes, "m"), (seconds, "s")) if value) or "0s"


def _option(
    default: Any,
    help: str,
    *,
    group: str,
    goes: str,
    resumable: bool = False,
    sweep_field: bool = False,
    **settings: Any,
) -> Any:
    """A field of SweepOptions (forecaster.cli.option, with what a sweep keeps of each option): `goes`, where it goes
    (DESTINATIONS); `resumable`, whether --resume may change it; `sweep_field`, it replaces the registry entry's field
    of the same name when given."""
    assert group in GROUPS and goes in DESTINATIONS
    return option(
        default, help, group=group, more={"goes": goes, "resumable": resumable, "sweep_field": sweep_field}, **settings
    )


@dataclasses.dataclass(frozen=True)
class SweepOptions:
    """What a sweep was asked to do: the command line's options, or the same given from Python. None (or empty): the
    sweep's own value."""

    sweep: str | None = _option(
        None,
        "the sweep to run (--list shows them)",
        group="budget",
        goes="sweep",
        resumable=True,
        positional=True,
        nargs="?",
    )
    num_samples: int | None = _option(None, "how many trials", group="budget", goes="sweep", sweep_field=True, type=int)
    max_epochs: int | None = _option(
        None,
        "epochs per trial at most (the scheduler's max_t)",
        group="budget",
        goes="sweep",
        sweep_field=True,
        type=int,
    )
    scheduler: str | None = _option(
        None,
        "trial scheduler: asha stops weak trials early",
        group="budget",
        goes="sweep",
        sweep_field=True,
        choices=list(SCHEDULERS),
    )
    search: str | None = _option(
        None,
        "random search, or Optuna's TPE (pip install optuna)",
        group="budget",
        goes="sweep",
        sweep_field=True,
        choices=SEARCHES,
    )
    seed: int | None = _option(
        None, "seed of the search: the same seed samples the same trials", group="budget", goes="sweep", type=int
    )
    pins: Mapping[str, Any] = _option(
        None,
        "pin a hyperparameter instead of searching it (repeatable), e.g. --set model=GRU; a length in horizons: "
        "--set input_chunk_length=2H",
        group="budget",
        goes="sweep",
        flag="--set",
        parse=parse_pins,
        factory=dict,
        action="append",
        metavar="KEY=VALUE",
    )
    scheduler_options: Mapping[str, Any] = _option(
        None,
        "a setting of the scheduler (repeatable): grace_period (asha, hyperband, median), reduction_factor (asha, "
        "hyperband), perturbation_interval (pbt)",
        group="budget",
        goes="sweep",
        flag="--scheduler-option",
        parse=parse_scheduler_options,
        factory=dict,
        action="append",
        metavar="KEY=VALUE",
    )
    smoke_test: bool = _option(
        False,
        f"a tiny budget ({SMOKE_TEST['num_samples']} trials, {SMOKE_TEST['max_epochs']} epochs) to check a setup",
        group="budget",
        goes="sweep",
        action="store_true",
    )
    cpus_per_trial: float | None = _option(
        None, "CPUs per trial (torch threads)", group="hardware", goes="resources", sweep_field=True, type=float
    )
    gpus_per_trial: float | None = _option(
        None,
        "GPUs per trial: 0.25 packs four trials on a card; 2 or more trains data-parallel",
        group="hardware",
        goes="resources",
        sweep_field=True,
        type=float,
    )
    tpu_chips_per_trial: float | None = _option(
        None, "TPU chips per trial: 1, 2, 4 or 8", group="hardware", goes="resources", sweep_field=True, type=float
    )
    workers_per_trial: int = _option(
        0,
        "data-parallel workers (Ray Train, DDP); default: one per GPU when a trial has several",
        group="hardware",
        goes="resources",
        type=int,
    )
    max_concurrent_trials: int | None = _option(
        None, "run at most this many trials at once", group="hardware", goes="resources", type=int
    )
    train_on_cpu: bool = _option(
        False,
        "place each trial by its GPU or TPU request but train it on the CPU: for a local twin of a GPU or TPU cluster, "
        "whose accelerators are logical resources (cluster/local-gpu.yaml, cluster/local-tpu.yaml)",
        group="hardware",
        goes="resources",
        action="store_true",
    )
    time_limit: float | None = _option(
        None,
        "bound the whole command, search and answer, to this long: 90s, 10m, 2h; the search gets what the answer "
        "will not need, and what gives way when time runs short is in docs/sweeps.md (--resume counts the time "
        "spent before)",
        group="budget",
        goes="sweep",
        resumable=True,
        parse=lambda text: None if text is None else parse_duration(text),
        metavar="DURATION",
    )
    max_failures: int = _option(
        1,
        "retries of a failed trial, each from its latest checkpoint",
        group="faults",
        goes="run",
        type=int,
    )
    trial_timeout: float = _option(
        600.0,
        "kill and retry a trial that reports nothing for this long",
        group="faults",
        goes="run",
        type=float,
        metavar="SECONDS",
    )
    address: str | None = _option(
        None,
        "join a running Ray cluster ('auto': the one started here with `ray start`, or host:port); 'local': a new Ray "
        "of the sweep's own. Default: RAY_ADDRESS inside a Ray job, else a new Ray of the sweep's own",
        group="cluster",
        goes="run",
        resumable=True,
    )
    dashboard_host: str = _option(
        "127.0.0.1",
        "where a local Ray's dashboard listens: by default on this machine only",
        group="cluster",
        goes="run",
        resumable=True,
    )
    dashboard_port: int | None = _option(
        None,
        f"the dashboard's port on a Ray of the sweep's own (default {DASHBOARD_PORT}, or the next free one when taken)",
        group="cluster",
        goes="run",
        resumable=True,
        type=int,
    )
    storage_path: str | None = _option(
        None,
        f"where results go: a folder, s3://... or gs://... (default ./{DEFAULT_STORAGE})",
        group="cluster",
        goes="run",
        resumable=True,
    )
    mlflow_uri: str | None = _option(
        None,
        "also log every trial as an MLflow run there (e.g. http://mlflow:5000 or sqlite:///mlflow.db; pip install "
        "'.[mlflow]')",
        group="cluster",
        goes="run",
    )
    name: str | None = _option(
        None,
        "the sweep's folder name in the storage (default: SWEEP-date-time)",
        group="cluster",
        goes="run",
        resumable=True,
    )
    resume: bool = _option(
        False,
        "continue a stopped sweep (--name, default the latest of this sweep): finished trials are kept, unfinished "
        "ones continue from their checkpoints. It loads Ray Tune's own state (tuner.pkl, a pickle): resume only "
        "from storage you trust",
        group="cluster",
        goes="run",
        resumable=True,
        action="store_true",
    )
    data: str | pd.DataFrame | None = _option(
        None,
        "a CSV or Parquet file (one series, or a panel in long format: unique_id, ds, y), or a built-in dataset",
        group="data",
        goes="data",
    )
    id_column: str | None = _option(
        None, "a panel's series id column (found by itself when named unique_id)", group="data", goes="data"
    )
    date_column: str | None = _option(
        None, "the date (or time) column (found by itself when named ds, or with 2)", group="data", goes="data"
    )
    value_column: str | None = _option(
        None, "the value column (found by itself when named y, or with 2 columns)", group="data", goes="data"
    )
    freq: str | None = _option(None, "pandas frequency of the dates (default: inferred)", group="data", goes="data")
    season_length: int | None = _option(
        None,
        "points per season of a plain integer time index (12 for monthly data)",
        group="data",
        goes="data",
        type=int,
    )
    futr_exog: tuple[str, ...] = _option(
        (),
        "columns of --data known ahead, at every point and at the points forecast (a promotion, a holiday, a price "
        "set in advance), as neuralforecast's futr_exog_list; their values after each series' end come from "
        "--futr-data",
        group="data",
        goes="data",
        parse=lambda columns: () if columns is None else tuple(columns),
        nargs="+",
        metavar="COL",
    )
    hist_exog: tuple[str, ...] = _option(
        (),
        "columns of --data known only up to each point (a measured temperature, yesterday's traffic), as "
        "neuralforecast's hist_exog_list: the model reads their past, never their future",
        group="data",
        goes="data",
        parse=lambda columns: () if columns is None else tuple(columns),
        nargs="+",
        metavar="COL",
    )
    static_data: str | pd.DataFrame | None = _option(
        None,
        "a CSV or Parquet file of one row per series: its id, then facts that do not change over time (numbers, or "
        "categories such as the store type, one-hot encoded), as neuralforecast's stat_exog_list and static_df",
        group="data",
        goes="data",
        metavar="FILE",
    )
    futr_data: str | pd.DataFrame | None = _option(
        None,
        "a CSV or Parquet file of the --futr-exog columns at the points right after each series' end (id, date and "
        "those columns; at least the horizon forecast), as neuralforecast's futr_df",
        group="data",
        goes="data",
        metavar="FILE",
    )
    horizon: int | None = _option(
        None,
        "points per series: each series' last H are its test window (no trial sees them) and the H before them its "
        "validation part (default: the sweep's, or a benchmark panel's official hold-out; else give --split-after)",
        group="data",
        goes="data",
        type=int,
    )
    val_windows: int | None = _option(
        None,
        "backtest windows of a horizon each before the test window: the trials rank on the earlier ones, the "
        "ensemble of nets and baselines is weighed on the latest half (default: as many as the series hold, up to the "
        "number the sweep's rule gives for this many series)",
        group="data",
        goes="data",
        type=int,
        metavar="N",
    )
    split_after: str | None = _option(
        None,
        "without a horizon: the last date of every series' training part (default: the sweep's own on its own data)",
        group="data",
        goes="data",
    )
    test_after: str | None = _option(
        None,
        "without a horizon: hold out the points after this date: no trial sees them; the answer and the baselines are "
        "scored on them after the sweep (default: no test window)",
        group="data",
        goes="data",
    )
    metric: str | None = _option(
        None,
        "what ranks the trials and stops weak ones: mape, smape or mase (default: the sweep's; on other data, mape for "
        "one series and smape for a panel; mase where a value is below 0)",
        group="data",
        goes="data",
        choices=METRICS,
    )
    drop_short_series: bool = _option(
        False,
        "leave out the series too short for some configuration of the space, instead of refusing the panel",
        group="data",
        goes="data",
        action="store_true",
    )
    levels: tuple[float, ...] = levels_option(
        "prediction intervals at these levels (percent, e.g. 80 95) for the answer and every baseline, scored on the "
        "test window: coverage, width and MSIS",
        absent=(),
        group="answer",
        more={"goes": "answer", "resumable": False, "sweep_field": False},
    )
    quantiles: tuple[float, ...] = quantiles_option(
        "forecasts at these quantiles (e.g. 0.1 0.5 0.9) for the answer and every baseline, as neuralforecast names "
        "them (answer_ql0.1), on the test window and the future (WQL is scored at 0.1-0.9 without it)",
        absent=(),
        group="answer",
        more={"goes": "answer", "resumable": False, "sweep_field": False},
    )
    answer_top_k: int | None = _option(
        None,
        "the sweep's answer is the mean forecast of the best models of the top K trials",
        group="answer",
        goes="answer",
        sweep_field=True,
        type=int,
    )
    answer_scope: str | None = _option(
        None,
        "what ranks the trials for the answer, as Tune's scope: all (each trial's best validation score over its "
        "epochs) or last (its last epoch's)",
        group="answer",
        goes="answer",
        sweep_field=True,
        choices=ANSWER_SCOPES,
    )
    refit_answer: bool | None = _option(
        None,
        "continue the answer's nets through the validation part (a quarter of each trial's best epoch count) before "
        "they forecast the test window",
        group="answer",
        goes="answer",
        sweep_field=True,
        action=argparse.BooleanOptionalAction,
    )
    future: bool = _option(
        True,
        "continue the answer's nets on every point, the test window included, forecast the horizon after each "
        "series' end (future.parquet) and save the answer as one model (model/); --no-future skips it",
        group="answer",
        goes="answer",
        resumable=True,
        action=argparse.BooleanOptionalAction,
    )

    def storage(self) -> str:
        """Where the sweep's folder goes: --storage-path, else ./results, as Ray and pyarrow take it."""
        return located(self.storage_path or DEFAULT_STORAGE)

    def sweep_overrides(self) -> dict[str, Any]:
        """The given options that replace the registry entry's fields of the same name."""
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if field.metadata["sweep_field"] and getattr(self, field.name) is not None
        }


def declared() -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(SweepOptions)


def build_parser(**parser_options: Any) -> argparse.ArgumentParser:
    """The command line of `python -m sweeps.run`, one argument per declared option, in its group."""
    return add_options(argparse.ArgumentParser(**parser_options), SweepOptions, GROUPS)


def from_args(namespace: argparse.Namespace) -> SweepOptions:
    """The options of a parsed command line (PlanError for a malformed KEY=VALUE)."""
    options: SweepOptions = read_options(SweepOptions, namespace)
    return options


def typed_flag(field: dataclasses.Field[Any], arguments: Sequence[str]) -> str:
    """The flag of the option as the user typed it (--no-refit-answer, an abbreviation), else its own."""
    flag = flag_of(field) or field.name
    negated = field.metadata["argparse"].get("action") is argparse.BooleanOptionalAction
    spellings = [flag, "--no-" + flag[2:]] if negated else [flag]
    for argument in arguments:
        typed = argument.split("=", 1)[0]
        if typed.startswith("--") and any(spelling.startswith(typed) for spelling in spellings):
            return next(spelling for spelling in spellings if spelling.startswith(typed))
    return flag


def changed_on_resume(stored: SweepOptions, asked: SweepOptions, arguments: Sequence[str]) -> list[str]:
    """The flags of the options a resumed sweep was given with another value than it was planned with (an option left
    at its default keeps the stored value); only the options marked `resumable` may change."""
    return [
        typed_flag(field, arguments)
        for field in declared()
        if not field.metadata["resumable"]
        and getattr(asked, field.name) != default_of(field)
        and getattr(asked, field.name) != getattr(stored, field.name)
    ]


def resumed(stored: SweepOptions, asked: SweepOptions) -> SweepOptions:
    """The stored options with the resumable ones as asked now: where the sweep is stored and where it runs."""
    return dataclasses.replace(
        stored, **{field.name: getattr(asked, field.name) for field in declared() if field.metadata["resumable"]}
    )


def to_record(options: SweepOptions) -> dict[str, dict[str, Any]]:
    """JSON-ready: every option by its field name, under where it goes (DESTINATIONS); pins as space values
    (sweeps.plan.space.to_data)."""
    record: dict[str, dict[str, Any]] = {goes: {} for goes in DESTINATIONS}
    for field in declared():
        value = getattr(options, field.name)
        if field.name == "pins":
            value = {key: to_data(pin) for key, pin in value.items()}
        elif isinstance(value, tuple):
            value = list(value)
        record[field.metadata["goes"]][field.name] = value
    return record


def from_record(record: Mapping[str, Mapping[str, Any]]) -> SweepOptions:
    """The options of `to_record`'s record; an option this version does not know is refused, one it lacks takes its
    default."""
    known = {field.name: field for field in declared()}
    given = {name: value for options in record.values() for name, value in options.items()}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise PlanError(f"the stored plan has options this version does not know: {', '.join(unknown)}")
    values = {}
    for name, value in given.items():
        if name == "pins":
            value = {key: from_data(pin) for key, pin in value.items()}
        elif isinstance(default_of(known[name]), tuple):
            value = tuple(value)
        values[name] = value
    return SweepOptions(**values)
