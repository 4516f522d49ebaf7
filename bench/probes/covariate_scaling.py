"""How a numeric covariate should be scaled: each series' own mean and deviation, or one pair over every series
(`ForecasterConfig.covariate_scaling`), on two generated daily panels whose covariate means each of the two:

- **price**: each store's usual price is its own (5 to 50); its sales rise 2 % for every 1 % off that usual price.
  What moves the sales is the price against the store's own, which per-series scaling shows as it is.
- **temperature**: each region's climate is its own (a mean of 0 to 25 degrees); its load rises 4 % per degree below
  18. What moves the load is the temperature in degrees, the same everywhere, which shared scaling keeps.

One global fit per panel, shape and rule, on every series' training part; scored by the mean sMAPE of the validation
part (the 14 days after it; no test window is cut, since nothing is chosen here beyond the stated rule). Prints JSON.

`--paths` compares instead how the covariates enter (`ForecasterConfig.covariate_path`: read by the net, a linear
term beside it, or not at all), each covariate scaled per series, on those two panels and on a third:

- **promotion**: each store's sales 2.5 times as high on promotion days (12 % of days, at random), a 0/1 column.

    python bench/probes/covariate_scaling.py [--epochs 20] [--shapes recurrent direct] [--seed 0] [--paths]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from forecaster.config import ForecasterConfig
from forecaster.data.read import load_panel
from forecaster.training.train import fit

SERIES, DAYS, VALIDATION = 20, 365, 14


def price_panel(generator: np.random.Generator) -> pd.DataFrame:
    frames = []
    for store in range(SERIES):
        usual, base = generator.uniform(5, 50), generator.uniform(50, 150)
        off = generator.choice([0.0, 0.1, 0.2, 0.3], size=DAYS, p=[0.7, 0.1, 0.1, 0.1])
        week = 1 + 0.2 * np.sin(np.arange(DAYS) * 2 * np.pi / 7)
        sales = base * week * (1 + 2 * off) * (1 + 0.03 * generator.standard_normal(DAYS))
        frames.append(_frame(f"store{store}", sales, price=usual * (1 - off)))
    return pd.concat(frames)


def temperature_panel(generator: np.random.Generator) -> pd.DataFrame:
    frames = []
    for region in range(SERIES):
        climate, base = generator.uniform(0, 25), generator.uniform(50, 150)
        seasons = 8 * np.sin((np.arange(DAYS) + generator.integers(0, 30)) * 2 * np.pi / 365.25)
        temperature = climate + seasons + 3 * generator.standard_normal(DAYS)
        week = 1 + 0.1 * np.sin(np.arange(DAYS) * 2 * np.pi / 7)
        load = base * week * (1 + 0.04 * np.maximum(18 - temperature, 0)) * (1 + 0.03 * generator.standard_normal(DAYS))
        frames.append(_frame(f"region{region}", load, temperature=temperature))
    return pd.concat(frames)


def promotion_panel(generator: np.random.Generator) -> pd.DataFrame:
    frames = []
    for store in range(SERIES):
        base = generator.uniform(50, 150)
        promo = (generator.random(DAYS) < 0.12).astype(float)
        week = 1 + 0.2 * np.sin(np.arange(DAYS) * 2 * np.pi / 7 + store)
        sales = base * week * (1 + 1.5 * promo) * (1 + 0.03 * generator.standard_normal(DAYS))
        frames.append(_frame(f"store{store}", sales, promo=promo))
    return pd.concat(frames)


def _frame(name: str, values: np.ndarray, **covariate: np.ndarray) -> pd.DataFrame:
    ds = pd.date_range("2024-01-01", periods=len(values), freq="D")
    return pd.DataFrame({"unique_id": name, "ds": ds, "y": values, **covariate})


def validation_smape(
    frame: pd.DataFrame, column: str, shape: str, scaling: str, epochs: int, seed: int, path: str = "net"
) -> dict:
    panel = load_panel(frame, futr_exog=[column])
    config = ForecasterConfig(
        shape=shape,
        model="GRU",
        hidden_dim=32,
        input_chunk_length=14,
        training_length=28,
        output_chunk_length=14 if shape == "direct" else 0,
        n_epochs=epochs,
        batch_size=64,
        lr=3e-3,
        windows_per_epoch=4096,
        calendar=True,
        target_transform="log_if_positive",
        window_norm="subtract",
        loss="mse",
        covariate_scaling=scaling,
        covariate_path=path,
        random_state=seed,
    )
    started = time.perf_counter()
    result = fit(config, panel, val_size=VALIDATION, metric="smape", threads=1)
    scores = [row["val_smape"] for row in result.history]
    return {
        "validation_smape": round(scores[-1], 3),
        "best": round(min(scores), 3),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--shapes", nargs="+", default=["recurrent", "direct"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paths", action="store_true", help="compare how the covariates enter, not their scaling")
    args = parser.parse_args()
    panels = {
        "price": (price_panel(np.random.default_rng(args.seed)), "price"),
        "temperature": (temperature_panel(np.random.default_rng(args.seed)), "temperature"),
    }
    if args.paths:
        panels["promotion"] = (promotion_panel(np.random.default_rng(args.seed)), "promo")
    found: dict = {}
    for name, (frame, column) in panels.items():
        for shape in args.shapes:
            for way in ("net", "linear", "none") if args.paths else ("series", "shared"):
                scaling, path = ("series", way) if args.paths else (way, "net")
                found.setdefault(name, {}).setdefault(shape, {})[way] = validation_smape(
                    frame, column, shape, scaling, args.epochs, args.seed, path
                )
    bench = "covariate_paths" if args.paths else "covariate_scaling"
    print(json.dumps({"bench": bench, "epochs": args.epochs, "seed": args.seed, "panels": found}, indent=1))


if __name__ == "__main__":
    main()
