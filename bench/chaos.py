"""A sweep on a local multi-node Ray cluster while worker nodes die at random: what is lost, what it costs.

Each sweep gets a fresh real cluster (ray.cluster_utils.Cluster: a head that trains nothing and --workers
worker nodes). The same sweep runs once without faults, then once for each --kill-every interval while
the main thread kills a random worker node that often (give or take half) with
`remove_node(allow_graceful=False)`, as a preempted spot instance dies, and adds a fresh node in its place,
as an autoscaler would. The sweep uses FIFO so that every run trains every trial to its full budget: the
time ratio is then the cost of the faults alone, not of different early-stopping decisions.

It prints JSON: per kill interval, trials planned, completed, errored, lost (planned but missing from the
results), duplicated, retries (failures recovered from a checkpoint), nodes killed, the wall time of
Tuner.fit against the fault-free run (the goal: 0 lost, ratio below 1.5), and for every retry the seconds
from its process being up (placed and started: the fault log's "restarted") to its first epoch, and from
Tune's decision to retry it to that epoch. Medians over --runs seeds. The nodes preload the trials' code as
the sweep's own Ray does (sweeps.trials.ray_session.WARM_WORKERS); SWEEPS_WARM_WORKERS=0 measures without.

    python bench/chaos.py [--runs 3] [--trials 12] [--epochs 100] [--kill-every 8 15 30]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# About 40 ms an epoch on one CPU: a trial of 100 epochs lasts long enough for nodes to die under it.
TRIAL = {"model": "GRU", "hidden_dim": 64, "n_rnn_layers": 2, "dropout": 0.1, "batch_size": 8}


def kill_nodes_until(
    done: threading.Event, cluster, cpus_per_node: int, every: float, rng: random.Random
) -> list[tuple[float, float]]:
    """Kills a random worker node every `every` seconds (+-50 %) and starts a replacement at once, until
    `done`; returns (when it killed, seconds the replacement took to start) for each. Runs on the main thread:
    Ray's Node registers signal handlers."""
    kills = []
    while not done.wait(every * rng.uniform(0.5, 1.5)):
        killed_at = time.time()
        cluster.remove_node(rng.choice(list(cluster.worker_nodes)), allow_graceful=False)
        cluster.add_node(num_cpus=cpus_per_node)
        kills.append((killed_at, time.time() - killed_at))
    return kills


def run_once(args, seed: int, storage: str, kill_every: float | None) -> dict:
    """One sweep on a fresh cluster; with `kill_every` seconds, a worker node dies that often."""
    import ray
    from ray.cluster_utils import Cluster

    from sweeps.driver import run_sweep
    from sweeps.plan.sweep_plan import make_plan
    from sweeps.trials.ray_session import warm_workers

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "_system_config": warm_workers()})
    for _ in range(args.workers):
        cluster.add_node(num_cpus=args.cpus_per_node)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    plan = make_plan(
        "air_rnn",
        num_samples=args.trials,
        max_epochs=args.epochs,
        scheduler="fifo",
        seed=seed,
        pins=TRIAL,
        max_failures=args.max_failures,
        storage_path=storage,
        name=f"kill-every-{kill_every}-{seed}",
    )
    outcome, done = {}, threading.Event()

    def sweep() -> None:
        try:
            outcome["run"] = run_sweep(plan, ["bench/chaos.py"], progress=False)
        finally:
            done.set()

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    try:
        kills = (
            kill_nodes_until(done, cluster, args.cpus_per_node, kill_every, random.Random(seed)) if kill_every else []
        )
        sweeper.join()
    finally:
        ray.shutdown()
        cluster.shutdown()
    run = outcome["run"]
    trials = run.results.trials
    completed = int(trials["status"].isin(["COMPLETED", "STOPPED"]).sum())
    errored = int((trials["status"] == "ERROR").sum())
    return {
        "seed": seed,
        "kill_every_seconds": kill_every,
        "tuner_fit_seconds": run.fit_seconds,
        "planned": plan.sweep.num_samples,
        "completed": completed,
        "errored": errored,
        # Every planned trial must end finished or failed: any other ending (never run, left unfinished,
        # vanished from the results) is a lost trial; rows beyond the plan are duplicates.
        "lost": max(0, plan.sweep.num_samples - completed - errored),
        "duplicated": max(0, len(trials) - plan.sweep.num_samples),
        "retries": int(trials["failures"].sum()),
        "nodes_killed": len(kills),
        "replacement_start_s": [round(seconds, 2) for _, seconds in kills],
        "epochs_total": int(trials["epochs"].sum()),
        **retry_latencies(plan.experiment_path, run.results.histories, [at for at, _ in kills]),
    }


def retry_latencies(experiment_path: str, histories: dict, kill_times: list[float]) -> dict:
    """Seconds from each retry's process start, and from Tune's decision to retry, to its first epoch; and from each
    kill to Tune's decision to retry the trials it hit (how long a node's death takes to be noticed)."""
    from sweeps.plan.storage import SweepFolder

    started, decided = [], []
    faults = SweepFolder(experiment_path).faults()
    noticed = [
        fault["time"] - max(at for at in kill_times if at <= fault["time"])
        for fault in faults
        if fault["event"] == "retried" and any(at <= fault["time"] for at in kill_times)
    ]
    for fault in faults:
        if fault["event"] != "restarted" or fault["trial_id"] not in histories:
            continue
        history = histories[fault["trial_id"]]
        later = history[history["reported_at"] > fault["time"]]
        if not len(later):
            continue
        first_epoch = float(later["reported_at"].min())
        retried = [
            f["time"]
            for f in faults
            if f["trial_id"] == fault["trial_id"] and f["event"] == "retried" and f["time"] <= fault["time"]
        ]
        started.append(first_epoch - fault["time"])
        if retried:
            decided.append(first_epoch - max(retried))
    return {"restart_to_first_epoch_s": started, "retry_to_first_epoch_s": decided, "kill_to_retry_s": noticed}


def spread(values: list[float]) -> dict:
    if not values:
        return {"count": 0}
    return {"count": len(values), "median": round(statistics.median(values), 2), "max": round(max(values), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="repetitions, each with its own seed")
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2, help="worker nodes (the head trains nothing)")
    parser.add_argument("--cpus-per-node", type=int, default=1, help="one trial per CPU")
    parser.add_argument(
        "--kill-every",
        type=float,
        nargs="+",
        default=[8.0, 15.0, 30.0],
        help="seconds between node kills, on average: one faulty sweep for each",
    )
    parser.add_argument("--max-failures", type=int, default=10, help="retries per trial")
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")

    calm, chaotic = [], {every: [] for every in args.kill_every}
    # Ray prints dying raylets' last words on stdout: keep stdout for the JSON alone.
    with tempfile.TemporaryDirectory() as storage, contextlib.redirect_stdout(sys.stderr):
        for seed in range(args.runs):
            calm.append(run_once(args, seed, storage, None))
            for every in args.kill_every:
                run = run_once(args, seed, storage, every)
                run["time_ratio"] = run["tuner_fit_seconds"] / calm[-1]["tuner_fit_seconds"]
                chaotic[every].append(run)
    report = {
        "benchmark": "chaos",
        "settings": vars(args),
        "without_faults": {
            "median_tuner_fit_seconds": statistics.median(r["tuner_fit_seconds"] for r in calm),
            "runs": calm,
        },
        "with_faults": [
            {
                "kill_every_seconds": every,
                "median": {
                    key: statistics.median(r[key] for r in runs)
                    for key in ("tuner_fit_seconds", "time_ratio", "nodes_killed", "retries")
                },
                "restart_to_first_epoch_s": spread([s for r in runs for s in r["restart_to_first_epoch_s"]]),
                "retry_to_first_epoch_s": spread([s for r in runs for s in r["retry_to_first_epoch_s"]]),
                "kill_to_retry_s": spread([s for r in runs for s in r["kill_to_retry_s"]]),
                "replacement_start_s": spread([s for r in runs for s in r["replacement_start_s"]]),
                "total": {
                    key: sum(r[key] for r in runs)
                    for key in ("planned", "completed", "errored", "lost", "duplicated", "retries", "nodes_killed")
                },
                "runs": runs,
            }
            for every, runs in chaotic.items()
        ],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
