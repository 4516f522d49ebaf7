"""One global fit on a panel, as the panel grows, for each model shape: seconds per epoch, windows per second,
validation time, peak RSS.

Workloads: m3_monthly (1,428 series, the benchmarks extra) and generated panels of 1k, 10k and 100k monthly series of
120 points each (seasonal, trended, noisy, every series on its own scale), each with the last 18 points of every
series held out and the 18 before them validating. Every workload is one fresh process (its peak RSS is its own), on
the CPU with one thread and, where torch sees a GPU, on the GPU. An epoch is `windows_per_epoch` windows whatever
the number of series, so the seconds per epoch should stay flat while the validation (every series, every epoch)
and the memory grow linearly.

    python bench/panel_fit.py [--sizes 1000 10000 100000] [--epochs 6] [--no-m3] [--devices cpu gpu]
        [--shapes recurrent direct hybrid] [--covariates]

With --covariates, each generated panel also runs with 4 covariates (forecaster/features/step_inputs.py): a promotion
flag and
a price known ahead, a temperature known only up to each point, a store size per series; `covariate_ratios` gives the
seconds per epoch with them over without, shape by shape.

The recurrent shape (windows of 25 points, 18 read before forecasting, a forecast fed back step by step), the
direct shape (an input chunk of 72 points, 4 horizons, and a block of 18 from one pass) and the hybrid (27 points
read less each series' smoothed level and season, which every step smooths through the whole series).

Each epoch's validation forecast is timed inside the epoch, on the device that trained it, with the device
synchronized before every reading of the clock: training seconds per epoch are the epoch's minus its validation's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HORIZON = 18
RECURRENT = {
    "model": "GRU",
    "hidden_dim": 32,
    "batch_size": 256,
    "lr": 3e-3,
    "training_length": 24,
    "input_chunk_length": 18,
    "target_transform": "log",
    "window_norm": "subtract",
    "calendar": True,
    "windows_per_epoch": 4096,
}
DIRECT = {**RECURRENT, "shape": "direct", "input_chunk_length": 4 * HORIZON, "output_chunk_length": HORIZON}
"""The direct shape at a lookback of 4 horizons (72 points: longer than many M3 series, which it pads)."""
HYBRID = {
    **RECURRENT,
    "shape": "hybrid",
    "input_chunk_length": 27,
    "output_chunk_length": HORIZON,
    "target_transform": "none",
    "window_norm": "none",
    "calendar": False,
    "loss": "pinball",
    "windows_from_last": 5 * HORIZON,
}
"""The hybrid shape (Smyl's ES-RNN) at a lookback of 1.5 horizons, its windows from each series' last 5."""
SHAPES = {"recurrent": RECURRENT, "direct": DIRECT, "hybrid": HYBRID}
COVARIATES = "+4 covariates"
"""The suffix of a generated workload with covariates."""


def generated_panel(series: int, length: int = 120, seed: int = 0, covariates: bool = False):
    """Monthly series, each with its own level (1 to 10,000), trend, seasonal amplitude and phase, and noise, as a
    long table (ids as a categorical column, as a Parquet file's dictionary-encoded ids load) read by load_panel; with
    `covariates`, 4 of them beside: a 0/1 promotion and a price known ahead, a temperature historic, a size static."""
    import numpy as np
    import pandas as pd

    from forecaster.data.read import load_panel

    generator = np.random.default_rng(seed)
    values = np.empty((series, length))
    t = np.arange(length)[None, :]
    for start in range(0, series, 10_000):  # in blocks: the temporaries of 100,000 x 120 would dwarf the panel
        block = min(10_000, series - start)
        level = 10 ** generator.uniform(0, 4, (block, 1))
        trend = generator.normal(0.003, 0.004, (block, 1))
        amplitude = generator.uniform(0.0, 0.3, (block, 1))
        phase = generator.uniform(0, 2 * np.pi, (block, 1))
        noise = generator.uniform(0.01, 0.08, (block, 1)) * generator.standard_normal((block, length))
        values[start : start + block] = level * np.exp(
            trend * t + amplitude * np.sin(2 * np.pi * t / 12 + phase) + noise
        )
    ids = pd.Categorical.from_codes(np.repeat(np.arange(series), length), [f"g{i}" for i in range(series)])
    frame = pd.DataFrame({"unique_id": ids, "ds": np.tile(np.arange(1, length + 1), series), "y": values.reshape(-1)})
    if not covariates:
        return load_panel(frame, season_length=12)
    points = len(frame)
    frame["promo"] = (generator.random(points) < 0.1).astype(float)
    frame["price"] = 10 + generator.standard_normal(points)
    frame["temp"] = 15 + 5 * np.sin(np.arange(points) / 3) + generator.standard_normal(points)
    statics = pd.DataFrame({"unique_id": [f"g{i}" for i in range(series)], "size": generator.uniform(1, 3, series)})
    return load_panel(frame, season_length=12, futr_exog=["promo", "price"], hist_exog=["temp"], static_data=statics)


def epoch_clock(device: str):
    """A Lightning callback that keeps the wall time of every epoch and of the validation forecast inside it, each
    read once the device has finished the work queued before it (CUDA runs asynchronously): an epoch's training
    time is the one minus the other, both taken on the device the fit ran on, so it cannot come out negative."""
    import lightning as L
    import torch

    synchronize = torch.cuda.synchronize if device == "gpu" else (lambda: None)

    class EpochClock(L.Callback):
        def __init__(self):
            self.epochs, self.validations, self.started = [], [], 0.0

        def on_fit_start(self, trainer, module):
            predict = module.predict  # what training_step calls to score the epoch on every series

            def timed(*args, **kwargs):
                synchronize()
                begun = time.perf_counter()
                forecast = predict(*args, **kwargs)
                synchronize()
                self.validations.append(time.perf_counter() - begun)
                return forecast

            module.predict = timed

        def on_fit_end(self, trainer, module):
            del module.predict

        def on_train_epoch_start(self, trainer, module):
            synchronize()
            self.started = time.perf_counter()

        def on_train_epoch_end(self, trainer, module):
            synchronize()
            self.epochs.append(time.perf_counter() - self.started)

    return EpochClock()


def one(workload: str, device: str, epochs: int, shape: str) -> dict:
    """One fit in this process: the figures of one workload on one device."""
    from forecaster.config import ForecasterConfig
    from forecaster.data.read import load_panel
    from forecaster.training.train import fit, quiet_lightning

    quiet_lightning()
    started = time.perf_counter()
    if workload == "m3_monthly":
        panel = load_panel("m3_monthly")
    else:
        panel = generated_panel(int(workload.removesuffix(COVARIATES)), covariates=workload.endswith(COVARIATES))
    loaded = time.perf_counter() - started
    config = ForecasterConfig(**SHAPES[shape], n_epochs=epochs)
    clock = epoch_clock(device)
    result = fit(config, panel, val_size=HORIZON, test_size=HORIZON, callbacks=[clock], accelerator=device, threads=1)
    later = slice(1, None) if len(clock.epochs) > 1 else slice(None)  # the first epoch warms up (allocations, kernels)
    per_epoch = statistics.median(clock.epochs[later])
    training = statistics.median(e - v for e, v in zip(clock.epochs[later], clock.validations[later]))
    return {
        "data": workload,
        "shape": shape,
        "device": device,
        "trained_on": result.trained_on,
        "series": len(panel),
        "points": len(panel.values),
        "training_windows": int(result.model.trainer.datamodule.windows.total),
        "epochs": len(result.history),
        "seconds_per_epoch": per_epoch,
        "validation_seconds": statistics.median(clock.validations[later]),
        "training_seconds_per_epoch": training,
        "windows_per_second": config.windows_per_epoch / training,
        "first_epoch_seconds": clock.epochs[0],
        "load_seconds": loaded,
        "fit_seconds": result.fit_seconds,
        "whole_seconds": time.perf_counter() - started,
        "val_smape": result.history[-1]["val_smape"],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--no-m3", action="store_true", help="leave out m3_monthly (it needs the benchmarks extra)")
    parser.add_argument(
        "--devices",
        nargs="+",
        choices=["cpu", "gpu"],
        help="where to fit (default: the CPU, and the GPU where torch sees one)",
    )
    parser.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES), help="the model shapes")
    parser.add_argument("--covariates", action="store_true", help="each generated panel with 4 covariates too")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cpu", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.device, args.epochs, args.shapes[0])))
        return

    import torch

    devices = args.devices or ["cpu", *(["gpu"] if torch.cuda.is_available() else [])]
    if "gpu" in devices and not torch.cuda.is_available():
        parser.error("--devices gpu: torch sees no CUDA GPU here")
    workloads = ([] if args.no_m3 else ["m3_monthly"]) + [str(size) for size in args.sizes]
    if args.covariates:
        workloads += [f"{size}{COVARIATES}" for size in args.sizes]
    rows = []
    for device in devices:
        for workload in workloads:
            for shape in args.shapes:
                command = [sys.executable, __file__, "--one", workload, "--device", device, "--shapes", shape]
                command += ["--epochs", str(args.epochs)]
                done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ))
                if done.returncode != 0:
                    raise SystemExit(f"{workload} on {device} ({shape}) failed:\n{done.stderr[-3000:]}")
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(json.dumps(rows[-1]), file=sys.stderr)
    scaling = {}
    for device in devices:
        for shape in args.shapes:
            generated = [row for row in rows if (row["device"], row["shape"]) == (device, shape)]
            generated = [row for row in generated if row["data"] != "m3_monthly" and COVARIATES not in row["data"]]
            if len(generated) < 2:
                continue
            small, large = generated[0], generated[-1]
            factor = large["series"] / small["series"]
            scaling[f"{shape} on {device}"] = {
                "series_ratio": factor,
                "seconds_per_epoch_ratio": large["seconds_per_epoch"] / small["seconds_per_epoch"],
                "training_seconds_per_epoch_ratio": large["training_seconds_per_epoch"]
                / small["training_seconds_per_epoch"],
                "validation_seconds_ratio": large["validation_seconds"] / small["validation_seconds"],
                "peak_rss_ratio": large["peak_rss_mb"] / small["peak_rss_mb"],
            }
    covariate_ratios = {}
    for row in rows:
        if COVARIATES in row["data"]:
            plain = row["data"].removesuffix(COVARIATES)
            (without,) = [
                r for r in rows if (r["data"], r["shape"], r["device"]) == (plain, row["shape"], row["device"])
            ]
            covariate_ratios[f"{row['shape']} on {row['device']}, {plain} series"] = {
                "seconds_per_epoch_ratio": row["seconds_per_epoch"] / without["seconds_per_epoch"],
                "training_seconds_per_epoch_ratio": row["training_seconds_per_epoch"]
                / without["training_seconds_per_epoch"],
            }
    print(
        json.dumps(
            {
                "bench": "panel_fit",
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__},
                "configs": SHAPES,
                "horizon": HORIZON,
                "workloads": rows,
                "scaling": scaling,
                "covariate_ratios": covariate_ratios,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
