"""The answer: an ensemble of the sweep's candidates, weighed where no trial was scored on the test window. The
candidates are the top trials' nets, each on its own, and every statistical baseline the sweep ran; greedy selection
with replacement (forecaster.answer.ensemble) weighs them on their forecasts of the validation parts (every backtest
window),
in the sweep's metric, as AutoGluon-TimeSeries chooses its WeightedEnsemble. Its forecast of each part is the weighted
mean of its candidates' forecasts of it: on the test window, the nets continued through the validation part and the
baselines fit on every point before it.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from forecaster.answer.ensemble import weighted_mean
from forecaster.metrics import mase_scales
from sweeps.plan.sweep_plan import SweepPlan

NETS_MEAN = "mean of the nets"
"""The column and key of the nets' plain mean (the answer before the ensemble), beside the answer's and each
baseline's: what the ensemble adds to it stays in sight."""
NET, STATISTICAL = "net", "statistical"


@dataclasses.dataclass(frozen=True)
class Ensemble:
    weights: dict[str, float]
    """Per candidate, its weight (0 for those not chosen), summing to 1: the nets by their trials' ids, best first,
    then the baselines by name."""
    kinds: dict[str, str]
    """Per candidate: NET or STATISTICAL."""
    candidates: dict[str, dict[str, np.ndarray]]
    """Per part ("validation", "test"): each candidate's forecast of every point, flat in the part's row order."""
    left_out: dict[str, str] = dataclasses.field(default_factory=dict)
    """Candidates that could not be weighed, and why."""
    seconds: float = 0.0
    """What the selection took."""

    @property
    def chosen(self) -> list[str]:
        """The candidates of a weight above 0, in `weights`' order."""
        return [name for name, weight in self.weights.items() if weight > 0]

    def members(self, part: str) -> tuple[np.ndarray, np.ndarray]:
        """The chosen candidates' forecasts of `part` (chosen, n) and their weights (chosen,)."""
        chosen = self.chosen
        forecasts = np.stack([np.asarray(self.candidates[part][name], dtype=np.float64) for name in chosen])
        return forecasts, np.array([self.weights[name] for name in chosen])

    def forecast(self, part: str) -> np.ndarray:
        """The ensemble's forecast of `part`, flat: its chosen candidates' weighted mean."""
        return weighted_mean(*self.members(part))


def choose_ensemble(
    plan: SweepPlan,
    trial_ids: list[str],
    members: dict[str, np.ndarray],
    baselines: dict[str, dict[str, np.ndarray]],
) -> Ensemble | None:
    """The ensemble of the nets (`members`, per part (members, n), in `trial_ids`' order) and the baselines
    (`baselines`, per part, per name, flat), weighed on the validation parts; None where no candidate forecast every
    validation point."""
    from forecaster.answer.ensemble import greedy_weights

    started = time.perf_counter()
    candidates: dict[str, dict[str, np.ndarray]] = {}
    for part_name, forecasts in members.items():
        candidates[part_name] = dict(zip(trial_ids, forecasts)) | baselines.get(part_name, {})
    kinds = dict.fromkeys(trial_ids, NET) | dict.fromkeys(baselines.get("validation", {}), STATISTICAL)
    validation = candidates["validation"]
    left_out = {
        name: "its forecast of the validation part is missing points"
        for name, forecast in validation.items()
        if not np.isfinite(forecast).all()
    }
    weighed = [name for name in validation if name not in left_out]
    if not weighed:
        return None
    points, rows = plan.parts.weighing_part()
    found = greedy_weights(
        points.values,
        np.stack([validation[name][rows] for name in weighed]),
        points.offsets,
        plan.parts.metric,
        mase_scales(plan.parts.train),
    )
    weights = dict(zip(weighed, map(float, found)))
    return Ensemble(
        {name: weights.get(name, 0.0) for name in validation},
        {name: kinds[name] for name in validation},
        candidates,
        left_out,
        time.perf_counter() - started,
    )
