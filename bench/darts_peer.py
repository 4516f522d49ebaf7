"""The peer: Darts' RNNModel on the seed config, timed as the reference figures were (progress bar off).

Run with the Python of a separate environment that has darts installed (`make darts-env`): Darts pulls
in `pytorch_lightning`, which must not share an environment with this project's `lightning`.
Prints one JSON line: wall and CPU seconds of `fit`, val MAPE of the 23-month forecast; with --seeds N,
the val MAPE of seeds 0..N-1 instead.
"""

import argparse
import json
import logging
import time
import warnings
from pathlib import Path

import pandas as pd
import torch

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

from darts import TimeSeries  # noqa: E402
from darts.dataprocessing.transformers import Scaler  # noqa: E402
from darts.metrics import mape  # noqa: E402
from darts.models import RNNModel  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="RNN")
parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's own)")
parser.add_argument("--seeds", type=int, default=0, help="report the val MAPE of this many seeds instead of timing")
args = parser.parse_args()
if args.threads:
    torch.set_num_threads(args.threads)

csv = Path(__file__).resolve().parent.parent / "forecaster" / "data" / "datasets" / "air_passengers.csv"
series = TimeSeries.from_dataframe(pd.read_csv(csv), "Month", "#Passengers")
train, val = series.split_after(pd.Timestamp("1959-01-01"))
scaler = Scaler()
train_scaled = scaler.fit_transform(train)


def fit_and_score(random_state):
    model = RNNModel(
        model=args.model,
        hidden_dim=20,
        dropout=0,
        batch_size=16,
        n_epochs=300,
        optimizer_kwargs={"lr": 1e-3},
        training_length=20,
        input_chunk_length=14,
        random_state=random_state,
        pl_trainer_kwargs={"enable_progress_bar": False, "enable_model_summary": False, "logger": False},
    )
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(train_scaled, verbose=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    forecast = scaler.inverse_transform(model.predict(n=len(val), verbose=False))
    return wall, cpu, float(mape(val, forecast))


if args.seeds:
    print(json.dumps({"model": args.model, "val_mape_by_seed": [fit_and_score(seed)[2] for seed in range(args.seeds)]}))
else:
    wall, cpu, val_mape = fit_and_score(42)
    print(
        json.dumps(
            {
                "model": args.model,
                "threads": torch.get_num_threads(),
                "fit_wall_seconds": wall,
                "fit_cpu_seconds": cpu,
                "val_mape": val_mape,
            }
        )
    )
