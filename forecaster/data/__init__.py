"""The data: a panel of series back to back (`panel.py`), the covariates beside it (`covariates.py`), the seasons of
each frequency (`seasons.py`), reading and checking files and tables (`read.py`) and the data known by name
(`datasets/`). Reading a series or a panel is `forecaster.data.load_panel`, as it always was; the names below load
`read.py` (and pandas) when first used, so that the data known by name costs no import."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forecaster.data.read import SeriesError, as_panel, load_panel, load_series

__all__ = ["SeriesError", "as_panel", "load_panel", "load_series"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'forecaster.data' has no attribute {name!r}")
    return getattr(importlib.import_module("forecaster.data.read"), name)
