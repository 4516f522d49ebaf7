"""A SweepPlan as a Ray Tune Tuner: the trainable with its resources and data, the scheduler, the search."""

from __future__ import annotations

import math
import os
from typing import Any

from sweeps.faults import FaultLog, HangWatchdog
from sweeps.plan import PlanError, SweepPlan
from sweeps.registry import Sweep
from sweeps.resources import TrialResources
from sweeps.space import Choice, LogUniform, to_optuna, to_tune
from sweeps.trial import TrialSettings, train_trial


def checkpoints_kept(sweep: Sweep) -> int:
    """Per trial, the latest ones: each holds the training state to resume from and the trial's best model.

    PBT copies other trials' checkpoints, and needs them kept a little longer.
    """
    return 4 if sweep.scheduler == "pbt" else 2


def checkpoint_schedule(sweep: Sweep) -> tuple[int, tuple[int, ...]]:
    """How often a trial checkpoints, and at which epochs besides: where its scheduler decides about it.

    ASHA stops a trial right after the report of a rung's epoch (grace_period * reduction_factor^k), so a
    checkpoint there means a stopped trial's last report holds its best model. HyperBand pauses trials and
    resumes them from their latest checkpoint, PBT copies checkpoints every perturbation interval.
    """
    if sweep.scheduler == "pbt":
        return perturbation_interval(sweep), ()
    if sweep.scheduler == "hyperband":
        return 1, ()
    if sweep.scheduler == "median":
        return 10, ()
    if sweep.scheduler == "asha":
        grace = int(sweep.scheduler_options.get("grace_period", 1))
        reduction = sweep.scheduler_options.get("reduction_factor", 3)
        rungs, rung = [], grace
        while rung < sweep.max_epochs:
            rungs.append(math.ceil(rung))
            rung *= reduction
        return 25, tuple(rungs)
    return 25, ()


def perturbation_interval(sweep: Sweep) -> int:
    return int(sweep.scheduler_options.get("perturbation_interval", max(1, sweep.max_epochs // 10)))


def scheduler_metric(sweep: Sweep) -> str:
    """PBT copies a trial's current weights, so it compares current scores; the others, each trial's best."""
    return "val_mape" if sweep.scheduler == "pbt" else sweep.metric


def build_scheduler(sweep: Sweep):
    from ray import tune
    from ray.tune.schedulers import (ASHAScheduler, FIFOScheduler, HyperBandScheduler, MedianStoppingRule,
                                     PopulationBasedTraining)

    options = sweep.scheduler_options
    grace = int(options.get("grace_period", 1))
    reduction = options.get("reduction_factor", 3)
    if sweep.scheduler == "asha":
        return ASHAScheduler(time_attr="epoch", max_t=sweep.max_epochs, grace_period=grace, reduction_factor=reduction)
    if sweep.scheduler == "hyperband":
        return HyperBandScheduler(time_attr="epoch", max_t=sweep.max_epochs, reduction_factor=reduction)
    if sweep.scheduler == "median":
        return MedianStoppingRule(time_attr="epoch", grace_period=grace, min_samples_required=3)
    if sweep.scheduler == "pbt":
        # Only what can change in the middle of training: the learning rate and the batch size.
        mutations: dict[str, Any] = {}
        lr, batch = sweep.space.get("lr"), sweep.space.get("batch_size")
        if isinstance(lr, LogUniform):
            mutations["lr"] = tune.loguniform(lr.low, lr.high)
        if isinstance(batch, Choice):
            mutations["batch_size"] = list(batch.values)
        if not mutations:
            raise PlanError("--scheduler pbt needs lr (log-uniform) or batch_size (a choice) searched, to mutate them")
        return PopulationBasedTraining(time_attr="epoch", perturbation_interval=perturbation_interval(sweep),
                                       hyperparam_mutations=mutations)
    return FIFOScheduler()


def build_search(plan: SweepPlan):
    """The search algorithm and the param_space it goes with."""
    from ray.tune.search import BasicVariantGenerator

    if plan.sweep.search == "optuna":
        try:
            import optuna
            from ray.tune.search.optuna import OptunaSearch
        except ImportError:
            raise PlanError("--search optuna needs Optuna: pip install optuna (or the project's [optuna] extra)") from None
        sampler = optuna.samplers.TPESampler(seed=plan.seed)
        return OptunaSearch(space=to_optuna(plan.sweep.space), sampler=sampler, metric=scheduler_metric(plan.sweep),
                            mode=plan.sweep.mode), {}
    return BasicVariantGenerator(random_state=plan.seed), to_tune(plan.sweep.space, plan.seed)


def trials_at_once(resources: TrialResources, nodes: list[dict[str, Any]]) -> int:
    """How many trials the cluster's nodes can hold at the same time (0: not one, anywhere)."""

    def fits(bundle: dict[str, float], capacity: dict[str, float]) -> int:
        counts = [math.floor(capacity.get(key, 0.0) / need + 1e-9) for key, need in bundle.items() if need > 0]
        return min(counts) if counts else 0

    capacities = [node["Resources"] for node in nodes if node.get("Alive")]
    workers = resources.data_parallel_workers
    if workers > 1:
        slots = sum(fits(resources.worker_bundle(), capacity) for capacity in capacities)
        return slots // workers
    return sum(fits(resources.trial_bundle(), capacity) for capacity in capacities)


def make_trainable(plan: SweepPlan):
    from ray import tune

    every, at = checkpoint_schedule(plan.sweep)
    settings = TrialSettings(
        split_after=plan.sweep.split_after,
        max_epochs=plan.sweep.max_epochs,
        resources=plan.resources,
        checkpoint_every=every,
        checkpoint_at=at,
        storage_path=plan.storage_path,
    )
    trainable = tune.with_parameters(train_trial, series=plan.series, settings=settings)
    return tune.with_resources(trainable, tune.PlacementGroupFactory([plan.resources.trial_bundle()]))


def progress_reporter(plan: SweepPlan):
    """Ray's table of trials, cut down to the columns that matter and the best trials first."""
    from ray.tune import CLIReporter

    short = {"model": "model", "hidden_dim": "hidden", "n_rnn_layers": "layers", "dropout": "dropout",
             "batch_size": "batch", "lr": "lr", "input_chunk_length": "in_len", "training_length": "train_len",
             "random_state": "seed"}
    return CLIReporter(
        metric_columns={"best_val_mape": "best MAPE %", "best_epoch": "at epoch", "epoch": "epochs"},
        parameter_columns={key: short.get(key, key) for key in plan.searched if key != "random_state"},
        sort_by_metric=True,
        max_progress_rows=12,
        max_error_rows=5,
        max_report_frequency=10,
        print_intermediate_tables=True,
    )


def build_tuner(plan: SweepPlan, progress: bool = True):
    """A new Tuner for the plan, or the stored one when resuming; `progress` prints Tune's live table."""
    from ray import tune

    from ray.tune.logger import CSVLoggerCallback

    # Ray's newer console output ignores a custom reporter; the classic one shows the table we choose.
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"
    # A checkpoint forces a snapshot of the sweep's state when it would delete one the last snapshot names;
    # that is the price of keeping few checkpoints, paid knowingly: no need to warn about it at every trial.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    # Tune's automatic loggers write every report three times (JSON with the trial's config, CSV, TensorBoard),
    # on the driver, which shares the CPUs with the trials; the results are built from the CSV alone.
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"
    trainable = make_trainable(plan)
    if plan.resume:
        if not tune.Tuner.can_restore(plan.experiment_path):
            raise PlanError(f"--resume: nothing to resume at {plan.experiment_path}")
        # Restored with its stored RunConfig, whose callbacks (loggers, fault log, watchdog) come back with it.
        return tune.Tuner.restore(plan.experiment_path, trainable=trainable, resume_unfinished=True,
                                  resume_errored=True)
    search, param_space = build_search(plan)
    return tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune.TuneConfig(
            metric=scheduler_metric(plan.sweep),
            mode=plan.sweep.mode,
            scheduler=build_scheduler(plan.sweep),
            search_alg=search,
            num_samples=plan.sweep.num_samples,
            max_concurrent_trials=plan.max_concurrent_trials,
            reuse_actors=True,  # a fresh worker per trial costs ~4 s of process start and imports
        ),
        run_config=tune.RunConfig(
            name=plan.name,
            storage_path=plan.storage_path,
            checkpoint_config=tune.CheckpointConfig(num_to_keep=checkpoints_kept(plan.sweep)),
            callbacks=[CSVLoggerCallback(), FaultLog(plan.experiment_path),
                       HangWatchdog(plan.trial_timeout_s, plan.experiment_path)],
            failure_config=tune.FailureConfig(max_failures=plan.max_failures),
            progress_reporter=progress_reporter(plan) if progress else None,
            verbose=1 if progress else 0,
        ),
    )
