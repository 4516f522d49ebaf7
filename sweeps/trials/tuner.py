"""A SweepPlan as a Ray Tune Tuner: the trainable with its resources and data, the scheduler, the search."""

from __future__ import annotations

import csv
import dataclasses
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from ray.tune import Stopper
from ray.tune.logger import CSVLoggerCallback
from ray.tune.result import SHOULD_CHECKPOINT
from ray.tune.utils import flatten_dict

from forecaster.metrics import METRIC_LABELS
from forecaster.training.parts import FitParts
from sweeps.plan.budget import ACTIVE, WARM_AHEAD_SECONDS
from sweeps.plan.options import PlanError
from sweeps.plan.schedulers import scheduler_of
from sweeps.plan.searches import SearchError, build_search, tune_param_space
from sweeps.plan.sweep_plan import SweepPlan
from sweeps.trials.faults import FaultLog, HangWatchdog
from sweeps.trials.ray_session import warm_workers_enabled
from sweeps.trials.sharing import FairShare, FairShareLimiter, FairShareVariants
from sweeps.trials.trial import TrialSettings, shipped_shapes, train_trial
from sweeps.trials.warm_pool import WarmPool

if TYPE_CHECKING:
    from ray.air.integrations.mlflow import MLflowLoggerCallback
    from ray.tune import CLIReporter, Trainable, Tuner
    from ray.tune.experiment import Trial
    from ray.tune.search import Searcher


class ProgressLog(CSVLoggerCallback):
    """Tune's writer of each trial's progress.csv, whose columns stay those of the file's header.

    Ray's writer takes its columns from the first result it logs for a trial in a driver process. After a resume or a
    retry that result may carry one key more than the rest (`should_checkpoint`, which Tune adds to a result with a
    checkpoint), and every later row would be one field longer than the header: a file that no reader parses, and a
    trial whose history seems lost. Here a new file's columns leave that key out, and a continued file keeps its own.
    """

    def log_trial_result(self, iteration: int, trial: Trial, result: dict[str, Any]) -> None:
        if trial not in self._trial_files:
            self._setup_trial(trial)
        if self._trial_csv[trial] is None:
            if self._trial_continue[trial]:
                with open(Path(cast(str, trial.local_path), "progress.csv"), newline="") as stream:
                    columns = next(csv.reader(stream), [])
            else:
                columns = [key for key in flatten_dict(result, delimiter="/") if key != SHOULD_CHECKPOINT]
                columns = [key for key in columns if not key.startswith("config/")]
                # Tune's own writer writes the header when it sets the writer up; it is set up here instead.
                csv.DictWriter(self._trial_files[trial], columns).writeheader()
            self._trial_csv[trial] = csv.DictWriter(self._trial_files[trial], columns)
        super().log_trial_result(iteration, trial, result)


class BudgetStopper(Stopper):
    """Stops every trial once the time left is what the answer would take as the trials stand (`Active.tail_seconds`,
    from each trial's best epoch so far and its measured seconds per epoch), and keeps the time spent in the sweep's
    folder every few seconds. Before it stops them it cuts the statistical baselines not finished, the one with the
    most work left first, one at a time: their tasks hold slots the trials could use. It never stops before some trial
    has reported an epoch: the answer needs a model."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.trials: dict[str, dict[str, Any]] = {}

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        seen = self.trials.setdefault(trial_id, {"seconds": []})
        seen["seconds"].append(float(result.get("time_this_iter_s", 0.0)))
        seen.update({key: result.get(key) for key in result if key.startswith(("best_", "val_")) or key == "epoch"})
        return False

    def stop_all(self) -> bool:
        active = ACTIVE.get(self.path)
        if active is None:
            return False
        now = time.time()
        if now - active.written >= 5:
            active.written = now
            active.spent(active.budget.spent())
        if active.budget.limit is None:
            return False
        left, needed = active.budget.left(), active.tail_seconds(self.trials)
        if left <= needed and active.cut_baseline() is not None:
            return False  # the baselines give way first: their slots go to the trials (sweeps.plan.budget.GIVE_WAY)
        if not self.trials:
            return False
        if not active.warmed and left <= needed + WARM_AHEAD_SECONDS:
            active.warmed = True
            active.warm()
        return left <= needed


class TrialInputs(TypedDict):
    parts: FitParts
    settings: TrialSettings


def trial_inputs(plan: SweepPlan) -> TrialInputs:
    """What every trial is given besides its configuration: the plan's parts without the test windows (nothing a
    trial, the scheduler or the ranking does can see them), and the settings the trials share. Under --time-limit a
    trial checkpoints at every improvement too: stopped at any epoch, its best model is in its last checkpoint."""
    sweep = plan.sweep
    checkpoints = scheduler_of(sweep).checkpoints(sweep)
    if plan.tune_settings.time_limit is not None:
        checkpoints = dataclasses.replace(checkpoints, on_improvement_from=1)
    settings = TrialSettings(
        max_epochs=sweep.max_epochs,
        resources=plan.resources,
        checkpoints=checkpoints,
        storage_path=plan.storage_path,
        shapes=shipped_shapes(),
    )
    return {"parts": plan.parts.without_test(), "settings": settings}


def make_trainable(plan: SweepPlan) -> type[Trainable] | Callable[..., Any]:
    from ray import tune

    trainable = tune.with_parameters(train_trial, **trial_inputs(plan))
    return cast(
        "type[Trainable] | Callable[..., Any]",
        tune.with_resources(trainable, tune.PlacementGroupFactory([plan.resources.trial_bundle()])),
    )


def progress_reporter(plan: SweepPlan) -> CLIReporter:
    """Ray's table of trials, cut down to the columns that matter and the best trials first."""
    from ray.tune import CLIReporter

    short = {
        "model": "model",
        "hidden_dim": "hidden",
        "n_rnn_layers": "layers",
        "dropout": "dropout",
        "batch_size": "batch",
        "lr": "lr",
        "input_chunk_length": "in_len",
        "training_length": "train_len",
        "random_state": "seed",
        "target_transform": "transform",
        "window_norm": "norm",
    }
    best = f"best {METRIC_LABELS[plan.sweep.metric]}"
    return CLIReporter(
        metric_columns={plan.sweep.ranked: best, "best_epoch": "at epoch", "epoch": "epochs"},
        parameter_columns={key: short.get(key, key) for key in plan.searched if key != "random_state"},
        # Tune's sort fails on two trials stopped before they reported (a time budget stops pending ones too).
        sort_by_metric=plan.tune_settings.time_limit is None,
        max_progress_rows=12,
        max_error_rows=5,
        max_report_frequency=10,
        print_intermediate_tables=True,
    )


def mlflow_logger(plan: SweepPlan) -> MLflowLoggerCallback:
    """Ray's MLflow callback: one MLflow run per trial (its hyperparameters and every epoch's metrics), in an
    experiment named after the sweep."""
    from ray.air.integrations.mlflow import MLflowLoggerCallback

    return MLflowLoggerCallback(
        tracking_uri=plan.tune_settings.mlflow_uri, experiment_name=plan.name, save_artifact=False
    )


def build_tuner(plan: SweepPlan, progress: bool = True, shared: bool = False) -> Tuner:
    """A new Tuner for the plan, or the stored one when resuming; `progress` prints Tune's live table.

    `shared`: the cluster is one the sweep joined, which other sweeps may use at the same time; the sweep then
    keeps to its fair share of it (sweeps.trials.sharing). Its stopper keeps the search within --time-limit."""
    from ray import tune
    from ray.tune.logger import TBXLoggerCallback

    progress_log: Callable[[], ProgressLog] = ProgressLog
    tensorboard_logger: Callable[[], TBXLoggerCallback] = TBXLoggerCallback
    # Tune's own reading of the results, which sweeps.trials.results replaces, warns of every trial stopped before it
    # reported (a time limit stops pending trials), as if something had failed.
    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
    # Ray's newer console output ignores a custom reporter; the classic one shows the table we choose.
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"
    # A checkpoint forces a snapshot of the sweep's state when it would delete one the last snapshot names;
    # that is the price of keeping few checkpoints, paid knowingly: no need to warn about it at every trial.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    # Tune's automatic loggers write every report three times (JSON with the trial's config, CSV, TensorBoard),
    # on the driver, which shares the CPUs with the trials: the CSV (the results are built from it) and
    # TensorBoard's files are written, the JSON is not.
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"
    trainable = make_trainable(plan)
    if plan.tune_settings.resume:
        if not tune.Tuner.can_restore(plan.experiment_path):
            raise PlanError(f"--resume: nothing to resume at {plan.experiment_path}")
        # Restored with its stored RunConfig, whose callbacks (loggers, fault log, watchdog) come back with it.
        # Trials that ended in ERROR spent their retries already: they stay as they ended.
        return tune.Tuner.restore(
            plan.experiment_path,
            trainable=trainable,
            param_space=tune_param_space(plan.sweep.search, plan.sweep.space, plan.tune_settings.seed),
            resume_unfinished=True,
            resume_errored=False,
        )
    sweep, scheduler = plan.sweep, scheduler_of(plan.sweep)
    settings = plan.tune_settings
    fair_share = FairShare(plan.experiment_path, plan.resources, settings.max_concurrent_trials) if shared else None
    try:
        search, param_space = build_search(
            sweep.search,
            sweep.space,
            settings.seed,
            scheduler.metric(sweep),
            sweep.mode,
            max_concurrent=None if fair_share else settings.max_concurrent_trials,  # the fair share holds the limit
        )
    except SearchError as error:
        raise PlanError(str(error)) from None
    if fair_share and sweep.search == "optuna":
        search = FairShareLimiter(cast("Searcher", search), fair_share)
    elif fair_share:
        search = FairShareVariants(fair_share, random_state=settings.seed)
    return tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune.TuneConfig(
            metric=scheduler.metric(sweep),
            mode=sweep.mode,
            scheduler=scheduler.build(sweep),
            search_alg=search,
            num_samples=sweep.num_samples,
            max_concurrent_trials=None,  # the search keeps to --max-concurrent-trials (sweeps.plan.searches)
            # A fresh worker per trial costs seconds of process start and imports; on a shared cluster a
            # trial's slot must return to the cluster when it ends, for another sweep's trial to take it.
            reuse_actors=not shared,
        ),
        run_config=tune.RunConfig(
            name=plan.name,
            storage_path=plan.storage_path,
            checkpoint_config=tune.CheckpointConfig(num_to_keep=scheduler.checkpoints_kept),
            callbacks=[
                progress_log(),
                tensorboard_logger(),  # `tensorboard --logdir <results folder>`: every trial's curves
                *([mlflow_logger(plan)] if settings.mlflow_uri else []),
                FaultLog(),
                HangWatchdog(settings.trial_timeout),
                *(
                    [WarmPool(plan.resources, plan.most_at_once, actors_reused=not shared)]
                    if warm_workers_enabled()
                    else []
                ),
            ],
            failure_config=tune.FailureConfig(max_failures=settings.max_failures),
            stop=BudgetStopper(plan.experiment_path),
            progress_reporter=progress_reporter(plan) if progress else None,
            verbose=1 if progress else 0,
        ),
    )
