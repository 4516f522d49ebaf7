"""A sweep's answer as one model: its weighted members (`ensemble.py`), its prediction intervals (`intervals.py`), and
the saved model that forecasts without Ray or Lightning (`model.py`)."""
