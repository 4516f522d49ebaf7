"""A weighted ensemble of forecasts, chosen as AutoGluon-TimeSeries chooses its own: Caruana et al.'s greedy selection
with replacement ("Ensemble selection from libraries of models", 2004). Starting from nothing, each step adds the
candidate whose addition gives the mean forecast the lowest error, a candidate may be added again, and each weight is
the share of the steps that added it. Of the steps' ensembles the one of the lowest error is kept (Caruana's choice of
the ensemble's size on the points it is chosen on), so it is never worse there than its best member, which the first
step takes alone; a weight is a multiple of 1/steps, so few candidates ever get one.

The error is the metric's mean over series, each series' points pooled, as the sweep ranks its trials.
"""

from __future__ import annotations

import numpy as np

GREEDY_STEPS = 100
"""The steps of the selection: AutoGluon-TimeSeries' `ensemble_size`."""


def series_errors(
    actual: np.ndarray, forecasts: np.ndarray, offsets: np.ndarray, metric: str, scales: np.ndarray | None = None
) -> np.ndarray:
    """(C, S): each forecast's metric per series. `actual` (n,) and `forecasts` (C, n) are flat, series after series
    as `offsets` (S + 1,) say, each series at least one point; `scales` (S,) MASE's, per series."""
    error = np.abs(forecasts - actual[None, :])
    if metric == "mape":
        per_point = 100.0 * error / np.abs(actual)[None, :]
    elif metric == "smape":
        denominator = np.abs(forecasts) + np.abs(actual)[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            per_point = np.where(denominator == 0, 0.0, 200.0 * error / denominator)
    elif metric == "mase":
        assert scales is not None, "MASE divides by each series' scale"
        per_point = error / np.repeat(scales, np.diff(offsets))[None, :]
    else:
        raise ValueError(f"metric={metric!r} is not one of mape, smape, mase")
    sums = np.add.reduceat(per_point, offsets[:-1], axis=1)
    return sums / np.diff(offsets)[None, :]


def greedy_weights(
    actual: np.ndarray,
    candidates: np.ndarray,
    offsets: np.ndarray,
    metric: str,
    scales: np.ndarray | None = None,
    steps: int = GREEDY_STEPS,
) -> np.ndarray:
    """(C,) the weights, summing to 1, of the ensemble of `candidates` (C, n), each finite, that greedy selection with
    replacement chooses on `actual` (`series_errors`' layout): of its `steps` steps' ensembles, the first of the lowest
    error. A series whose metric is undefined for the truth alone (MASE of a
    constant training part) is left out of every mean alike; ties go to the candidate listed first."""
    candidates = np.asarray(candidates, dtype=np.float64)
    defined = np.isfinite(series_errors(actual, actual[None, :] + 1.0, offsets, metric, scales)[0])
    counts = np.zeros(len(candidates))
    total = np.zeros(candidates.shape[1])
    best, weights = np.inf, np.full(len(candidates), 1.0 / len(candidates))  # no step finite: every one alike
    for step in range(1, steps + 1):
        mixed = (total[None, :] + candidates) / step
        errors = series_errors(actual, mixed, offsets, metric, scales)[:, defined].mean(axis=1)
        chosen = int(np.argmin(errors))
        counts[chosen] += 1
        total += candidates[chosen]
        if errors[chosen] < best:
            best, weights = errors[chosen], counts / step
    return weights


def weighted_mean(forecasts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(n,) or (steps, S): the weighted mean of `forecasts` (members, ...), over the members that forecast each point
    (a net may not read a series too short for it)."""
    present = np.isfinite(forecasts)
    weight = np.where(present, weights.reshape(-1, *([1] * (forecasts.ndim - 1))), 0.0)
    total = weight.sum(axis=0)
    found: np.ndarray = np.where(
        total > 0, (np.where(present, forecasts, 0.0) * weight).sum(axis=0) / np.where(total > 0, total, 1.0), np.nan
    )
    return found
