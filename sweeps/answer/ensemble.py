"""The ensemble of the answer's candidates, weighed where no trial was scored on the test window: the top trials'
nets, each on its own, and every statistical baseline the sweep ran, chosen by greedy selection with replacement
(forecaster.ensemble) on their forecasts of the validation parts, in the sweep's metric, as AutoGluon-TimeSeries
chooses its WeightedEnsemble. Its forecast of each part is the weighted sum of its candidates' forecasts of it: on the
test window the nets continued through the validation part and the baselines fit on every point before it.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from forecaster.metrics import mase_scales
from sweeps.plan.sweep_plan import SweepPlan

ENSEMBLE = "ensemble"
"""The ensemble's column and key, beside the answer's and each baseline's."""
NET, STATISTICAL = "net", "statistical"


@dataclasses.dataclass(frozen=True)
class Ensemble:
    weights: dict[str, float]
    """Per candidate, its weight (0 for those not chosen), summing to 1: the nets by their trials' ids, best first,
    then the baselines by name."""
    kinds: dict[str, str]
    """Per candidate: NET or STATISTICAL."""
    forecasts: dict[str, np.ndarray]
    """Per part ("validation", "test"): the ensemble's forecast of every point, flat in the part's row order."""
    left_out: dict[str, str] = dataclasses.field(default_factory=dict)
    """Candidates that could not be weighed, and why."""
    seconds: float = 0.0
    """What the selection took."""


def choose_ensemble(
    plan: SweepPlan,
    trial_ids: list[str],
    members: dict[str, np.ndarray],
    baselines: dict[str, dict[str, np.ndarray]],
) -> Ensemble | None:
    """The ensemble of the nets (`members`, per part (members, n), in `trial_ids`' order) and the baselines
    (`baselines`, per part, per name, flat), weighed on the validation parts; None where no candidate forecast every
    validation point."""
    from forecaster.ensemble import greedy_weights

    started = time.perf_counter()
    val = plan.parts.val
    candidates = {trial_id: forecast for trial_id, forecast in zip(trial_ids, members["validation"])}
    kinds = dict.fromkeys(trial_ids, NET)
    for name, forecast in baselines.get("validation", {}).items():
        candidates[name], kinds[name] = forecast, STATISTICAL
    left_out = {
        name: "its forecast of the validation part is missing points"
        for name, f in candidates.items()
        if not np.isfinite(f).all()
    }
    weighed = [name for name in candidates if name not in left_out]
    if not weighed:
        return None
    found = greedy_weights(
        val.values,
        np.stack([candidates[name] for name in weighed]),
        val.offsets,
        plan.parts.metric,
        mase_scales(plan.parts.train),
    )
    weights = {name: float(weight) for name, weight in zip(weighed, found)}
    forecasts = {"validation": _weighted(weights, candidates)}
    if plan.parts.test is not None and "test" in members:
        tested = {trial_id: forecast for trial_id, forecast in zip(trial_ids, members["test"])}
        tested |= baselines.get("test", {})
        forecasts["test"] = _weighted(weights, tested)
    return Ensemble(
        {name: weights.get(name, 0.0) for name in candidates},
        {name: kinds[name] for name in candidates},
        forecasts,
        left_out,
        time.perf_counter() - started,
    )


def _weighted(weights: dict[str, float], forecasts: dict[str, np.ndarray]) -> np.ndarray:
    """The sum of the chosen candidates' forecasts, each times its weight."""
    chosen = [(weight, forecasts[name]) for name, weight in weights.items() if weight > 0]
    return np.sum([weight * np.asarray(forecast, dtype=np.float64) for weight, forecast in chosen], axis=0)
