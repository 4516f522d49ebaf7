"""Training a forecaster: the data's parts (`parts.py`), the net in plain PyTorch (`net.py`), the net as a
LightningModule (`model.py`) and the fit with a Lightning Trainer (`train.py`)."""
