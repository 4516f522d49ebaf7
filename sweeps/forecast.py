"""`python -m sweeps.forecast RESULTS_DIR --data NEWER.csv`: forecast with the answer a sweep saved, without training
and without Ray.

The sweep saved its answer as one model in RESULTS_DIR/model (forecaster.answer.model). This reads a newer file of the
same data (the same series a month later, or series the model never saw: a global model forecasts them from their own
history), checks it as a sweep checks its data, and writes the forecast after each series' end: unique_id, ds,
answer, answer-lo-95, answer-lo-80, answer-hi-80, answer-hi-95 (and, with --quantiles, answer_ql0.1 ...).

A model that reads known-ahead covariates (a sweep run with --futr-exog) forecasts with their future values, given in
--futr-data for the points after each series' end; historic covariates come in --data beside y.

Examples:
  python -m sweeps.forecast results/panel-20261128-101500 --data stores-december.csv
  python -m sweeps.forecast results/sales --data sales-december.csv --futr-data promotions-january.csv
  python -m sweeps.forecast results/panel-20261128-101500 --data stores.csv --horizon 6 --levels 90 \
      --output next.parquet
  python -m sweeps.forecast results/sales --data sales-december.csv --quantiles 0.1 0.5 0.9
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
from typing import TYPE_CHECKING, cast

from forecaster.cli import add_options, levels_option, option, quantiles_option, read_options

DEFAULT_OUTPUT = "forecast.csv"
ROWS_SHOWN = 6

if TYPE_CHECKING:
    import pandas as pd

    from forecaster.answer.model import AnswerModel, Calibration
    from forecaster.data.panel import Panel


@dataclasses.dataclass(frozen=True)
class ForecastOptions:
    """What `python -m sweeps.forecast` is asked."""

    results_dir: str = option(
        None, "the sweep's folder, as the sweep printed it (or its model folder)", positional=True
    )
    data: str = option(
        None,
        "a CSV or Parquet file of the series to forecast, in the columns the sweep read (unique_id, ds, y)",
        required=True,
    )
    id_column: str | None = option(None, "the id column, where this file names it otherwise than the sweep's data")
    date_column: str | None = option(None, "the date column, where this file names it otherwise than the sweep's data")
    value_column: str | None = option(
        None, "the value column, where this file names it otherwise than the sweep's data"
    )
    futr_data: str | None = option(
        None,
        "the known-ahead covariates of the points to forecast (unique_id, ds and the --futr-exog columns the sweep "
        "read), as neuralforecast's futr_df; needed where the model reads any",
    )
    static_data: str | None = option(
        None, "one row per unique_id of the statics of series the model never trained on (as the sweep's)"
    )
    horizon: int | None = option(None, "points to forecast after each series' end (default: the sweep's)", type=int)
    levels: tuple[float, ...] | None = levels_option(
        "prediction intervals at these levels (percent) instead of the sweep's own; --levels alone: none"
    )
    quantiles: tuple[float, ...] = quantiles_option(
        "forecasts at these quantiles (e.g. 0.1 0.5 0.9) as well, as neuralforecast names them (answer_ql0.1)",
        absent=(),
    )
    output: str = option(DEFAULT_OUTPUT, "where to write the forecast, .csv or .parquet (in the current folder)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sweeps.forecast",
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return add_options(parser, ForecastOptions)


def main(argv: list[str] | None = None) -> int:
    args: ForecastOptions = read_options(ForecastOptions, build_parser().parse_args(argv))
    from forecaster.answer.model import AnswerModel

    try:
        model = AnswerModel.load(args.results_dir)
    except (OSError, ValueError, KeyError, RuntimeError) as error:  # none there, another format, files that disagree
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not args.output.endswith((".csv", ".parquet")):
        print(f"error: --output {args.output}: name a .csv or a .parquet file", file=sys.stderr)
        return 2
    try:
        columns = {"id": args.id_column, "date": args.date_column, "value": args.value_column}
        panel = model.read(args.data, columns, args.futr_data, args.static_data)
        horizon = model.horizon if args.horizon is None else args.horizon
        future = model.forecast(panel, horizon, args.levels, quantiles=args.quantiles)
    except ValueError as error:  # SeriesError: the data, or what was asked of it; nothing is written
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.output.endswith(".parquet"):
        future.to_parquet(args.output, index=False)
    else:
        future.to_csv(args.output, index=False)
    print("\n".join(described(model, panel, future, horizon, args)))
    return 0


def described(model: AnswerModel, panel: Panel, future: pd.DataFrame, horizon: int, args: ForecastOptions) -> list[str]:
    """What was forecast, what the model had not seen, and the first rows."""
    lines = [
        f"Forecast {horizon} points after the end of each of {len(panel):,} series of {args.data} with the answer of "
        f"{model.data.sweep or 'a sweep'} ({len(model.members)} models): {len(future):,} rows in {args.output}"
    ]
    new = model.new_series(panel)
    if new:
        lines += textwrap.wrap(
            f"{len(new)} series the model never trained on: {panel.id_list(new)}. Each of its models read them as "
            "it reads the others, with scalers and seasonal indices fit on their own history here; no sweep validated "
            "the answer on them, so judge their forecasts (and bounds) with more care.",
            110,
        )
    calibration = model.calibration
    if args.levels is None and calibration is not None and horizon > calibration.horizon:
        lines.append(
            f"No bounds: the intervals were calibrated on {calibration.horizon} steps ahead; ask --horizon "
            f"{calibration.horizon} or fewer for them."
        )
    elif args.levels is None and calibration is None:
        lines.append("No bounds: the sweep calibrated no intervals (run it with --levels 80 95 for them).")
    elif args.levels is None and not cast("Calibration", calibration).levels and not args.quantiles:
        lines.append("No bounds: the sweep asked for none; give --levels 80 95 or --quantiles 0.1 0.5 0.9 for them.")
    lines.append(textwrap.indent(future.head(ROWS_SHOWN).to_string(index=False, float_format="{:.4g}".format), "  "))
    return lines


if __name__ == "__main__":
    sys.exit(main())
