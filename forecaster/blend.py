"""The forecast to use: the answer and the statistical combination (the mean of AutoETS, Theta and AutoCES), blended
with one weight chosen on points that ranked no trial.

Whether a tuned RNN beats a two-second AutoETS depends on the data, and on the window: on Tourism monthly the
`panel` sweep's answer was behind AutoETS on the window before its inner test, ahead on the inner test and behind on
the official hold-out. A weight chosen on the test window would be a score no user could have had; one chosen on the
validation parts would favour the answer, whose trials were ranked there. So the weight is chosen on the calibration
window of the answer's intervals (forecaster.intervals.Calibration): the last horizon of each series' training part,
forecast by the answer's configurations trained before it, beside the statistical models fit on the same points. One
weight for the whole panel, in tenths: a weight per series would fit one window's noise.
"""

from __future__ import annotations

import numpy as np

from forecaster.metrics import panel_scores

WEIGHTS = tuple(tenth / 10 for tenth in range(11))
"""The answer's weights tried, from 0 (the statistical combination alone) to 1 (the answer alone)."""


def blend_weight(
    actual: np.ndarray, answer: np.ndarray, statistical: np.ndarray, scales: np.ndarray, metric: str
) -> tuple[float, str, dict[float, float]]:
    """(the answer's weight, the metric it was chosen by, {weight: the mean over series of that metric}): of WEIGHTS,
    the one whose blend `weight * answer + (1 - weight) * statistical` scores lowest on `actual` (each (steps, S),
    NaN where a series has no point; `scales` (S,) each series' MASE scale). sMAPE stands in for a metric that is
    undefined there (MAPE on a window with a zero, MASE on a flat series); the lower weight wins a tie."""
    present = np.isfinite(actual)
    truth = np.where(present, actual, 1.0)
    columns = np.arange(actual.shape[1])
    blends = {weight: np.where(present, weight * answer + (1 - weight) * statistical, 1.0) for weight in WEIGHTS}

    def scores(name: str) -> dict[float, float]:
        return {
            weight: float(panel_scores(truth, blend, present.astype(float), columns, len(columns), scales)[name])
            for weight, blend in blends.items()
        }

    found = scores(metric)
    if not all(np.isfinite(list(found.values()))):
        metric, found = "smape", scores("smape")
    return min(found, key=found.__getitem__), metric, found
