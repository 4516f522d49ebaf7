"""Validation MAPE: the metric every sweep ranks trials by, always on the original (unscaled) values."""

from __future__ import annotations

import numpy as np


def mape(actual, forecast, weights=None):
    """Mean absolute percentage error, in percent: 100 * mean(|y - y_hat| / |y|).

    Works on NumPy arrays and torch tensors alike (on any device, without a host sync), so the per-epoch
    metric inside training and the offline one are the same code. A zero in `actual` gives inf: refuse such
    data up front with `forecaster.data.check_mape_defined`. `weights` (0 or 1, the shape of `actual`) leaves
    out the pairs weighted 0, without a data-dependent shape (which would force a sync on an accelerator).
    """
    if actual.shape != forecast.shape:
        raise ValueError(f"actual has shape {tuple(actual.shape)} but forecast has shape {tuple(forecast.shape)}")
    errors = abs(actual - forecast) / abs(actual)
    if weights is None:
        return 100.0 * errors.mean()
    # Pairs left out may hold anything, inf included (a forecast run past the data): zero them, do not multiply.
    left_out = weights == 0
    errors = errors.masked_fill(left_out, 0.0) if hasattr(errors, "masked_fill") else np.where(left_out, 0.0, errors)
    return 100.0 * errors.sum() / weights.sum()
