"""The model computes what Darts' RNNModel computes, the hand-written CPU layers what PyTorch's modules compute, and
which of the two runs is decided by the shapes the layers were written for. How fast either is, is measured in
bench/single_trial.py, not here."""

import json
import pathlib
import subprocess
import sys

import pytest
import torch

from forecaster.config import ForecasterConfig
from forecaster.data.datasets import AIR_PASSENGERS_SPLIT_AFTER
from forecaster.data.read import load_panel
from forecaster.features.transforms import MinMaxScaler, TargetTransform
from forecaster.shapes import recurrence
from forecaster.training.model import RNNForecaster
from forecaster.training.net import RNNNet
from forecaster.training.parts import fit_parts
from forecaster.training.train import EpochBatches, PanelDataModule
from tests.test_direct import scaled_inputs

ROOT = pathlib.Path(__file__).resolve().parent.parent

CELLS = {"RNN": torch.nn.RNN, "LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU}


@pytest.mark.parametrize("mode", ["RNN", "GRU"])  # the LSTM runs nn.LSTM itself (oneDNN's fused kernel)
@pytest.mark.parametrize("layers, steps", [(1, 20), (3, 7), (2, 1)])
def test_the_hand_written_layers_match_pytorch_forward_and_every_gradient(mode, layers, steps):
    torch.manual_seed(0)
    rnn = CELLS[mode](2, 6, layers).double()
    assert rnn.mode in recurrence._LAYERS  # the hand-written layer, not the module, runs here
    inputs = torch.rand(steps, 5, 2, dtype=torch.float64, requires_grad=True)
    expected, _ = rnn(inputs)
    actual = recurrence.hidden_states(rnn, inputs)
    torch.testing.assert_close(actual, expected, rtol=0, atol=1e-12)
    upstream = torch.randn_like(expected)
    wrt = [inputs, *rnn.parameters()]
    for got, want in zip(
        torch.autograd.grad((actual * upstream).sum(), wrt), torch.autograd.grad((expected * upstream).sum(), wrt)
    ):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def autograd_node(output) -> str:
    return type(output.grad_fn).__name__


@pytest.mark.parametrize(
    "options",
    [{"bidirectional": True}, {"batch_first": True}, {"bias": False}],
    ids=["bidirectional", "batch-first", "no-bias"],
)
@pytest.mark.parametrize("mode", ["RNN", "GRU"])
def test_modules_outside_the_hand_written_layers_assumptions_run_themselves(mode, options):
    torch.manual_seed(3)
    rnn = CELLS[mode](2, 6, 2, **options)
    inputs = torch.rand(5, 7, 2)
    assert not recurrence.fast_path_applies(rnn, inputs)
    torch.testing.assert_close(recurrence.hidden_states(rnn, inputs), rnn(inputs)[0], rtol=0, atol=0)


def test_a_gru_runs_the_hand_written_layer_up_to_8192_batch_by_hidden_units_and_the_module_above():
    gru = torch.nn.GRU(1, 64)
    assert recurrence.fast_path_applies(gru, torch.rand(5, 64, 1))
    assert not recurrence.fast_path_applies(gru, torch.rand(5, 128, 1))  # 128 x 64 = 8192
    assert recurrence.fast_path_applies(torch.nn.RNN(1, 64), torch.rand(5, 512, 1))


@pytest.mark.parametrize("mode", ["RNN", "GRU"])
def test_the_hand_written_layers_match_pytorchs_own_modules(mode, monkeypatch):
    torch.manual_seed(4)
    rnn = CELLS[mode](1, 6, 2)
    inputs = torch.rand(9, 3, 1)
    fast = recurrence.hidden_states(rnn, inputs)
    assert autograd_node(fast).startswith(("_TanhLayer", "_GRULayer"))
    # What bench/single_trial.py does in its child process: hidden_states looks fast_path_applies up at call time.
    monkeypatch.setattr(recurrence, "fast_path_applies", lambda *args: False)
    plain = recurrence.hidden_states(rnn, inputs)
    assert not autograd_node(plain).startswith(("_TanhLayer", "_GRULayer"))
    torch.testing.assert_close(plain, fast)


@pytest.mark.parametrize("mode", ["RNN", "GRU", "LSTM"])
def test_single_steps_carry_the_state_like_the_whole_sequence(mode):
    torch.manual_seed(1)
    rnn = CELLS[mode](1, 8, 2)
    inputs = torch.rand(9, 3, 1)
    expected, _ = rnn(inputs)
    state = recurrence.zero_state(rnn, 3, inputs)
    with torch.no_grad():
        stepped = torch.stack([recurrence.step(rnn, point, state) for point in inputs])
    torch.testing.assert_close(stepped, expected)


@pytest.mark.parametrize("mode", ["RNN", "GRU"])
def test_dropout_between_layers_draws_the_masks_pytorch_draws(mode):
    torch.manual_seed(2)
    rnn = CELLS[mode](1, 16, 2, dropout=0.5).double()
    inputs = torch.rand(10, 4, 1, dtype=torch.float64)
    rnn.eval()
    torch.testing.assert_close(recurrence.hidden_states(rnn, inputs), rnn(inputs)[0])
    rnn.train()
    assert not torch.allclose(recurrence.hidden_states(rnn, inputs), recurrence.hidden_states(rnn, inputs))
    torch.manual_seed(3)
    expected = rnn(inputs)[0]
    torch.manual_seed(3)
    actual = recurrence.hidden_states(rnn, inputs)
    torch.testing.assert_close(actual, expected, rtol=0, atol=1e-12)
    wrt = list(rnn.parameters())
    for got, want in zip(torch.autograd.grad(actual.sum(), wrt), torch.autograd.grad(expected.sum(), wrt)):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("layer", [recurrence._TanhLayer, recurrence._GRULayer], ids=["tanh", "gru"])
def test_the_hand_written_backward_passes_gradcheck(layer):
    torch.manual_seed(4)
    gates = 3 if layer is recurrence._GRULayer else 1
    size, features = 3, 2
    tensors = [
        torch.rand(5, 2, features),
        torch.randn(gates * size, features),
        torch.randn(gates * size, size),
        torch.randn(gates * size),
        torch.randn(gates * size),
    ]
    tensors = [t.double().requires_grad_() for t in tensors]
    assert torch.autograd.gradcheck(layer.apply, tensors)


def seed_data(config=ForecasterConfig()):
    parts = fit_parts(config, load_panel("air_passengers"), split_after=AIR_PASSENGERS_SPLIT_AFTER)
    transform = TargetTransform.fit(config, parts.train)
    return PanelDataModule(config, parts, transform), transform.scaler


def every_window(data):
    """All training windows in order, (21, n, 1)."""
    windows = data.windows
    return windows.cut(torch.zeros(windows.total, dtype=torch.long), torch.arange(windows.total))


def test_training_windows_are_all_windows_of_training_length_plus_one():
    data, scaler = seed_data()
    assert every_window(data).shape == (21, 101, 1)  # 121 training months -> 101 windows of 21 points
    train, _ = (part.series(0) for part in load_panel("air_passengers").cut_after("1959-01-01"))
    assert scaler == MinMaxScaler.fit(train)  # the plain path: min-max scaling fit on the training part
    first = torch.as_tensor(scaler.transform(train.to_numpy()[:21]), dtype=torch.float32)
    torch.testing.assert_close(every_window(data)[:, 0, 0], first)
    validation = data.validation
    assert validation.inputs.context.shape == (14, 1, 1) and validation.actual.shape == (23, 1)


def batches_of(data, epoch, rank=0, world_size=1):
    return next(iter(EpochBatches(data.windows, data.validation, 16, 4096, 42, lambda: epoch, rank, world_size)))


def test_epoch_batches_cover_every_window_once_and_depend_only_on_seed_and_epoch():
    data, _ = seed_data()
    first = batches_of(data, 0).windows
    assert [b.shape[1] for b in first] == [16] * 6 + [5]
    starts = torch.cat([b[0, :, 0] for b in first])
    torch.testing.assert_close(starts.sort().values, every_window(data)[0, :, 0].sort().values)
    torch.testing.assert_close(torch.cat(batches_of(data, 0).windows, 1), torch.cat(first, 1))
    assert not torch.equal(torch.cat(batches_of(data, 1).windows, 1), torch.cat(first, 1))


def test_ranks_share_the_epoch_in_equal_parts():
    data, _ = seed_data()
    shares = [batches_of(data, 0, rank, 2).windows for rank in (0, 1)]
    assert [sum(b.shape[1] for b in share) for share in shares] == [51, 51]  # 101 padded to 102
    seen = torch.cat([b[0, :, 0] for share in shares for b in share])
    assert set(seen.tolist()) == set(every_window(data)[0, :, 0].tolist())


def test_forward_predicts_the_next_point_at_every_position():
    model = RNNForecaster(ForecasterConfig(model="GRU", hidden_dim=7, n_rnn_layers=2))
    assert model(torch.rand(20, 16, 1)).shape == (20, 16, 1)
    assert sum(p.numel() for p in RNNForecaster(ForecasterConfig()).parameters()) == 481


def test_every_next_step_loss_is_what_a_hand_computation_gives():
    """A net whose next-step prediction is always 2 (zero weights into its head), on windows of 4 points read 2 at a
    time (the loss after the context: the targets are points 2 and 3), in the net's units and, through a scaler of
    minimum 10 and scale 5, in original units."""
    windows = torch.tensor([[[0.5], [0.7]], [[0.6], [0.9]], [[1.0], [3.0]], [[8.0], [0.0]]])  # (4 points, 2 windows)
    inputs = scaled_inputs(windows[:2])
    for loss in ("mse", "l1", "smape", "mase"):
        config = ForecasterConfig(input_chunk_length=2, training_length=3, loss_after_context=True, loss=loss)
        model = RNNForecaster(config, scaler_minimum=10.0, scaler_scale=5.0)
        with torch.no_grad():
            model.head.weight.zero_()
            model.head.bias.fill_(2.0)
        originals = (inputs, torch.tensor([2.0, 4.0])) if loss in ("smape", "mase") else None
        got = float(model.shape.loss(model, windows, originals, None).detach())
        # Targets 1, 8 (window 0) and 3, 0 (window 1); in original units 20 forecast against 15, 50, 25 and 10.
        expected = {
            "mse": (1 + 36 + 1 + 4) / 4,
            "l1": (1 + 6 + 1 + 2) / 4,
            "smape": 200 * (5 / 35 + 30 / 70 + 5 / 45 + 10 / 30) / 4,
            "mase": (5 / 2 + 30 / 2 + 5 / 4 + 10 / 4) / 4,
        }[loss]
        assert got == pytest.approx(expected, rel=1e-6), loss


def test_forecast_feeds_predictions_back_with_the_hidden_state():
    torch.manual_seed(3)
    model = RNNForecaster(ForecasterConfig(model="LSTM", hidden_dim=5, n_rnn_layers=2), 100.0, 50.0)
    context = torch.rand(14, 1, 1)
    # The same forecast written out with the PyTorch module: read the context, then one step at a time.
    with torch.no_grad():
        out, state = model.rnn(context)
        expected = [model.head(out[-1:])]
        for _ in range(5):
            out, state = model.rnn(expected[-1], state)
            expected.append(model.head(out))
    torch.testing.assert_close(model.forecast_scaled(context, 6), torch.cat(expected)[:, :, 0])
    history = model.scaler.inverse_transform(context.flatten().double().numpy())
    unscaled = model.forecast(history, 6)
    torch.testing.assert_close(torch.as_tensor(unscaled), torch.cat(expected).flatten().double() * 50 + 100)


def test_checkpoint_restores_config_scaler_and_weights(tmp_path):
    model = RNNForecaster(ForecasterConfig(model="GRU", hidden_dim=4), scaler_minimum=104.0, scaler_scale=400.0)
    path = tmp_path / "model.ckpt"
    torch.save(
        {
            "state_dict": model.state_dict(),
            "hyper_parameters": dict(model.hparams),
            "pytorch-lightning_version": "2.6.0",
        },
        path,
    )
    history = [150.0 + i for i in range(14)]
    loaded = [
        RNNForecaster.load_from_checkpoint(path),
        RNNForecaster.load_best_model(path),
        RNNNet.load_best_model(path),
    ]
    for restored in loaded:
        assert restored.config == model.config and restored.scaler == model.scaler
        assert restored.forecast(history, 3).tolist() == model.forecast(history, 3).tolist()


def test_a_saved_model_forecasts_in_a_process_that_never_imports_lightning(tmp_path):
    """What a sweep's driver does with its trials' best models: Lightning costs 4 CPU-seconds to import."""
    model = RNNForecaster(ForecasterConfig(model="LSTM", hidden_dim=4, ema_decay=0.5), scaler_minimum=104.0)
    path = tmp_path / "best_model.ckpt"
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams)}, path)
    history = [150.0 + i for i in range(14)]
    script = (
        "import json, sys; from forecaster.training.net import RNNNet; "
        f"forecast = RNNNet.load_best_model(sys.argv[1]).forecast({history}, 3).tolist(); "
        "print(json.dumps({'forecast': forecast, 'lightning': sorted(m for m in sys.modules if 'lightning' in m)}))"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed == {"forecast": model.forecast(history, 3).tolist(), "lightning": []}


SAVED_ON_A_CARD = """
import sys, torch
from forecaster.config import ForecasterConfig
from forecaster.training.net import RNNNet

# torch.save tags every storage with its device; a trial on a card saves its tensors tagged cuda:0, as this does.
torch.serialization.register_package(0, lambda storage: "cuda:0", lambda storage, location: None)
torch.manual_seed(0)
model = RNNNet(ForecasterConfig(model="GRU", hidden_dim=4, ema_decay=0.5), scaler_minimum=104.0, scaler_scale=400.0)
torch.save({"state_dict": model.state_dict(), "hyper_parameters": model.hyperparameters,
            "pytorch-lightning_version": "2.6.0"}, sys.argv[1])
print(model.forecast([150.0 + i for i in range(14)], 3).tolist())
"""


def test_a_checkpoint_saved_on_a_gpu_loads_and_forecasts_where_torch_sees_none(tmp_path):
    """What a sweep's driver, `sweeps.report` or a user's laptop does with a model a trial trained on a card."""
    path = tmp_path / "best_model.ckpt"
    saved = subprocess.run(
        [sys.executable, "-c", SAVED_ON_A_CARD, str(path)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    if not torch.cuda.is_available():  # what a plain torch.load makes of such a file here
        with pytest.raises(RuntimeError, match=r"on a CUDA device but torch\.cuda\.is_available"):
            torch.load(path, weights_only=True)
    for loaded in (RNNForecaster.load_from_checkpoint(path), RNNNet.load_best_model(path)):
        assert loaded.forecast([150.0 + i for i in range(14)], 3).tolist() == json.loads(saved.stdout)
