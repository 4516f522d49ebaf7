"""What daily data's year in the seasonal adjustment (forecaster/features/seasonal_adjustment.py, `deseasonalise`) is
worth to
the nets: one global fit per shape, with the year's profile and without it (the week's indices alone, as before it),
scored by the mean sMAPE of the validation part (each series' last `--horizon` days; no test window is cut, since
nothing is chosen here), on:

- **a generated panel**: 20 series of 3 years of days, each with its own level, its own year (an amplitude of 10-40 %
  and a peak on any day), a week (weekends lower) and AR(1) noise of 5 %;
- **Seattle's daily highest temperature**, 2012-2015 (vega_datasets' `seattle-weather.csv`, read from the wheel
  given with `--vega-wheel`: `pip download --no-deps vega_datasets==0.9.0`), where given: one series whose year is
  most of what moves it, and which crosses 0 (its year is subtracted, not divided).

Prints JSON.

    python bench/probes/year_season.py [--epochs 20] [--seeds 0 1 2]
        [--vega-wheel DIR/vega_datasets-0.9.0-py3-none-any.whl]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import forecaster.features.transforms as transforms
from forecaster.config import ForecasterConfig
from forecaster.data.read import load_panel
from forecaster.training.train import fit

SERIES, DAYS = 20, 3 * 365 + 1


def generated_panel(generator: np.random.Generator) -> pd.DataFrame:
    frames = []
    week = np.array([1.0, 1.05, 1.1, 1.05, 1.0, 0.8, 0.7])
    for series in range(SERIES):
        ds = pd.date_range("2021-01-01", periods=DAYS, freq="D")
        amplitude, peak, level = generator.uniform(0.1, 0.4), generator.uniform(0, 365.25), generator.uniform(50, 500)
        year = 1 + amplitude * np.cos(2 * np.pi * (ds.dayofyear.to_numpy() - peak) / 365.25)
        noise = np.zeros(DAYS)
        for day in range(1, DAYS):
            noise[day] = 0.6 * noise[day - 1] + 0.05 * generator.standard_normal()
        values = level * week[ds.dayofweek] * year * np.exp(noise)
        frames.append(pd.DataFrame({"unique_id": f"s{series}", "ds": ds, "y": values}))
    return pd.concat(frames, ignore_index=True)


def seattle_panel(wheel: Path) -> pd.DataFrame:
    with zipfile.ZipFile(wheel) as archive:
        table = pd.read_csv(io.BytesIO(archive.read("vega_datasets/_data/seattle-weather.csv")))
    return pd.DataFrame({"unique_id": "seattle", "ds": pd.to_datetime(table["date"]), "y": table["temp_max"]})


def validation_smape(frame: pd.DataFrame, shape: str, year: bool, horizon: int, epochs: int, seed: int) -> dict:
    """One global fit of the panel sweep's configuration of `shape` (deseasonalised), with or without the year."""
    config = ForecasterConfig(
        shape=shape,
        model="GRU",
        hidden_dim=32,
        input_chunk_length=round(1.5 * horizon),
        training_length=round(1.5 * horizon) + horizon,
        output_chunk_length=horizon if shape == "direct" else 0,
        n_epochs=epochs,
        batch_size=64,
        lr=3e-3,
        windows_per_epoch=2048,
        calendar=True,
        deseasonalise=True,
        target_transform="log_if_positive",
        window_norm="subtract",
        loss="l1",
        random_state=seed,
    )
    found = transforms.year_components
    if not year:
        transforms.year_components = lambda *arguments: None  # the week's indices alone, as before the year
    try:
        started = time.perf_counter()
        result = fit(config, load_panel(frame), val_size=horizon)
    finally:
        transforms.year_components = found
    return {
        "val_smape": round(float(result.history[-1]["val_smape"]), 3),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--horizon", type=int, default=28)
    parser.add_argument("--shapes", nargs="+", default=["recurrent", "direct"])
    parser.add_argument("--vega-wheel", type=Path, help="vega_datasets' wheel, for Seattle's temperatures")
    args = parser.parse_args()
    panels = {"generated": generated_panel(np.random.default_rng(0))}
    if args.vega_wheel is not None:
        panels["seattle"] = seattle_panel(args.vega_wheel)
    found: dict = {}
    for name, frame in panels.items():
        for shape in args.shapes:
            for year in (False, True):
                runs = [validation_smape(frame, shape, year, args.horizon, args.epochs, seed) for seed in args.seeds]
                scores = [run["val_smape"] for run in runs]
                found[f"{name} {shape} {'with' if year else 'without'} the year"] = {
                    "median_val_smape": float(np.median(scores)),
                    "val_smape": scores,
                    "seconds": [run["seconds"] for run in runs],
                }
                print(json.dumps({f"{name} {shape} year={year}": scores}), file=sys.stderr, flush=True)
    print(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
