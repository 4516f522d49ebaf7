"""Faults on a real local Ray: diverging, crashing and hanging trials; none of them takes the sweep down.

Faults are real: a learning rate that blows the model up, a trial's worker process killed (SIGKILL, as
the OOM killer or a preempted node would), or frozen (SIGSTOP, as a deadlock would leave it).
"""

import contextlib
import dataclasses
import os
import re
import signal
import threading
import time

import pandas as pd
import pytest

from sweeps.driver import run_sweep
from sweeps.output.summary import summary
from sweeps.plan.schedulers import SCHEDULERS
from sweeps.plan.space import Choice
from sweeps.plan.sweep_plan import make_plan
from tests.helpers import SLOW_TRIAL, reports_then_leaves_a_newer_checkpoint_and_fails, trial_histories, trial_progress

RAY_INIT = {"num_cpus": 2}


def plan_for(tmp_path, name, **options):
    pins = options.pop("pins", SLOW_TRIAL)
    return make_plan("air_rnn", seed=1, storage_path=str(tmp_path), name=name, pins=pins, future=False, **options)


@dataclasses.dataclass(frozen=True)
class Fault:
    """`sig` sent to a trial's process once it reaches `after_epoch` (and, with `after_checkpoint`, once Tune holds a
    checkpoint from that process), to its first attempt only or to every attempt."""

    sig: int
    after_epoch: int
    every_attempt: bool = False
    after_checkpoint: bool = False


TRIAL_NUMBER = re.compile(r"_[0-9a-f]{5}_(\d{5})_")
"""In a trial's folder name, train_trial_36089_00002_2_...: its number after the sweep's 5 hex digits (all digits,
as here, about one sweep in ten)."""


class FaultInjector(threading.Thread):
    """Injects each trial's fault: `faults` maps a trial's number (0 for `..._00000_...`, in Tune's order) to it."""

    def __init__(self, experiment_path, faults: dict[int, Fault]):
        super().__init__(daemon=True)
        self.experiment_path, self.faults = experiment_path, faults
        self.folders: dict[int, str] = {}
        """The folder of each faulted trial, once it has reported."""
        self.hit_pids: dict[int, list[int]] = {number: [] for number in faults}
        self.done = threading.Event()

    def ready(self, fault, folder, epoch, pid):
        if epoch < fault.after_epoch:
            return False
        if not fault.after_checkpoint:
            return True
        history = trial_histories(self.experiment_path).get(folder)
        if history is None:
            return False
        # The row that reports a checkpoint is written before Tune has saved it (a round trip to the trial), and the
        # trial's next result comes only after: a row after a checkpointed one says Tune holds that checkpoint.
        checkpointed = history[history.pid == pid].checkpoint_dir_name.notna().tolist()
        return True in checkpointed and checkpointed.index(True) < len(checkpointed) - 1

    def run(self):
        deadline = time.time() + 240
        while not self.done.is_set() and time.time() < deadline:
            for folder, (epoch, pid) in trial_progress(self.experiment_path).items():
                number = int(TRIAL_NUMBER.search(os.path.basename(folder)).group(1))
                fault, hit = self.faults.get(number), self.hit_pids.get(number)
                if fault is None or pid in hit or (hit and not fault.every_attempt):
                    continue
                if self.ready(fault, folder, epoch, pid):
                    self.folders[number] = folder
                    hit.append(pid)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, fault.sig)
            time.sleep(0.1)


def killed_and_retried(injector, number):
    """The rows of trial `number` from the process that was killed, and from the retry after it."""
    raw = pd.read_csv(f"{injector.folders[number]}/progress.csv")
    killed = raw[raw.pid == injector.hit_pids[number][0]]
    retried = raw[raw.index > killed.index.max()]
    assert len(retried) and (retried.pid != injector.hit_pids[number][0]).all()
    return killed, retried


def run_with_faults(plan, faults):
    injector = FaultInjector(plan.experiment_path, faults)
    injector.start()
    try:
        return run_sweep(plan, ["test"], progress=False), injector
    finally:
        injector.done.set()


CRASHED, FAILS_EVERY_TIME, HUNG = 0, 1, 2
"""The trials of `faulted_sweep`, by number."""


@pytest.fixture(scope="module")
def faulted_sweep(local_ray, tmp_path_factory):
    """One sweep, a fault per trial, each landing at epoch 30 of 120: killed once (SIGKILL, as the OOM killer or a
    preempted node would), killed at every attempt, frozen once (SIGSTOP, as a deadlock would leave it; the watchdog
    is set to 8 s)."""
    plan = plan_for(
        tmp_path_factory.mktemp("faults"), "faults", num_samples=3, max_epochs=120, scheduler="fifo", trial_timeout=8
    )
    faults = {
        CRASHED: Fault(signal.SIGKILL, after_epoch=30),
        FAILS_EVERY_TIME: Fault(signal.SIGKILL, after_epoch=30, every_attempt=True),
        HUNG: Fault(signal.SIGSTOP, after_epoch=30),
    }
    run, injector = run_with_faults(plan, faults)
    trials = run.results.trials.set_index(run.results.trials.trial_id.str[-5:].astype(int), drop=False)
    return plan, run, injector, trials


@pytest.mark.slow
def test_a_diverging_trial_is_stopped_marked_and_never_chosen(local_ray, tmp_path):
    plan = plan_for(
        tmp_path,
        "diverging",
        num_samples=6,
        max_epochs=30,
        scheduler="asha",
        max_concurrent_trials=1,
        pins={"hidden_dim": 8},
    )
    space = {**plan.sweep.space, "lr": Choice(10.0, 0.005)}  # lr=10 sends the loss past any sane model's
    plan = dataclasses.replace(plan, sweep=dataclasses.replace(plan.sweep, space=space))
    results = run_sweep(plan, ["test"], progress=False).results
    trials = results.trials
    diverged, healthy = trials[trials.lr == 10.0], trials[trials.lr == 0.005]
    assert len(diverged) and len(healthy)
    assert (diverged.status == "DIVERGED").all() and (diverged.epochs == 1).all()  # stopped at once
    assert diverged.notes.str.contains("diverged at epoch 1").all()
    assert results.best.config["lr"] == 0.005
    assert "diverged (stopped, never chosen)" in summary(plan, results, {}, "after 1 s")


@pytest.mark.slow
# The first test of the module's faulted_sweep, which sets it up: a watchdog that never fires would leave it waiting.
# Sized for a busy machine: the sweep took 111 s idle and more than 300 s with both cores busy.
@pytest.mark.timeout(900)
def test_a_crashed_trial_is_retried_from_its_latest_checkpoint(faulted_sweep):
    _, run, injector, trials = faulted_sweep
    assert len(injector.hit_pids[CRASHED]) == 1
    crashed = trials.loc[CRASHED]
    assert crashed.status == "COMPLETED" and crashed.failures == 1
    killed, retried = killed_and_retried(injector, CRASHED)
    # The retry continued from the latest checkpoint the killed process had reported, not from scratch: the work
    # lost is at most the epochs since that checkpoint.
    latest_checkpoint = killed[killed.checkpoint_dir_name.notna()].epoch.max()
    assert latest_checkpoint >= 1 and retried.epoch.iloc[0] == latest_checkpoint + 1
    assert retried.epoch.iloc[-1] == 120 and list(run.results.histories[crashed.trial_id].epoch) == list(range(1, 121))


@pytest.mark.slow
def test_a_trial_killed_seconds_into_training_resumes_from_its_time_based_checkpoint(local_ray, tmp_path):
    """Killed before its scheduler's first checkpoint point (ASHA's first rung, epoch 60), a trial still loses
    only the seconds since its last checkpoint: trials checkpoint early and then every few seconds."""
    plan = plan_for(
        tmp_path, "early", num_samples=1, max_epochs=120, scheduler_options={"grace_period": 60, "reduction_factor": 2}
    )
    assert SCHEDULERS["asha"].checkpoints(plan.sweep).at == (60,)
    run, injector = run_with_faults(plan, {0: Fault(signal.SIGKILL, after_epoch=2, after_checkpoint=True)})
    results = run.results
    assert len(injector.hit_pids[0]) == 1 and list(results.trials.failures) == [1]
    killed, retried = killed_and_retried(injector, 0)
    assert killed.epoch.max() < 60  # killed before the rung
    checkpointed = killed[killed.checkpoint_dir_name.notna()].epoch
    # From one of its checkpoints, not from epoch 0 (the last, or one before it where the kill beat the last's save).
    assert retried.epoch.iloc[0] - 1 in set(checkpointed) and retried.epoch.iloc[0] > 1
    assert results.trials.status.iloc[0] == "COMPLETED" and retried.epoch.iloc[-1] == 120


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_trial_that_fails_every_time_ends_as_error_and_the_sweep_finishes(faulted_sweep):
    plan, run, injector, trials = faulted_sweep
    assert sorted(trials.status) == ["COMPLETED", "COMPLETED", "ERROR"]
    failed = trials.loc[FAILS_EVERY_TIME]
    assert failed.status == "ERROR" and len(injector.hit_pids[FAILS_EVERY_TIME]) == 2
    assert failed.failures == 2 and "died" in failed.error.lower()  # its first run and its one retry
    csv = pd.read_csv(f"{plan.experiment_path}/results.csv")
    assert csv.loc[csv.status == "ERROR", "error"].str.len().iloc[0] > 0
    text = summary(plan, run.results, run.written, "after 1 s")
    assert f"Trial {failed.trial_id} failed 2 time(s), the last for good:" in text
    assert run.results.best.trial_id != failed.trial_id


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_hung_trial_is_killed_by_the_watchdog_and_retried(faulted_sweep):
    plan, _, injector, trials = faulted_sweep
    hung = trials.loc[HUNG]
    assert hung.status == "COMPLETED" and hung.failures == 1 and len(injector.hit_pids[HUNG]) == 1
    assert "killed by the watchdog 1 time(s)" in hung.notes
    faults = pd.read_json(f"{plan.experiment_path}/faults.json", dtype={"trial_id": str})  # "36089_00000" is no int
    kills = faults[faults.event == "watchdog"]
    assert list(kills.trial_id) == [hung.trial_id] and kills.after_epoch.iloc[0] >= 30
    assert list(faults[faults.trial_id == hung.trial_id].event) == ["watchdog", "retried", "restarted"]
    # The other faults are recorded as what they were: no watchdog, a retry for the crash, a retry and the end for
    # the trial that fails every time.
    crashed, failed = trials.loc[CRASHED].trial_id, trials.loc[FAILS_EVERY_TIME].trial_id
    assert list(faults[faults.trial_id == crashed].event) == ["retried", "restarted"]
    assert list(faults[faults.trial_id == failed].event) == ["retried", "restarted", "failed"]


def test_progress_stays_readable_when_a_resumed_trial_first_reports_a_checkpoint(local_ray, tmp_path):
    """Tune adds `should_checkpoint` to a result that carries a checkpoint; Ray's own writer then gives a trial resumed
    in a new driver (or retried) one column more than its file's header when its first result has one, and the file no
    longer parses. The sweep's writer keeps the header's columns."""
    from ray import tune
    from ray.train._internal.storage import StorageContext
    from ray.tune.experiment import Trial

    from sweeps.trials.tuner import ProgressLog

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


@pytest.mark.slow
def test_a_restarted_trial_resumes_from_its_newest_complete_checkpoint_not_the_one_tune_registered(local_ray, tmp_path):
    """Tune registers a trial's checkpoint a step after the trial wrote it; a trial restarted in between (a Ctrl+C, a
    kill -9, a crash) is given the one before. It resumes from the newest of its own that loads and whose report Tune
    recorded instead, so that it never runs again the epochs it ran, nor leaves out of its history the epochs whose
    reports were lost (sweeps.trials.trial.newest_checkpoint)."""
    from ray import tune

    from sweeps.trials.tuner import ProgressLog

    tuner = tune.Tuner(
        reports_then_leaves_a_newer_checkpoint_and_fails,
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            name="restarted",
            failure_config=tune.FailureConfig(max_failures=1),
            callbacks=[ProgressLog()],  # a sweep's record of each report (whatever an earlier sweep here turned off)
        ),
    )
    result = tuner.fit()[0]
    assert result.error is None
    assert result.metrics["given"] == "checkpoint_000001"  # what Tune registered last
    assert result.metrics["resumed_from"] == "checkpoint_000005"  # not 6 (cut short) nor 7 (never recorded)
