"""Real Lightning fits on Air Passengers: they learn, are deterministic, work with Lightning's callbacks,
resume from checkpoints, and never import Ray."""

import json
import math
import os
import subprocess
import sys

import lightning as L
import numpy as np
import pandas as pd
import pytest
import torch

from forecaster.config import ForecasterConfig
from forecaster.data.datasets import AIR_PASSENGERS_SPLIT_AFTER
from forecaster.data.read import SeriesError, load_panel, load_series
from forecaster.fit import main as fit_cli
from forecaster.training.model import RNNForecaster
from forecaster.training.train import AcceleratorError, fit

SHORT = ForecasterConfig(n_epochs=15, hidden_dim=12)


def test_a_short_fit_learns_and_reports_every_epoch():
    result = fit(SHORT.replace(n_epochs=40))
    assert [row["epoch"] for row in result.history] == list(range(1, 41)) and result.trained_on == "cpu"
    losses = [row["train_loss"] for row in result.history]
    assert losses[-1] < 0.5 * losses[0]
    assert all(math.isfinite(row["val_mape"]) for row in result.history)
    assert result.val_mape < result.history[0]["val_mape"]
    # The model's forecast, scored offline on the original scale, is the last epoch's val_mape.
    _, val = (part.series(0) for part in load_panel("air_passengers").cut_after("1959-01-01"))
    forecast = result.forecast_series()
    offline = 100 * ((val - forecast).abs() / val.abs()).mean()
    assert offline == pytest.approx(result.val_mape, rel=1e-5)
    assert list(forecast.index) == list(val.index)
    assert result.forecast["y"].tolist() == val.tolist() and set(result.forecast["unique_id"]) == {"air_passengers"}


@pytest.mark.parametrize("model", ["RNN", "LSTM", "GRU"])
def test_same_seed_gives_the_same_fit_twice_on_cpu(model):
    config = SHORT.replace(model=model, n_rnn_layers=2, dropout=0.2)
    first, second = fit(config, threads=1), fit(config, threads=1)
    assert first.history == second.history
    assert fit(config.replace(random_state=7), threads=1).history != first.history


def test_lightning_early_stopping_and_checkpointing_work_on_val_mape(tmp_path):
    checkpoints = L.pytorch.callbacks.ModelCheckpoint(dirpath=tmp_path, monitor="val_mape", mode="min", save_top_k=1)
    stopper = L.pytorch.callbacks.EarlyStopping(monitor="val_mape", mode="min", patience=3)
    result = fit(
        SHORT.replace(n_epochs=300), callbacks=[checkpoints, stopper], trainer_options={"enable_checkpointing": True}
    )
    assert len(result.history) < 300
    assert checkpoints.best_model_score.item() == pytest.approx(result.best_epoch["val_mape"])
    best = RNNForecaster.load_from_checkpoint(checkpoints.best_model_path)
    train, val = (part.series(0) for part in load_panel("air_passengers").cut_after("1959-01-01"))
    forecast = best.forecast(train.to_numpy(), len(val))
    assert 100 * (abs(val.to_numpy() - forecast) / val.to_numpy()).mean() == pytest.approx(
        result.best_epoch["val_mape"], rel=1e-5
    )


def test_resuming_from_a_checkpoint_continues_exactly(tmp_path):
    config = SHORT.replace(n_epochs=10, n_rnn_layers=2)
    uninterrupted = fit(config, threads=1)
    saver = L.pytorch.callbacks.ModelCheckpoint(dirpath=tmp_path, save_last=True)
    fit(config.replace(n_epochs=4), callbacks=[saver], threads=1, trainer_options={"enable_checkpointing": True})
    resumed = fit(config, threads=1, ckpt_path=str(tmp_path / "last.ckpt"))
    assert [row["epoch"] for row in resumed.history] == list(range(1, 11)) and resumed.devices == ["cpu"] * 10
    for got, want in zip(resumed.history, uninterrupted.history):
        assert got == pytest.approx(want, rel=1e-5)


def test_a_fit_resumed_with_another_lr_trains_with_it(tmp_path):
    # PBT copies a trial's checkpoint into another trial with a new lr: the restored optimizer must use it.
    saver = L.pytorch.callbacks.ModelCheckpoint(dirpath=tmp_path, save_last=True)
    fit(SHORT.replace(n_epochs=2), callbacks=[saver], trainer_options={"enable_checkpointing": True})
    resumed = fit(SHORT.replace(n_epochs=4, lr=0.05), ckpt_path=str(tmp_path / "last.ckpt"))
    assert resumed.model.trainer.optimizers[0].param_groups[0]["lr"] == 0.05


def test_data_too_short_for_the_windows_is_refused_before_training():
    with pytest.raises(SeriesError, match="the training part has 121 points, too few for training_length=130"):
        fit(ForecasterConfig(training_length=130, input_chunk_length=14))


def test_zeros_in_validation_refused_before_training():
    series = load_series("air_passengers").copy()
    series.iloc[-3] = 0
    with pytest.raises(SeriesError, match="MAPE is undefined"):
        fit(SHORT, series, split_after=AIR_PASSENGERS_SPLIT_AFTER)


def spoiled(change):
    series = load_series("air_passengers").copy()
    return change(series)


@pytest.mark.parametrize(
    "series, message",
    [
        (
            spoiled(lambda s: s.where(s.index != "1950-03-01")),
            r"air_passengers: the value at 1950-03-01 00:00:00 \(nan\)",
        ),
        (spoiled(lambda s: s.iloc[::-1]), "air_passengers: the dates are not in order"),
        (spoiled(lambda s: s.drop(s.index[30])), "air_passengers: the dates are not evenly spaced"),
        (pd.Series(range(1, 145), dtype=float), "the series: needs a pandas Series indexed by dates"),
        (
            spoiled(lambda s: s.iloc[:30]),
            "air_passengers: the training part has 20 points, too few for training_length=20",
        ),
    ],
    ids=["nan", "unsorted", "gap", "no-dates", "too-short"],
)
def test_a_series_built_in_code_is_checked_before_training(series, message):
    with pytest.raises(SeriesError, match=message):
        fit(SHORT, series, split_after="1950-08-01" if len(series) == 30 else "1959-01-01")


@pytest.mark.parametrize("model", ["RNN", "GRU", "LSTM"])
def test_mixed_precision_trains_every_cell(model):
    result = fit(ForecasterConfig(model=model, n_epochs=3, hidden_dim=8), trainer_options={"precision": "bf16-mixed"})
    assert len(result.history) == 3 and all(math.isfinite(row["val_mape"]) for row in result.history)


def test_an_lr_scheduler_is_refused_rather_than_never_stepped():
    """Under manual optimization Lightning steps no scheduler: a model that configured one would train at a
    constant learning rate while its author believes otherwise."""
    from forecaster.features.transforms import TargetTransform
    from forecaster.training.parts import fit_parts
    from forecaster.training.train import PanelDataModule

    class WithScheduler(RNNForecaster):
        def configure_optimizers(self):
            optimizer = torch.optim.Adam(self.parameters(), lr=self.config.lr)
            return {"optimizer": optimizer, "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 1)}

    parts = fit_parts(SHORT, load_panel("air_passengers"), split_after=AIR_PASSENGERS_SPLIT_AFTER)
    transform = TargetTransform.fit(SHORT, parts.train)
    scaler = transform.scaler
    trainer = L.Trainer(max_epochs=2, logger=False, enable_checkpointing=False, enable_progress_bar=False)
    with pytest.raises(RuntimeError, match="would never step the LR scheduler"):
        trainer.fit(
            WithScheduler(SHORT, scaler.minimum, scaler.scale),
            datamodule=PanelDataModule(SHORT, parts, transform),
        )


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_gpu_request_without_cuda_says_so():
    with pytest.raises(AcceleratorError, match="sees no CUDA device"):
        fit(SHORT, accelerator="gpu")


@pytest.mark.gpu
@pytest.mark.parametrize("model", ["RNN", "LSTM", "GRU"])
def test_a_fit_on_a_gpu_trains_there_forecasts_in_original_units_and_its_checkpoint_loads_without_one(model, tmp_path):
    """Lightning's teardown moves the model back to the CPU when `Trainer.fit` returns: where the epochs trained is in
    the history. The forecast on the card (cuDNN) is the one on the CPU, and a checkpoint written on the card (its
    tensors on the GPU) forecasts the same in a process where torch sees no GPU."""
    saver = L.pytorch.callbacks.ModelCheckpoint(dirpath=tmp_path, save_last=True)
    result = fit(
        ForecasterConfig(model=model, n_epochs=30, hidden_dim=12),
        accelerator="gpu",
        callbacks=[saver],
        trainer_options={"enable_checkpointing": True},
    )
    assert result.devices == ["cuda:0"] * 30 and result.trained_on == "cuda:0"
    assert all(math.isfinite(row["val_mape"]) for row in result.history)
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]
    forecast = result.forecast["forecast"]
    assert forecast.between(50, 1000).all()  # passengers, not scaled values
    parts = result.parts
    on_card = result.model.to("cuda").forecast_part(parts.train, parts.val)
    assert on_card == pytest.approx(forecast.to_numpy(), rel=1e-4)
    assert torch.load(tmp_path / "last.ckpt", weights_only=False)["state_dict"]["head.weight"].is_cuda
    history = parts.train.series(0).tolist()
    script = (
        "import json, sys, torch; from forecaster.training.model import RNNForecaster; "
        "from forecaster.training.net import RNNNet; "
        "assert not torch.cuda.is_available(); "
        f"print(json.dumps([m.forecast({history}, 23).tolist() for m in "
        "(RNNForecaster.load_from_checkpoint(sys.argv[1]), RNNNet.load_best_model(sys.argv[1]))]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "last.ckpt")],
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for loaded in json.loads(done.stdout):
        assert loaded == pytest.approx(forecast.to_numpy(), rel=1e-5)


def test_a_user_csv_trains_as_the_same_points_given_as_a_table(tmp_path):
    """A file of two columns named as the user names them (day, visits) is read into the model a long table of the
    same points makes: the same forecast of the validation days, to the bit."""
    dates = pd.date_range("2020-01-01", periods=80, freq="D")
    values = [50 + 10 * math.sin(i / 3) + i * 0.2 for i in range(80)]
    path = tmp_path / "daily.csv"
    pd.DataFrame({"day": dates.strftime("%Y-%m-%d"), "visits": values}).to_csv(path, index=False)
    config = ForecasterConfig(n_epochs=5, training_length=10, input_chunk_length=5)
    from_file = fit(config, load_series(str(path)), split_after="2020-03-10")
    written = pd.read_csv(path)  # the values as the file holds them, in decimal
    table = load_panel(pd.DataFrame({"unique_id": "daily", "ds": dates, "y": written["visits"]}))
    from_table = fit(config, table, split_after="2020-03-10")
    assert len(from_file.forecast) == 10 and math.isfinite(from_file.val_mape)  # 2020-03-11 .. 2020-03-20
    np.testing.assert_array_equal(from_file.forecast["forecast"], from_table.forecast["forecast"])
    assert from_file.val_mape == from_table.val_mape


def test_forecaster_never_imports_ray():
    code = "import sys, forecaster.training.train, forecaster.fit, forecaster.plot; print('ray' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def run_cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "forecaster.fit", *args], capture_output=True, text=True, **kwargs)


def test_cli_trains_prints_the_result_and_draws_the_plot(tmp_path, capsys):
    """The JSON as the shell gets it (a process of its own); the plain text from the CLI's code in this process."""
    plot = tmp_path / "forecast.png"
    done = run_cli("--model", "GRU", "--n-epochs", "5", "--hidden-dim", "8", "--plot", str(plot), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["config"]["model"] == "GRU" and summary["epochs"] == 5 and summary["trained_on"] == "cpu"
    assert math.isfinite(summary["val_mape"])
    # The timings are this fit's, in their units: epochs over the fit's wall time, at most every core busy for the
    # whole command, and a peak RSS in MB of a process holding torch (kB or bytes read as MB would be 1000x off).
    assert summary["epochs_per_second"] == pytest.approx(5 / summary["fit_wall_seconds"])
    assert 0 < summary["fit_wall_seconds"] <= summary["total_wall_seconds"]
    assert 0 < summary["fit_cpu_seconds"] <= summary["total_wall_seconds"] * (os.cpu_count() or 1)
    assert 100 < summary["peak_rss_mb"] < 20_000
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    assert fit_cli(["--n-epochs", "3", "--hidden-dim", "8"]) == 0
    assert capsys.readouterr().out.startswith("validation MAPE")


def test_cli_refuses_bad_input_with_exit_code_2(tmp_path, capsys):
    """The CLI's own code, in this process: each refusal comes before anything is trained."""
    bad = tmp_path / "bad.csv"
    bad.write_text("month,sales\n2000-01,1\n2000-02,x\n2000-03,3\n")
    assert fit_cli(["--data", str(bad)]) == 2
    assert f"error: {bad}, line 3: 'x' in column 'sales' is not a finite number" in capsys.readouterr().err
    assert fit_cli(["--training-length", "10"]) == 2
    assert "training_length=10 must exceed input_chunk_length=14" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # refused by argparse, as the shell sees it: exit code 2
        fit_cli(["--devices", "0,"])
    assert refused.value.code == 2
    assert "'0,' is not 'auto', a device count or comma-separated ids" in capsys.readouterr().err


def test_a_fit_through_every_seen_point_trains_on_all_but_each_series_last_and_forecasts_from_its_end():
    """The refit of a sweep's answer: a series' last point is read, not trained on (changing it changes that series'
    forecast only), even where it is 0 (no metric refuses it); a series too short to read its input chunk is left
    out."""
    import numpy as np

    from forecaster.training.train import fit_through
    from tests.test_panel import monthly_panel_frame

    frame = monthly_panel_frame(lengths=(40, 52, 6))  # s2: 5 points to read before its last, of 6
    config = ForecasterConfig(hidden_dim=8, input_chunk_length=6, training_length=10, batch_size=32)
    panel = load_panel(frame)
    net, trained_on = fit_through(config, 2, panel, threads=1)
    kept = panel.take(panel.ids != "s2")
    forecast = net.forecast_columns(kept, 6)
    assert net.series_ids == ["s0", "s1"] and forecast.shape == (6, 2) and np.isfinite(forecast).all()
    assert trained_on == "cpu" and "lightning" not in type(net).__module__
    frame.loc[frame.index[frame.unique_id == "s0"][-1], "y"] = 0.0
    again_net, _ = fit_through(config, 2, load_panel(frame), threads=1)
    again = again_net.forecast_columns(load_panel(frame).take(panel.ids != "s2"), 6)
    assert again_net.series_ids == ["s0", "s1"] and np.isfinite(again).all()
    assert not np.allclose(again[:, 0], forecast[:, 0]) and np.array_equal(again[:, 1], forecast[:, 1])


def test_parts_already_cut_are_fit_as_they_are_and_not_cut_again():
    from forecaster.training.parts import Cut, cut_parts

    parts = cut_parts(load_panel("air_passengers"), Cut(split_after=AIR_PASSENGERS_SPLIT_AFTER))
    result = fit(SHORT.replace(n_epochs=1), parts)
    assert result.parts is parts and len(result.forecast) == len(parts.val.values)
    with pytest.raises(ValueError, match="val_size: the parts given are cut and checked already"):
        fit(SHORT, parts, val_size=6)
