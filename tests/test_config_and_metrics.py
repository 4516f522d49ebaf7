"""The config refuses what cannot train, and MAPE is what the textbook says."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from forecaster.config import ConfigError, ForecasterConfig
from forecaster.data.read import SeriesError, load_panel
from forecaster.metrics import mape
from forecaster.training.parts import fit_parts


def test_defaults_are_the_seed_config():
    assert ForecasterConfig().to_dict() == {
        "model": "RNN",
        "hidden_dim": 20,
        "n_rnn_layers": 1,
        "dropout": 0.0,
        "batch_size": 16,
        "n_epochs": 300,
        "lr": 1e-3,
        "loss": "mse",
        "input_chunk_length": 14,
        # Darts' RNNModel, with its own settings.
        "shape": "recurrent",
        "loss_after_context": False,
        "training_length": 20,
        # The pinball loss' quantile.
        "pinball_tau": 0.48,
        "windows_from_last": 0,
        # Every window of a single series once per epoch (Air Passengers has about 100); a panel's epoch is capped.
        "windows_per_epoch": 4096,
        "random_state": 42,
        # The mission's plain path: min-max scaling only, one forecast from the end of training, the latest weights.
        "target_transform": "none",
        "window_norm": "none",
        "calendar": False,
        "deseasonalise": False,
        "ema_decay": 0.0,
        # Each numeric covariate standardised on its own series' training part.
        "covariate_scaling": "series",
        # The covariates read by the recurrent layers, as Darts' and neuralforecast's nets read them.
        "covariate_path": "net",
        # No value a season back beside each point.
        "seasonal_lag": 0,
        "val_origins": 1,
    }
    # The other shapes' own settings, which a config of theirs holds instead: Darts' BlockRNNModel's, and Smyl's
    # ES-RNN's beside them.
    direct = {"output_chunk_length": 0, "hidden_fc_sizes": (), "activation": "ReLU"}
    assert dataclasses.asdict(ForecasterConfig(shape="direct").settings) == direct
    assert dataclasses.asdict(ForecasterConfig(shape="hybrid").settings) == direct | {
        "level_penalty": 200.0,
        "series_lr": 0.1,
    }


def test_a_shape_holds_its_own_settings_and_leaves_another_shapes_out():
    """Flat keywords, as a sweep's trial and a JSON file give them: each shape keeps its own settings, reads them as
    the config's, and leaves out another shape's; a replace that changes the shape keeps what the new one shares."""
    direct = ForecasterConfig(shape="direct", output_chunk_length=6, training_length=30, hidden_fc_sizes=[8])
    assert (direct.output_chunk_length, direct.hidden_fc_sizes) == (6, (8,))
    assert "training_length" not in direct.to_dict()
    with pytest.raises(AttributeError, match="training_length is the recurrent shape's setting"):
        _ = direct.training_length
    hybrid = direct.replace(shape="hybrid", level_penalty=50)
    assert (hybrid.output_chunk_length, hybrid.hidden_fc_sizes, hybrid.level_penalty) == (6, (8,), 50.0)
    assert ForecasterConfig.from_dict(hybrid.to_dict()) == hybrid


@pytest.mark.parametrize(
    "values, message",
    [
        ({"model": "TCN"}, "model='TCN' is not one of RNN, LSTM, GRU"),
        ({"hidden_dim": 0}, "hidden_dim=0 must be at least 1"),
        ({"n_rnn_layers": 0}, "n_rnn_layers=0 must be at least 1"),
        ({"hidden_dim": 2.5}, "hidden_dim=2.5 must be a whole number"),
        ({"shape": "direct", "seasonal_lag": 168}, "seasonal_lag=168 is the recurrent shape's: the direct shape reads"),
        ({"seasonal_lag": -1}, "seasonal_lag=-1 must be at least 0"),
        ({"covariate_path": "deep"}, "covariate_path='deep' is not one of net, linear, none"),
        ({"batch_size": True}, "batch_size=True must be a whole number, got bool"),
        ({"dropout": 1.0}, r"dropout=1.0 must be in \[0, 1\)"),
        ({"dropout": -0.1}, r"dropout=-0.1 must be in \[0, 1\)"),
        ({"lr": 0}, "lr=0 must be a positive learning rate"),
        ({"lr": float("nan")}, "lr=nan must be a finite number"),
        ({"training_length": 14, "input_chunk_length": 14}, "training_length=14 must exceed input_chunk_length=14"),
        ({"random_state": 2**32}, r"random_state=4294967296 must be at most 4294967295 \(2\*\*32 - 1\)"),
        ({"shape": "block"}, "shape='block' is not one of recurrent, direct"),
        (
            {"loss": "mase", "shape": "direct", "target_transform": "log_diff"},
            "loss='mase' with target_transform='log_diff': a window of differences does not hold its values",
        ),
        ({"shape": "direct", "hidden_fc_sizes": [32, 0]}, "hidden_fc_sizes=0 must be at least 1"),
        ({"shape": "direct", "hidden_fc_sizes": "64"}, "hidden_fc_sizes='64' must be a list of layer sizes"),
        ({"shape": "direct", "activation": "Swish"}, "activation='Swish' is not one of ReLU, Tanh, Sigmoid, none"),
        ({"shape": "direct", "output_chunk_length": -1}, "output_chunk_length=-1 must be at least 0"),
        ({"windows_from_last": 1.5}, "windows_from_last=1.5 must be a whole number"),
    ],
)
def test_impossible_values_fail_naming_the_value(values, message):
    with pytest.raises(ConfigError, match=message):
        ForecasterConfig(**values)


def test_unknown_keys_are_refused_with_a_suggestion_and_the_valid_names():
    with pytest.raises(
        ConfigError, match=r"unknown hyperparameter 'hiden_dim' \(did you mean 'hidden_dim'\?\)"
    ) as error:
        ForecasterConfig.from_dict({"hiden_dim": 8})
    assert "valid ones are: model, hidden_dim, n_rnn_layers" in str(error.value)


def test_values_from_search_spaces_are_normalised():
    config = ForecasterConfig.from_dict({"model": "gru", "hidden_dim": np.int64(32), "batch_size": 8.0})
    assert (config.model, config.hidden_dim, config.batch_size) == ("GRU", 32, 8)
    assert type(config.hidden_dim) is int


def test_mape_against_hand_computed_values():
    actual, forecast = np.array([100.0, 200.0, 400.0]), np.array([110.0, 180.0, 400.0])
    # (10/100 + 20/200 + 0/400) / 3 * 100 = 6.666...
    assert mape(actual, forecast) == pytest.approx(20 / 3)
    assert float(mape(torch.tensor(actual), torch.tensor(forecast))) == pytest.approx(20 / 3)
    assert mape(np.array([-50.0]), np.array([-25.0])) == pytest.approx(50.0)  # |y| in the denominator


def test_mape_refuses_shapes_that_would_broadcast():
    with pytest.raises(ValueError, match="shape"):
        mape(np.ones(3), np.ones((3, 1)))


def test_zeros_in_the_validation_target_are_refused_before_training():
    values = [5.0] * 30 + [5.0, 0.0, 3.0, 0.0]
    series = pd.DataFrame({"ds": pd.date_range("2020-01-01", periods=34, freq="D"), "y": values})
    config = ForecasterConfig(training_length=5, input_chunk_length=3)
    with pytest.raises(SeriesError, match=r"2 zero value\(s\) \(at 2020-02-01, 2020-02-03\), where MAPE is undefined"):
        fit_parts(config, load_panel(series), split_after="2020-01-30")
