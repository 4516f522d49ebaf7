"""Pictures of a forecast against the truth; matplotlib is imported only when a picture is drawn."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def plot_forecast(
    train: pd.Series,
    val: pd.Series,
    forecast: pd.Series,
    path: str | os.PathLike[str] | IO[bytes],
    title: str = "",
    test: pd.Series | None = None,
    test_forecast: pd.Series | None = None,
    test_bands: Mapping[str, tuple[Any, Any]] | None = None,
) -> None:
    """Draw the training part, the validation part and the forecast of it (and, given them, a held-out test window,
    its forecast and the forecast's intervals, {label: (lower, upper)}, widest first), and save to `path` (PNG)."""
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
        _bands(axes, test_forecast.index, test_bands, "tab:purple")
    axes.set_ylabel(str(val.name or "value"))
    axes.set_title(title)
    axes.legend(loc="upper left")
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_panel(
    items: list[tuple[pd.Series, pd.Series, pd.Series]], path: str | os.PathLike[str] | IO[bytes], title: str = ""
) -> None:
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


def _bands(axes: Axes, index: pd.Index, bands: Mapping[str, tuple[Any, Any]] | None, colour: str) -> None:
    """Prediction intervals as shaded bands, the widest palest."""
    for number, (label, (lower, upper)) in enumerate((bands or {}).items()):
        axes.fill_between(index, lower, upper, color=colour, alpha=0.12 + 0.1 * number, linewidth=0, label=label)


def plot_series_forecasts(
    panels: Sequence[tuple[str, pd.Series, pd.Series, Mapping[str, Any]]],
    path: str | os.PathLike[str] | IO[bytes],
    title: str = "",
    bands: Sequence[Mapping[str, tuple[Any, Any]]] | None = None,
) -> None:
    """One row per series: (its title, its history, the truth of the forecast window, {method: forecast values}), and
    with `bands`, one per row, the first method's intervals ({label: (lower, upper)}, widest first). The history is
    cut to its last four windows' worth of points, so the window stays readable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, grid = plt.subplots(len(panels), 1, figsize=(10, 2.9 * len(panels)), layout="constrained", squeeze=False)
    palette = ["tab:red", "tab:blue", "tab:green", "tab:purple", "tab:orange"]
    styles: dict[str, str] = {}
    for row, (axes, (name, history, truth, forecasts)) in enumerate(zip(grid[:, 0], panels)):
        recent = history.iloc[-4 * len(truth) :]
        axes.plot(recent.index, recent.to_numpy(), color="0.45", linewidth=1, label="history")
        axes.plot(truth.index, truth.to_numpy(), color="black", linewidth=1.3, label="truth")
        for method, values in forecasts.items():
            colour = styles.setdefault(method, palette[len(styles) % len(palette)])
            axes.plot(truth.index, values, color=colour, linestyle="--", linewidth=1.3, label=method)
        if bands:
            _bands(axes, truth.index, bands[row], palette[0])
        axes.axvline(recent.index[-1], color="0.7", linewidth=0.8)
        axes.set_title(name, fontsize=9)
        axes.legend(loc="upper left", fontsize=8)
    figure.suptitle(title)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def plot_error_spread(
    spread: Mapping[str, Any], path: str | os.PathLike[str] | IO[bytes], label: str, title: str = ""
) -> None:
    """Every method's per-series errors as a box plot (the box: the middle half of the series; the white dot: the
    mean over series, which the benchmarks report), on a log scale where the errors span decades."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    methods = list(spread)
    values = [np.asarray(spread[method], dtype=float) for method in methods]
    figure, axes = plt.subplots(figsize=(10, 4.5), layout="constrained")
    axes.boxplot(values, showfliers=True, flierprops={"markersize": 2, "alpha": 0.4}, widths=0.5)
    axes.set_xticks(range(1, len(methods) + 1), methods)
    means = [float(np.nanmean(v)) for v in values]
    axes.scatter(range(1, len(methods) + 1), means, color="white", edgecolor="black", zorder=3, label="mean")
    for position, mean in enumerate(means, start=1):
        axes.annotate(f"{mean:.2f}", (position, mean), textcoords="offset points", xytext=(12, -3), fontsize=8)
    positive = np.concatenate([v[v > 0] for v in values]) if values else np.array([])
    if len(positive) and positive.max() / max(positive.min(), 1e-12) > 100:
        axes.set_yscale("log")
    axes.set_ylabel(label)
    axes.set_title(title)
    axes.legend(loc="upper right")
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_future(
    items: Sequence[tuple[str, pd.Series, Any, Mapping[str, Any], Mapping[str, tuple[Any, Any]]]],
    path: str | os.PathLike[str] | IO[bytes],
    title: str = "",
) -> None:
    """One row per series: (its title, its history, the dates it is forecast at, {method: forecast values}, the first
    method's intervals {label: (lower, upper)}, widest first). The history is cut to its last four horizons' points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, grid = plt.subplots(len(items), 1, figsize=(10, 2.9 * len(items)), layout="constrained", squeeze=False)
    palette = ["tab:red", "tab:blue", "tab:green", "tab:purple", "tab:orange"]
    for axes, (name, history, future, forecasts, bands) in zip(grid[:, 0], items):
        recent = history.iloc[-4 * len(future) :]
        axes.plot(recent.index, recent.to_numpy(), color="black", linewidth=1.1, label="history")
        for colour, (method, values) in zip(palette, forecasts.items()):
            axes.plot(future, values, color=colour, linestyle="--", linewidth=1.3, label=method)
        _bands(axes, future, bands, palette[0])
        axes.axvline(recent.index[-1], color="0.7", linewidth=0.8)
        axes.set_title(name, fontsize=9)
        axes.legend(loc="upper left", fontsize=8)
    figure.suptitle(title)
    figure.savefig(path, dpi=100)
    plt.close(figure)
