"""Hyperparameter sweeps of the forecaster on a Ray cluster, from Python as `python -m sweeps.run` runs them.

    from sweeps import SweepOptions, read_results, sweep
    run = sweep(SweepOptions(sweep="panel", data="stores.csv", horizon=12, levels=(80, 95)))
    run.scores.answer["test_smape"], run.future.table              # the answer beside the baselines, the future
    read_results("results/panel-20261201-101500").best                 # any sweep's folder, later

The names below load their modules when first used: `import sweeps` loads no Ray, torch or Lightning.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forecaster.answer.model import AnswerModel
    from sweeps.driver import SweepRun, run_sweep, sweep
    from sweeps.notebook import SweepForecaster
    from sweeps.plan.options import PlanError, SweepOptions
    from sweeps.plan.registry import SWEEPS, Sweep
    from sweeps.plan.sweep_plan import SweepPlan, make_plan
    from sweeps.trials.results import SweepResults, read_results

_WHERE = {
    "AnswerModel": "forecaster.answer.model",
    "PlanError": "sweeps.plan.options",
    "SWEEPS": "sweeps.plan.registry",
    "Sweep": "sweeps.plan.registry",
    "SweepOptions": "sweeps.plan.options",
    "SweepPlan": "sweeps.plan.sweep_plan",
    "SweepResults": "sweeps.trials.results",
    "SweepForecaster": "sweeps.notebook",
    "SweepRun": "sweeps.driver",
    "make_plan": "sweeps.plan.sweep_plan",
    "read_results": "sweeps.trials.results",
    "run_sweep": "sweeps.driver",
    "sweep": "sweeps.driver",
}
__all__ = [
    "SWEEPS",
    "AnswerModel",
    "PlanError",
    "Sweep",
    "SweepForecaster",
    "SweepOptions",
    "SweepPlan",
    "SweepResults",
    "SweepRun",
    "make_plan",
    "read_results",
    "run_sweep",
    "sweep",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'sweeps' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
    return __all__
