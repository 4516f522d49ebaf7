"""The m3_monthly sweep's choices measured where they may be chosen: on an inner split of M3 monthly, never on its
official hold-out. Each series' in-sample part only; its last 18 points are the inner test window, the 18 before them
validate, the rest trains (series too short for the windows dropped: 1,081 of 1,428 remain).

For every seed, one fit of the sweep's fixed settings with one configuration (GRU of 64 units, context 18, lr 3e-3
by default; `--set KEY=VALUE`, as the sweep's own option, changes any field, `--epochs` the epochs) keeps its best
model over the epochs by validation sMAPE, as a trial does, and forecasts the inner test window from the end of the
validation part ("own"). The same configuration is then trained again on the validation part too, for that best
epoch count, and forecasts the same window ("retrained": what retraining the answer's models before the test window
would give; README says why the sweep does not). Printed as JSON: each seed's inner-test sMAPE and MASE both ways,
and the mean forecast of all seeds both ways. Theta on the same points: 11.21 (README).

    python bench/inner_split.py [--seeds 0 1 2 3] [--epochs 40] [--processes 2] [--set hidden_dim=96 --set ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HORIZON = 18
WAYS = ("own", "retrained")
CHOSEN = {"model": "GRU", "hidden_dim": 64, "input_chunk_length": 18, "lr": 3e-3}


def inner_panel():
    from forecaster.data import load_panel

    seen, _ = load_panel("m3_monthly").split_last(HORIZON)  # the official hold-out never enters
    return seen


def fixed_settings() -> dict:
    from sweeps.registry import SWEEPS
    from sweeps.space import is_searched

    space = SWEEPS["m3_monthly"].space
    return {key: value for key, value in space.items() if not is_searched(value)}


def one_seed(seed: int, overrides: dict, epochs: int) -> dict:
    """Inner-test forecasts (flat, in the test part's order) of the seed's own best model and of its retrain."""
    import lightning as L
    import torch

    from forecaster.config import ForecasterConfig
    from forecaster.train import fit, quiet_lightning

    class KeepBest(L.Callback):
        """The state (weights and their moving average) of the epoch with the lowest validation sMAPE, as a trial's
        EpochReporter keeps it."""

        def __init__(self) -> None:
            self.best, self.epoch, self.state = float("inf"), 0, None

        def on_train_epoch_end(self, trainer, module) -> None:
            score = float(trainer.callback_metrics["val_smape"])
            if score < self.best:
                self.best, self.epoch = score, trainer.current_epoch + 1
                self.state = {key: value.detach().clone() for key, value in module.state_dict().items()}

    quiet_lightning()
    torch.set_num_threads(1)
    values = {**fixed_settings(), **CHOSEN, **overrides, "random_state": seed, "n_epochs": epochs}
    keeper = KeepBest()
    config = ForecasterConfig.from_dict(values)
    result = fit(config, inner_panel(), val_size=HORIZON, test_size=HORIZON, drop_short=True, callbacks=[keeper])
    parts, model = result.parts, result.model
    model.load_state_dict(keeper.state)
    own = model.forecast_part(parts.seen, parts.test)
    retrain = fit(
        ForecasterConfig.from_dict({**values, "n_epochs": keeper.epoch, "val_origins": 1}), parts.seen, val_size=1
    )
    retrained = retrain.model.forecast_part(parts.seen, parts.test)
    return {"seed": seed, "best_epoch": keeper.epoch, "own": own.tolist(), "retrained": retrained.tolist()}


def scores(test, seen, forecast) -> dict:
    import numpy as np

    from forecaster.metrics import mase_scales, panel_scores

    h, series = HORIZON, len(test)
    actual = test.values.reshape(series, h).T
    predicted = np.asarray(forecast).reshape(series, h).T
    result = panel_scores(actual, predicted, np.ones_like(actual), np.arange(series), series, mase_scales(seen))
    return {name: round(float(result[name]), 3) for name in ("smape", "mase")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--set", dest="pins", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()

    import numpy as np

    from forecaster.config import ForecasterConfig
    from forecaster.parts import fit_parts
    from sweeps.plan import parse_pins

    overrides = parse_pins(args.pins)

    values = {**fixed_settings(), **CHOSEN, **overrides}
    parts = fit_parts(
        ForecasterConfig.from_dict(values), inner_panel(), val_size=HORIZON, test_size=HORIZON, drop_short=True
    )
    with ProcessPoolExecutor(args.processes) as pool:
        runs = list(pool.map(one_seed, args.seeds, [overrides] * len(args.seeds), [args.epochs] * len(args.seeds)))
    rows = [
        {"seed": run["seed"], "best_epoch": run["best_epoch"]}
        | {way: scores(parts.test, parts.seen, run[way]) for way in WAYS}
        for run in runs
    ]
    mean = {way: scores(parts.test, parts.seen, np.mean([run[way] for run in runs], axis=0)) for way in WAYS}
    print(
        json.dumps(
            {
                "bench": "inner_split",
                "series": len(parts.test),
                "config": {**CHOSEN, **overrides, "epochs": args.epochs},
                "seeds": rows,
                "median_single_smape": {way: statistics.median(row[way]["smape"] for row in rows) for way in WAYS},
                "mean_of_seeds": mean,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
