"""The answer's members after the trials: each trial's best net continued on the newer points, as Ray tasks.

A member's net trained on each series' training part. For the test window it is continued through the validation
part (`refit_member`), so that it forecasts from right after what it learnt, as the statistical baselines, fit on
every point before the window, do (neuralforecast's `refit_with_val`, without training again from scratch); for the
future the net that forecast the test window is continued through the test window (`future_member`). Each
continuation is `CONTINUED_SHARE` of its trial's best epoch count, from the trial's weights, their moving average and
(the hybrid) its per-series smoothing (forecaster.training.train.fit_through); docs/design-notes.md, "The work after the
trials", says how that share was chosen. Nothing is trained twice from scratch.

The task also forecasts with the nets it holds: the trial's net on the validation part (from the end of training)
and on the test window (from the end of the validation part), and the continued net on the test window, so that the
driver needs neither the nets nor torch to score the answer.
"""

from __future__ import annotations

import dataclasses
import io
import math
import statistics
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from forecaster.data.panel import Panel
from forecaster.training.parts import FitParts
from sweeps.plan.budget import STOP_SECONDS, TAIL_SECONDS, epochs_cost, start_seconds

if TYPE_CHECKING:
    from forecaster.training.net import RNNNet
    from sweeps.plan.sweep_plan import SweepPlan

AS_TRAINED = "answer before refit"
"""With `refit_answer`: the answer as the trials trained it (on the training parts only), reported beside the refit
one, which is the answer."""
CONTINUED_SHARE = 0.25
"""A continuation trains this share of its trial's best epoch count (at least one epoch)."""


def continued_epochs(best_epochs: int, share: float = CONTINUED_SHARE) -> int:
    """How many epochs a member's net is continued on newer points: `share` of its trial's best epoch count, rounded
    (as measured: bench/probes/tail_rules.py), at least one; none at a share of 0."""
    return max(1, round(share * best_epochs)) if share > 0 else 0


@dataclasses.dataclass
class RefitMember:
    """One member for the test window: its trial's net, continued through the validation part, and what each
    forecast."""

    trial_id: str
    net: RNNNet
    """The net that forecasts the test window (forecaster.training.net.RNNNet): the trial's best continued through the
    validation part, or without a test window or a continuation the trial's net itself."""
    validation: np.ndarray
    """The trial's net forecasting the validation part from the end of training (each backtest window from the points
    before it), flat in its row order."""
    as_trained: np.ndarray | None
    """The trial's net forecasting the test window from the end of the validation part (None: no test window)."""
    test: np.ndarray | None
    """`net` forecasting the test window."""
    epochs: int
    """The epochs it was continued (0: the trial's net forecasts the test window)."""
    trained_on: str
    """Where those epochs ran ("": none ran)."""
    fitted_before_validation: np.ndarray
    """(S,) how far the trial's net misses each series' last horizon of its training part (forecaster.answer.intervals
    .fitted_error): the third part of each series' scale on the validation part."""
    fitted_before_test: np.ndarray | None
    """(S,) the same of `net` over every point before the test window."""
    read_from: str = ""
    """Where a saved net came from instead of training (sweeps.report)."""


def refit_member(
    trial_id: str,
    best_model: bytes,
    parts: FitParts,
    epochs: int,
    saved: Any = None,
    stop_at: float | None = None,
    **fit_options: Any,
) -> RefitMember:
    """Member `trial_id`'s trial net (its best model's bytes) and its forecasts; where `parts` has a test window, the
    net continued `epochs` through the validation part (fewer where the clock passes `stop_at`, time.time(): at least
    one), or `saved`, a net saved so (sweeps.report: no training)."""
    from forecaster.answer.intervals import fitted_error
    from forecaster.training.net import RNNNet

    as_a_trial(fit_options)
    trial_net = RNNNet.load_best_model(io.BytesIO(best_model))
    validation = parts.backtest(trial_net.forecast_part)
    before_validation = fitted_error(trial_net, parts.train, parts.window_size)
    if parts.test is None:
        return RefitMember(trial_id, trial_net, validation, None, None, 0, "", before_validation, None)
    as_trained = trial_net.forecast_part(parts.seen, parts.test)
    if saved is not None or epochs == 0:
        net, trained_on = (trial_net.eval() if saved is None else saved), ""
    else:
        net, trained_on, epochs = continued(trial_net, epochs, parts.seen, stop_at, fit_options)
    test = net.forecast_part(parts.seen, parts.test) if net is not trial_net else as_trained
    before_test = fitted_error(net, parts.seen, int(parts.test.lengths.max()))
    return RefitMember(
        trial_id,
        net,
        validation,
        as_trained,
        test,
        epochs,
        trained_on,
        before_validation,
        before_test,
        "saved" if saved is not None else "",
    )


@dataclasses.dataclass
class FutureMember:
    """One member for the future: the net continued through every point given."""

    trial_id: str
    net: RNNNet
    epochs: int
    """The epochs it was continued beyond the test window's net (0: that net itself)."""
    trained_on: str
    fitted: np.ndarray
    """(S,) how far it misses each series' last horizon (forecaster.answer.intervals.fitted_error): the saved model's
    third
    part of each series' scale."""


def future_member(
    refit: RefitMember, panel: Panel, epochs: int, horizon: int, stop_at: float | None = None, **fit_options: Any
) -> FutureMember:
    """`refit`'s net continued `epochs` on every point of `panel` (the test window's too; fewer where the clock
    passes `stop_at`, at least one); `horizon`, the future's."""
    from forecaster.answer.intervals import fitted_error

    as_a_trial(fit_options)
    net, trained_on = refit.net.eval(), ""
    if epochs:
        net, trained_on, epochs = continued(refit.net, epochs, panel, stop_at, fit_options)
    return FutureMember(refit.trial_id, net, epochs, trained_on, fitted_error(net, panel, horizon))


def continued(
    start: RNNNet, epochs: int, seen: Panel, stop_at: float | None, fit_options: dict[str, Any]
) -> tuple[RNNNet, str, int]:
    """`start` continued `epochs` through `seen` (forecaster.training.train.fit_through), ending after the epoch that
    passes
    `stop_at` if it comes first: the net, where it trained and the epochs it ran."""
    from forecaster.training.train import StopAt, fit_through  # Lightning: only where a net trains

    stopper = None if stop_at is None else StopAt(stop_at)
    callbacks = [] if stopper is None else [stopper]
    net, trained_on = fit_through(start.config, epochs, seen, start=start, callbacks=callbacks, **fit_options)
    return net, trained_on, epochs if stopper is None else stopper.epochs


def as_a_trial(fit_options: dict[str, Any]) -> None:
    """torch's threads as a trial's (its CPUs): forecasts come out the same to the bit wherever they are made again
    (sweeps.report in a process of its own)."""
    import torch

    if fit_options.get("threads"):
        torch.set_num_threads(int(fit_options["threads"]))


def tail_estimate(
    plan: SweepPlan, slots: int, baselines_left: Callable[[], float]
) -> Callable[[dict[str, dict[str, Any]]], float]:
    """What the answer would take after the trials, as they stand: each top trial's continuations at its own seconds
    per epoch over the slots, and the baselines' work left (sweeps.trials.tuner.BudgetStopper's estimate)."""
    sweep = plan.sweep
    ranked = f"val_{sweep.metric}" if sweep.answer_scope == "last" else sweep.ranked

    def estimate(trials: dict[str, dict[str, Any]]) -> float:
        reported = [t for t in trials.values() if t.get(ranked) is not None and math.isfinite(t[ranked])]
        top = sorted(reported, key=lambda t: t[ranked])[: sweep.answer_top_k]
        epochs, seconds = [], []
        for trial in top:
            each = continued_epochs(int(trial.get("best_epoch") or trial.get("epoch") or 1))
            refit = each if sweep.refit_answer and plan.parts.test is not None else 0
            future = each if plan.answer_settings.future else 0
            epochs += [refit, future]
            seconds += [statistics.median(trial["seconds"])] * 2
        start = max((start_seconds(trial["seconds"]) for trial in top), default=0.0)
        return STOP_SECONDS + TAIL_SECONDS + start + epochs_cost(epochs, seconds, slots) + baselines_left()

    return estimate
