"""The metrics of the field, always on original (unscaled) values: MAPE, sMAPE on the M3 scale and MASE, per series
and as their mean over the series of a panel (the M-competitions' way: every series counts the same).

- MAPE: 100 * mean(|y - y_hat| / |y|); undefined where y is 0.
- sMAPE: 200 * mean(|y - y_hat| / (|y| + |y_hat|)), in 0-200 (0 where both are 0); utilsforecast's `smape` times 200.
- MASE: mean(|y - y_hat|) / the series' in-sample seasonal naive error (the mean of |y_t - y_{t-season}| over its
  training part), as utilsforecast's `mase` and the M4 competition compute it.
- WQL, of a forecast distribution given by its quantiles: for each quantile q of 0.1, 0.2, ..., 0.9, twice the pinball
  loss summed over every point of every series, divided by the sum of |y|; the mean of those nine ratios. As
  AutoGluon-TimeSeries' `WQL`, Chronos' and fev's compute it (the 2 makes the 0.5 quantile's term the absolute error).

torch is imported where a function scores tensors: a command's help and its checks, which read the names here, load
no deep-learning library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    from torch import Tensor

    from forecaster.data.panel import Panel

METRICS = ("mape", "smape", "mase")
METRIC_NAMES = {"mape": "MAPE", "smape": "sMAPE", "mase": "MASE"}
METRIC_LABELS = {"mape": "MAPE %", "smape": "sMAPE", "mase": "MASE"}
"""How tables and plots name each metric, with its unit."""


def format_score(metric: str, value: float) -> str:
    """A score as the summaries print it: MAPE in percent, sMAPE on its 0-200 scale, MASE to three places."""
    if metric == "mape":
        return f"{value:.2f} %"
    return f"{value:.3f}" if metric == "mase" else f"{value:.2f}"


def mape(actual: np.ndarray | Tensor, forecast: np.ndarray | Tensor) -> np.floating | Tensor:
    """Mean absolute percentage error, in percent: 100 * mean(|y - y_hat| / |y|), pooled over every point.

    Works on NumPy arrays and torch tensors alike (on any device, without a host sync). A zero in `actual` gives
    inf: refuse such data up front (forecaster.data.read checks it).

    Raises:
        ValueError: The two have different shapes (which NumPy and torch would broadcast).
    """
    if actual.shape != forecast.shape:
        raise ValueError(f"actual has shape {tuple(actual.shape)} but forecast has shape {tuple(forecast.shape)}")
    return cast("np.floating | Tensor", 100.0 * (abs(actual - forecast) / abs(actual)).mean())


def mase_scales(train: Panel) -> np.ndarray:
    """(S,) each series' in-sample seasonal naive error: the mean of |y_t - y_{t-season}| over its training part
    (lag 1 where there is no season); NaN for a series no longer than that lag."""
    lag = train.season
    values = train.values
    later = np.flatnonzero(train.positions >= lag)
    errors = np.abs(values[later] - values[later - lag])
    series = np.repeat(np.arange(len(train)), train.lengths)[later]
    sums = np.bincount(series, weights=errors, minlength=len(train))
    counts = np.bincount(series, minlength=len(train))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def series_scores(
    actual: Tensor, forecast: Tensor, weights: Tensor, series: Tensor, n_series: int, scale: Tensor
) -> dict[str, Tensor]:
    """MAPE, sMAPE and MASE per series of forecasts laid out in columns, on the forecasts' device without a sync.

    Args:
        actual: (steps, B) the true values.
        forecast: (steps, B) the forecasts, one column per forecast; a series may have several (one per origin),
            pooled.
        weights: (steps, B) 1 where a point is scored, 0 where not.
        series: (B,) the series of each column.
        n_series: How many series.
        scale: (B,) each column's series' MASE scale.

    Returns:
        {"mape": (n_series,), "smape": ..., "mase": ...}."""
    import torch

    error = (actual - forecast).abs()
    left_out = weights == 0
    denominator = actual.abs() + forecast.abs()
    per_point = {
        "mape": 100.0 * error / actual.abs(),
        "smape": torch.where(denominator == 0, 0.0, 200.0 * error / denominator),
        "mase": error / scale,
    }
    counts = weights.new_zeros(n_series).index_add_(0, series, weights.sum(0))

    def mean_per_series(errors: Tensor) -> Tensor:
        sums = errors.masked_fill(left_out, 0.0).sum(0)
        return sums.new_zeros(n_series).index_add_(0, series, sums) / counts

    return {name: mean_per_series(errors) for name, errors in per_point.items()}


def panel_scores(
    actual: np.ndarray | Tensor,
    forecast: np.ndarray | Tensor,
    weights: np.ndarray | Tensor,
    series: np.ndarray | Tensor,
    n_series: int,
    scale: np.ndarray | Tensor,
    mape_defined: bool = True,
) -> dict[str, Tensor]:
    """The mean over series of each metric of `series_scores`, the M-competitions' way.

    Args:
        actual: (steps, B) NumPy array or tensor.
        forecast: (steps, B).
        weights: (steps, B) 1 where a point is scored.
        series: (B,) the series of each column.
        n_series: How many series.
        scale: (B,) each column's series' MASE scale.
        mape_defined: False where some series has a zero in a scored part: MAPE is then NaN.

    Returns:
        {"mape": scalar tensor, "smape": ..., "mase": ...}."""
    import torch

    actual, forecast, weights, series, scale = (torch.as_tensor(x) for x in (actual, forecast, weights, series, scale))
    per_series = series_scores(actual, forecast, weights, series, n_series, scale)
    means = {name: values.mean() for name, values in per_series.items()}
    if not mape_defined:
        means["mape"] = torch.full_like(means["mape"], float("nan"))
    return means


WQL_QUANTILES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""The quantiles WQL is the mean over, as AutoGluon-TimeSeries and fev score it."""


def quantile_losses(actual: np.ndarray, quantiles: dict[float, np.ndarray]) -> dict[float, np.ndarray]:
    """{q: twice the pinball loss of each point}: 2 * (y - y_q) * (q - [y < y_q]), of forecasts at quantile q shaped
    as `actual`."""
    actual = np.asarray(actual, dtype=np.float64)
    return {q: 2.0 * (actual - forecast) * (q - (actual < forecast)) for q, forecast in quantiles.items()}


def weighted_quantile_loss(actual: np.ndarray, quantiles: dict[float, np.ndarray]) -> float:
    """WQL over every point of `actual` (any shape, NaN where there is none) of the forecasts at each quantile of
    `quantiles` (WQL_QUANTILES, as the field scores it): the mean over q of the summed loss over the summed |y|; NaN
    where |y| sums to 0."""
    present = np.isfinite(actual)
    truth = np.where(present, actual, 0.0)
    total = np.abs(truth).sum()
    if total == 0:
        return float("nan")
    return float(
        np.mean([np.where(present, loss, 0.0).sum() / total for loss in quantile_losses(truth, quantiles).values()])
    )


def series_weighted_quantile_loss(
    actual: np.ndarray, quantiles: dict[float, np.ndarray], offsets: np.ndarray
) -> np.ndarray:
    """(S,) WQL of each series of a flat part (`actual` and each quantile's forecast in the part's row order,
    `offsets` its series' bounds); NaN for a series whose |y| sums to 0."""
    starts = offsets[:-1]
    total = np.add.reduceat(np.abs(actual), starts)
    ratios = [
        np.add.reduceat(loss, starts) / np.where(total > 0, total, np.nan)
        for loss in quantile_losses(actual, quantiles).values()
    ]
    return cast(np.ndarray, np.mean(ratios, axis=0))
