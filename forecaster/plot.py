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


def plot_panel(items: list[tuple[pd.Series, pd.Series, pd.Series]], path: str | os.PathLike, title: str = "") -> None:
    """Several series of a panel, one small plot each: (training part, validation part, forecast) per series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(3, len(items))
    rows = -(-len(items) // columns)
    figure, grid = plt.subplots(rows, columns, figsize=(4.2 * columns, 2.8 * rows), layout="constrained", squeeze=False)
    for axes, (train, val, forecast) in zip(grid.flat, items):
        axes.plot(train.index, train.to_numpy(), color="0.45", linewidth=1)
        axes.plot(val.index, val.to_numpy(), color="black", linewidth=1)
        axes.plot(forecast.index, forecast.to_numpy(), color="tab:red", linestyle="--", linewidth=1)
        axes.axvline(train.index[-1], color="0.7", linewidth=0.8)
        axes.set_title(str(train.attrs.get("unique_id", "")), fontsize=9)
    for axes in list(grid.flat)[len(items) :]:
        axes.set_visible(False)
    figure.suptitle(title)
    figure.savefig(path, dpi=100)
    plt.close(figure)
