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
from sweeps.trial import CheckpointSchedule, TrialSettings, train_trial


def checkpoints_kept(sweep: Sweep) -> int:
    """Per trial, the latest ones: each holds the training state to resume from and the trial's best model.

    PBT copies other trials' checkpoints, and needs them kept a little longer.
    """
    return 4 if sweep.scheduler == "pbt" else 2


def scheduler_settings(sweep: Sweep) -> dict[str, Any]:
    """The settings the sweep's scheduler runs with: what build_scheduler uses and the banner shows."""
    options = sweep.scheduler_options
    grace = int(options.get("grace_period", 1))
    reduction = options.get("reduction_factor", 3)
    if sweep.scheduler in ("asha", "hyperband"):
        return {"grace_period": grace, "reduction_factor": reduction}
    if sweep.scheduler == "median":
        return {"grace_period": grace}
    if sweep.scheduler == "pbt":
        return {"perturbation_interval": int(options.get("perturbation_interval", max(1, sweep.max_epochs // 10)))}
    return {}


def checkpoint_schedule(sweep: Sweep) -> CheckpointSchedule:
    """When a trial checkpoints: so that whenever its scheduler stops it, its last checkpoint holds its best model.

    ASHA stops a trial right after the report of a rung's epoch (grace_period * reduction_factor^k): a
    checkpoint there. The median rule may stop a trial at any epoch after its grace period: a checkpoint at
    the grace period and at every improvement after it. PBT copies checkpoints every perturbation interval.
    """
    settings = scheduler_settings(sweep)
    if sweep.scheduler == "pbt":
        return CheckpointSchedule(every=settings["perturbation_interval"])
    if sweep.scheduler == "median":
        return CheckpointSchedule(every=25, at=(settings["grace_period"],), on_improvement_from=settings["grace_period"])
    if sweep.scheduler in ("asha", "hyperband"):  # every bracket's rungs are among the first bracket's
        return CheckpointSchedule(every=25, at=rungs(sweep))
    return CheckpointSchedule(every=25)


def rungs(sweep: Sweep) -> tuple[int, ...]:
    """The epochs where ASHA judges trials: grace_period * reduction_factor^k, below the epoch budget."""
    settings = scheduler_settings(sweep)
    found, rung = [], settings["grace_period"]
    while rung < sweep.max_epochs:
        found.append(math.ceil(rung))
        rung *= settings["reduction_factor"]
    return tuple(found)


def hyperband_brackets(sweep: Sweep) -> int:
    """As many brackets as ASHA has rungs, plus one that runs every trial to the end."""
    return len(rungs(sweep)) + 1


def scheduler_metric(sweep: Sweep) -> str:
    """PBT copies a trial's current weights, so it compares current scores; the others, each trial's best."""
    return "val_mape" if sweep.scheduler == "pbt" else sweep.metric


def build_scheduler(sweep: Sweep):
    from ray import tune
    from ray.tune.schedulers import AsyncHyperBandScheduler, FIFOScheduler, MedianStoppingRule, PopulationBasedTraining

    settings = scheduler_settings(sweep)
    if sweep.scheduler in ("asha", "hyperband"):
        # HyperBand as Ray's asynchronous HyperBand: ASHA run in several brackets, the later ones judging
        # trials first at grace_period * reduction_factor^s, which hedges against a grace period too short.
        # (Ray's synchronous HyperBandScheduler pauses trials at every milestone and, with a function
        # trainable, left some paused for good when the sweep ended.)
        return AsyncHyperBandScheduler(time_attr="epoch", max_t=sweep.max_epochs, brackets=hyperband_brackets(sweep)
                                       if sweep.scheduler == "hyperband" else 1, **settings)
    if sweep.scheduler == "median":
        return MedianStoppingRule(time_attr="epoch", min_samples_required=3, **settings)
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
        return PopulationBasedTraining(time_attr="epoch", hyperparam_mutations=mutations, **settings)
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

    settings = TrialSettings(
        split_after=plan.sweep.split_after,
        max_epochs=plan.sweep.max_epochs,
        resources=plan.resources,
        checkpoints=checkpoint_schedule(plan.sweep),
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
        # Trials that ended in ERROR spent their retries already: they stay as they ended.
        return tune.Tuner.restore(plan.experiment_path, trainable=trainable, resume_unfinished=True,
                                  resume_errored=False)
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
            callbacks=[CSVLoggerCallback(), FaultLog(), HangWatchdog(plan.trial_timeout_s)],
            failure_config=tune.FailureConfig(max_failures=plan.max_failures),
            progress_reporter=progress_reporter(plan) if progress else None,
            verbose=1 if progress else 0,
        ),
    )
