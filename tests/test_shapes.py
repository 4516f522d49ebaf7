"""A shape of model is one class behind one interface (forecaster/shapes): a fourth shape, written here and
registered with one line, is checked, trained, forecast with, saved and loaded as the built-in ones are; and the
built-in shapes are found by name without loading any other."""

import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

from forecaster.config import ConfigError, ForecasterConfig, ShapeSettings, setting
from forecaster.data.read import load_panel
from forecaster.shapes import recurrence, register, shape_names, shape_of, unregister
from forecaster.shapes.base import Shape
from forecaster.training.net import RNNNet
from forecaster.training.train import fit
from tests.test_panel import monthly_panel_frame


@dataclasses.dataclass(frozen=True)
class OneStepSettings(ShapeSettings):
    """The toy's own two settings, which no other shape reads."""

    head_width: int = setting(0, "one_step shape: the width of a hidden layer before the output (0: none)")
    head_dropout: float = setting(0.0, "one_step shape: dropout after that hidden layer")

    def __post_init__(self):
        if not 0.0 <= self.head_dropout < 1.0:
            raise ConfigError(f"head_dropout={self.head_dropout!r} must be in [0, 1)")


class OneStep(Shape):
    """A toy: the net reads its padded input chunk and emits the next point; a forecast feeds each point back."""

    name = "one_step"
    padded = True
    settings = OneStepSettings

    def check(self, config):
        if config.window_norm != "none":
            raise ConfigError(f"window_norm={config.window_norm!r} with shape='one_step': it reads its windows as cut")

    def head(self, net):
        config = net.config
        if not config.head_width:
            return nn.Linear(config.hidden_dim, 1)
        hidden = nn.Linear(config.hidden_dim, config.head_width)
        return nn.Sequential(hidden, nn.ReLU(), nn.Dropout(config.head_dropout), nn.Linear(config.head_width, 1))

    def forward(self, net, inputs):
        return net.head(recurrence.hidden_states(net.rnn, inputs)[-1]).T  # (1, B)

    def window_layout(self, config, lengths):
        return config.input_chunk_length + 1, np.ones_like(lengths), lengths - 1, config.input_chunk_length

    def loss(self, module, batch, originals, epoch):
        chunk = module.config.input_chunk_length
        return module.unit_errors(module(batch[:chunk]), batch[chunk:, :, 0]).mean()

    def forecast_scaled(self, net, context, steps, future):
        rows, points = context, []
        for _ in range(steps):
            points.append(net(rows))
            rows = torch.cat([rows, torch.stack([points[-1], torch.ones_like(points[-1])], -1)])[1:]
        return torch.cat(points)


@pytest.fixture(autouse=True, scope="module")
def one_step():
    """The toy registered with one line, for this module's tests only."""
    yield register(OneStep())
    unregister(OneStep.name)


def test_a_shape_of_ones_own_is_checked_trained_forecast_saved_and_loaded(tmp_path):
    assert shape_names()[-1] == "one_step"
    with pytest.raises(ConfigError, match="window_norm='subtract' with shape='one_step'"):
        ForecasterConfig(shape="one_step", window_norm="subtract")
    with pytest.raises(ConfigError, match=r"head_dropout=1.5 must be in \[0, 1\)"):
        ForecasterConfig(shape="one_step", head_dropout=1.5)
    assert ForecasterConfig(shape="one_step", head_width=4).head_width == 4
    assert "head_width" not in ForecasterConfig().to_dict()  # the recurrent shape has no such setting
    panel = load_panel(monthly_panel_frame(lengths=(60, 72, 30)))
    config = ForecasterConfig(shape="one_step", input_chunk_length=12, hidden_dim=8, n_epochs=30, lr=1e-2)
    result = fit(config, panel, val_size=6, test_size=6, threads=1)
    history = result.history
    assert history[-1]["val_smape"] < 0.8 * history[0]["val_smape"]
    forecast = result.model.forecast_columns(result.parts.seen, 9)
    assert forecast.shape == (9, 3) and np.isfinite(forecast).all()

    path = tmp_path / "one_step.ckpt"
    torch.save({"state_dict": result.model.state_dict(), "hyper_parameters": dict(result.model.hparams)}, path)
    loaded = RNNNet.load_best_model(path)
    assert loaded.shape is shape_of("one_step")
    np.testing.assert_array_equal(loaded.forecast_columns(result.parts.seen, 9), forecast)


SWEEP_ONE_STEP = """
import json, sys
from forecaster.shapes import register
from sweeps import SweepOptions, sweep
from tests.test_shapes import OneStep

register(OneStep())
pins = {"shape": "one_step", "window_norm": "none", "calendar": False, "head_width": 8, "head_dropout": 0.1}
options = SweepOptions(sweep="air_rnn", smoke_test=True, pins=pins, storage_path=sys.argv[1], name="toy")
run = sweep(options, progress=False)
trials = run.results.trials
print(json.dumps({
    "status": sorted(set(trials["status"])), "shape": sorted(set(trials["shape"])),
    "head_width": sorted({int(width) for width in trials["head_width"]}),
    "direct_setting": "output_chunk_length" in trials, "future": run.future is not None,
}))
"""
"""A user's script: the toy registered with one line, then a sweep from Python (in a process of its own: a sweep's Ray
in this one would outlive it for the tests after)."""


@pytest.mark.slow
def test_a_shape_of_ones_own_with_settings_of_its_own_is_swept(tmp_path):
    """The air_rnn sweep pinned to the toy shape and its two settings: Ray's workers, which never imported this
    module, know the shape (the sweep registers it there), train it with those settings, and its answer, saved as one
    model, forecasts with them."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from forecaster.answer.model import AnswerModel
    from tests.test_sweep_cli import ENV

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", SWEEP_ONE_STEP, str(tmp_path)], cwd=root, env=ENV, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    swept = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(swept["status"]) <= {"COMPLETED", "STOPPED"} and swept["shape"] == ["one_step"]  # none failed
    assert swept["head_width"] == [8] and not swept["direct_setting"] and swept["future"]
    saved = AnswerModel.load(tmp_path / "toy")
    assert {(member.net.config.head_width, member.net.config.head_dropout) for member in saved.members} == {(8, 0.1)}
    assert isinstance(saved.members[0].net.head, nn.Sequential)
    assert np.isfinite(saved.forecast("air_passengers", h=6)["answer"]).all()


def test_an_unknown_shape_names_the_shapes_there_are():
    with pytest.raises(ConfigError, match="shape='ring' is not one of recurrent, direct, hybrid"):
        ForecasterConfig(shape="ring")
    with pytest.raises(KeyError, match="no shape 'ring'; the shapes are: recurrent, direct, hybrid"):
        shape_of("ring")
    with pytest.raises(ValueError, match="a shape needs a name of its own"):
        register(type("Again", (Shape,), {"name": "direct"})())
