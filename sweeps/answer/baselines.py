"""The statistical baselines beside the answer, on the same points (forecaster.baselines: seasonal naive, AutoETS,
Theta, AutoCES), each series in parallel: fit on everything seen for the test windows, with their own intervals at the
plan's levels; on the training parts for the validation parts too where that is cheap (one series, or no test window:
a panel's statistical fits cost minutes, and only the test windows judge).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sweeps.plan import SweepPlan


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


def baseline_forecasts(plan: SweepPlan) -> BaselineForecasts:
    from forecaster.baselines import BASELINES, BaselineUnavailable, forecast

    parts = plan.parts
    jobs = [("test", parts.seen, parts.test)] if parts.test is not None else []
    if parts.test is None or len(parts.val) == 1:
        jobs.insert(0, ("validation", parts.train, parts.val))
    forecasts: dict[str, dict[str, np.ndarray]] = {part_name: {} for part_name, _, _ in jobs}
    bounds: dict[str, dict[float, tuple[np.ndarray, np.ndarray]]] = {}
    unavailable: dict[str, str] = {}
    fell_back: dict[str, list[str]] = {}
    for name in BASELINES:
        try:
            for part_name, history, part in jobs:
                levels = plan.options.levels if part_name == "test" else ()
                result = forecast(name, history, int(part.lengths.max()), levels=levels)
                where = part.positions, np.repeat(np.arange(len(part)), part.lengths)
                forecasts[part_name][name] = result.values[where]
                if result.bounds:
                    bounds[name] = {level: (lo[where], hi[where]) for level, (lo, hi) in result.bounds.items()}
                fell_back[name] = sorted({*fell_back.get(name, []), *result.fell_back})
        except BaselineUnavailable as error:
            unavailable[name] = str(error)
            for by_name in forecasts.values():
                by_name.pop(name, None)
    return BaselineForecasts(forecasts, bounds, unavailable, fell_back)
