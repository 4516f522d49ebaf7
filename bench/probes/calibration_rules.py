"""Ways to calibrate the answer's forecast distribution, scored on the test windows of sweeps that already ran (issue
62): nothing is trained, the sweeps' own files are read (`bench/panel.py --inner --storage DIR` keeps them).

From each sweep folder: `calibration.parquet` (the validation points that calibrate: the members' mean forecast of
each and its series' scale) and `forecasts.parquet` (the test window: the truth, the answer and its bounds at 80 %,
from which each series' test scale comes back: the half-width over the step's conformal quantile). Each rule makes
the quantiles 0.1-0.9 and the 80 % and 95 % intervals of the test window from those alone:

- `absolute` (the sweep's): per step ahead, the conformal quantile of the absolute scaled errors, symmetric around
  the forecast, quantile q the bound of the central interval at |200 q - 100| %;
- `signed`: per step, the conformal quantiles of the signed scaled errors, each side its own (a forecast biased low
  on validation has its quantiles moved up; a skew shows);
- `signed, pooled`: as `signed`, every step's errors together;
- `relative`: for series above 0 everywhere, the quantiles of log(truth / forecast) per step (errors in proportion
  to the forecast), the others as `absolute`.

Scored as the sweep scores: coverage at 80 % and 95 %, WQL over q = 0.1, ..., 0.9 (twice the pinball loss summed over
every point, over the sum of |y|, the mean over q). Nothing here is chosen on an official test window: run it on
inner splits. Prints JSON.

    python bench/probes/calibration_rules.py DIR [DIR ...]   # sweep folders (or folders holding them)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

QUANTILES = tuple(round(0.1 * k, 1) for k in range(1, 10))
LEVELS = (80.0, 95.0)


def conformal(errors: np.ndarray, probability: float, upper: bool) -> float:
    """The conformal quantile of `errors` at `probability`: the ceil((n + 1) p)-th smallest for an upper bound, the
    floor((n + 1) p)-th for a lower one (each side no narrower than the errors say)."""
    errors = np.sort(errors[np.isfinite(errors)])
    n = len(errors)
    rank = math.ceil((n + 1) * probability) if upper else math.floor((n + 1) * probability)
    if rank > n:
        return math.inf
    if rank < 1:
        return -math.inf
    return float(errors[rank - 1])


def absolute(calibration: pd.DataFrame, test: pd.DataFrame, q: float) -> np.ndarray:
    if q == 0.5:
        return test["answer"].to_numpy()
    level = abs(200 * q - 100) / 100
    half = {step: conformal(np.abs(rows.error.to_numpy()), level, True) for step, rows in calibration.groupby("step")}
    width = test["step"].map(half).to_numpy() * test["scale"].to_numpy()
    return test["answer"].to_numpy() + (width if q > 0.5 else -width)


def signed(calibration: pd.DataFrame, test: pd.DataFrame, q: float, pooled: bool = False) -> np.ndarray:
    if pooled:
        shift = np.full(len(test), conformal(calibration.error.to_numpy(), q, q >= 0.5))
    else:
        by_step = {step: conformal(rows.error.to_numpy(), q, q >= 0.5) for step, rows in calibration.groupby("step")}
        shift = test["step"].map(by_step).to_numpy()
    return test["answer"].to_numpy() + shift * test["scale"].to_numpy()


def relative(calibration: pd.DataFrame, test: pd.DataFrame, q: float) -> np.ndarray:
    found = absolute(calibration, test, q)
    positive = calibration.groupby("unique_id")["positive"].all()
    usable = calibration[calibration.unique_id.map(positive)]
    ratio = np.log(usable.y / usable.forecast)
    by_step = {step: conformal(rows.to_numpy(), q, q >= 0.5) for step, rows in ratio.groupby(usable.step)}
    inside = test.unique_id.map(positive).fillna(False).to_numpy(bool)
    shift = test["step"].map(by_step).to_numpy()
    return np.where(inside, test["answer"].to_numpy() * np.exp(shift), found)


RULES = {
    "absolute (the sweep's)": absolute,
    "signed": signed,
    "signed, pooled": lambda calibration, test, q: signed(calibration, test, q, pooled=True),
    "relative": relative,
}


def score(test: pd.DataFrame, quantiles: dict[float, np.ndarray]) -> dict[str, float]:
    truth = test["y"].to_numpy()
    ordered = np.sort(np.stack([quantiles[q] for q in QUANTILES]), axis=0)
    losses = []
    for k, q in enumerate(QUANTILES):
        miss = truth - ordered[k]
        losses.append(2 * np.sum(np.maximum(q * miss, (q - 1) * miss)) / np.sum(np.abs(truth)))
    found = {"wql": round(float(np.mean(losses)), 4)}
    for level in LEVELS:
        low = 0.5 - level / 200
        lower, upper = quantiles[round(low, 3)], quantiles[round(1 - low, 3)]
        found[f"coverage_{level:g}"] = round(float(np.mean((truth >= lower) & (truth <= upper))) * 100, 1)
    return found


def read(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    calibration = pd.read_parquet(folder / "calibration.parquet")
    calibration["error"] = (calibration.y - calibration.forecast) / calibration.scale
    calibration["positive"] = calibration.groupby("unique_id")["y"].transform("min") > 0
    forecasts = pd.read_parquet(folder / "forecasts.parquet")
    test = forecasts[forecasts.part == "test"].copy()
    test["step"] = test.groupby("unique_id").cumcount() + 1
    half80 = {step: conformal(np.abs(rows.error.to_numpy()), 0.8, True) for step, rows in calibration.groupby("step")}
    test["scale"] = (test["answer-hi-80"] - test["answer"]) / test["step"].map(half80)
    return calibration, test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    folders = sorted(
        {path.parent for folder in args.folders for path in folder.glob("**/calibration.parquet")}, key=str
    )
    found: dict = {}
    for folder in folders:
        calibration, test = read(folder)
        needed = sorted({*QUANTILES, *(round(0.5 - level / 200, 3) for level in LEVELS)})
        needed += [round(1 - q, 3) for q in needed if round(1 - q, 3) not in needed]
        found[folder.name] = {
            name: score(test, {q: rule(calibration, test, q) for q in needed}) for name, rule in RULES.items()
        }
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
