"""`python -m forecaster.fit`: train one forecaster from the command line and print its validation MAPE.

Examples:
  python -m forecaster.fit                                # the seed config on Air Passengers
  python -m forecaster.fit --model LSTM --hidden-dim 32 --plot forecast.png
  python -m forecaster.fit --data sales.csv --date-column day --value-column units --split-after 2024-06-30
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import sys

from forecaster.config import ConfigError, ForecasterConfig
from forecaster.data import DEFAULT_SPLIT_AFTER, SeriesError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m forecaster.fit",
        description="Train one RNN forecaster (Darts RNNModel semantics) and print its validation MAPE.",
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    model = parser.add_argument_group("model (defaults: the seed config)")
    for field in dataclasses.fields(ForecasterConfig):
        model.add_argument(
            "--" + field.name.replace("_", "-"),
            type={"int": int, "float": float, "str": str, "bool": _boolean}[field.type],
            default=field.default,
            help=f"{field.metadata['help']} (default: {field.default})",
        )
    data = parser.add_argument_group("data")
    data.add_argument(
        "--data", default="air_passengers", help="a CSV file, or a built-in dataset (default: air_passengers)"
    )
    data.add_argument("--date-column", help="date column of the CSV (found automatically when it has two columns)")
    data.add_argument("--value-column", help="value column of the CSV (found automatically when it has two columns)")
    data.add_argument("--freq", help="pandas frequency of the dates, e.g. MS or D (default: inferred)")
    data.add_argument(
        "--split-after", default=DEFAULT_SPLIT_AFTER, help="last date of the training part (default: %(default)s)"
    )
    run = parser.add_argument_group("run")
    run.add_argument(
        "--accelerator",
        default="cpu",
        choices=["cpu", "gpu", "tpu", "auto"],
        help="hardware; the seed model is fastest on one CPU thread (default: cpu)",
    )
    run.add_argument(
        "--devices", type=_devices, default=1, help="device count, or comma-separated GPU ids (default: 1)"
    )
    run.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads; more pay off only for large hidden_dim and batch_size (default: 1)",
    )
    run.add_argument("--plot", metavar="FILE.png", help="draw train, validation and forecast to this PNG")
    run.add_argument("--json", action="store_true", help="print the result as one JSON line instead of text")
    return parser


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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # Heavy imports after argument parsing, so that --help and argument errors answer at once.
    from forecaster.data import load_series, split_series
    from forecaster.train import AcceleratorError, fit, quiet_lightning

    quiet_lightning()
    try:
        config = ForecasterConfig(**{field: getattr(args, field) for field in ForecasterConfig.field_names()})
        series = load_series(args.data, args.date_column, args.value_column, args.freq)
        result = fit(
            config,
            series,
            split_after=args.split_after,
            accelerator=args.accelerator,
            devices=args.devices,
            threads=args.threads,
        )
    except (ConfigError, SeriesError, AcceleratorError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    best = result.best_epoch
    summary = {
        "config": config.to_dict(),
        "data": args.data,
        "val_mape": result.val_mape,
        "best_val_mape": best["val_mape"],
        "best_epoch": best["epoch"],
        "epochs": len(result.history),
        "fit_wall_seconds": result.fit_seconds,
        "fit_cpu_seconds": result.cpu_seconds,
        "epochs_per_second": result.epochs_per_second,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if args.plot:
        from forecaster.plot import plot_forecast

        train, val = split_series(series, args.split_after)
        plot_forecast(
            train,
            val,
            result.forecast,
            args.plot,
            title=f"{config.model} forecast, validation MAPE {result.val_mape:.2f} %",
        )
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"validation MAPE {result.val_mape:.2f} % after {len(result.history)} epochs "
            f"(lowest {best['val_mape']:.2f} % at epoch {best['epoch']})"
        )
        print(
            f"fit: {result.fit_seconds:.2f} s wall, {result.cpu_seconds:.2f} s CPU, "
            f"{result.epochs_per_second:.0f} epochs/s, peak RSS {summary['peak_rss_mb']:.0f} MB"
        )
        if args.plot:
            print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
