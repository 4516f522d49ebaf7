"""EpochReporter, the callback between a trial's Lightning fit and Ray Tune, on its own: what it reports and
checkpoints. Tune's `report` only runs inside a trial, so a recorder takes its place here; the real sweeps
(tests/test_sweep_local.py) run it under Tune."""

import contextlib
import itertools
import math
import os
import shutil

import torch

from forecaster.data.datasets import AIR_PASSENGERS_SPLIT_AFTER
from forecaster.data.read import load_panel
from forecaster.training.parts import Cut, cut_parts
from sweeps.plan.resources import TrialResources
from sweeps.plan.schedulers import CheckpointSchedule
from sweeps.plan.storage import BEST_MODEL_FILE
from sweeps.trials.epoch_reporter import EpochReporter
from sweeps.trials.trial import TrialSettings, _fit

CONFIG = {
    "model": "GRU",
    "hidden_dim": 8,
    "n_rnn_layers": 1,
    "dropout": 0.0,
    "batch_size": 32,
    "lr": 0.01,
    "input_chunk_length": 24,
    "training_length": 42,
    "random_state": 1,
}


def checkpoints_kept_in(storage):
    class KeptCheckpoint:
        """What tune.Checkpoint does with a trial's folder: keeps a copy, and gives it back as a directory."""

        def __init__(self, path):
            self.path = path

        @classmethod
        def from_directory(cls, folder):
            kept = storage / f"checkpoint_{len(list(storage.iterdir())):03d}"
            shutil.copytree(folder, kept)
            return cls(str(kept))

        def as_directory(self):
            return contextlib.nullcontext(self.path)

    return KeptCheckpoint


EVERY_THIRD_EPOCH = CheckpointSchedule(every=3, every_seconds=math.inf, first_after_seconds=math.inf)


def fit_and_record(storage, checkpoint=None, max_epochs=6, schedule=EVERY_THIRD_EPOCH, trial="trial_a", recorded=True):
    """A trial's fit as train_trial runs it (`recorded`: whether Tune's record has the report of the checkpoint it
    resumes from); returns every (metrics, checkpoint) it reported."""
    reports = []
    settings = TrialSettings(max_epochs, TrialResources(), schedule)
    reporter = EpochReporter(
        lambda metrics, checkpoint=None: reports.append((metrics, checkpoint)),
        checkpoints_kept_in(storage),
        settings.checkpoints,
        trial,
    )
    reporter.resumed_recorded = recorded
    parts = cut_parts(load_panel("air_passengers"), Cut(split_after=AIR_PASSENGERS_SPLIT_AFTER))  # as a plan cuts it
    _fit(CONFIG, parts, settings, reporter, checkpoint, accelerator="cpu", devices=1)
    return reports


def test_every_epoch_is_reported_and_checkpointed_on_schedule(tmp_path):
    reports = fit_and_record(tmp_path)
    assert [metrics["epoch"] for metrics, _ in reports] == [1, 2, 3, 4, 5, 6]
    assert [metrics["epoch"] for metrics, checkpoint in reports if checkpoint] == [3, 6]
    final, checkpoint = reports[-1]
    assert final["best_val_mape"] == min(metrics["val_mape"] for metrics, _ in reports)
    best = torch.load(os.path.join(checkpoint.path, BEST_MODEL_FILE), weights_only=False)
    assert (best["epoch"], best["val_mape"]) == (final["best_epoch"], final["best_val_mape"])


def test_checkpoints_come_by_time_too_and_say_what_they_cost(tmp_path):
    reports = fit_and_record(tmp_path, schedule=CheckpointSchedule(every_seconds=0.0, first_after_seconds=0.0))
    assert all(checkpoint is not None for _, checkpoint in reports)  # due at every epoch: no time has to pass
    costs = [(metrics["checkpoints"], metrics["checkpoint_seconds"]) for metrics, _ in reports]
    assert [count for count, _ in costs] == [0, 1, 2, 3, 4, 5]  # each report counts the ones before it
    assert all(later > earlier >= 0 for (_, earlier), (_, later) in itertools.pairwise(costs[1:]))
    assert all(metrics["reported_at"] > 1e9 for metrics, _ in reports)  # seconds since the epoch


def test_a_trial_resumed_at_its_last_epoch_reports_it_once_with_its_best_model(tmp_path):
    """What PBT does to a trial that exploits a donor which has run all its epochs: the trial restores the donor's
    final checkpoint and has no epoch left to train. Its history, Tune's record and its latest checkpoint must
    still say it ran all its epochs and hold that best model (else its row says STOPPED early)."""
    final, final_checkpoint = fit_and_record(tmp_path, trial="donor")[-1]
    resumed = fit_and_record(tmp_path, checkpoint=final_checkpoint, trial="exploiter")
    assert len(resumed) == 1
    metrics, checkpoint = resumed[0]
    assert metrics["epoch"] == 6
    assert (metrics["best_val_mape"], metrics["best_epoch"]) == (final["best_val_mape"], final["best_epoch"])
    assert checkpoint is not None and checkpoint.path != final_checkpoint.path  # a checkpoint of its own
    best = torch.load(os.path.join(checkpoint.path, BEST_MODEL_FILE), weights_only=False)
    assert (best["epoch"], best["val_mape"]) == (final["best_epoch"], final["best_val_mape"])


def test_a_trial_resumed_from_its_own_final_checkpoint_reports_nothing_again(tmp_path):
    """Its driver was killed after the last epoch's report and before Tune saw the trial end: on --resume, Tune
    restarts it from that checkpoint. The epoch is in its history and in Tune's record already."""
    final_checkpoint = fit_and_record(tmp_path)[-1][1]
    assert fit_and_record(tmp_path, checkpoint=final_checkpoint) == []


def test_a_trial_resumed_from_its_own_final_checkpoint_whose_report_was_never_recorded_reports_it_again(tmp_path):
    """Its driver was killed after the trial wrote its final checkpoint and before it recorded the report with it
    (a kill -9 between the two): Tune's record stops an epoch short, and the trial's row would say STOPPED. It
    reports that epoch once more, as it was."""
    final, final_checkpoint = fit_and_record(tmp_path)[-1]
    again = fit_and_record(tmp_path, checkpoint=final_checkpoint, recorded=False)
    assert [(metrics["epoch"], metrics["best_val_mape"]) for metrics, _ in again] == [(6, final["best_val_mape"])]
