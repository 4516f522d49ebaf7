"""Settings of the forecaster measured where they may be chosen: on the inner split of a competition panel, never on
its official hold-out. Each series' in-sample part only: its last H points are the inner test window, the H before
them validate, the rest trains.

Every setting is a set of changes to the m3_monthly sweep's fixed settings (GRU of 64 units, lr 3e-3, the log, window
normalisation, calendar, seasonal indices, weight averaging, batches of 512, 16,384 windows an epoch); a value may be
given in horizons (`input_chunk_length=4H`). For every setting and seed, one fit keeps its best model over the epochs
by validation sMAPE, as a trial does, and forecasts the inner test window from the end of the validation part, as
the sweep's answer does. Each setting trains on every series it can (the recurrent shape forecasts series too short
for its windows without training on them, and drops those too short to read; the direct shape pads them), and every
setting is scored on one fixed set: the series that all settings of the run forecast, so that a longer lookback is
never judged on fewer series. Beside them, on the same points: seasonal naive, AutoETS, Theta and AutoCES
(statsforecast), fit on each series' inner training and validation part.

`--official` runs the same on the official hold-out (the in-sample part's last H points validate): for the few
settings chosen on the inner split, once, to report.

Printed as JSON: per setting, each seed's sMAPE and MASE and their median ("single"), and the mean forecast of its
seeds ("ensemble"); the mean forecast of every direct setting's seeds together; the baselines.

    python bench/probes/inner_split.py [--dataset m3_monthly] [--horizon H] [--seeds 0 1 2] [--epochs 40]
        [--processes 2]
        [--setting NAME KEY=VALUE ... (repeatable; default: the shapes and lookbacks below)] [--set KEY=VALUE]
        [--no-baselines] [--official | --back K]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CHOSEN = {"model": "GRU", "hidden_dim": 64, "input_chunk_length": 18, "lr": 3e-3}
"""The m3_monthly sweep's searched values, at the ones its trials chose most."""
DEFAULT_SETTINGS = {
    "recurrent": [],
    "direct-2H": ["shape=direct", "input_chunk_length=2H"],
    "direct-4H": ["shape=direct", "input_chunk_length=4H"],
    "direct-7H": ["shape=direct", "input_chunk_length=7H"],
}
RELATIVE = ("input_chunk_length", "output_chunk_length", "windows_from_last")
"""The settings that may be given in horizons."""


def inner_panel(dataset: str, horizon: int | None, official: bool = False, back: int = 1):
    """Each series' in-sample part (the official hold-out never enters), less `back` - 1 more official horizons (an
    earlier inner window), and the inner horizon; with `official`, the whole panel, whose last H points are then the
    official hold-out."""
    from forecaster.data.read import load_panel

    panel = load_panel(dataset)
    if official:
        return panel, panel.horizon
    seen, _ = panel.split_last(back * panel.horizon) if panel.horizon else (panel, None)
    return seen, horizon or panel.horizon


def fixed_settings() -> dict:
    from sweeps.plan.registry import SWEEPS
    from sweeps.plan.space import is_searched

    space = SWEEPS["m3_monthly"].space
    return {key: value for key, value in space.items() if not is_searched(value)} | CHOSEN


def setting_values(changes: list[str], horizon: int) -> dict:
    """A setting's changes (KEY=VALUE, values in horizons where they end in H) over the fixed settings."""
    from sweeps.plan.options import parse_pins

    pins = parse_pins([change for change in changes if not change.endswith("H")])
    for change in changes:
        if change.endswith("H"):
            key, _, value = change.partition("=")
            if key not in RELATIVE:
                raise SystemExit(f"--setting {change}: only {', '.join(RELATIVE)} may be given in horizons")
            pins[key] = round(float(value[:-1]) * horizon)
    return fixed_settings() | pins


def one_fit(job: tuple) -> dict:
    """One setting and seed: its best model's inner-test forecasts (a long table of its kept series)."""
    name, values, seed, epochs, dataset, horizon, official, back, refit = job
    import lightning as L
    import torch

    from forecaster.config import ForecasterConfig
    from forecaster.training.train import fit, quiet_lightning

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
    keeper = KeepBest()
    config = ForecasterConfig.from_dict({**values, "random_state": seed, "n_epochs": epochs})
    panel, _ = inner_panel(dataset, horizon, official, back)
    result = fit(config, panel, val_size=horizon, test_size=horizon, drop_short=True, callbacks=[keeper])
    parts, model = result.parts, result.model
    model.load_state_dict(keeper.state)
    runs = [
        {
            "setting": name,
            "seed": seed,
            "best_epoch": keeper.epoch,
            "best_val_smape": keeper.best,
            "fit_seconds": result.fit_seconds,
            "ids": [str(i) for i in parts.test.ids],
            "forecast": model.forecast_part(parts.seen, parts.test).tolist(),
        }
    ]
    if refit:  # the same configuration trained again through the validation part, for the best epoch count
        kept = panel.take(np.isin(panel.ids, parts.test.ids))
        again = fit(config.replace(n_epochs=keeper.epoch), kept, val_size=horizon, test_size=0, drop_short=True)
        trained, window = again.parts.train, again.parts.val  # the test window stands as a validation part never used
        forecast = again.model.forecast_part(trained, window).reshape(len(window), horizon)
        rows = {str(series_id): index for index, series_id in enumerate(window.ids)}
        runs.append(
            runs[0]
            | {
                "setting": f"{name}+refit",
                "fit_seconds": again.fit_seconds,
                "ids": [i for i in runs[0]["ids"] if i in rows],
                "forecast": np.concatenate([forecast[rows[i]] for i in runs[0]["ids"] if i in rows]).tolist(),
            }
        )
    return runs


def scores(test, seen, forecasts: dict, ids: list[str]) -> dict:
    """sMAPE and MASE over the series `ids` of the mean of `forecasts` ({series id: H values})."""

    from forecaster.metrics import mase_scales, panel_scores

    rows = {series_id: index for index, series_id in enumerate(test.ids)}
    chosen = np.array([rows[i] for i in ids])
    h = int(test.lengths[0])
    actual = test.values.reshape(len(test), h)[chosen].T
    predicted = np.array([forecasts[i] for i in ids]).T
    scales = mase_scales(seen)[chosen]
    result = panel_scores(actual, predicted, np.ones_like(actual), np.arange(len(ids)), len(ids), scales)
    return {name: round(float(result[name]), 3) for name in ("smape", "mase")}


def by_series(run: dict, horizon: int) -> dict:
    values = run["forecast"]
    return {series_id: values[i * horizon : (i + 1) * horizon] for i, series_id in enumerate(run["ids"])}


def mean_of(runs: list[dict], horizon: int, ids: list[str]) -> dict:

    tables = [by_series(run, horizon) for run in runs]
    return {i: np.mean([table[i] for table in tables], axis=0).tolist() for i in ids}


def baselines(seen_inner, horizon: int, ids: list[str]) -> dict:
    """Seasonal naive, AutoETS, Theta and AutoCES on each series' inner training and validation part."""
    from forecaster.baselines import BaselineUnavailable, forecast

    history, test = seen_inner.split_last(horizon)
    rows = {series_id: index for index, series_id in enumerate(test.ids)}
    found = {}
    for name in ("seasonal naive", "AutoETS", "Theta", "AutoCES"):
        try:
            predicted = forecast(name, history, horizon).values  # (horizon, S)
        except BaselineUnavailable as error:  # statsforecast not installed
            found[name] = {"unavailable": str(error)}
            continue
        table = {i: predicted[:, rows[i]].tolist() for i in ids}
        found[name] = scores(test, history, table, ids)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="m3_monthly", help="a competition panel of forecaster.data.read")
    parser.add_argument("--horizon", type=int, help="the inner split's horizon (default: the panel's official one)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--setting", nargs="+", action="append", metavar=("NAME", "KEY=VALUE"))
    parser.add_argument(
        "--set", dest="common", action="append", default=[], metavar="KEY=VALUE", help="a change for every setting"
    )
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument(
        "--ensemble",
        action="append",
        default=[],
        metavar="NAME=SETTING+SETTING",
        help="also score the mean forecast of these settings' seeds together (repeatable)",
    )
    parser.add_argument("--keep", metavar="FILE.json", help="write every fit's forecasts there, for later ensembles")
    parser.add_argument(
        "--official",
        action="store_true",
        help="score on the official hold-out instead: only for the few settings already chosen on the inner split",
    )
    parser.add_argument(
        "--refit",
        action="store_true",
        help="also score each fit trained again through its validation part for its best epoch count",
    )
    parser.add_argument(
        "--back",
        type=int,
        default=1,
        metavar="K",
        help="score on the inner window K official horizons from each series' end (default 1: the inner split)",
    )
    args = parser.parse_args()
    if args.official and (args.horizon or args.back != 1):
        parser.error("--official scores on the panel's own hold-out: leave --horizon and --back out")
    if args.back < 1:
        parser.error(f"--back {args.back}: give 1 (the inner split) or more")

    seen_inner, horizon = inner_panel(args.dataset, args.horizon, args.official, args.back)
    settings = {name: changes for name, *changes in args.setting} if args.setting else DEFAULT_SETTINGS
    settings = {name: [*args.common, *changes] for name, changes in settings.items()}
    values = {name: setting_values(changes, horizon) for name, changes in settings.items()}
    jobs = [
        (name, values[name], seed, args.epochs, args.dataset, horizon, args.official, args.back, args.refit)
        for name in values
        for seed in args.seeds
    ]
    with ProcessPoolExecutor(args.processes) as pool:
        runs = [run for found in pool.map(one_fit, jobs) for run in found]
    if args.refit:
        values |= {f"{name}+refit": values[name] for name in values}
        settings |= {f"{name}+refit": settings[name] + ["(trained again through validation)"] for name in settings}
    common = set(runs[0]["ids"]).intersection(*(run["ids"] for run in runs))
    ids = [str(i) for i in seen_inner.ids if str(i) in common]  # the panel's order
    seen_inner = seen_inner.take(np.isin(seen_inner.ids.astype(str), ids))  # no series shorter than its test window
    history, test = seen_inner.split_last(horizon)
    report = {}
    for name in values:
        own = [run for run in runs if run["setting"] == name]
        singles = [scores(test, history, by_series(run, horizon), ids) for run in own]
        report[name] = {
            "changes": settings[name],
            "series_trained": len(own[0]["ids"]),
            "seeds": [
                {"seed": run["seed"], "best_epoch": run["best_epoch"], "fit_seconds": round(run["fit_seconds"], 1)}
                | single
                for run, single in zip(own, singles)
            ],
            "single_median": {metric: statistics.median(s[metric] for s in singles) for metric in ("smape", "mase")},
            "ensemble": scores(test, history, mean_of(own, horizon, ids), ids),
        }
    direct = [run for run in runs if values[run["setting"]].get("shape") == "direct"]
    ensembles = {}
    if len({run["setting"] for run in direct}) > 1:
        ensembles["every direct setting"] = scores(test, history, mean_of(direct, horizon, ids), ids)
    for given in args.ensemble:
        name, _, members = given.partition("=")
        chosen = [run for run in runs if run["setting"] in members.split("+")]
        ensembles[name] = scores(test, history, mean_of(chosen, horizon, ids), ids)
    if args.keep:
        Path(args.keep).write_text(json.dumps({"horizon": horizon, "ids_scored": ids, "runs": runs}))
    print(
        json.dumps(
            {
                "bench": "inner_split",
                "dataset": args.dataset,
                "scored_on": "the official hold-out"
                if args.official
                else f"the inner split{f', {args.back} horizons back' if args.back > 1 else ''}",
                "horizon": horizon,
                "series": len(seen_inner),
                "series_scored": len(ids),
                "epochs": args.epochs,
                "seeds": args.seeds,
                "fixed": fixed_settings(),
                "settings": report,
                "ensembles": ensembles,
                "baselines": {} if args.no_baselines else baselines(seen_inner, horizon, ids),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
