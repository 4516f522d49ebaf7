"""What a net reads and how its values are transformed: each step's inputs beside the value (`step_inputs.py`), the
seasonal adjustment (`seasonal_adjustment.py`), the hybrid's exponential smoothing (`smoothing.py`), and the target
transform, the windows and the exact way back (`transforms.py`)."""
