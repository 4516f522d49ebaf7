"""`python -m forecaster.fit`: train one forecaster on a series or a panel from the command line and print its
validation metrics.

Examples:
  python -m forecaster.fit                                # the seed config on Air Passengers
  python -m forecaster.fit --model LSTM --hidden-dim 32 --plot forecast.png
  python -m forecaster.fit --data sales.csv --date-column day --value-column units --split-after 2024-06-30
  python -m forecaster.fit --data m3_monthly --horizon 18  # one global model on 1,428 series (the benchmarks extra)
  python -m forecaster.fit --data stores.parquet --horizon 12 --drop-short-series   # unique_id, ds, y
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import resource
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from forecaster.cli import add_options, option, read_options, with_default
from forecaster.config import ACCELERATORS, ConfigError, ForecasterConfig
from forecaster.data.datasets import AIR_PASSENGERS_SPLIT_AFTER, BENCHMARK_PANELS, BUILTIN_DATASETS, DEFAULT_DATASET
from forecaster.data.read import SeriesError
from forecaster.metrics import METRICS
from forecaster.training.parts import no_cut_message

if TYPE_CHECKING:
    from forecaster.training.train import FitResult


def _boolean(text: str) -> bool:
    """--calendar true / false (also 1 / 0, yes / no)."""
    value = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}.get(text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not true or false")
    return value


def _devices(text: str) -> int | list[int] | str:
    """--devices: 'auto', a count ('2') or GPU ids ('0,3')."""
    if text == "auto":
        return text
    try:
        parts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not 'auto', a device count or comma-separated ids like 0,3"
        ) from None
    return parts if len(parts) > 1 else parts[0]


FIELD_TYPES: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": _boolean,
    "tuple[int, ...]": int,
}
"""How the command line reads each type of ForecasterConfig's fields."""
GROUPS = {"data": "data", "run": "run"}
"""The sections of --help after the model's options, in order."""


@dataclasses.dataclass(frozen=True)
class FitOptions:
    """What `python -m forecaster.fit` is asked besides the hyperparameters (forecaster.config.ForecasterConfig)."""

    data: str = option(
        DEFAULT_DATASET,
        "a CSV or Parquet file (one series, or a panel in long format), or a built-in dataset: "
        f"{', '.join(BUILTIN_DATASETS)}, or a competition panel of the benchmarks extra "
        f"({', '.join(BENCHMARK_PANELS)})",
        group="data",
    )
    id_column: str | None = option(
        None, "series id column of a panel (found by itself when named unique_id)", group="data"
    )
    date_column: str | None = option(
        None, "date (or time) column (found by itself when named ds, or with 2 columns)", group="data"
    )
    value_column: str | None = option(
        None, "value column (found by itself when named y, or with 2 columns)", group="data"
    )
    freq: str | None = option(None, "pandas frequency of the dates, e.g. MS or D (default: inferred)", group="data")
    season_length: int | None = option(
        None,
        "points per season of a plain integer time index (12 for monthly data, 1 for none); dates need none",
        group="data",
        type=int,
    )
    horizon: int | None = option(
        None,
        "points per series: the last H of every series are its test window (never seen) and the H before them its "
        "validation part (default: the official horizon of a benchmark panel, else --split-after)",
        group="data",
        type=int,
    )
    split_after: str | None = option(
        None,
        "without --horizon: the last date (or time) of every series' training part (default: on "
        f"{DEFAULT_DATASET} its own, {AIR_PASSENGERS_SPLIT_AFTER}; other data needs --horizon or --split-after)",
        group="data",
    )
    metric: str | None = option(
        None,
        "the metric that ranks the epochs (default: mape for one series, smape for a panel, mase where a value is "
        "below 0)",
        group="data",
        choices=METRICS,
    )
    drop_short_series: bool = option(
        False,
        "leave out the series too short for the windows, validation and test points, instead of refusing",
        group="data",
        action="store_true",
    )
    accelerator: str = option(
        "cpu", "hardware; the seed model is fastest on one CPU thread", group="run", choices=ACCELERATORS
    )
    devices: int | list[int] | str = option(1, "device count, or comma-separated GPU ids", group="run", type=_devices)
    threads: int = option(
        1, "torch CPU threads; more pay off only for large hidden_dim and batch_size", group="run", type=int
    )
    plot: str | None = option(None, "draw train, validation and forecast to this PNG", group="run", metavar="FILE.png")
    json: bool = option(False, "print the result as one JSON line instead of text", group="run", action="store_true")


def type_name(field: dataclasses.Field[Any]) -> str:
    """A field's type as its module wrote it ("int", "tuple[int, ...]"), annotations postponed or not."""
    kind = field.type
    return kind if isinstance(kind, str) else kind.__name__ if isinstance(kind, type) else str(kind)


def hyperparameters() -> list[dataclasses.Field[Any]]:
    """ForecasterConfig's shared fields, then each shape's settings (a subclass's once, after its parent's)."""
    from forecaster.shapes import shape_names, shape_of

    shared = [field for field in dataclasses.fields(ForecasterConfig) if field.name != "settings"]
    own = {field.name: field for name in shape_names() for field in dataclasses.fields(shape_of(name).settings)}
    return [*shared, *own.values()]


def build_parser() -> argparse.ArgumentParser:
    """The hyperparameters, one option per field of ForecasterConfig, then FitOptions'."""
    parser = argparse.ArgumentParser(
        prog="python -m forecaster.fit",
        description="Train one RNN forecaster (Darts RNNModel semantics) and print its validation MAPE.",
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    model = parser.add_argument_group("model (defaults: the seed config)")
    for field in hyperparameters():
        sizes = type_name(field) == "tuple[int, ...]"  # --hidden-fc-sizes 64 32, or nothing for none
        model.add_argument(
            "--" + field.name.replace("_", "-"),
            type=FIELD_TYPES[type_name(field)],
            nargs="*" if sizes else None,
            default=field.default,
            help=with_default(field.metadata["help"], field.default, always=True),
        )
    return add_options(parser, FitOptions, GROUPS)


def main(argv: list[str] | None = None) -> int:
    parsed = build_parser().parse_args(argv)
    args: FitOptions = read_options(FitOptions, parsed)
    # Heavy imports after argument parsing, so that --help and argument errors answer at once.
    from forecaster.data.read import load_panel
    from forecaster.training.train import AcceleratorError, fit, quiet_lightning

    quiet_lightning()
    try:
        config = ForecasterConfig(**{field.name: getattr(parsed, field.name) for field in hyperparameters()})
        panel = load_panel(
            args.data, args.id_column, args.date_column, args.value_column, args.freq, args.season_length
        )
        horizon = args.horizon if args.horizon is not None else panel.horizon
        split_after = args.split_after
        if horizon is None and split_after is None:
            if args.data != DEFAULT_DATASET:
                raise SeriesError(no_cut_message(panel.label, panel.dated))
            split_after = AIR_PASSENGERS_SPLIT_AFTER
        started = time.perf_counter()
        result = fit(
            config,
            panel,
            split_after=split_after,
            val_size=horizon,
            test_size=horizon or 0,
            metric=args.metric,
            drop_short=args.drop_short_series,
            accelerator=args.accelerator,
            devices=args.devices,
            threads=args.threads,
        )
        total = time.perf_counter() - started
    except (ConfigError, SeriesError, AcceleratorError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    parts = result.parts
    best = result.best_epoch
    last = result.history[-1]
    summary = {
        "config": config.to_dict(),
        "data": args.data,
        "series": len(parts.train),
        "dropped_series": len(result.dropped),
        "horizon": horizon,
        "validation_points": int(parts.val.lengths.sum()),
        "metric": result.metric,
        "val_mape": last["val_mape"],
        "val_smape": last["val_smape"],
        "val_mase": last["val_mase"],
        f"best_val_{result.metric}": best[f"val_{result.metric}"],
        "best_epoch": best["epoch"],
        "epochs": len(result.history),
        "trained_on": result.trained_on,
        "fit_wall_seconds": result.fit_seconds,
        "fit_cpu_seconds": result.cpu_seconds,
        "epochs_per_second": result.epochs_per_second,
        "total_wall_seconds": total,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if args.plot:
        _plot(result, args.plot, config)
    if args.json:
        print(json.dumps(summary))
        return 0
    name = {"mape": "MAPE", "smape": "sMAPE", "mase": "MASE"}[result.metric]
    unit = "" if result.metric == "mase" else (" %" if result.metric == "mape" else "")
    if len(parts.train) == 1:
        print(
            f"validation {name} {last[f'val_{result.metric}']:.2f}{unit} after {len(result.history)} epochs "
            f"(lowest {best[f'val_{result.metric}']:.2f}{unit} at epoch {best['epoch']})"
        )
    else:
        dropped = f", {len(result.dropped)} dropped as too short" if result.dropped else ""
        lengths = parts.val.lengths
        points = f"{lengths[0]}" if (lengths == lengths[0]).all() else f"{lengths.min()}-{lengths.max()}"
        mape = f"{last['val_mape']:.2f} %" if math.isfinite(last["val_mape"]) else "undefined (zeros)"
        print(
            f"validation over {len(parts.train)} series{dropped} ({points} points each): sMAPE {last['val_smape']:.2f}"
            f", MASE {last['val_mase']:.3f}, MAPE {mape} after {len(result.history)} epochs; lowest {name} "
            f"{best[f'val_{result.metric}']:.3f} at epoch {best['epoch']}"
        )
    speed = result.epochs_per_second
    print(
        f"fit: {result.fit_seconds:.2f} s wall, {result.cpu_seconds:.2f} s CPU, "
        f"{f'{speed:.0f}' if speed >= 10 else f'{speed:.2f}'} epochs/s, peak RSS {summary['peak_rss_mb']:.0f} MB"
    )
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def _plot(result: FitResult, path: str, config: ForecasterConfig) -> None:
    """A single series: train, validation and forecast; a panel: the first series of it, each in its own panel."""
    from forecaster.plot import plot_forecast, plot_panel

    parts = result.parts
    if len(parts.train) == 1:
        plot_forecast(
            parts.train.series(0),
            parts.val.series(0),
            result.forecast_series(0),
            path,
            title=f"{config.model} forecast, validation MAPE {result.val_mape:.2f} %",
        )
        return
    shown = range(min(6, len(parts.train)))
    plot_panel(
        [(parts.train.series(i), parts.val.series(i), result.forecast_series(i)) for i in shown],
        path,
        title=f"{config.model}, one model for {len(parts.train)} series (the first {len(shown)}): "
        f"validation sMAPE {result.history[-1]['val_smape']:.2f}",
    )


if __name__ == "__main__":
    sys.exit(main())
