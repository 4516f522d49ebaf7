"""One RNN forecaster, on a series or a panel of many, without Ray: its configuration, its data, a fit, its
forecasts, and a sweep's answer saved as one model.

    from forecaster import ForecasterConfig, fit, load_panel
    result = fit(ForecasterConfig(shape="direct", input_chunk_length=24), load_panel("stores.csv"), val_size=12)
    result.model.forecast(result.parts.seen, 12)

The names below load their modules when first used: `import forecaster` loads no torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forecaster.answer.model import AnswerModel
    from forecaster.config import ConfigError, ForecasterConfig
    from forecaster.data.panel import Panel
    from forecaster.data.read import SeriesError, load_panel, load_series
    from forecaster.shapes import register, shape_of
    from forecaster.shapes.base import Shape
    from forecaster.training.net import RNNNet
    from forecaster.training.train import FitResult, fit, fit_through

_WHERE = {
    "AnswerModel": "forecaster.answer.model",
    "ConfigError": "forecaster.config",
    "FitResult": "forecaster.training.train",
    "ForecasterConfig": "forecaster.config",
    "Panel": "forecaster.data.panel",
    "RNNNet": "forecaster.training.net",
    "SeriesError": "forecaster.data.read",
    "Shape": "forecaster.shapes.base",
    "fit": "forecaster.training.train",
    "fit_through": "forecaster.training.train",
    "load_panel": "forecaster.data.read",
    "load_series": "forecaster.data.read",
    "register": "forecaster.shapes",
    "shape_of": "forecaster.shapes",
}
__all__ = [
    "AnswerModel",
    "ConfigError",
    "FitResult",
    "ForecasterConfig",
    "Panel",
    "RNNNet",
    "SeriesError",
    "Shape",
    "fit",
    "fit_through",
    "load_panel",
    "load_series",
    "register",
    "shape_of",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'forecaster' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
    return __all__
