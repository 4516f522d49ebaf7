"""The direct shape (Darts' BlockRNNModel): it trains, forecasts and round-trips through checkpoints on a series and on
a panel; it rolls forward block by block beyond output_chunk_length; series shorter than its lookback are padded and
forecast, their padding reaching no other series; no window of either shape reaches a validation or test point; and
every loss is what a hand computation gives."""

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from forecaster.config import ForecasterConfig
from forecaster.data.panel import Panel
from forecaster.data.read import SeriesError, load_panel
from forecaster.features.transforms import ForecastInputs, TargetTransform
from forecaster.fit import main as fit_cli
from forecaster.metrics import mase_scales, series_scores
from forecaster.training.model import RNNForecaster
from forecaster.training.net import RNNNet
from forecaster.training.parts import fit_parts
from forecaster.training.train import PanelDataModule, fit
from tests.helpers import ROOT
from tests.test_panel import monthly_panel_frame

DIRECT = ForecasterConfig(
    shape="direct",
    hidden_dim=12,
    batch_size=32,
    input_chunk_length=36,
    target_transform="log",
    window_norm="subtract",
    calendar=True,
    n_epochs=25,
    lr=3e-3,
)


def checkpoint_of(model: RNNForecaster, path) -> str:
    saved = {
        "state_dict": model.state_dict(),
        "hyper_parameters": dict(model.hparams),
        "pytorch-lightning_version": "2",
    }
    torch.save(saved, path)
    return str(path)


@pytest.mark.parametrize("loss", ["mse", "smape"])
def test_one_series_trains_and_its_checkpoint_forecasts_the_same_without_lightning(loss, tmp_path):
    result = fit(DIRECT.replace(loss=loss, hidden_fc_sizes=(16,)), threads=1)
    assert result.model.config.output_chunk_length == 23  # 0: the validation part's length, set by the fit
    assert all(math.isfinite(row["val_mape"]) for row in result.history)
    assert result.history[-1]["val_mape"] < 0.5 * result.history[0]["val_mape"]
    forecast = result.forecast["forecast"].to_numpy()
    assert 100 * np.mean(np.abs(forecast - result.forecast["y"]) / result.forecast["y"]) == pytest.approx(
        result.val_mape, rel=1e-5
    )
    history = result.parts.train.series(0)
    path = checkpoint_of(result.model, tmp_path / "best_model.ckpt")
    script = (
        "import json, sys; from forecaster.data.read import load_series; from forecaster.training.net import RNNNet; "
        "print(json.dumps(RNNNet.load_best_model(sys.argv[1]).forecast(load_series(sys.argv[2]), 23).tolist()))"
    )
    saved = tmp_path / "history.csv"
    history.rename("y").to_csv(saved, index_label="ds")
    if loss == "mse":  # a process that never imports Lightning, once: the loss changes nothing a forecast reads
        done = subprocess.run(
            [sys.executable, "-c", script, path, str(saved)], cwd=ROOT, capture_output=True, text=True, check=True
        )
        assert json.loads(done.stdout) == pytest.approx(forecast, rel=1e-6)
    assert RNNNet.load_best_model(path).forecast(history, 23) == pytest.approx(forecast, rel=1e-6)
    assert RNNForecaster.load_from_checkpoint(path).forecast(history, 23) == pytest.approx(forecast, rel=1e-6)


def test_a_panel_with_a_series_shorter_than_the_lookback_trains_and_forecasts_every_series(tmp_path):
    panel = load_panel(monthly_panel_frame(lengths=(60, 72, 30)))  # s2 trains on 18 points; the lookback is 36
    config = DIRECT.replace(target_transform="none", window_norm="divide", deseasonalise=True, loss="mase")
    result = fit(config, panel, val_size=6, test_size=6, threads=1)
    assert result.dropped == () and set(result.forecast["unique_id"]) == {"s0", "s1", "s2"}
    assert all(math.isfinite(row["val_smape"]) for row in result.history)
    assert result.history[-1]["val_smape"] < result.history[0]["val_smape"]
    forecast = result.forecast
    for series_id, level in (("s0", 10), ("s1", 100), ("s2", 1000)):
        assert forecast.loc[forecast["unique_id"] == series_id, "forecast"].between(0.5 * level, 2 * level).all()
    restored = RNNNet.load_best_model(checkpoint_of(result.model, tmp_path / "model.ckpt"))
    again = restored.forecast(result.parts.train, 6)
    assert again["forecast"].to_numpy() == pytest.approx(forecast["forecast"].to_numpy(), rel=1e-6)


def test_a_short_series_padding_holds_nothing_of_the_series_before_it():
    """The panel's values lie back to back: a window or a context reaching before a series' start must read
    padding (0, masked), never the end of the series before it."""
    frame = monthly_panel_frame(lengths=(60, 20))
    changed = frame.copy()
    changed.loc[changed["unique_id"] == "s0", "y"] *= 3.0  # another series before s1
    config = DIRECT.replace(output_chunk_length=6, target_transform="none", window_norm="subtract")
    model = RNNNet(config, [5.0, 50.0], [10.0, 100.0], season=12, series_ids=["s0", "s1"])
    forecasts = [model.forecast(load_panel(data), 9) for data in (frame, changed)]
    short = [f.loc[f["unique_id"] == "s1", "forecast"].to_numpy() for f in forecasts]
    assert np.isfinite(short[0]).all() and short[0].tolist() == short[1].tolist()
    assert forecasts[0].loc[forecasts[0]["unique_id"] == "s0", "forecast"].tolist() != (
        forecasts[1].loc[forecasts[1]["unique_id"] == "s0", "forecast"].tolist()
    )
    # The same for the training windows: s1's (18 points of s) read 0 where they leave the series, with a mask of 0.
    windows = []
    for data in (frame, changed):
        parts = fit_parts(config, load_panel(data), val_size=2)
        module = PanelDataModule(config, parts, TargetTransform.fit(config, parts.train))
        counts = module.windows.counts.tolist()
        assert counts == [57, 17]  # every origin with a point before it and one at it
        positions = torch.arange(counts[1])
        windows.append(module.windows.cut(torch.ones_like(positions), positions))
    assert torch.equal(windows[0], windows[1])
    first = windows[0][:, 0]  # origin 1: one real point to read, 35 of padding before it, then its block of 6
    assert first[:, -1].tolist() == [0.0] * 35 + [1.0] * 7 and first[:35, 0].abs().sum() == 0


def test_past_output_chunk_length_the_forecast_rolls_forward_block_by_block_as_darts_does():
    """Darts' BlockRNNModel: each block's outputs become the last inputs of the next block's chunk. Written out here
    in the series' own units: each chunk of 5 is min-max scaled, normalised by its own mean, and its block of 3
    goes back the same way."""
    torch.manual_seed(0)
    config = ForecasterConfig(
        shape="direct", model="GRU", hidden_dim=6, input_chunk_length=5, output_chunk_length=3, window_norm="subtract"
    )
    model = RNNNet(config, scaler_minimum=100.0, scaler_scale=50.0)
    history = [120.0, 131.0, 128.0, 140.0, 151.0, 149.0, 160.0]
    chunk = [(value - 100.0) / 50.0 for value in history[-5:]]
    expected = []
    with torch.no_grad():
        while len(expected) < 8:
            level = sum(chunk) / 5
            inputs = torch.tensor([[[value - level, 1.0]] for value in chunk])  # (5, 1, value and mask)
            block = [level + float(x) for x in model(inputs)[:, 0]]
            expected += block
            chunk = (chunk + block)[-5:]
    assert model.forecast(history, 8).tolist() == pytest.approx([x * 50.0 + 100.0 for x in expected[:8]], rel=1e-6)
    assert model.forecast(history, 3).tolist() == pytest.approx(model.forecast(history, 8)[:3].tolist(), rel=1e-12)


@pytest.mark.parametrize(
    "config",
    [
        ForecasterConfig(training_length=12, input_chunk_length=6, calendar=True),
        ForecasterConfig(training_length=12, input_chunk_length=6, windows_from_last=8, target_transform="diff"),
        DIRECT.replace(input_chunk_length=50, output_chunk_length=10),
        DIRECT.replace(input_chunk_length=8, output_chunk_length=4, windows_from_last=12, deseasonalise=True),
    ],
    ids=["recurrent", "recurrent-recent", "direct-padded", "direct-recent"],
)
def test_no_window_of_either_shape_reaches_a_validation_or_test_point(config):
    """Every point after each series' training part is NaN: a window or a validation context that read one would
    hold a NaN."""
    clean = load_panel(monthly_panel_frame(lengths=(48, 60, 40)))
    parts = fit_parts(config, clean, val_size=6, test_size=6)
    after = np.ones(len(clean.values), dtype=bool)
    after[np.concatenate([np.arange(s, s + n) for s, n in zip(clean.offsets[:-1], parts.train.lengths)])] = False
    spoiled = Panel(**{**clean.__dict__, "values": np.where(after, np.nan, clean.values)})
    parts = fit_parts(config, spoiled, val_size=6, test_size=6)
    module = PanelDataModule(config, parts, TargetTransform.fit(config, parts.train))
    windows = module.windows
    for series, count in enumerate(windows.counts.tolist()):
        positions = torch.arange(count)
        cut = windows.cut(torch.full_like(positions, series), positions)
        assert count > 0 and torch.isfinite(cut).all()
        if config.windows_from_last:  # every window's origin among the series' last N points of s
            origins = windows.first[series] + positions + config.input_chunk_length
            assert (origins >= windows.lengths[series] - config.windows_from_last).all()
    assert torch.isfinite(module.validation.inputs.context).all()


def scaled_inputs(context):
    """What takes a window's points back through a scaler of minimum 10 and scale 5, at level 0: the hand-computed
    losses' way to original units."""
    columns = context.shape[1]
    return ForecastInputs(
        context=context,
        level=torch.zeros(columns),
        history=torch.zeros(0, columns),
        minimum=torch.full((columns,), 10.0),
        scale=torch.full((columns,), 5.0),
        future=None,
    )


def test_every_loss_of_a_block_is_what_a_hand_computation_gives():
    """A net whose block is always [2, 4] (zero weights into the last layer), against targets [1, 8] and [3, 0],
    the last point padding: in the net's units and, through a scaler of minimum 10 and scale 5, in original units."""
    for loss in ("mse", "l1", "smape", "mase"):
        config = ForecasterConfig(shape="direct", input_chunk_length=2, output_chunk_length=2, loss=loss)
        model = RNNForecaster(config, scaler_minimum=10.0, scaler_scale=5.0)
        with torch.no_grad():
            model.head[-1].weight.zero_()
            model.head[-1].bias.copy_(torch.tensor([2.0, 4.0]))
        windows = torch.tensor(  # (4 points, 2 windows, value and mask)
            [[[0.5, 1], [0.7, 1]], [[0.6, 1], [0.9, 1]], [[1.0, 1], [3.0, 1]], [[8.0, 1], [0.0, 0]]]
        )
        inputs = scaled_inputs(windows[:2])
        error_scale = torch.tensor([2.0, 4.0])
        originals = (inputs, error_scale) if loss in ("smape", "mase") else None
        got = float(model.shape.loss(model, windows, originals, None).detach())
        # Real points: (forecast 2, target 1), (4, 8) in window 0 and (2, 3) in window 1; in original units
        # forecasts 20, 30, 20 against 15, 50, 25.
        expected = {
            "mse": (1 + 16 + 1) / 3,
            "l1": (1 + 4 + 1) / 3,
            "smape": 200 * (5 / 35 + 20 / 80 + 5 / 45) / 3,
            "mase": (5 / 2 + 20 / 2 + 5 / 4) / 3,
        }[loss]
        assert got == pytest.approx(expected, rel=1e-6), loss
        if loss == "smape":  # the metric's own code on the same real points agrees
            actual, forecast = torch.tensor([[15.0, 25.0], [50.0, 1.0]]), torch.tensor([[20.0, 20.0], [30.0, 1.0]])
            scores = series_scores(actual, forecast, torch.tensor([[1.0, 1.0], [1.0, 0.0]]), torch.tensor([0, 0]), 1, 1)
            assert float(scores["smape"][0]) == pytest.approx(expected, rel=1e-6)


def test_the_mase_loss_divides_by_each_series_mase_scale_and_falls_back_where_it_is_zero():
    from forecaster.features.transforms import error_scales

    frame = pd.DataFrame(
        {
            "unique_id": ["a"] * 30 + ["flat"] * 30,
            "ds": [*pd.date_range("2000-01", periods=30, freq="MS")] * 2,
            "y": [*(10 + np.arange(30.0) % 12), *([7.0] * 30)],
        }
    )
    train = load_panel(frame)
    assert mase_scales(train).tolist() == [0.0, 0.0]  # each repeats itself every 12 points
    # "a": its lag-1 naive error, 27 steps of 1 and 2 of 11 over 29; "flat": its mean absolute value.
    assert error_scales(train).tolist() == [pytest.approx(49 / 29), 7.0]


def test_the_cli_trains_the_direct_shape_with_every_new_option(capsys):
    code = fit_cli(
        [
            *("--shape", "direct", "--input-chunk-length", "40", "--output-chunk-length", "8"),
            *("--hidden-fc-sizes", "16", "8", "--activation", "Tanh", "--windows-from-last", "48"),
            *("--loss", "smape", "--target-transform", "log", "--window-norm", "subtract"),
            *("--n-epochs", "3", "--json"),
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["config"]["shape"] == "direct" and summary["config"]["hidden_fc_sizes"] == [16, 8]
    assert fit_cli(["--shape", "direct", "--loss", "mase", "--target-transform", "diff"]) == 2
    assert "a window of differences does not hold its values in original units" in capsys.readouterr().err


def test_a_series_too_short_for_the_direct_shape_says_what_it_needs():
    panel = load_panel(monthly_panel_frame(lengths=(40, 14)))
    with pytest.raises(
        SeriesError, match=r"1 of 2 series are too short for this fit: 's1' \(with 14 points\); each needs"
    ):
        fit_parts(DIRECT.replace(target_transform="log_diff", window_norm="none"), panel, val_size=6, test_size=7)
    assert fit_parts(DIRECT, panel, val_size=6, test_size=6).train.lengths.tolist() == [28, 2]


def test_a_panel_with_zeros_logs_only_its_positive_series_and_its_checkpoint_keeps_which(tmp_path):
    frame = monthly_panel_frame(lengths=(48, 60, 54))
    frame.loc[(frame["unique_id"] == "s1") & (frame.index % 7 == 0), "y"] = 0.0  # sales that stop some months
    config = DIRECT.replace(target_transform="log_if_positive", loss="smape", n_epochs=3)
    result = fit(config, load_panel(frame), val_size=6, test_size=6, threads=1)
    assert result.model.transform.logged.tolist() == [True, False, True]
    assert np.isfinite(result.forecast["forecast"]).all() and math.isfinite(result.history[-1]["val_smape"])
    restored = RNNNet.load_best_model(checkpoint_of(result.model, tmp_path / "model.ckpt"))
    assert restored.transform.logged.tolist() == [True, False, True]
    again = restored.forecast(result.parts.train, 6)["forecast"].to_numpy()
    assert again == pytest.approx(result.forecast["forecast"].to_numpy(), rel=1e-6)
