"""For a panel, the combination: the equal-weight mean, point by point, of the answer and the combined baselines
(forecaster.baselines.combined_names: AutoETS, Theta and AutoCES) on the test windows, beside the statistical
combination (the same without the answer) as one more baseline, which says what the answer adds to it. Combining
forecasts of different kinds is what won the M4 competition.
"""

from __future__ import annotations

import numpy as np

from forecaster.baselines import combined_names

COMBINATION = "combination"
"""The column and key of the combination: the mean of the answer and COMBINED's forecasts."""
COMBINED = combined_names()
STATISTICAL_COMBINATION = "statistical combination"
"""A baseline for the combination: the mean of COMBINED's forecasts alone."""


def combinations(test_forecasts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The statistical combination and the combination of the test windows, where every one of COMBINED ran."""
    if not all(name in test_forecasts for name in COMBINED):
        return {}
    statistical = [test_forecasts[name] for name in COMBINED]
    return {
        STATISTICAL_COMBINATION: np.mean(statistical, axis=0),
        COMBINATION: np.mean([test_forecasts["answer"], *statistical], axis=0),
    }
