"""EpochReporter: the Lightning callback that reports every epoch of a trial to Ray Tune and checkpoints it.

It lives in sweeps/ so that the forecaster never imports Ray: a trial passes it to forecaster.fit.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from typing import TYPE_CHECKING, Any, Protocol, cast

import lightning as L
import torch

from forecaster.metrics import METRICS
from sweeps.plan.schedulers import CheckpointSchedule
from sweeps.plan.storage import BEST_MODEL_FILE, CHECKPOINT_FILE

if TYPE_CHECKING:
    from ray.train import Checkpoint

DIVERGED_LOSS = 100.0
"""A training MSE above this, on a series scaled to [0, 1], means errors ten times the training range."""


def diverged(train_loss: float, score: float) -> bool:
    """Training has blown up: a loss or score that is NaN or infinite, or a loss beyond any sane model's."""
    return not (math.isfinite(train_loss) and math.isfinite(score)) or train_loss > DIVERGED_LOSS


class Report(Protocol):
    """`ray.tune.report` or `ray.train.report`: an epoch's metrics, with a checkpoint or without."""

    def __call__(self, metrics: dict[str, Any], *, checkpoint: Checkpoint | None = None) -> None: ...


class EpochReporter(L.Callback):
    """Reports every epoch's validation metrics (val_mape, val_smape, val_mase; MAPE NaN where it is undefined), the
    trial's best so far on the sweep's metric (best_val_<metric>, best_epoch), train_loss and the epoch to Tune;
    some reports carry a checkpoint.

    The validation MAPE of 23 months jumps by several points from one epoch to the next, so schedulers
    and searches rank trials on their best so far: a trial is as good as the best model it has produced.
    That model's weights are kept in memory and written into every checkpoint beside the latest training
    state, so the latest checkpoint is all a trial needs, for resuming and for its best model alike.
    Checkpoints follow the sweep's `CheckpointSchedule` (the epochs where its scheduler decides, e.g. ASHA's
    rungs, so that a stopped trial's last report has one; improvements, for a scheduler that may stop a trial
    at any epoch; one early in the trial and then every few seconds of training, so that a kill costs at most
    that much) and go with the last epoch: each costs a few milliseconds and a write to storage, more than an
    epoch of a small model. Every report says when it was made (`reported_at`, seconds since the epoch) and
    how much time this process has spent checkpointing (`checkpoint_seconds`, `checkpoints`).

    `report` is `ray.tune.report` in a trial process, `ray.train.report` in a data-parallel worker; every
    rank calls it, and only rank 0 attaches the checkpoint.

    A trial that diverges (`diverged`) reports itself as the worst there can be (its best = inf, which
    every scheduler and search can compare, where NaN would never be stopped and None would crash ASHA),
    flags `diverged`, and stops training.
    """

    def __init__(
        self,
        report: Report,
        checkpoint_class: type[Checkpoint],
        schedule: CheckpointSchedule,
        trial: str = "",
        metric: str = "mape",
    ) -> None:
        self.report = report
        self.metric = metric
        """The metric trials are ranked on: mape, smape or mase."""
        self.trial = trial
        """The trial's id, kept in its checkpoints: a checkpoint of another trial's is a PBT donor's."""
        self.resumed_own = False
        """Whether this fit resumed from a checkpoint of this trial's own (Tune restarted it)."""
        self.resumed_recorded = True
        """Whether the report that came with the checkpoint this fit resumes from is in Tune's record (the trial's
        progress.csv): a driver killed after the trial wrote its checkpoint, before it recorded the report, has not
        (sweeps.trials.trial.recorded)."""
        self.checkpoint_class = checkpoint_class
        self.schedule = schedule
        self.best, self.best_epoch = math.inf, 0
        self.best_weights: dict[str, torch.Tensor] | None = None
        self.last: dict[str, float] | None = None
        """The latest epoch's report; kept in checkpoints, for a trial that resumes with no epoch left."""
        self.reported = False
        """Whether this fit (this process) has reported an epoch."""
        self.has_checkpoint = False
        """Whether the trial has a checkpoint: one written here, or the one it resumed from."""
        self.last_checkpoint_at = time.monotonic()
        self.checkpoint_seconds, self.checkpoints = 0.0, 0

    def on_train_start(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self.last_checkpoint_at = time.monotonic()  # training time, not the time to start the process

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self.reported = True
        epoch = trainer.current_epoch + 1
        scores = {f"val_{name}": float(trainer.callback_metrics[f"val_{name}"]) for name in METRICS}
        score = scores[f"val_{self.metric}"]
        train_loss = float(trainer.callback_metrics["train_loss"])
        if diverged(train_loss, score):
            self.report(
                {
                    **scores,
                    f"val_{self.metric}": score if math.isfinite(score) else math.inf,
                    f"best_val_{self.metric}": math.inf,
                    "best_epoch": self.best_epoch,
                    "train_loss": train_loss,
                    "epoch": epoch,
                    "diverged": 1,
                    **self._timing(),
                }
            )
            trainer.should_stop = True
            return
        improved = score < self.best
        if improved:
            self.best, self.best_epoch = score, epoch
            self.best_weights = {key: value.detach().clone() for key, value in module.state_dict().items()}
        metrics = {
            **scores,
            f"best_val_{self.metric}": self.best,
            "best_epoch": self.best_epoch,
            "train_loss": train_loss,
            "epoch": epoch,
            "diverged": 0,
        }
        if module.device.type == "cuda":  # the card's memory this trial has held at most: how many fit on one
            metrics["gpu_memory_mb"] = torch.cuda.max_memory_reserved(module.device) / 2**20
        self.last = metrics
        due = self.schedule.due(
            epoch,
            cast(int, trainer.max_epochs),
            improved,
            time.monotonic() - self.last_checkpoint_at,
            self.has_checkpoint,
        )
        if trainer.world_size > 1:
            due = trainer.strategy.broadcast(due, src=0)  # saving is collective: every rank decides as rank 0 does
        if not due:
            self.report({**metrics, **self._timing()})
            return
        self._report_with_checkpoint(trainer, module, metrics)

    def _timing(self) -> dict[str, float]:
        return {
            "reported_at": time.time(),
            "checkpoint_seconds": self.checkpoint_seconds,
            "checkpoints": self.checkpoints,
        }

    def on_fit_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        """A trial resumed from a checkpoint of its last epoch trains no epoch: under PBT, a trial that exploits a
        donor which has run all its epochs restores the donor's final checkpoint. It reports once what it now holds
        (the checkpoint's last report: epoch, MAPE, best) with a checkpoint of its own, so that its history, Tune's
        record and its latest checkpoint agree: it has run all its epochs and holds that best model. A trial that
        resumes from its own final checkpoint (its driver was killed before Tune saw it end) reported that epoch
        already: Tune has it, and its history would have it twice; unless the driver was killed before it recorded
        that report (`resumed_recorded`), which the trial then makes again."""
        own_and_recorded = self.resumed_own and self.resumed_recorded
        if self.reported or own_and_recorded or self.last is None or self.last["epoch"] < cast(int, trainer.max_epochs):
            return
        self.reported = True
        self._report_with_checkpoint(trainer, module, dict(self.last))

    def _report_with_checkpoint(self, trainer: L.Trainer, module: L.LightningModule, metrics: dict[str, float]) -> None:
        started = time.monotonic()
        self.has_checkpoint = True  # saved with the checkpoint: a trial resumed from it has one
        with tempfile.TemporaryDirectory() as folder:
            trainer.save_checkpoint(os.path.join(folder, CHECKPOINT_FILE))  # collective under DDP
            checkpoint: Checkpoint | None = None
            if trainer.global_rank == 0:
                if self.best_weights is not None:
                    self._save_best_model(module, os.path.join(folder, BEST_MODEL_FILE))
                checkpoint = self.checkpoint_class.from_directory(folder)
            self.report({**metrics, **self._timing()}, checkpoint=checkpoint)  # Tune stores it before returning
        self.last_checkpoint_at = time.monotonic()
        self.checkpoint_seconds += self.last_checkpoint_at - started
        self.checkpoints += 1

    def _save_best_model(self, module: L.LightningModule, path: str) -> None:
        assert self.best_weights is not None, "saved once an epoch has improved"
        torch.save(
            {
                "state_dict": {key: value.cpu() for key, value in self.best_weights.items()},
                "hyper_parameters": dict(module.hparams),
                "epoch": self.best_epoch,
                f"val_{self.metric}": self.best,
                "pytorch-lightning_version": L.__version__,
            },
            path,
        )

    def state_dict(self) -> dict[str, Any]:
        return {
            "best": self.best,
            "best_epoch": self.best_epoch,
            "best_weights": self.best_weights,
            "last": self.last,
            "trial": self.trial,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.has_checkpoint = True
        self.best, self.best_epoch = state_dict["best"], state_dict["best_epoch"]
        self.best_weights = state_dict.get("best_weights")
        self.last = state_dict.get("last")
        self.resumed_own = bool(self.trial) and state_dict.get("trial") == self.trial
