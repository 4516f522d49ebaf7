"""The named sweeps: each one a data entry saying what it is for, what it searches and how it spends its budget.

Adding a sweep means adding an entry to SWEEPS, not writing a class. Its scheduler is one of
sweeps.plan.schedulers.SCHEDULERS, its search one of sweeps.plan.searches.SEARCHES.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from forecaster.config import ForecasterConfig
from forecaster.data.datasets import AIR_PASSENGERS_SPLIT_AFTER, DEFAULT_DATASET
from sweeps.plan.resources import DEFAULT_RESOURCES
from sweeps.plan.space import (
    ByValue,
    Choice,
    Fitting,
    Horizons,
    IfKnownAhead,
    IfNumericCovariates,
    IfSeasonal,
    IntRange,
    InTurn,
    LogUniform,
    LongestSeason,
    Offset,
    OnlyWhen,
    SeasonBack,
    Uniform,
    describe,
)

ANSWER_SCOPES = ("all", "last")
"""How a trial's validation scores rank it for the answer (`Sweep.answer_scope`)."""


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A named sweep, as data: what it is for, its search space, its budget, its scheduler and search, and its data.
    python -m sweeps.run NAME runs it; every option of the command line replaces one of its fields."""

    name: str
    purpose: str
    """What the sweep is for, in one or two sentences: `--list` and the results show it."""
    space: Mapping[str, Any]
    """Every hyperparameter of the forecaster except n_epochs: a constant or a distribution (sweeps.plan.space)."""
    max_epochs: int
    """Epoch budget of a trial (ASHA's max_t); every trial's n_epochs."""
    num_samples: int
    scheduler: str = "asha"
    """A name in sweeps.plan.schedulers.SCHEDULERS."""
    scheduler_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    search: str = "random"
    """A name in sweeps.plan.searches.SEARCHES."""
    dataset: str | None = DEFAULT_DATASET
    """A built-in series or panel (forecaster.data.read), or a file, that `--data` replaces; None: a sweep for the
    user's
    data, which needs --data."""
    split_after: str | None = None
    """Without a horizon, on its own data: the last date of every series' training part."""
    test_after: str | None = None
    """The points after this date are held out: no trial, scheduler or ranking sees them; the answer is scored on
    them after the sweep (None: no test window)."""
    horizon: int | None = None
    """Points per series: each series' last `horizon` points are its test window and the `horizon` before them its
    validation part (split_after and test_after then play no part). A plan sets it from --horizon or from a benchmark
    panel's official hold-out."""
    val_windows: int = 1
    """With a horizon: the backtest windows, a horizon each, that the validation part is cut into, stepping back from
    the test window (forecaster.training.parts.Cut.windows). A plan sets it from --val-windows or by
    `default_windows`."""
    answer_top_k: int = 1
    """The sweep's answer: an ensemble of the best models of its top k trials and the baselines
    (sweeps.answer.ensemble)."""
    answer_scope: str = "all"
    """What ranks the trials for the answer, as Ray Tune's `get_best_trial(scope=...)`: "all", each trial's best
    validation score over its epochs; "last", its last epoch's, which does not reward a trial whose validation dipped
    once and then rose as it overfit (its best epoch's score is the lowest of many noisy ones)."""
    refit_answer: bool = False
    """Continue the answer's nets through the validation parts (sweeps.answer.refits: a share of each trial's best
    epoch count) before they forecast the test windows, as the statistical baselines fit on every point before them."""
    metric: str = "mape"
    """What schedulers and searches rank trials on (forecaster.metrics.METRICS): each trial's lowest validation
    value of it so far, best_val_<metric>."""
    mode: str = "min"
    drops_unusable_series: bool = False
    """Leave out, and count, the series too short to fill their own validation and test windows with a point to
    train on before them (which no model can use), instead of refusing the data: a sweep for any panel."""
    cpus_per_trial: float = DEFAULT_RESOURCES.cpus
    gpus_per_trial: float = DEFAULT_RESOURCES.gpus
    tpu_chips_per_trial: int = DEFAULT_RESOURCES.tpu_chips

    @property
    def ranked(self) -> str:
        """The reported key trials are ranked on: their best validation score so far."""
        return f"best_val_{self.metric}"

    def describe(self) -> dict[str, Any]:
        """JSON-ready, for resolved_sweep.json and --list."""
        data = dataclasses.asdict(self)
        data["space"] = describe(self.space)
        data["scheduler_options"] = dict(self.scheduler_options)
        return data


UNREAD = ("pinball_tau",)
"""What only the pinball loss reads."""
RECURRENT_SHAPE = {
    "shape": "recurrent",
    "windows_from_last": 0,
    "seasonal_lag": 0,  # monthly data: no season beyond the lookback
    **{field.name: field.default for field in dataclasses.fields(ForecasterConfig) if field.name in UNREAD},
}
"""Darts' RNNModel, its windows drawn from the whole training part of every series (the pinball loss' quantile at
its default, unread). A space names every shared hyperparameter; a shape's settings it leaves out take their
defaults (forecaster.config.ShapeSettings)."""


SWEEPS: dict[str, Sweep] = {
    sweep.name: sweep
    for sweep in [
        Sweep(
            name="air_rnn",
            purpose=(
                "Find the RNN, LSTM or GRU forecasters with the lowest validation MAPE on the monthly Air "
                "Passengers series (23 validation months after 1959-01); the answer is an ensemble of the top 10 "
                "and the statistical baselines, weighed on the validation months."
            ),
            space={
                "model": Choice("RNN", "LSTM", "GRU"),
                "hidden_dim": Choice(16, 32, 64),
                "n_rnn_layers": Choice(1, 2),
                "dropout": OnlyWhen("n_rnn_layers", above=1, then=Uniform(0.0, 0.3), otherwise=0.0),
                "batch_size": Choice(8, 16, 32),
                "lr": LogUniform(1e-3, 2e-2),
                "input_chunk_length": Choice(12, 18, 24),
                "training_length": Offset("input_chunk_length", IntRange(4, 24)),
                "random_state": IntRange(0, 9999),
                # What generalises beyond the months it was chosen on (docs/design-notes.md, "The air_rnn sweep"):
                # the log of the series, either normalised by each window's level or differenced, so that a growing
                # series never leaves the range the net trained on; the month as an input; and a ranking that is less
                # noisy: the weights' moving average, scored on forecasts from 4 origins.
                "target_transform": Choice("log", "log_diff"),
                "window_norm": ByValue("target_transform", {"log": "subtract", "log_diff": "none"}),
                "calendar": True,
                "deseasonalise": False,
                "ema_decay": 0.9,
                "covariate_scaling": "series",
                "covariate_path": "net",
                "val_origins": 4,
                # Air Passengers has about 100 windows: every one of them, once per epoch.
                "windows_per_epoch": 4096,
                "loss": "mse",
                "loss_after_context": False,
                **RECURRENT_SHAPE,
            },
            # Every configuration forecasts a flat line for its first few dozen epochs and the good ones break away
            # later: ASHA's first judgement waits until then (docs/design-notes.md, "The air_rnn sweep").
            max_epochs=300,
            num_samples=64,
            scheduler_options={"grace_period": 60, "reduction_factor": 3},
            split_after=AIR_PASSENGERS_SPLIT_AFTER,
            answer_top_k=10,
        ),
        Sweep(
            name="m3_monthly",
            purpose=(
                "One global RNN for the 1,428 monthly series of the M3 competition, ranked by validation sMAPE on the "
                "18 points before each series' official hold-out; the answer (an ensemble of the top trials and the "
                "baselines, weighed on those points) is scored on the hold-out beside seasonal naive, AutoETS, Theta "
                "(the M3 winner) and AutoCES."
            ),
            space={
                "model": Choice("GRU", "LSTM"),
                "hidden_dim": Choice(64, 96),
                "n_rnn_layers": 1,
                "dropout": 0.0,
                "batch_size": 512,
                "lr": LogUniform(1.5e-3, 4e-3),
                "input_chunk_length": Choice(18, 24),
                # The shortest series keep 30 points to train on once 18 validate and 18 are held out.
                "training_length": 29,
                "random_state": IntRange(0, 9999),
                "target_transform": "log",
                "window_norm": "subtract",
                "calendar": True,
                "deseasonalise": True,
                "ema_decay": 0.9,
                "covariate_scaling": "series",
                "covariate_path": "net",
                "val_origins": 1,
                "windows_per_epoch": 16384,
                "loss": "mse",
                "loss_after_context": True,
                **RECURRENT_SHAPE,
            },
            max_epochs=40,
            num_samples=24,
            scheduler_options={"grace_period": 20, "reduction_factor": 2},
            dataset="m3_monthly",
            metric="smape",
            answer_top_k=10,
        ),
        Sweep(
            name="panel",
            purpose=(
                "One global RNN for any panel (--data FILE --horizon H, or a built-in panel): three shapes of model "
                "(recurrent, direct, and the hybrid with exponential smoothing), a third of the trials each, with "
                "lookbacks in horizons, ranked by validation sMAPE (MASE where a value is "
                "below 0) on backtest windows of H points before each series' test window; the answer (an ensemble "
                "of the top trials by their last epoch's validation, refit through the validation part, and the "
                "baselines, weighed on the windows) is scored on the test window beside seasonal naive, AutoETS, "
                "Theta and AutoCES."
            ),
            space={
                # Taken in turn, a third of the trials each: which shape wins differs by panel, and a random draw of a
                # few trials can leave one shape almost none (docs/design-notes.md, "The panel sweep"). The hybrid
                # joined on six panels' inner windows ("The hybrid shape in the forecaster").
                "shape": InTurn("recurrent", "direct", "hybrid"),
                "model": Choice("GRU", "LSTM"),
                "hidden_dim": 64,
                "n_rnn_layers": 1,
                "dropout": 0.0,
                "batch_size": 512,
                "lr": LogUniform(1.5e-3, 4e-3),
                # The recurrent shape reads a horizon and trains on windows of 1.6 horizons, each at most what the
                # shortest series holds (at least 2, three points with its target: the plan names a series with
                # fewer, which --drop-short-series leaves out); the direct shape reads 1 or 1.5 horizons, padding,
                # or the data's longest season up to 8 horizons, where the series hold two of it and it is longer (the
                # week of hourly data); the hybrid 1.5, as Smyl's.
                "input_chunk_length": ByValue(
                    "shape",
                    {
                        "recurrent": Fitting(Horizons(1), share=0.6),
                        "direct": Choice(Horizons(1), Horizons(1.5), LongestSeason(Horizons(1.5), most=Horizons(8))),
                        "hybrid": Horizons(1.5),
                    },
                ),
                "training_length": Fitting(Horizons(1.6), less=1, least=2),
                "output_chunk_length": 0,
                # The direct shape trains on the MASE loss (each series' errors over its in-sample seasonal naive
                # error, in original units), what it is judged by; chosen on inner windows
                # (docs/design-notes.md, "The panel sweep").
                # The hybrid, the pinball loss in its own units (Smyl's).
                "loss": ByValue("shape", {"recurrent": "mse", "direct": "mase", "hybrid": "pinball"}),
                "loss_after_context": True,
                "random_state": IntRange(0, 9999),
                # The hybrid takes its own logs, level and season.
                "target_transform": ByValue(
                    "shape", {"recurrent": "log_if_positive", "direct": "log_if_positive", "hybrid": "none"}
                ),
                "window_norm": ByValue("shape", {"recurrent": "subtract", "direct": "subtract", "hybrid": "none"}),
                "calendar": ByValue(
                    "shape", {"recurrent": IfSeasonal(True, False), "direct": IfSeasonal(True, False), "hybrid": False}
                ),
                "deseasonalise": ByValue(
                    "shape", {"recurrent": IfSeasonal(True, False), "direct": IfSeasonal(True, False), "hybrid": False}
                ),
                # The hybrid without the weights' average: its early epochs' average is close to its first
                # weights (naive forecasts from the last level), which a validation window may prefer and the refit
                # then trains for as few epochs (docs/design-notes.md, "The hybrid shape").
                "ema_decay": ByValue("shape", {"recurrent": 0.9, "direct": 0.9, "hybrid": 0.0}),
                # A numeric covariate scaled per series (a price against its usual one) or shared (a temperature):
                # neither wins on both (docs/design-notes.md, "Covariates and the calendar"), so the data chooses.
                "covariate_scaling": IfNumericCovariates(Choice("series", "shared"), "series"),
                # Where the data has known-ahead covariates, how they enter is the data's to choose too: read by the
                # recurrent layers, as a linear term beside the net (a short history, which a net overfits), or not
                # at all (covariates that do not help on validation leave the answer as it is without them)
                # (docs/design-notes.md, "Covariates and the calendar").
                "covariate_path": ByValue(
                    "shape",
                    {
                        "recurrent": IfKnownAhead(Choice("net", "linear", "none"), "net"),
                        "direct": IfKnownAhead(Choice("net", "linear", "none"), "net"),
                        "hybrid": IfKnownAhead(Choice("net", "none"), "net"),
                    },
                ),
                "val_origins": 1,
                "windows_per_epoch": 16384,
                # The direct shape trains on windows whose forecast starts in each series' last 4 horizons (N-BEATS'
                # L_H): the recent dynamics rather than the whole history's growth; chosen on inner windows
                # (docs/design-notes.md, "The panel sweep"). Where the data has known-ahead covariates, on every
                # window: their effect is learnt from every point they occur at (docs/design-notes.md, "Covariates").
                # The hybrid's from their last 5 (the probe's last 4 with whole blocks, and the partial blocks after),
                # or every window with known-ahead covariates, as the direct shape's.
                "windows_from_last": ByValue(
                    "shape",
                    {"recurrent": 0, "direct": IfKnownAhead(0, Horizons(4)), "hybrid": IfKnownAhead(0, Horizons(5))},
                ),
                "hidden_fc_sizes": (),
                "activation": "ReLU",
                # The recurrent shape reads, beside each point, the value a week before the next on hourly data (a
                # season its lookback of a horizon never shows); the others read it through their lookbacks
                # (docs/design-notes.md, "Covariates and the calendar").
                "seasonal_lag": ByValue("shape", {"recurrent": SeasonBack(), "direct": 0, "hybrid": 0}),
                **{name: RECURRENT_SHAPE[name] for name in UNREAD},
            },
            max_epochs=40,
            num_samples=10,
            scheduler_options={"grace_period": 20, "reduction_factor": 2},
            dataset=None,
            drops_unusable_series=True,
            metric="smape",
            answer_top_k=5,
            # Ranked by the last epoch's validation: a trial whose validation dipped once early and rose after does not
            # rank first on its one lucky epoch; chosen on inner windows (docs/design-notes.md, "The panel sweep").
            answer_scope="last",
            refit_answer=True,
        ),
    ]
}
