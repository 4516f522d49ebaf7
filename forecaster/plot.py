"""Pictures of a forecast against the truth; matplotlib is imported only when a picture is drawn."""

from __future__ import annotations

import os

import pandas as pd


def plot_forecast(
    train: pd.Series,
    val: pd.Series,
    forecast: pd.Series,
    path: str | os.PathLike,
    title: str = "",
    test: pd.Series | None = None,
    test_forecast: pd.Series | None = None,
) -> None:
    """Draw the training part, the validation part and the forecast of it (and, given them, a held-out test window
    and its forecast), and save to `path` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(10, 4.5), layout="constrained")
    axes.plot(train.index, train.to_numpy(), color="0.45", label="train")
    axes.plot(val.index, val.to_numpy(), color="black", label="validation")
    axes.plot(forecast.index, forecast.to_numpy(), color="tab:red", linestyle="--", label="forecast")
    axes.axvline(train.index[-1], color="0.7", linewidth=0.8)
    if test is not None:
        axes.plot(test.index, test.to_numpy(), color="tab:green", label="test (held out)")
        axes.axvline(val.index[-1], color="0.7", linewidth=0.8)
    if test_forecast is not None:
        axes.plot(
            test_forecast.index, test_forecast.to_numpy(), color="tab:purple", linestyle="--", label="test forecast"
        )
    axes.set_ylabel(str(val.name or "value"))
    axes.set_title(title)
    axes.legend(loc="upper left")
    figure.savefig(path, dpi=110)
    plt.close(figure)
