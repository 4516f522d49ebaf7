"""Validation MAPE: the metric every sweep ranks trials by, always on the original (unscaled) values."""

from __future__ import annotations


def mape(actual, forecast):
    """Mean absolute percentage error, in percent: 100 * mean(|y - y_hat| / |y|).

    Works on NumPy arrays and torch tensors alike (on any device, without a host sync), so the per-epoch
    metric inside training and the offline one are the same code. A zero in `actual` gives inf: refuse such
    data up front with `forecaster.data.check_mape_defined`.
    """
    if actual.shape != forecast.shape:
        raise ValueError(f"actual has shape {tuple(actual.shape)} but forecast has shape {tuple(forecast.shape)}")
    return 100.0 * (abs(actual - forecast) / abs(actual)).mean()
