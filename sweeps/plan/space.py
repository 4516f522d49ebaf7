"""Search spaces as data: what a sweep may try, in a form that random search, Optuna and the checks share.

A space maps each hyperparameter to a constant or to one of the distributions below. Three of them depend
on another hyperparameter, which is how the constraints of an RNN sweep are written down: dropout only
where there are several layers (`OnlyWhen`), training_length always above input_chunk_length (`Offset`),
the window normalisation that goes with each target transform (`ByValue`).
From one space come Ray Tune's search domains (random search), an Optuna define-by-run function (TPE),
a description for the resolved sweep file, and the extreme configurations the driver checks before
any trial is scheduled.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import CategoricalChoiceType
    from ray.tune.search.sample import Domain


@dataclasses.dataclass(frozen=True)
class Choice:
    values: tuple[Any, ...]

    def __init__(self, *values: Any):
        object.__setattr__(self, "values", tuple(values))

    def describe(self) -> str:
        return f"one of {list(self.values)}"


class InTurn(Choice):
    """A choice that random search takes in turn (the first trial the first value, the next the second...), so
    that each value gets an equal share of the trials, within one: a random draw of 10 trials can leave a value
    2. Optuna's TPE takes it as a plain choice, to learn from."""

    def describe(self) -> str:
        return f"each of {list(self.values)} in turn"


@dataclasses.dataclass(frozen=True)
class Uniform:
    low: float
    high: float

    def describe(self) -> str:
        return f"uniform in [{self.low}, {self.high}]"


@dataclasses.dataclass(frozen=True)
class LogUniform:
    low: float
    high: float

    def describe(self) -> str:
        return f"log-uniform in [{self.low}, {self.high}]"


@dataclasses.dataclass(frozen=True)
class IntRange:
    """A whole number in [low, high], both included."""

    low: int
    high: int

    def describe(self) -> str:
        return f"integer in [{self.low}, {self.high}]"


Independent = Choice | Uniform | LogUniform | IntRange


@dataclasses.dataclass(frozen=True)
class OnlyWhen:
    """Sampled from `then` when `key` is above `above`; `otherwise` (a constant) when it is not."""

    key: str
    above: float
    then: Independent
    otherwise: Any

    def describe(self) -> str:
        return f"{self.then.describe()} where {self.key} > {self.above}, else {self.otherwise}"


@dataclasses.dataclass(frozen=True)
class Offset:
    """`key`'s value plus a whole number from `extra`: keeps this hyperparameter above another."""

    key: str
    extra: IntRange

    def describe(self) -> str:
        return f"{self.key} + {self.extra.describe()}"


@dataclasses.dataclass(frozen=True)
class ByValue:
    """Takes, for each value of the choice `key`, its own constant or distribution from `values`."""

    key: str
    values: Mapping[Any, Any]

    def describe(self) -> str:
        return "; ".join(
            f"{v.describe() if is_searched(v) else repr(v)} where {self.key} = {k!r}" for k, v in self.values.items()
        )

    def pick(self, chosen: Any) -> Any:
        return self.values[chosen]


Space = Mapping[str, Any]
_DEPENDENT = (OnlyWhen, Offset, ByValue)
_DISTRIBUTIONS = (Choice, Uniform, LogUniform, IntRange, OnlyWhen, Offset, ByValue)


@dataclasses.dataclass(frozen=True)
class DataShape:
    """What a space stated relative to the data needs to know of it."""

    horizon: int
    """Points forecast: the validation and test windows of every series."""
    season: int
    """Points per season (1: none)."""
    shortest: int
    """The fewest points a series has to train on (its training part, before its validation and test windows)."""
    known_ahead: bool = False
    """The data has known-ahead covariates (--futr-exog)."""
    numeric_covariates: bool = False
    """A known-ahead or historic covariate holds values other than 0 and 1 (a price, a temperature): one whose
    scaling is a choice."""
    seasons: tuple[int, ...] = ()
    """Every season of the data's frequency (forecaster.data.seasons.usable_seasons) of which the shortest training part
    holds two cycles: 24 and 168 for a few weeks of hourly data."""


@dataclasses.dataclass(frozen=True)
class Horizons:
    """A length given in horizons: `multiple` times the sweep's horizon, rounded (at least 1 point), so that a
    lookback or a window source means the same on any panel. A sweep's plan resolves it once the data is known."""

    multiple: float

    def __repr__(self) -> str:
        return f"{self.multiple:g}H"

    def resolve(self, data: DataShape) -> int:
        return max(1, round(self.multiple * data.horizon))


@dataclasses.dataclass(frozen=True)
class IfSeasonal:
    """`then` where the data has a season (more than one point per season), else `otherwise`: inputs and
    transforms that only mean something with a season (the calendar, seasonal indices)."""

    then: Any
    otherwise: Any

    def __repr__(self) -> str:
        return f"{self.then!r} if the data has a season, else {self.otherwise!r}"

    def resolve(self, data: DataShape) -> Any:
        return self.then if data.season > 1 else self.otherwise


@dataclasses.dataclass(frozen=True)
class IfKnownAhead:
    """`then` where the data has known-ahead covariates, else `otherwise`: what a net needs to learn their effect
    (every window where they occur, not only the recent ones)."""

    then: Any
    otherwise: Any

    def __repr__(self) -> str:
        return f"{self.then!r} if the data has known-ahead covariates, else {self.otherwise!r}"

    def resolve(self, data: DataShape) -> Any:
        return self.then if data.known_ahead else self.otherwise


@dataclasses.dataclass(frozen=True)
class IfNumericCovariates:
    """`then` where a known-ahead or historic covariate holds values other than 0 and 1, else `otherwise`: how such
    a column is scaled (per series or shared) is the data's to choose, on validation."""

    then: Any
    otherwise: Any

    def __repr__(self) -> str:
        return f"{self.then!r} if the data has numeric covariates, else {self.otherwise!r}"

    def resolve(self, data: DataShape) -> Any:
        return self.then if data.numeric_covariates else self.otherwise


@dataclasses.dataclass(frozen=True)
class LongestSeason:
    """The data's longest season beyond its first (DataShape.seasons) of at most `most` points, where it is longer
    than `otherwise` (both lengths, possibly in horizons), else `otherwise`: a lookback that sees the week of hourly
    data, which a horizon of a day or two does not. Monthly and quarterly panels (one season, which the calendar and
    the seasonal indices carry) get `otherwise`; so does a year of daily data longer than `most`, whose place the
    calendar's day of the year tells."""

    otherwise: Any
    most: Any

    def __repr__(self) -> str:
        return f"the longest season up to {self.most!r} if longer than {self.otherwise!r}, else {self.otherwise!r}"

    def resolve(self, data: DataShape) -> int:
        length, most = (
            value.resolve(data) if isinstance(value, RELATIVE) else value for value in (self.otherwise, self.most)
        )
        return max([length, *(season for season in data.seasons[1:] if season <= most)])


ROOM_AFTER_THE_LAG = 4
"""Horizons a series' training part holds after its first season for SeasonBack: the panel sweep's recurrent
windows (a training length of 1.6 horizons, a lookback below it) fit there, so no series is left without one."""


@dataclasses.dataclass(frozen=True)
class SeasonBack:
    """The data's longest season that is a whole number of its first (DataShape.seasons: the week of hourly data) and
    at least the horizon, else 0: a recurrent net's seasonal_lag, the value a season before each point it predicts,
    which its lookback of about a horizon never shows. Monthly and quarterly panels (one season) and daily data (a
    year is not a whole number of weeks) get 0, and so does a shortest training part without room for a recurrent
    window (lookback and training length, under ROOM_AFTER_THE_LAG horizons) after a season's first point."""

    def __repr__(self) -> str:
        return "the longest season nesting the first and at least the horizon, else 0"

    def resolve(self, data: DataShape) -> int:
        longer = [s for s in data.seasons if s > data.season and s % data.season == 0 and s >= data.horizon]
        return max((s for s in longer if s + ROOM_AFTER_THE_LAG * data.horizon <= data.shortest), default=0)


@dataclasses.dataclass(frozen=True)
class Fitting:
    """A length (possibly in horizons) cut down to what every series allows: at most `share` of the shortest
    training part, less `less` points, and never below `least` (the least a configuration takes). A window every
    series must hold (the recurrent shape's) then drops none but a series shorter than that least window."""

    length: Any
    share: float = 1.0
    less: int = 0
    least: int = 1

    def __repr__(self) -> str:
        share = "" if self.share == 1 else f"{self.share:g} of "
        less = f" less {self.less}" if self.less else ""
        least = f", at least {self.least}" if self.least > 1 else ""
        return f"{self.length!r}, at most {share}the shortest training part{less}{least}"

    def resolve(self, data: DataShape) -> int:
        length = self.length.resolve(data) if isinstance(self.length, RELATIVE) else self.length
        return max(self.least, min(length, math.floor(self.share * data.shortest) - self.less))


RELATIVE = (Horizons, IfSeasonal, IfKnownAhead, IfNumericCovariates, LongestSeason, SeasonBack, Fitting)
"""Values stated relative to the data, which `resolve` turns into the values for one panel."""


def is_relative(value: Any) -> bool:
    """Whether a value of a space (a constant, or inside a distribution) is stated relative to the data."""
    if isinstance(value, RELATIVE):
        return True
    if isinstance(value, Choice):
        return any(map(is_relative, value.values))
    if isinstance(value, ByValue):
        return any(map(is_relative, value.values.values()))
    if isinstance(value, OnlyWhen):
        return is_relative(value.then) or is_relative(value.otherwise)
    return False


def resolve(space: Space, data: DataShape) -> dict[str, Any]:
    """The space for this data: every relative value (in a constant, a choice, a dependent distribution) turned
    into its value; a choice whose values meet (2H and 3H of a horizon of 1) keeps each once; a ByValue keeps the
    values its key takes (one constant where they all give the same)."""

    def value(v: Any) -> Any:
        if isinstance(v, RELATIVE):
            return value(v.resolve(data))
        if isinstance(v, Choice):
            values = []
            for resolved in map(value, v.values):
                if resolved not in values:
                    values.append(resolved)
            return type(v)(*values)
        if isinstance(v, ByValue):
            taken = _taken(space.get(v.key))
            kept = {key: value(inner) for key, inner in v.values.items() if taken is None or key in taken}
            alike = list(dict.fromkeys(repr(inner) for inner in kept.values()))
            if len(alike) == 1 and not is_searched(next(iter(kept.values()))):  # one constant whatever the key
                return next(iter(kept.values()))
            return ByValue(v.key, kept)
        if isinstance(v, OnlyWhen):
            return OnlyWhen(v.key, v.above, value(v.then), value(v.otherwise))
        return v

    return {name: value(v) for name, v in space.items()}


def _taken(value: Any) -> tuple[Any, ...] | None:
    """The values a choice or a constant gives (what a ByValue on it can be asked for), None for anything else: a
    ByValue keeps only those, so that a sweep that never draws a shape does not show its settings."""
    if isinstance(value, Choice):
        return value.values
    return None if is_searched(value) else (value,)


class SpaceError(ValueError):
    """The search space is malformed; the message names the hyperparameter."""


def is_searched(value: Any) -> bool:
    return isinstance(value, _DISTRIBUTIONS)


def check_structure(space: Space) -> None:
    """Ranges the right way round, dependencies on hyperparameters that exist and are sampled first."""
    for name, value in space.items():
        inner = value.then if isinstance(value, OnlyWhen) else value.extra if isinstance(value, Offset) else value
        if isinstance(inner, (Uniform, LogUniform, IntRange)) and not inner.low <= inner.high:
            raise SpaceError(f"{name}: the range [{inner.low}, {inner.high}] is empty; give low <= high")
        if isinstance(inner, LogUniform) and inner.low <= 0:
            raise SpaceError(f"{name}: a log-uniform range must be positive, got low={inner.low}")
        if isinstance(inner, Choice) and not inner.values:
            raise SpaceError(f"{name}: a choice needs at least one value")
        if isinstance(value, OnlyWhen) and isinstance(value.then, InTurn):
            raise SpaceError(f"{name}: InTurn takes turns over the whole sweep; give a Choice inside OnlyWhen")
        if isinstance(value, Offset) and not isinstance(value.extra, IntRange):
            raise SpaceError(f"{name}: an offset is a whole number, give its extra as IntRange(low, high)")
        if isinstance(value, _DEPENDENT):
            if value.key not in space:
                raise SpaceError(f"{name} depends on {value.key!r}, which the space does not define")
            if isinstance(space[value.key], _DEPENDENT):
                raise SpaceError(f"{name} depends on {value.key!r}, which itself depends on another value")
        if isinstance(value, ByValue):
            possible = space[value.key].values if isinstance(space[value.key], Choice) else (space[value.key],)
            missing = [v for v in possible if v not in value.values]
            if missing:
                raise SpaceError(f"{name} gives nothing for {value.key} = {', '.join(map(repr, missing))}")
            for inner_value in value.values.values():
                if isinstance(inner_value, InTurn):
                    raise SpaceError(f"{name}: InTurn takes turns over the whole sweep; give a Choice inside ByValue")
                if isinstance(inner_value, _DEPENDENT):
                    raise SpaceError(f"{name}: a value of ByValue must be a constant or an independent distribution")


def describe(space: Space) -> dict[str, Any]:
    """JSON-ready: constants as they are, distributions and values relative to the data in words."""
    return {
        name: value.describe() if is_searched(value) else repr(value) if isinstance(value, RELATIVE) else value
        for name, value in space.items()
    }


def to_tune(space: Space, seed: int | None = None) -> dict[str, Any]:
    """Ray Tune's param_space for its random search (BasicVariantGenerator, seeded with the same seed).

    Tune hands no random generator to `sample_from` functions, so the dependent draws use their own,
    seeded here: with a seed, the whole space samples the same trials every time.
    """
    import numpy as np
    from ray import tune

    rng = np.random.default_rng(seed)

    def domain(dist: Independent) -> Domain:
        if isinstance(dist, InTurn):
            return cast("Domain", tune.sample_from(_in_turn(dist.values)))
        if isinstance(dist, Choice):
            return cast("Domain", tune.choice(list(dist.values)))
        if isinstance(dist, Uniform):
            return cast("Domain", tune.uniform(dist.low, dist.high))
        if isinstance(dist, LogUniform):
            return cast("Domain", tune.loguniform(dist.low, dist.high))
        return cast("Domain", tune.randint(dist.low, dist.high + 1))  # tune.randint excludes its upper bound

    param_space: dict[str, Any] = {}
    for name, value in space.items():
        if isinstance(value, OnlyWhen):
            inner = domain(value.then)
            param_space[name] = tune.sample_from(
                lambda config, v=value, d=inner: d.sample(random_state=rng) if config[v.key] > v.above else v.otherwise  # type: ignore[misc]
            )
        elif isinstance(value, Offset):
            inner = domain(value.extra)
            param_space[name] = tune.sample_from(
                lambda config, v=value, d=inner: config[v.key] + d.sample(random_state=rng)  # type: ignore[misc]
            )
        elif isinstance(value, ByValue):
            domains = {k: domain(v) if is_searched(v) else v for k, v in value.values.items()}
            param_space[name] = tune.sample_from(
                lambda config, v=value, d=domains: (  # type: ignore[misc]
                    d[config[v.key]].sample(random_state=rng)
                    if is_searched(v.values[config[v.key]])
                    else d[config[v.key]]
                )
            )
        elif is_searched(value):
            param_space[name] = domain(value)
        else:
            param_space[name] = value
    return param_space


def _in_turn(values: tuple[Any, ...]) -> Callable[[dict[str, Any]], Any]:
    """The values one after another, for Tune's sample_from: Tune calls it once per trial, in the order it creates
    the trials, and copies a function by reference, so the count is the sweep's (a resumed sweep counts again)."""
    taken = [0]

    def next_value(config: dict[str, Any]) -> Any:
        value = values[taken[0] % len(values)]
        taken[0] += 1
        return value

    return next_value


def to_optuna(space: Space) -> OptunaDefineByRun:
    """An Optuna define-by-run function for Ray's OptunaSearch: it suggests, and returns the constants."""
    return OptunaDefineByRun(dict(space))


@dataclasses.dataclass(frozen=True)
class OptunaDefineByRun:
    """A class rather than a closure: OptunaSearch saves its state with plain pickle."""

    space: dict[str, Any]

    def __call__(self, trial: optuna.Trial) -> dict[str, Any]:
        chosen: dict[str, Any] = {}
        constants: dict[str, Any] = {}
        for name, value in _independent_first(self.space):
            if isinstance(value, OnlyWhen):
                if chosen[value.key] > value.above:
                    chosen[name] = _suggest(trial, name, value.then)
                else:
                    chosen[name] = constants[name] = value.otherwise
            elif isinstance(value, ByValue):
                picked = value.pick(chosen[value.key])
                if is_searched(picked):  # a range that changes with the other value, as with Offset
                    chosen[name] = _suggest(trial, name, picked)
                else:
                    chosen[name] = constants[name] = picked
            elif isinstance(value, Offset):
                # A range that moves with the other value: Optuna takes it, and the config keeps its own names.
                base = chosen[value.key]
                chosen[name] = trial.suggest_int(name, base + value.extra.low, base + value.extra.high)
            elif is_searched(value):
                chosen[name] = _suggest(trial, name, value)
            else:
                chosen[name] = constants[name] = value
        return constants


def _suggest(trial: optuna.Trial, name: str, dist: Independent) -> CategoricalChoiceType:
    if isinstance(dist, Choice):
        return cast("CategoricalChoiceType", trial.suggest_categorical(name, list(dist.values)))
    if isinstance(dist, Uniform):
        return trial.suggest_float(name, dist.low, dist.high)
    if isinstance(dist, LogUniform):
        return trial.suggest_float(name, dist.low, dist.high, log=True)
    return trial.suggest_int(name, dist.low, dist.high)


def extremes(space: Space, limit: int = 50_000) -> list[dict[str, Any]]:
    """Every combination of each hyperparameter's extreme values (a choice's every value).

    The forecaster's constraints are bounds and one ordering (training_length > input_chunk_length),
    each monotone in its hyperparameters, so a space that passes them at its corners passes everywhere.
    """

    def corners(dist: Independent) -> tuple[Any, ...]:
        if isinstance(dist, Choice):
            return dist.values
        return (dist.low, dist.high) if dist.low != dist.high else (dist.low,)

    names = [name for name, _ in _independent_first(space)]
    independent = {
        name: corners(v) if is_searched(v) else (v,) for name, v in space.items() if not isinstance(v, _DEPENDENT)
    }
    count = math.prod(len(values) for values in independent.values())
    if count > limit:
        raise SpaceError(f"the space has {count} corner combinations, more than the {limit} checked; use fewer choices")
    configs: list[dict[str, Any]] = []
    for combination in itertools.product(*independent.values()):
        partial = [dict(zip(independent, combination))]
        for name, value in space.items():
            if isinstance(value, OnlyWhen):
                partial = [
                    c | {name: v}
                    for c in partial
                    for v in (corners(value.then) if c[value.key] > value.above else (value.otherwise,))
                ]
            elif isinstance(value, Offset):
                partial = [c | {name: c[value.key] + extra} for c in partial for extra in corners(value.extra)]
            elif isinstance(value, ByValue):
                partial = [
                    c | {name: v}
                    for c in partial
                    for picked in [value.pick(c[value.key])]
                    for v in (corners(picked) if is_searched(picked) else (picked,))
                ]
        configs.extend({name: config[name] for name in names} for config in partial)
    return configs


def values_taken(space: Space, name: str) -> list[Any]:
    """The values `name` takes at the corners of `space` (every value of a choice; every value a ByValue gives for
    the values its key takes), in order of first appearance."""
    return list(dict.fromkeys(config[name] for config in extremes(space)))


def _independent_first(space: Space) -> list[tuple[str, Any]]:
    items = list(space.items())
    return [item for item in items if not isinstance(item[1], _DEPENDENT)] + [
        item for item in items if isinstance(item[1], _DEPENDENT)
    ]


SPACE_TYPES = {kind.__name__: kind for kind in (*_DISTRIBUTIONS, InTurn, *RELATIVE)}
"""Every type a space holds besides constants, by name: what `to_data` writes and `from_data` reads back."""


def to_data(value: Any) -> Any:
    """A value of a space as JSON-ready data, nothing in it that runs code when read: a constant as it is (a tuple as
    {"tuple": [...]}), a distribution or a relative value as {"kind": its type's name, its fields...}."""
    if isinstance(value, tuple):
        return {"tuple": [to_data(item) for item in value]}
    if type(value).__name__ in SPACE_TYPES and dataclasses.is_dataclass(value):
        if isinstance(value, Choice):
            return {"kind": type(value).__name__, "values": [to_data(item) for item in value.values]}
        data: dict[str, Any] = {"kind": type(value).__name__}
        for field in dataclasses.fields(value):
            inner = getattr(value, field.name)
            if isinstance(value, ByValue) and field.name == "values":  # keys of any type: pairs, not an object
                data["values"] = [[to_data(key), to_data(item)] for key, item in inner.items()]
            else:
                data[field.name] = to_data(inner)
        return data
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise SpaceError(f"{value!r} ({type(value).__name__}) cannot be stored as a value of a search space")


def from_data(data: Any) -> Any:
    """The value `to_data` wrote."""
    if isinstance(data, list):
        return [from_data(item) for item in data]
    if not isinstance(data, dict):
        return data
    if set(data) == {"tuple"}:
        return tuple(from_data(item) for item in data["tuple"])
    kind = SPACE_TYPES.get(str(data.get("kind")))
    if kind is None:
        raise SpaceError(f"not a value of a search space: {data!r}")
    fields = {name: value for name, value in data.items() if name != "kind"}
    if issubclass(kind, Choice):
        return kind(*(from_data(item) for item in fields["values"]))
    if kind is ByValue:
        return ByValue(fields["key"], {from_data(key): from_data(item) for key, item in fields["values"]})
    return kind(**{name: from_data(value) for name, value in fields.items()})


def space_to_data(space: Space) -> dict[str, Any]:
    return {name: to_data(value) for name, value in space.items()}


def space_from_data(data: Mapping[str, Any]) -> dict[str, Any]:
    return {name: from_data(value) for name, value in data.items()}
