"""What a forecaster would use instead of a neural net: the yardsticks a sweep's answer is judged against, and which
its ensemble may weigh, for every series of a panel at once. Each is one class (forecaster/baselines/base.py says what
a baseline is) in its own module: seasonal naive (naive.py) and statsforecast's models (statistical.py). This registry
is the one place that lists them: `panel_baselines` asks each which data it runs on.

- Every panel: seasonal naive, AutoETS, Theta and AutoCES.
- Data with more than one season (a day and a week of hourly data): seasonal naive at the longest season every series
  holds a cycle of ("seasonal naive (168)"), and MSTL where every series holds two cycles of at least two seasons.
- Data with known-ahead covariates: AutoARIMA given them as regressors.

A new baseline is a subclass of Baseline and a line in BUILT_IN, or, from code of your own, `register(MyBaseline())`
before the sweep plans its baselines (docs/contributing.md, "Add a baseline").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from forecaster.baselines.base import (
    FIT_POINTS,
    Baseline,
    BaselineForecast,
    BaselineUnavailable,
    Bounds,
    FittedBaseline,
)
from forecaster.baselines.naive import SEASONAL_NAIVE, SeasonalNaive, naive_season, seasonal_naive
from forecaster.baselines.statistical import MSTL, AutoARIMAWithCovariates, AutoCES, AutoETS, Theta
from forecaster.data.panel import Panel

__all__ = [
    "BUILT_IN",
    "FIT_POINTS",
    "REFERENCE",
    "SEASONAL_NAIVE",
    "Baseline",
    "BaselineForecast",
    "BaselineUnavailable",
    "Bounds",
    "FittedBaseline",
    "PanelBaselines",
    "baseline_names",
    "baseline_of",
    "combined_names",
    "fit_baseline",
    "forecast",
    "panel_baselines",
    "register",
    "seasonal_naive",
    "unregister",
]

BUILT_IN: tuple[Baseline, ...] = (SeasonalNaive(), AutoETS(), Theta(), AutoCES(), AutoARIMAWithCovariates(), MSTL())
"""The built-in baselines, in the order a sweep lists them."""
REFERENCE = AutoETS().name
"""The baseline a sweep's summary shows beside the answer's forecast of the future."""
_REGISTERED: dict[str, Baseline] = {}


def register(baseline: Baseline) -> Baseline:
    """Make a baseline known by its name in this process: a sweep planned after this runs it beside the built-in ones
    (its Ray tasks get the object itself), and a saved answer that weighs it forecasts with it once it is registered
    again.

    Args:
        baseline: An instance of a subclass of Baseline (forecaster/baselines/base.py), with a name of its own.

    Returns:
        `baseline`.

    Raises:
        ValueError: It has no name, or a built-in baseline's."""
    if not baseline.name or baseline.name in {known.name for known in BUILT_IN} or naive_season(baseline.name):
        raise ValueError(f"a baseline needs a name of its own, not {baseline.name!r}")
    _REGISTERED[baseline.name] = baseline
    return baseline


def unregister(name: str) -> None:
    """Forget a baseline `register` made known (a test's toy, a notebook's experiment)."""
    _REGISTERED.pop(name, None)


def _every() -> tuple[Baseline, ...]:
    return (*BUILT_IN, *_REGISTERED.values())


def baseline_names() -> tuple[str, ...]:
    """The baselines' names: the built-in ones in the order a sweep lists them, then those registered."""
    return tuple(baseline.name for baseline in _every())


def combined_names() -> tuple[str, ...]:
    """The statistical combination's members (`Baseline.combined`), in order."""
    return tuple(baseline.name for baseline in _every() if baseline.combined)


def baseline_of(name: str, seasons: Sequence[int] = ()) -> Baseline:
    """The baseline of that name, made for `seasons` where it takes seasons of its own (MSTL's).

    Args:
        name: A name of `baseline_names`, or seasonal naive at another season ("seasonal naive (168)").
        seasons: The seasons it was made for on the data (PanelBaselines); (): decided on the data it is given.

    Returns:
        The baseline.

    Raises:
        ValueError: No baseline of that name; the message names those there are."""
    season = naive_season(name)
    if season is not None:
        return SeasonalNaive.at(season)
    for baseline in _every():
        if baseline.name == name:
            return dataclasses.replace(baseline, seasons=tuple(int(s) for s in seasons)) if seasons else baseline
    raise ValueError(
        f"unknown baseline {name!r}; the baselines are: {', '.join(baseline_names())}; of data with several seasons "
        f"also {SeasonalNaive.at(168).name} (its season). A baseline of your own: forecaster.baselines.register(it) "
        "in this process first"
    )


@dataclasses.dataclass(frozen=True)
class PanelBaselines:
    """The baselines that fit a panel's seasons, lengths and covariates."""

    baselines: tuple[Baseline, ...]
    not_run: dict[str, str] = dataclasses.field(default_factory=dict)
    """Baselines of the data's seasons that its series are too short for, and why."""
    fit_points: dict[str, int] = dataclasses.field(default_factory=dict)
    """Per baseline that fits: how many of each series' last points it fits on (Baseline.fit_points)."""
    notes: dict[str, str] = dataclasses.field(default_factory=dict)
    """Per baseline fit otherwise than on its series as they are: how, for the summary."""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(baseline.name for baseline in self.baselines)

    def of(self, name: str) -> Baseline:
        """The baseline of that name, as made for the panel (MSTL at its seasons)."""
        return next(baseline for baseline in self.baselines if baseline.name == name)

    def without(self, names: Sequence[str]) -> PanelBaselines:
        """These baselines, less `names` (and their fit points and notes)."""
        return dataclasses.replace(
            self,
            baselines=tuple(baseline for baseline in self.baselines if baseline.name not in names),
            fit_points={name: points for name, points in self.fit_points.items() if name not in names},
            notes={name: note for name, note in self.notes.items() if name not in names},
        )


def panel_baselines(history: Panel, shortest_length: int | None = None) -> PanelBaselines:
    """The baselines that run on `history` (each baseline's `runs_on`), in the registry's order. `shortest_length`:
    the shortest history the baselines will be fit on (default: `history`'s), so that every chunk and part of a
    sweep gets the same ones."""
    shortest = int(history.lengths.min()) if shortest_length is None else shortest_length
    baselines: list[Baseline] = []
    not_run: dict[str, str] = {}
    for baseline in _every():
        found = baseline.runs_on(history, shortest)
        if isinstance(found, str):
            not_run[baseline.name] = found
        else:
            baselines += found
    points = {baseline.name: baseline.fit_points(history.season) for baseline in baselines if baseline.fits}
    longest = int(history.lengths.max()) if len(history) else 0
    notes = {}
    for baseline in baselines:
        how = [baseline.how_fit(history)]
        count = points.get(baseline.name, longest)
        if count < longest:
            how.append(f"fit on each series' last {count:,} points (of up to {longest:,})")
        if any(how):
            notes[baseline.name] = "; ".join(part for part in how if part)
    return PanelBaselines(tuple(baselines), not_run, points, notes)


def forecast(
    name: str,
    history: Panel,
    steps: int,
    n_jobs: int = -1,
    levels: Sequence[float] = (),
    seasons: Sequence[int] = (),
) -> BaselineForecast:
    """A baseline's forecast after every series of `history`.

    Args:
        name: One of `baseline_names` or of `panel_baselines` (seasonal naive at another season, "seasonal naive
            (168)").
        history: The series the baseline fits.
        steps: Points to forecast after each series' end.
        n_jobs: Processes statsforecast fits the series in (-1: every CPU).
        levels: Prediction intervals at these levels, in percent.
        seasons: MSTL's seasons (default: those of `panel_baselines`).

    Returns:
        The forecast, (steps, S), the series it could not fit (seasonal naive's forecast stands in) and its bounds.

    Raises:
        BaselineUnavailable: statsforecast is not installed, a single series it cannot fit, or MSTL on data that do
            not hold two cycles of two seasons.
        ValueError: An unknown baseline."""
    return baseline_of(name, seasons).forecast(history, steps, n_jobs, levels)


def fit_baseline(
    name: str,
    history: Panel,
    steps: int,
    levels: Sequence[float] = (),
    seasons: Sequence[int] = (),
    points: int | None = None,
) -> tuple[BaselineForecast, FittedBaseline | None]:
    """Baseline `name` fit on each series of `history` (Baseline.fit), with the fitted models for Baseline.forward."""
    return baseline_of(name, seasons).fit(history, steps, levels, points)
