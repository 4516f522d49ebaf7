"""The hybrid shape (Smyl's ES-RNN): its smoothing recursion against a hand computation and, vectorised, against a
plain loop; its per-series parameters
train, at their own rate, and stay in their ranges; a series with zeros and a panel with no season train and forecast;
its checkpoint forecasts the same in RNNNet as in the Lightning module; the answer saved as one model forecasts the
series it trained on as before it was saved and a series it never saw from its own history; impossible settings are
refused."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from forecaster.answer.model import AnswerModel, ModelData, SavedMember
from forecaster.config import ConfigError, ForecasterConfig
from forecaster.data.read import load_panel
from forecaster.features.smoothing import (
    INITIAL_LEVEL_LOGIT,
    INITIAL_SEASON_LOGIT,
    factors_ahead,
    log_shifts,
    smooth,
    to_logs,
)
from forecaster.training.model import RNNForecaster
from forecaster.training.net import RNNNet
from forecaster.training.train import fit, fit_through
from tests.test_direct import checkpoint_of
from tests.test_panel import monthly_panel_frame

HYBRID = ForecasterConfig(
    shape="hybrid",
    model="GRU",
    hidden_dim=12,
    batch_size=32,
    input_chunk_length=12,
    loss="pinball",
    n_epochs=20,
    lr=3e-3,
)


def test_the_recursion_gives_the_levels_and_factors_of_a_hand_computation_and_repeats_the_last_season_ahead():
    z = torch.tensor([[1.0, 2.0, 1.5, 2.5, 2.0]])
    alpha, gamma = torch.tensor([0.5]), torch.tensor([0.25])
    initial = torch.tensor([[-0.5, 0.5]])
    levels, factors = smooth(z, torch.tensor([5]), alpha, gamma, initial)
    # By hand: l0 = z0 - s0; l_t = a (z_t - s_t) + (1 - a) l_{t-1}; s_{t+2} = g (z_t - l_t) + (1 - g) s_t.
    level, season, expected_levels = 1.0 + 0.5, [-0.5, 0.5], []
    for t, value in enumerate([1.0, 2.0, 1.5, 2.5, 2.0]):
        if t:
            level = 0.5 * (value - season[t]) + 0.5 * level
        expected_levels.append(level)
        season.append(0.25 * (value - level) + 0.75 * season[t])
    assert levels[0].tolist() == pytest.approx(expected_levels)
    assert factors[0].tolist() == pytest.approx(season)
    # Ahead of the last point (t = 4): the factors of t = 5, 6, then 5 and 6 again.
    assert factors_ahead(factors, torch.tensor([5]), 4, 2)[0].tolist() == pytest.approx(
        [season[5], season[6], season[5], season[6]]
    )
    # A shorter series in the same batch keeps its level and its last season past its end.
    both, _ = smooth(torch.cat([z, z]), torch.tensor([5, 3]), alpha.repeat(2), gamma.repeat(2), initial.repeat(2, 1))
    assert both[1].tolist() == pytest.approx(expected_levels[:3] + [expected_levels[2]] * 2)


def plain_loop(z, lengths, alpha, gamma, initial):
    """The recursion point by point, in Python floats: what `smooth` must give, past each series' end too."""
    levels, factors = [], []
    for row in range(len(z)):
        season = initial.shape[1]
        s = [float(value) for value in initial[row]] if season > 1 else [0.0] * z.shape[1]
        a, g, length = float(alpha[row]), float(gamma[row]) if season > 1 else 0.0, int(lengths[row])
        level, row_levels = None, []
        for t in range(z.shape[1]):
            value, live = float(z[row, t]), t < length
            if level is None:
                level = value - s[t]
            elif live:
                level = a * (value - s[t]) + (1 - a) * level
            row_levels.append(level)
            if season > 1:
                s.append(g * (value - level) + (1 - g) * s[t] if live else s[t])
        levels.append(row_levels)
        factors.append(s if season > 1 else [0.0] * (z.shape[1] + 1))
    return torch.tensor(levels, dtype=torch.float64), torch.tensor(factors, dtype=torch.float64)


@pytest.mark.parametrize("season", [1, 2, 4, 7, 12])
def test_the_vectorised_smoothing_gives_the_plain_loops_levels_factors_and_gradients(season):
    generator = torch.Generator().manual_seed(season)
    steps, lengths = 41, torch.tensor([41, 29, 3, 1, 40])
    z = (torch.randn(5, steps, generator=generator, dtype=torch.float64).cumsum(1) * 0.2 + 4.0).where(
        torch.arange(steps)[None, :] < lengths[:, None], torch.tensor(0.0, dtype=torch.float64)
    )
    alpha = torch.rand(5, generator=generator, dtype=torch.float64).requires_grad_()
    gamma = torch.rand(5, generator=generator, dtype=torch.float64).requires_grad_()
    initial = (torch.randn(5, season, generator=generator, dtype=torch.float64) * 0.3).requires_grad_()
    levels, factors = smooth(z, lengths, alpha, gamma, initial)
    expected_levels, expected_factors = plain_loop(z, lengths, alpha.detach(), gamma.detach(), initial.detach())
    torch.testing.assert_close(levels, expected_levels, rtol=0, atol=1e-12)
    torch.testing.assert_close(factors, expected_factors, rtol=0, atol=1e-12)
    # The gradients, against finite differences of the vectorised form itself.
    assert torch.autograd.gradcheck(
        lambda *p: torch.cat([part.flatten() for part in smooth(z, lengths, *p)]), (alpha, gamma, initial)
    )


def test_a_long_series_smooths_in_float32_as_the_loop_does_in_float64():
    """A year of hourly logs: the scan's rounding stays that of float32, far below a forecast's error."""
    generator = torch.Generator().manual_seed(0)
    steps = 24 * 365
    hours = torch.arange(steps, dtype=torch.float64)
    z = (
        7
        + 0.3 * torch.sin(2 * torch.pi * hours / 24)
        + 0.01 * torch.randn(steps, generator=generator, dtype=torch.float64).cumsum(0)
    )
    lengths = torch.tensor([steps])
    alpha, gamma = torch.tensor([0.05], dtype=torch.float64), torch.tensor([0.2], dtype=torch.float64)
    initial = 0.3 * torch.sin(2 * torch.pi * torch.arange(24, dtype=torch.float64) / 24)[None, :]
    expected_levels, expected_factors = plain_loop(z[None, :], lengths, alpha, gamma, initial)
    levels, factors = smooth(z[None, :].float(), lengths, alpha.float(), gamma.float(), initial.float())
    assert (levels.double() - expected_levels).abs().max() < 1e-4
    assert (factors.double() - expected_factors).abs().max() < 1e-4


def test_a_series_with_a_value_at_or_below_0_is_shifted_before_its_log_and_a_lower_value_later_is_floored():
    values = np.array([5.0, 10.0, 0.0, 4.0, 1.0, 2.0])
    offsets = np.array([0, 3, 6])
    shifts = log_shifts(values, offsets)
    assert shifts.tolist() == pytest.approx([0.01 * 5.0, 0.0])
    logs = to_logs(np.array([5.0, -1.0, 3.0]), np.array([0, 3]), np.array([0.05]))
    assert np.isfinite(logs).all() and logs[1] == pytest.approx(np.log(0.01 * 3.0))


@pytest.fixture(scope="module")
def trained():
    return fit(HYBRID, load_panel(monthly_panel_frame(lengths=(60, 72, 66))), val_size=6, test_size=6, threads=1)


def test_a_panel_trains_its_per_series_smoothing_at_its_own_rate_within_range_and_forecasts(trained, tmp_path):
    assert all(math.isfinite(row["val_smape"]) for row in trained.history)
    assert trained.history[-1]["val_smape"] < trained.history[0]["val_smape"]
    smoothing = trained.model.smoothing
    # Each series' smoothing rates are learnt, each its own: they left their common start, and differ between series.
    for logits, start in ((smoothing.level_logit, INITIAL_LEVEL_LOGIT), (smoothing.season_logit, INITIAL_SEASON_LOGIT)):
        assert not torch.allclose(logits, torch.full((3,), start)) and logits.detach().unique().numel() == 3
    assert not torch.allclose(smoothing.initial_factors, torch.zeros(3, 12))  # the initial season is learnt
    rates = sorted(group["lr"] for group in trained.model.configure_optimizers().param_groups)
    assert rates == pytest.approx([3e-3 * 0.1, 3e-3])
    forecast = trained.forecast
    for series_id, level in (("s0", 10), ("s1", 100), ("s2", 1000)):
        assert forecast.loc[forecast["unique_id"] == series_id, "forecast"].between(0.5 * level, 2 * level).all()


def test_a_batch_smoothing_each_series_once_has_the_loss_and_gradients_of_each_window_smoothing_its_own(trained):
    """A batch of more windows than the panel has series smooths each series once (a long series' hundreds of
    windows); the same windows beside series they never draw from, more than the windows, each smooth their own row:
    the loss, its level penalty included, and its gradients are the same."""
    import dataclasses
    import types

    from forecaster.features.smoothing import HybridWindows

    model, train = trained.model, trained.parts.train
    windows = HybridWindows.of(train, model.log_shifts, 0)
    series = torch.tensor([0, 0, 2, 1, 2, 0])
    batch = torch.stack([series, windows.first[series] + torch.tensor([3, 40, 7, 0, 25, 12])])
    many = dataclasses.replace(  # seven more series than windows: never drawn from, they make each window its own row
        windows,
        z=windows.z.repeat(4, 1),
        lengths=windows.lengths.repeat(4),
        phases=windows.phases.repeat(4),
        first=windows.first.repeat(4),
        counts=windows.counts.repeat(4),
    )
    losses, gradients = [], []
    for source in (windows, many):
        model.zero_grad()
        loss = model.shape.loss(model, batch, None, types.SimpleNamespace(source=source))
        loss.backward()
        losses.append(loss.detach())
        gradients.append([parameter.grad.clone() for parameter in model.smoothing.parameters()])
    torch.testing.assert_close(losses[0], losses[1])
    for once, each in zip(*gradients):
        torch.testing.assert_close(once, each)


def test_a_hybrid_checkpoint_forecasts_the_same_in_rnnnet_as_in_the_lightning_module(trained, tmp_path):
    path = checkpoint_of(trained.model, tmp_path / "best_model.ckpt")
    expected = trained.forecast["forecast"].to_numpy()
    restored = RNNNet.load_best_model(path)
    assert restored.forecast(trained.parts.train, 6)["forecast"].to_numpy() == pytest.approx(expected, rel=1e-6)
    module = RNNForecaster.load_from_checkpoint(path)
    assert module.forecast(trained.parts.train, 6)["forecast"].to_numpy() == pytest.approx(expected, rel=1e-6)
    # Past its block of 6 the forecast rolls on, its first block unchanged.
    longer = restored.forecast(trained.parts.train, 15)
    assert len(longer) == 45 and np.isfinite(longer["forecast"]).all()
    first = longer.groupby("unique_id", sort=False)["forecast"].apply(lambda values: values.to_numpy()[:6])
    assert np.concatenate(first.to_list()) == pytest.approx(expected, rel=1e-6)


def test_a_series_with_zeros_and_a_panel_with_no_season_train_and_forecast():
    frame = monthly_panel_frame(lengths=(48, 60, 54))
    frame.loc[(frame["unique_id"] == "s1") & (frame.index % 7 == 0), "y"] = 0.0  # sales that stop some months
    result = fit(HYBRID.replace(n_epochs=3), load_panel(frame), val_size=6, test_size=6, threads=1)
    assert result.model.log_shifts[1] > 0 and result.model.log_shifts[[0, 2]].tolist() == [0.0, 0.0]
    assert np.isfinite(result.forecast["forecast"]).all() and math.isfinite(result.history[-1]["val_smape"])
    yearly = frame.assign(ds=frame.groupby("unique_id").cumcount() + 1990)  # a plain time index, no season
    panel = load_panel(yearly, season_length=1)
    result = fit(HYBRID.replace(n_epochs=3, input_chunk_length=6), panel, val_size=4, test_size=4, threads=1)
    assert result.model.smoothing.season == 1
    assert np.isfinite(result.forecast["forecast"]).all()


def test_the_saved_answer_forecasts_its_series_as_before_and_a_new_one_from_its_own_history(tmp_path):
    frame = monthly_panel_frame(lengths=(60, 72, 66))
    panel = load_panel(frame)
    nets = [fit_through(HYBRID.replace(random_state=seed), 3, panel, threads=1)[0] for seed in (0, 1)]
    data = ModelData(panel.freq, panel.season, 6, tuple(panel.ids), sweep="t")
    model = AnswerModel([SavedMember(net, f"trial{n}", 3) for n, net in enumerate(nets)], data, None)
    before = model.forecast(frame, h=6)
    again = AnswerModel.load(model.save(tmp_path / "model")).forecast(frame, h=6)
    assert again["answer"].to_numpy() == pytest.approx(before["answer"].to_numpy(), rel=1e-6)
    newcomer = monthly_panel_frame(lengths=(50,), seed=3).assign(unique_id="new", y=lambda f: f["y"] * 50)
    future = model.forecast(pd.concat([frame, newcomer]), h=6)
    theirs = future.loc[future["unique_id"] == "new", "answer"]
    assert len(theirs) == 6 and theirs.between(250, 1000).all()


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"loss": "mase"}, "loss='mase'"),
        ({"deseasonalise": True}, "deseasonalise=True"),
        ({"target_transform": "log"}, "target_transform='log'"),
        ({"series_lr": 0}, "series_lr=0"),
        ({"pinball_tau": 1.0}, "pinball_tau=1.0"),
    ],
)
def test_settings_the_hybrid_cannot_take_are_refused_by_name(changes, named):
    with pytest.raises(ConfigError, match=named.replace("(", r"\(")):
        HYBRID.replace(**changes)
