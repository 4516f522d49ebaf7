"""Does the members' disagreement tell how wide the answer's distribution should be, point by point? Scored on the
test windows of sweeps that already ran (issue 62); nothing is trained: each member's forecasts come from the nets the
sweep kept (`bench/panel.py --inner --storage DIR` keeps them).

From each sweep folder: every member's forecast of the validation part (its trial's best net, from the end of
training: what calibrates) and of the test window (the test model's net, continued through the validation part: what
is bounded), and each series' scale as the sweep computes it (forecaster.answer.intervals.interval_scales). With the
members' mean as the forecast, each rule divides each absolute scaled error by a unit of its own point, takes the
conformal quantile per step, and multiplies it back by the unit of each test point:

- `unit 1`: the unit 1 everywhere (the sweep's rule before 2026-12-05);
- `spread + k`: the members' standard deviation at the point over its series' scale, plus k times its median over the
  part (k keeps a point the members agree on from a zero width); the sweep takes k = 2 since 2026-12-05
  (forecaster.answer.intervals.SPREAD_WEIGHT, chosen here on two inner windows of each panel);
- `relative spread + k`: the same over its median in its own part, so that only how the points differ counts, not
  how much more the continued nets agree than the trials' nets did;
- `window factor`: 1 everywhere, times the ratio of the test window's median spread to the validation part's.

Scored as the sweep scores: coverage at 80 % and 95 %, WQL over q = 0.1, ..., 0.9 (forecaster.metrics), quantile q
the bound of the central interval at |200 q - 100| %, the median the forecast. Nothing here is chosen on an official
test window: run it on inner splits. Prints JSON.

    python bench/probes/spread_calibration.py DIR [DIR ...]   # sweep folders
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from forecaster.answer.intervals import conformal_quantiles, fitted_error, interval_scales
from forecaster.metrics import weighted_quantile_loss

LEVELS = (20.0, 40.0, 60.0, 80.0, 95.0)
QUANTILES = tuple(round(0.1 * k, 1) for k in range(1, 10))
WEIGHTS = (0.5, 1.0, 2.0, 4.0)


def member_forecasts(folder: str) -> dict[str, np.ndarray]:
    """Each member's forecasts of the validation part and the test window as (members, steps, S), the truth of
    both, and each series' scale before each."""
    from forecaster.training.net import RNNNet
    from sweeps.answer.intervals import grid
    from sweeps.answer.members import members
    from sweeps.plan.record import read_plan
    from sweeps.plan.storage import TEST_MODEL_FOLDER
    from sweeps.report import saved_model
    from sweeps.trials.results import collect

    plan = read_plan(folder)
    chosen = members(plan, collect(plan))
    tested = saved_model(plan, TEST_MODEL_FOLDER, [member.trial_id for member in chosen])
    if tested is None:
        raise SystemExit(f"{folder}: no test model of its members (a sweep with a test window and a refit keeps one)")
    train, val, seen, test = plan.parts.train, plan.parts.val, plan.parts.seen, plan.parts.test
    horizon = int(test.lengths.max())
    validation, ahead, fitted_validation, fitted_test = [], [], [], []
    for member, continued in zip(chosen, tested.members):
        trial_net = RNNNet.load_best_model(io.BytesIO(member.best_model))
        validation.append(grid(val, trial_net.forecast_part(train, val)))
        fitted_validation.append(fitted_error(trial_net, train, horizon))
        ahead.append(grid(test, continued.net.forecast_part(seen, test)))
        fitted_test.append(fitted_error(continued.net, seen, horizon))
    return {
        "validation": np.array(validation)[:, :horizon],
        "test": np.array(ahead),
        "truth_validation": grid(val, val.values)[:horizon],
        "truth_test": grid(test, test.values),
        "scale_validation": interval_scales(train, horizon, np.nanmean(fitted_validation, axis=0)),
        "scale_test": interval_scales(seen, horizon, np.nanmean(fitted_test, axis=0)),
        "floor": np.where(np.minimum.reduceat(seen.values, seen.offsets[:-1]) >= 0, 0.0, -np.inf),
    }


def judged(found: dict[str, np.ndarray], unit_validation: np.ndarray, unit_test: np.ndarray) -> dict[str, float]:
    """Coverage at 80 % and 95 % and WQL on the test window of the rule whose units are these."""
    forecast_validation, forecast_test = found["validation"].mean(0), found["test"].mean(0)
    errors = np.abs(found["truth_validation"] - forecast_validation) / found["scale_validation"] / unit_validation
    halves = conformal_quantiles(errors, LEVELS)
    bounds = {}
    for level, half in halves.items():
        width = half[:, None] * unit_test * found["scale_test"]
        bounds[level] = (np.maximum(forecast_test - width, found["floor"]), forecast_test + width)
    quantiles = {
        q: forecast_test if q == 0.5 else bounds[round(abs(200 * q - 100), 6)][0 if q < 0.5 else 1] for q in QUANTILES
    }
    ordered = dict(zip(QUANTILES, np.sort(np.stack([quantiles[q] for q in QUANTILES]), axis=0)))
    truth = found["truth_test"]
    scores = {"wql": round(weighted_quantile_loss(truth, ordered), 4)}
    present = np.isfinite(truth)
    for level in (80.0, 95.0):
        lower, upper = bounds[level]
        inside = (truth >= lower) & (truth <= upper)
        scores[f"coverage_{level:g}"] = round(100 * float(inside[present].mean()), 1)
    return scores


def rules(found: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    spread_validation = found["validation"].std(0) / found["scale_validation"]
    spread_test = found["test"].std(0) / found["scale_test"]
    median_validation, median_test = np.nanmedian(spread_validation), np.nanmedian(spread_test)
    ones_validation, ones_test = np.ones_like(spread_validation), np.ones_like(spread_test)
    scored = {"unit 1": judged(found, ones_validation, ones_test)}
    for k in WEIGHTS:
        scored[f"spread + {k:g}"] = judged(
            found, spread_validation + k * median_validation, spread_test + k * median_validation
        )
        scored[f"relative spread + {k:g}"] = judged(
            found, spread_validation / median_validation + k, spread_test / median_test + k
        )
    scored["window factor"] = judged(found, ones_validation, ones_test * median_test / median_validation)
    return {
        "median spread, validation and test": [round(float(median_validation), 3), round(float(median_test), 3)],
        **scored,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    print(json.dumps({folder.name: rules(member_forecasts(str(folder))) for folder in args.folders}, indent=1))


if __name__ == "__main__":
    main()
