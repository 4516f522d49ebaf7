"""One XLA device, as a sweep's one-chip TPU trial uses it (accelerator="tpu", devices=1), on torch-xla's PJRT CPU
client: the batches and weights live on the XLA device, the model learns what it learns on the CPU with the same
seed, and its graphs stop compiling after the first epochs (a graph that changed every epoch would compile every
epoch: minutes per epoch on a TPU)."""

import json
import math
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch_xla")

import lightning as L
import torch_xla.debug.metrics as met

from forecaster.config import ForecasterConfig
from forecaster.features.smoothing import HybridWindows
from forecaster.training.train import fit, quiet_lightning

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The validation MAPE on the XLA device against the CPU's, relative. Both compute in float32, in another order
# (XLA fuses; the CPU path runs the hand-written recurrence of forecaster/shapes/recurrence.py). Measured: 4.5e-7 at
# most
# over the 20 epochs of the seed configuration, 2.3e-7 over the 8 of the air_rnn one. 1e-4 leaves room for rounding
# that grows with the epochs; a real fault (other batches, a missed update of the weights or of their average,
# another forecast) moves the MAPE by a percent or more.
RTOL = 1e-4

# The seed configuration, and one of the air_rnn sweep's space (sweeps/plan/registry.py): log differences, the calendar,
# the weights' moving average, 4 validation origins. Without dropout: XLA draws dropout masks from torch-xla's own
# generator, so a model with dropout learns on XLA what it learns on the CPU only in distribution.
CONFIGS = {
    "seed": ForecasterConfig(n_epochs=20),
    "air_rnn": ForecasterConfig(
        n_epochs=8,
        model="GRU",
        hidden_dim=16,
        batch_size=8,
        lr=0.01,
        input_chunk_length=18,
        training_length=30,
        target_transform="log_diff",
        calendar=True,
        ema_decay=0.9,
        val_origins=4,
    ),
}


def compile_count() -> int:
    """XLA graph compilations in this process so far."""
    data = met.metric_data("CompileTime")
    return data[0] if data else 0


class XlaProbe(L.Callback):
    """Where the batches and the weights are, and the compilations and the time at the end of every epoch."""

    def __init__(self) -> None:
        self.batch_devices: set[str] = set()
        self.weight_devices: set[str] = set()
        self.compiles: list[int] = []
        self.ends: list[float] = []

    def on_train_batch_start(self, trainer, module, batch, batch_index) -> None:
        tensors = [*batch.windows, batch.actual, batch.weights]
        if isinstance(batch.source, HybridWindows):  # the hybrid's: its series, and the logs its validation reads
            tensors += [batch.source.z, batch.validation.z]
        else:
            tensors += [batch.validation.context, batch.validation.future]
        self.batch_devices |= {tensor.device.type for tensor in tensors if tensor is not None}

    def on_train_epoch_end(self, trainer, module) -> None:
        self.weight_devices |= {parameter.device.type for parameter in module.parameters()}
        self.compiles.append(compile_count())
        self.ends.append(time.perf_counter())


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def fits(request):
    """The same configuration fitted on the XLA device and on the CPU."""
    quiet_lightning()
    config = CONFIGS[request.param]
    before, probe, start = compile_count(), XlaProbe(), time.perf_counter()
    on_xla = fit(config, accelerator="tpu", devices=1, callbacks=[probe])
    on_cpu = fit(config, accelerator="cpu", threads=1)
    steady = (len(probe.ends) - 3) / (probe.ends[-1] - probe.ends[2])
    print(
        f"\n{request.param}: XLA {[round(row['val_mape'], 4) for row in on_xla.history]}"
        f"\n{request.param}: CPU {[round(row['val_mape'], 4) for row in on_cpu.history]}"
        f"\n{request.param}: compilations after each epoch {[count - before for count in probe.compiles]}, "
        f"the first 3 epochs {probe.ends[2] - start:.1f} s, then {steady:.1f} epochs/s"
    )
    return request.param, probe, on_xla, on_cpu


def test_batches_and_weights_live_on_the_xla_device(fits):
    _, probe, on_xla, _ = fits
    assert probe.batch_devices == {"xla"}
    assert probe.weight_devices == {"xla"}
    assert len(on_xla.history) == len(probe.compiles)


def test_validation_mape_matches_the_cpu_with_the_same_seed(fits):
    name, _, on_xla, on_cpu = fits
    xla = [row["val_mape"] for row in on_xla.history]
    cpu = [row["val_mape"] for row in on_cpu.history]
    assert all(map(math.isfinite, xla))
    worst = max(abs(x - c) / c for x, c in zip(xla, cpu))
    print(f"\n{name}: largest relative difference of the validation MAPE, XLA against CPU: {worst:.2e}")
    # Epoch 5 and the last: each a fit of that many epochs (the batches depend only on the seed and the epoch).
    assert xla[4] == pytest.approx(cpu[4], rel=RTOL)
    assert xla[-1] == pytest.approx(cpu[-1], rel=RTOL)
    assert worst < RTOL


def test_no_graph_compiles_after_the_third_epoch(fits):
    _, probe, _, _ = fits
    assert probe.compiles[2] == probe.compiles[-1], f"compilations after each epoch: {probe.compiles}"


def test_the_command_line_fit_on_one_xla_device():
    """`python -m forecaster.fit --accelerator tpu --devices 1`: the command that once aborted in the shuffled
    batches' index_select (torch-xla: `shape.h: Check failed: buffer != nullptr`, an index_select with the pieces of a
    split device index). forecaster/training/train.py now moves an epoch's indices to the device whole and gathers
    once."""
    command = [sys.executable, "-m", "forecaster.fit", "--accelerator", "tpu", "--devices", "1", "--n-epochs", "5"]
    done = subprocess.run([*command, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    on_xla = json.loads(done.stdout.strip().splitlines()[-1])
    on_cpu = fit(ForecasterConfig(n_epochs=5), accelerator="cpu", threads=1)
    assert on_xla["epochs"] == 5
    assert on_xla["val_mape"] == pytest.approx(on_cpu.val_mape, rel=RTOL)


def test_the_same_seed_draws_the_same_dropout_masks_in_one_process():
    """torch.manual_seed does not reseed torch-xla's generator, which draws XLA's dropout masks; RNNForecaster reseeds
    it as training starts, so that a second fit in one process (a warm Ray worker's next trial) is the same model."""
    quiet_lightning()
    config = ForecasterConfig(n_epochs=3, model="GRU", hidden_dim=8, n_rnn_layers=2, dropout=0.3, batch_size=32)
    first, second = [[row["val_mape"] for row in fit(config, accelerator="tpu", devices=1).history] for _ in range(2)]
    assert first == second


PANEL_CONFIG = ForecasterConfig(
    n_epochs=6,
    model="GRU",
    hidden_dim=16,
    batch_size=16,
    training_length=16,
    input_chunk_length=12,
    target_transform="log",
    window_norm="subtract",
    calendar=True,
    windows_per_epoch=64,
    ema_decay=0.9,
)


@pytest.mark.parametrize(
    "config",
    [
        PANEL_CONFIG,
        # The direct shape: a lookback longer than the shortest series' training part (padded, with its mask),
        # blocks of 3 (the validation part of 6 in two), the sMAPE of each block in original units as the loss.
        PANEL_CONFIG.replace(shape="direct", input_chunk_length=40, output_chunk_length=3, loss="smape"),
        # The hybrid: every series smoothed through its training part at each step, its per-series parameters trained
        # on the device with the net, blocks of 3 rolled forward through the smoothing.
        PANEL_CONFIG.replace(
            shape="hybrid",
            output_chunk_length=3,
            loss="pinball",
            target_transform="none",
            window_norm="none",
            calendar=False,
        ),
    ],
    ids=["recurrent", "direct", "hybrid"],
)
def test_a_panel_trains_on_the_xla_device_as_on_the_cpu(config):
    """One global model on three monthly series of different lengths and scales (an epoch drawn series by series),
    on the XLA device: the same validation sMAPE as on the CPU, and no graph compiled after the third epoch."""
    import numpy as np
    import pandas as pd

    from forecaster.data.read import load_panel

    quiet_lightning()
    frames = []
    for number, length in enumerate((50, 62, 56)):
        t = np.arange(length)
        values = 10.0 ** (number + 1) * (1 + 0.01 * t + 0.2 * np.sin(2 * np.pi * t / 12))
        dates = pd.date_range("2001-01", periods=length, freq="MS")
        frames.append(pd.DataFrame({"unique_id": f"s{number}", "ds": dates, "y": values}))
    panel = load_panel(pd.concat(frames, ignore_index=True))
    before, probe = compile_count(), XlaProbe()
    on_xla = fit(config, panel, val_size=6, test_size=6, accelerator="tpu", devices=1, callbacks=[probe])
    on_cpu = fit(config, panel, val_size=6, test_size=6, accelerator="cpu", threads=1)
    xla = [row["val_smape"] for row in on_xla.history]
    cpu = [row["val_smape"] for row in on_cpu.history]
    print(f"\npanel: XLA {xla}\npanel: CPU {cpu}\ncompilations {[count - before for count in probe.compiles]}")
    assert probe.batch_devices == {"xla"} and probe.weight_devices == {"xla"}
    assert all(math.isfinite(value) for value in xla)
    assert max(abs(x - c) / c for x, c in zip(xla, cpu)) < RTOL
    assert probe.compiles[2] == probe.compiles[-1], f"compilations after each epoch: {probe.compiles}"
