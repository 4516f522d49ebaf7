"""Validation MAPE: the metric every sweep ranks trials by, always on the original (unscaled) values."""

from __future__ import annotations

import numpy as np
import pandas as pd

from forecaster.data import SeriesError


def mape(actual, forecast):
    """Mean absolute percentage error, in percent: 100 * mean(|y - y_hat| / |y|).

    Works on NumPy arrays and torch tensors alike (on any device, without a host sync), so the per-epoch
    metric inside training and the offline one are the same code. A zero in `actual` gives inf: refuse such
    data up front with `check_mape_defined`.
    """
    if actual.shape != forecast.shape:
        raise ValueError(f"actual has shape {tuple(actual.shape)} but forecast has shape {tuple(forecast.shape)}")
    return 100.0 * (abs(actual - forecast) / abs(actual)).mean()


def check_mape_defined(val: pd.Series) -> None:
    """Refuse a validation part with zeros before any training: MAPE would divide by them."""
    zeros = val.index[val.to_numpy() == 0]
    if len(zeros):
        dates = ", ".join(str(d.date()) for d in zeros[:5]) + (" ..." if len(zeros) > 5 else "")
        raise SeriesError(
            f"the validation part has {len(zeros)} zero value(s) (at {dates}), where MAPE is undefined; "
            "move split_after so the validation months have no zeros, or shift the series away from 0"
        )
