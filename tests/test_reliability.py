"""Faults on a real local Ray: diverging, crashing and hanging trials; none of them takes the sweep down.

Faults are real: a learning rate that blows the model up, a trial's worker process killed (SIGKILL, as
the OOM killer or a preempted node would), or frozen (SIGSTOP, as a deadlock would leave it).
"""

import contextlib
import dataclasses
import os
import signal
import threading
import time

import pandas as pd
import pytest

from sweeps.plan import make_plan
from sweeps.run import run_sweep
from sweeps.schedulers import SCHEDULERS
from sweeps.space import Choice
from sweeps.summary import summary
from tests.helpers import SLOW_TRIAL, trial_histories, trial_progress

RAY_INIT = {"num_cpus": 2}


def plan_for(tmp_path, name, **options):
    pins = options.pop("pins", SLOW_TRIAL)
    return make_plan("air_rnn", seed=1, storage_path=str(tmp_path), name=name, pins=pins, **options)


class FaultInjector(threading.Thread):
    """Sends `sig` to the process of the first trial that reaches `after_epoch` (and, with `after_checkpoint`, has
    reported a checkpoint from that process), once or at every attempt."""

    def __init__(self, experiment_path, sig, after_epoch, every_attempt=False, after_checkpoint=False):
        super().__init__(daemon=True)
        self.experiment_path, self.sig, self.after_epoch = experiment_path, sig, after_epoch
        self.every_attempt, self.after_checkpoint = every_attempt, after_checkpoint
        self.target, self.hit_pids, self.done = None, [], threading.Event()

    def ready(self, folder, epoch, pid):
        if epoch < self.after_epoch:
            return False
        if not self.after_checkpoint:
            return True
        history = trial_histories(self.experiment_path).get(folder)
        return history is not None and history[history.pid == pid].checkpoint_dir_name.notna().any()

    def run(self):
        deadline = time.time() + 240
        while not self.done.is_set() and time.time() < deadline:
            for folder, (epoch, pid) in trial_progress(self.experiment_path).items():
                if self.target is None and self.ready(folder, epoch, pid):
                    self.target = folder
                if folder == self.target and pid not in self.hit_pids and self.ready(folder, epoch, pid):
                    if self.hit_pids and not self.every_attempt:
                        continue
                    self.hit_pids.append(pid)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, self.sig)
            time.sleep(0.1)


def killed_and_retried(injector):
    """The target trial's rows from the process that was killed, and from the retry after it."""
    raw = pd.read_csv(f"{injector.target}/progress.csv")
    killed = raw[raw.pid == injector.hit_pids[0]]
    retried = raw[raw.index > killed.index.max()]
    assert len(retried) and (retried.pid != injector.hit_pids[0]).all()
    return killed, retried


def run_with_fault(plan, injector):
    injector.start()
    try:
        return run_sweep(plan, ["test"], progress=False)
    finally:
        injector.done.set()


@pytest.mark.slow
def test_a_diverging_trial_is_stopped_marked_and_never_chosen(local_ray, tmp_path):
    plan = plan_for(tmp_path, "diverging", num_samples=6, max_epochs=30, scheduler="asha", pins={"hidden_dim": 8})
    space = {**plan.sweep.space, "lr": Choice(10.0, 0.005)}  # lr=10 sends the loss past any sane model's
    plan = dataclasses.replace(plan, sweep=dataclasses.replace(plan.sweep, space=space))
    results = run_sweep(plan, ["test"], progress=False).results
    trials = results.trials
    diverged, healthy = trials[trials.lr == 10.0], trials[trials.lr == 0.005]
    assert len(diverged) and len(healthy)
    assert (diverged.status == "DIVERGED").all() and (diverged.epochs == 1).all()  # stopped at once
    assert diverged.notes.str.contains("diverged at epoch 1").all()
    assert results.best["config"]["lr"] == 0.005
    assert "diverged (stopped, never chosen)" in summary(plan, results, {}, "after 1 s")


@pytest.mark.slow
def test_a_crashed_trial_is_retried_from_its_latest_checkpoint(local_ray, tmp_path):
    plan = plan_for(tmp_path, "crash", num_samples=2, max_epochs=120, scheduler="fifo")
    injector = FaultInjector(plan.experiment_path, signal.SIGKILL, after_epoch=30)
    results = run_with_fault(plan, injector).results
    assert len(injector.hit_pids) == 1
    trials = results.trials
    assert list(trials.status) == ["COMPLETED", "COMPLETED"]
    crashed = trials[trials.failures == 1]
    assert len(crashed) == 1
    killed, retried = killed_and_retried(injector)
    # The retry continued from the latest checkpoint the killed process had reported, not from scratch: the work
    # lost is at most the epochs since that checkpoint.
    latest_checkpoint = killed[killed.checkpoint_dir_name.notna()].epoch.max()
    assert latest_checkpoint >= 1 and retried.epoch.iloc[0] == latest_checkpoint + 1
    assert retried.epoch.iloc[-1] == 120 and list(results.histories[crashed.trial_id.iloc[0]].epoch) == list(
        range(1, 121)
    )


@pytest.mark.slow
def test_a_trial_killed_seconds_into_training_resumes_from_its_time_based_checkpoint(local_ray, tmp_path):
    """Killed before its scheduler's first checkpoint point (ASHA's first rung, epoch 60), a trial still loses
    only the seconds since its last checkpoint: trials checkpoint early and then every few seconds."""
    plan = plan_for(
        tmp_path, "early", num_samples=1, max_epochs=120, scheduler_options={"grace_period": 60, "reduction_factor": 2}
    )
    assert SCHEDULERS["asha"].checkpoints(plan.sweep).at == (60,)
    injector = FaultInjector(plan.experiment_path, signal.SIGKILL, after_epoch=2, after_checkpoint=True)
    results = run_with_fault(plan, injector).results
    assert len(injector.hit_pids) == 1 and list(results.trials.failures) == [1]
    killed, retried = killed_and_retried(injector)
    assert killed.epoch.max() < 60  # killed before the rung
    checkpointed = killed[killed.checkpoint_dir_name.notna()].epoch
    assert len(checkpointed) and retried.epoch.iloc[0] == checkpointed.max() + 1 > 1  # not from epoch 0
    assert results.trials.status.iloc[0] == "COMPLETED" and retried.epoch.iloc[-1] == 120


@pytest.mark.slow
def test_a_trial_that_fails_every_time_ends_as_error_and_the_sweep_finishes(local_ray, tmp_path):
    plan = plan_for(tmp_path, "always", num_samples=2, max_epochs=120, scheduler="fifo")
    injector = FaultInjector(plan.experiment_path, signal.SIGKILL, after_epoch=30, every_attempt=True)
    run = run_with_fault(plan, injector)
    trials = run.results.trials
    assert sorted(trials.status) == ["COMPLETED", "ERROR"]
    failed = trials[trials.status == "ERROR"].iloc[0]
    assert failed.failures == 2 and "died" in failed.error.lower()  # its first run and its one retry
    csv = pd.read_csv(f"{plan.experiment_path}/results.csv")
    assert csv.loc[csv.status == "ERROR", "error"].str.len().iloc[0] > 0
    text = summary(plan, run.results, run.written, "after 1 s")
    assert f"Trial {failed.trial_id} failed 2 time(s), the last for good:" in text
    assert run.results.best["trial_id"] != failed.trial_id


@pytest.mark.slow
@pytest.mark.timeout(300)  # a watchdog that never fires would leave the sweep waiting for the frozen trial
def test_a_hung_trial_is_killed_by_the_watchdog_and_retried(local_ray, tmp_path):
    plan = plan_for(tmp_path, "hung", num_samples=2, max_epochs=120, scheduler="fifo", trial_timeout_s=8)
    injector = FaultInjector(plan.experiment_path, signal.SIGSTOP, after_epoch=30)
    results = run_with_fault(plan, injector).results
    trials = results.trials
    assert list(trials.status) == ["COMPLETED", "COMPLETED"]
    hung = trials[trials.failures == 1].iloc[0]
    assert "killed by the watchdog 1 time(s)" in hung.notes
    faults = pd.read_json(f"{plan.experiment_path}/faults.json", dtype={"trial_id": str})  # "36089_00000" is no int
    kills = faults[faults.event == "watchdog"]
    assert list(kills.trial_id) == [hung.trial_id] and kills.after_epoch.iloc[0] >= 30
    assert list(faults.event) == ["watchdog", "retried", "restarted"]


def test_progress_stays_readable_when_a_resumed_trial_first_reports_a_checkpoint(local_ray, tmp_path):
    """Tune adds `should_checkpoint` to a result that carries a checkpoint; Ray's own writer then gives a trial resumed
    in a new driver (or retried) one column more than its file's header when its first result has one, and the file no
    longer parses. The sweep's writer keeps the header's columns."""
    from ray import tune
    from ray.train._internal.storage import StorageContext
    from ray.tune.experiment import Trial

    from sweeps.tuner import ProgressLog

    tune.register_trainable("nothing", lambda config: None)
    trial = Trial("nothing", config={"lr": 0.01}, storage=StorageContext(str(tmp_path), "sweep"))
    first_driver = ProgressLog()
    first_driver.log_trial_result(1, trial, {"epoch": 1, "val_mape": 9.0, "checkpoint_dir_name": None})
    first_driver.log_trial_result(2, trial, {"epoch": 2, "val_mape": 8.0, "checkpoint_dir_name": "checkpoint_000000"})
    first_driver.log_trial_end(trial)
    resumed_driver = ProgressLog()  # the same trial, restored by a new driver: its first result has a checkpoint
    resumed_driver.log_trial_result(
        3,
        trial,
        {"epoch": 3, "val_mape": 7.0, "checkpoint_dir_name": "checkpoint_000001", "should_checkpoint": True},
    )
    resumed_driver.log_trial_end(trial)
    progress = pd.read_csv(f"{trial.local_path}/progress.csv")
    assert list(progress.columns) == ["epoch", "val_mape", "checkpoint_dir_name"]
    assert list(progress.epoch) == [1, 2, 3] and progress.checkpoint_dir_name.iloc[-1] == "checkpoint_000001"
