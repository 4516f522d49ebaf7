"""What a forecaster would use instead of a neural net: the yardsticks a sweep's answer is judged against.

- seasonal naive: each point is the same point of the last season seen (the month a year before, for monthly
  data); where the frequency has no season, the last value (naive). It costs nothing, and a model that does
  not beat it has learned nothing worth deploying.
- AutoETS and AutoCES from statsforecast: exponential smoothing with its form chosen automatically, and complex
  exponential smoothing; untuned, a second or less each. statsforecast is an optional extra
  (`pip install '.[baselines]'`, about 60 MB with statsmodels and scipy); without it these say so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from forecaster.data import season_length

STATISTICAL = ("AutoETS", "AutoCES")
BASELINES = ("seasonal naive", *STATISTICAL)


class BaselineUnavailable(RuntimeError):
    """A baseline that cannot run here, or on this series; the message says why."""


def seasonal_naive(history: pd.Series, steps: int) -> np.ndarray:
    """Repeat the last season of `history` (the last value, where the series has no season or is shorter than one)."""
    values = history.to_numpy(np.float64)
    season = season_length(history.index.freqstr) if history.index.freqstr else 1
    if season == 1 or len(values) < season:
        return np.full(steps, values[-1])
    return np.resize(values[-season:], steps)  # repeats the last season as often as needed


def statistical(method: str, history: pd.Series, steps: int) -> np.ndarray:
    """statsforecast's `method` (AutoETS or AutoCES), fit on all of `history` with the series' season."""
    try:
        from statsforecast import models
    except ImportError:
        raise BaselineUnavailable(f"{method} needs statsforecast: pip install '.[baselines]'") from None
    season = season_length(history.index.freqstr) if history.index.freqstr else 1
    model = getattr(models, method)(season_length=season)
    try:
        predicted = model.forecast(y=history.to_numpy(np.float64), h=steps)["mean"]
    except Exception as error:  # statsforecast raises bare Exceptions on series it cannot fit (a noiseless one)
        raise BaselineUnavailable(f"{method} could not fit this series ({error})") from None
    return np.asarray(predicted, dtype=np.float64)


def forecast(name: str, history: pd.Series, steps: int) -> np.ndarray:
    """The forecast of baseline `name` (one of BASELINES) for `steps` points after `history`."""
    if name == "seasonal naive":
        return seasonal_naive(history, steps)
    if name in STATISTICAL:
        return statistical(name, history, steps)
    raise ValueError(f"unknown baseline {name!r}; the baselines are: {', '.join(BASELINES)}")
