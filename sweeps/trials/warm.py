"""What every Ray worker imports before it takes work, so that a trial placed on it trains at once.

Ray's `preload_python_modules` setting (RAY_preload_python_modules=sweeps.trials.warm on a node's `ray start`; the
sweep's own Ray sets it itself) makes each worker import this module when it starts, and Ray starts a
worker per CPU as soon as the node is up: the seconds of importing torch and Lightning pass while the node
waits for its first trial, not inside the trial. A module that fails to import is logged and left for the
trial to meet: its own import raises the same error, so the trial fails with it instead of the worker dying
at birth (which Ray would retry forever).
"""

import importlib
import logging

WARM_MODULES = (
    "torch",
    "lightning",
    "forecaster.training.train",
    "sweeps.trials.epoch_reporter",
    "sweeps.trials.trial",
)

for _name in WARM_MODULES:
    try:
        importlib.import_module(_name)
    except Exception:  # the trial re-imports it and fails with the error itself
        logging.getLogger(__name__).exception("could not import %s before the first trial", _name)
