"""How the saved model's intervals cover the horizon after its data: what a user gets in future.parquet, scored where
the truth is known. Nothing is trained: each sweep folder was run on a competition panel less its last K horizons
(`bench/panel.py --inner K --storage DIR` keeps them), its saved model (model/) forecasts the next horizon from the
sweep's data, and that horizon is the panel's (K-1)-th from its end (K = 1: the official hold-out).

Each folder's model is scored with two calibrations, both rebuilt here from the sweep's kept nets as the sweep built
them before its answer became an ensemble (2026-12-06: the test window's errors of the nets' mean, continued through
the validation part): every point's unit 1, and each point's unit the members' spread plus its floor
(forecaster.answer.intervals.spread_units, the sweep's since 2026-12-05), around the nets' mean. Coverage at 80 % and 95
%
and WQL over q = 0.1, ..., 0.9, pooled over every point of the series the sweep kept (it drops those too short for
its space). Prints JSON.

    python bench/future_intervals.py DIR [DIR ...]    # sweep folders of --inner runs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def calibrations(folder: str):
    """The folder's saved model and its calibrations {rule: Calibration}, rebuilt from the test model's nets."""
    from forecaster.answer.intervals import fitted_error
    from forecaster.answer.model import AnswerModel
    from sweeps.answer.intervals import members_mean, reach, scaled_errors
    from sweeps.plan.record import read_plan
    from sweeps.plan.storage import TEST_MODEL_FOLDER
    from sweeps.report import saved_model

    plan = read_plan(folder)
    model = AnswerModel.load(folder)
    assert model.calibration is not None, f"{folder}: its model holds no calibration (a sweep run with --levels)"
    tested = saved_model(plan, TEST_MODEL_FOLDER, [member.trial_id for member in model.members])
    if tested is None:
        raise SystemExit(f"{folder}: no test model of its members (a sweep with a test window and a refit keeps one)")
    seen, test = plan.parts.seen, plan.parts.test
    horizon = int(test.lengths.max())
    forecasts = np.array([member.net.forecast_part(seen, test) for member in tested.members])
    fitted = members_mean([fitted_error(member.net, seen, horizon) for member in tested.members])
    equal = np.full(len(forecasts), 1.0 / len(forecasts))
    spread = scaled_errors(seen, test, forecasts, equal, fitted, horizon)
    errors, floor = reach(spread.errors, horizon), spread.floor
    alone = scaled_errors(seen, test, forecasts.mean(axis=0, keepdims=True), np.ones(1), fitted, horizon)
    unit_one = reach(alone.errors, horizon)  # one "member": no spread
    found = {
        "unit 1": dataclasses.replace(model.calibration, errors=unit_one, spread_floor=0.0),
        "spread + 2": dataclasses.replace(model.calibration, errors=errors, spread_floor=floor),
    }
    return plan, model, found


def scored(folder: Path) -> dict:
    from forecaster.data.read import load_panel
    from forecaster.metrics import WQL_QUANTILES, weighted_quantile_loss

    match = re.match(r"(.+)-inner(\d*)-seed\d+", folder.name)
    if match is None:
        raise SystemExit(f"{folder}: not the folder of an --inner run (PANEL-innerK-seedS)")
    panel_name, windows = match.group(1), int(match.group(2) or 1)
    plan, model, found = calibrations(str(folder))
    whole = load_panel(panel_name)
    upto = whole.split_last((windows - 1) * whole.horizon)[0] if windows > 1 else whole
    truth_panel = upto.split_last(whole.horizon)[1]
    truth_panel = truth_panel.take(np.isin(truth_panel.ids, plan.panel.ids))  # less those the sweep dropped as short
    assert list(truth_panel.ids) == list(plan.panel.ids), "the sweep's series are the panel's, in its order"
    truth = truth_panel.values.reshape(len(truth_panel), whole.horizon).T
    row = {}
    for rule, calibration in found.items():
        nets = [dataclasses.replace(member, weight=None) for member in model.members]
        table = dataclasses.replace(model, members=nets, statistical=[], calibration=calibration).forecast(
            plan.panel, whole.horizon, levels=[80, 95], quantiles=WQL_QUANTILES
        )

        def column(name: str, table=table) -> np.ndarray:
            return table[name].to_numpy().reshape(len(truth_panel), whole.horizon).T

        scores = {"spread_floor": round(calibration.spread_floor, 4)}
        scores["wql"] = round(weighted_quantile_loss(truth, {q: column(f"answer_ql{q:g}") for q in WQL_QUANTILES}), 4)
        for level in (80, 95):
            inside = (truth >= column(f"answer-lo-{level}")) & (truth <= column(f"answer-hi-{level}"))
            scores[f"coverage_{level}"] = round(100 * float(inside.mean()), 1)
        row[rule] = scores
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    print(json.dumps({folder.name: scored(folder) for folder in args.folders}, indent=1))


if __name__ == "__main__":
    main()
