"""How many trials should share one GPU? The aggregate training speed of 1, 2, 4, 8 and 16 trials on one card.

For each count N it runs a sweep of N trials of the seed-sized model (FIFO, every trial its full --epochs) with
`--gpus-per-trial 1/N` on a local Ray that has one GPU and N CPUs, so that all N train at once on the card, and
reports the aggregate epochs per second (all trials' epochs over Tuner.fit's time), the card's memory each
trial held at most (torch.cuda.max_memory_reserved, as every report of a trial on a GPU carries it), how busy the
card was while they shared it (bench/support/gpu_busy.py: the mean share of time a kernel ran, sampled every 0.25 s
during Tuner.fit), and the same N trials on the CPU (--gpus-per-trial 0, N CPUs) for comparison.

    python bench/gpu_packing.py [--trials 1 2 4 8 16] [--epochs 200] [--workload seed|panel] [--placements gpu cpu]

`--workload panel` runs the m3_monthly sweep's trials instead (one global GRU of 64 units on M3's 1,428 monthly
series, 16,384 windows of 29 points per epoch in batches of 512, the validation of every series each epoch; the
benchmarks extra): the work that a GPU serves, against the seed model's few hundred windows. Its report adds the
windows trained per second.

Where torch sees no GPU, `--logical` runs the same code on logical GPUs (Ray's num_gpus with trials training on
the CPU, the sweep's --train-on-cpu): the placement is real, the speeds are the CPU's. The tests run it so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.support.gpu_busy import GpuBusy

SEED_CONFIG = {
    "model": "RNN",
    "hidden_dim": 20,
    "n_rnn_layers": 1,
    "dropout": 0.0,
    "batch_size": 16,
    "lr": 1e-3,
    "training_length": 20,
    "input_chunk_length": 14,
}


PANEL_CONFIG = {
    "model": "GRU",
    "hidden_dim": 64,
    "lr": 3e-3,
    "input_chunk_length": 18,
}
WORKLOADS = {"seed": ("air_rnn", SEED_CONFIG), "panel": ("m3_monthly", PANEL_CONFIG)}


def run(
    trials: int,
    gpus_per_trial: float,
    epochs: int,
    storage: str,
    logical: bool,
    workload: str = "seed",
    windows_per_epoch: int | None = None,
) -> dict:
    import ray

    from sweeps.driver import run_trials
    from sweeps.plan.sweep_plan import make_plan
    from sweeps.trials.results import collect

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    cpus = max(trials, 1)
    ray.init(
        address="local",
        num_cpus=cpus,
        num_gpus=1 if gpus_per_trial else 0,
        include_dashboard=False,
        log_to_driver=False,
    )
    try:
        sweep, pins = WORKLOADS[workload]
        pins = pins | ({"windows_per_epoch": windows_per_epoch} if windows_per_epoch else {})
        plan = make_plan(
            sweep,
            num_samples=trials,
            max_epochs=epochs,
            scheduler="fifo",
            seed=0,
            pins=pins,
            gpus_per_trial=gpus_per_trial,
            cpus_per_trial=1,
            storage_path=storage,
            name=f"{trials}-{gpus_per_trial}",
            train_on_cpu=logical,
        )
        with GpuBusy() if gpus_per_trial and not logical else contextlib.nullcontext() as busy:
            # The trials only: the answer and the baselines are no part of the training speed.
            run = run_trials(plan, ["bench/gpu_packing.py"], progress=False)
        fit_seconds = run.fit_seconds
        results = collect(run.plan)
    finally:
        ray.shutdown()
    histories = results.histories.values()
    epochs_run = sum(len(history) for history in histories)
    memory = [float(h["gpu_memory_mb"].max()) for h in histories if "gpu_memory_mb" in h]
    windows = plan.sweep.space["windows_per_epoch"]
    return {
        "workload": workload,
        "trials": trials,
        "gpus_per_trial": gpus_per_trial,
        "tuner_fit_seconds": fit_seconds,
        "epochs": epochs_run,
        "aggregate_epochs_per_second": epochs_run / fit_seconds,
        "aggregate_windows_per_second": epochs_run * windows / fit_seconds if workload == "panel" else None,
        "nodes": sorted({str(h["node"].iloc[-1]) for h in histories}),
        "gpu_memory_mb_per_trial": statistics.median(memory) if memory else None,
        "trained_on": "cpu (logical GPUs)" if logical else ("cuda" if gpus_per_trial else "cpu"),
        **(busy.summary() if busy else {}),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--logical", action="store_true", help="logical GPUs, training on the CPU (no GPU here)")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="seed", help="the seed model or m3_monthly's")
    parser.add_argument("--windows-per-epoch", type=int, help="fewer windows per epoch than the workload's (a check)")
    parser.add_argument(
        "--placements", nargs="+", choices=["gpu", "cpu"], default=["gpu", "cpu"], help="on the card, the CPUs, or both"
    )
    args = parser.parse_args(argv)
    if not args.logical:
        import torch

        if not torch.cuda.is_available():
            parser.error("torch sees no CUDA GPU here; --logical runs the same code on logical GPUs")
    report = {
        "benchmark": "gpu_packing",
        "workload": args.workload,
        "epochs_per_trial": args.epochs,
        "gpu": [],
        "cpu": [],
    }
    with tempfile.TemporaryDirectory() as storage:
        for trials in args.trials:
            for placed, gpus in (("gpu", 1 / trials), ("cpu", 0.0)):
                if placed not in args.placements:
                    continue
                report[placed].append(
                    run(trials, gpus, args.epochs, storage, args.logical, args.workload, args.windows_per_epoch)
                )
    if not args.logical:
        import torch

        report["device"] = torch.cuda.get_device_name(0)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
