"""The answer as an ensemble: greedy selection with replacement (forecaster.answer.ensemble) worked by hand, and a sweep
whose ensemble weighs the baseline that is right, with its saved model."""

import json

import numpy as np
import pandas as pd
import pytest

from forecaster.answer.ensemble import greedy_weights, series_errors
from forecaster.answer.model import AnswerModel
from tests.test_sweep_cli import sweeps_run


def test_series_errors_pool_each_series_points_as_the_sweep_scores_them():
    actual = np.array([10.0, 20.0, 5.0])
    forecasts = np.array([[11.0, 18.0, 5.0]])
    offsets = np.array([0, 2, 3])
    mape = series_errors(actual, forecasts, offsets, "mape")
    np.testing.assert_allclose(mape, [[(10 + 10) / 2, 0.0]])
    smape = series_errors(actual, forecasts, offsets, "smape")
    np.testing.assert_allclose(smape, [[(200 / 21 + 400 / 38) / 2, 0.0]])
    mase = series_errors(actual, forecasts, offsets, "mase", scales=np.array([2.0, 1.0]))
    np.testing.assert_allclose(mase, [[(0.5 + 1.0) / 2, 0.0]])


def test_greedy_selection_worked_by_hand():
    """One series, truth 10 at two points. A is 2 too high at both, B 2 too low at both, C 3 too high at the first and
    right at the second. MAE-like MASE (scale 1): C alone 1.5 is the best member, the first step takes it; then
    C+B gives |((13+8)/2 - 10)| = 0.5 and |(10+8)/2 - 10| = 1, mean 0.75, the best second step; the third adds A:
    (13+8+12)/3 = 11 and (10+8+12)/3 = 10, mean 0.5; the fourth, C again: (46/4, 40/4) -> 1.5 and 0, mean 0.75, or B:
    (41/4, 38/4) -> 0.25, 0.5, mean 0.375, which it takes. Weights are the shares of the steps, of the best one."""
    actual = np.array([10.0, 10.0])
    a, b, c = np.array([12.0, 12.0]), np.array([8.0, 8.0]), np.array([13.0, 10.0])
    offsets = np.array([0, 2])
    scales = np.array([1.0])
    one = greedy_weights(actual, np.stack([a, b, c]), offsets, "mase", scales, steps=1)
    np.testing.assert_array_equal(one, [0.0, 0.0, 1.0])
    four = greedy_weights(actual, np.stack([a, b, c]), offsets, "mase", scales, steps=4)
    np.testing.assert_allclose(four, [0.25, 0.5, 0.25])
    mixed = four @ np.stack([a, b, c])
    assert series_errors(actual, mixed[None, :], offsets, "mase", scales)[0, 0] == pytest.approx(0.375)


def test_the_kept_ensemble_is_never_worse_than_its_best_member_where_it_was_chosen():
    """Where every later step would add harm (one candidate exact, the others far off), the weights stay on it."""
    actual = np.linspace(1.0, 2.0, 12)
    exact, high, low = actual, actual + 5, actual * 3
    offsets = np.array([0, 6, 12])
    weights = greedy_weights(actual, np.stack([high, exact, low]), offsets, "smape")
    np.testing.assert_array_equal(weights, [0.0, 1.0, 0.0])
    generator = np.random.default_rng(0)
    candidates = actual[None, :] + generator.normal(0, 0.3, (6, 12))
    weights = greedy_weights(actual, candidates, offsets, "smape")
    assert weights.sum() == pytest.approx(1.0) and (weights >= 0).all()
    ensemble = series_errors(actual, (weights @ candidates)[None, :], offsets, "smape").mean()
    assert ensemble <= series_errors(actual, candidates, offsets, "smape").mean(axis=1).min()


def periodic_panel(path) -> str:
    """Six monthly series, each one random pattern of 12 months repeated exactly at its own level: seasonal naive
    forecasts every point right, and no net trained for a few epochs can."""
    generator = np.random.default_rng(0)
    frames = []
    for number in range(6):
        pattern = 10.0 ** (1 + number % 3) * (1 + generator.uniform(0, 1, 12))
        length = 72 + 6 * number
        frames.append(
            pd.DataFrame(
                {
                    "unique_id": f"shop{number}",
                    "ds": pd.date_range("2015-01-01", periods=length, freq="MS").strftime("%Y-%m-%d"),
                    "y": np.resize(pattern, length),
                }
            )
        )
    pd.concat(frames).to_csv(path, index=False)
    return str(path)


@pytest.mark.slow
def test_where_seasonal_naive_is_right_the_ensemble_weighs_it_and_its_saved_model_forecasts_the_future(tmp_path):
    """A smoke sweep on data seasonal naive forecasts exactly, with 2 backtest windows: the answer puts its weight on
    seasonal naive and scores as it does on the test window; the leaderboard lists every candidate (each net, each
    baseline, the nets' mean and the answer) with weights summing to 1, as best_config.json does; and the saved
    model, fitting its statistical member itself, forecasts what future.parquet holds."""
    path = periodic_panel(tmp_path / "shops.csv")
    arguments = ["panel", "--data", path, "--horizon", "6", "--val-windows", "2", "--smoke-test", "--levels", "80"]
    done = sweeps_run(*arguments, "--storage-path", str(tmp_path), "--name", "shops", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = tmp_path / "shops"
    answer = json.loads((folder / "best_config.json").read_text())["answer"]
    weights = answer["ensemble"]["weights"]
    assert weights["seasonal naive"] >= 0.8 and sum(weights.values()) == pytest.approx(1.0)
    naive = answer["baselines"]["seasonal naive"]["test_smape"]
    assert answer["test_smape"] <= naive * 1.02 + 1e-9
    assert answer["baselines"]["mean of the nets"]["test_smape"] > answer["test_smape"]
    board = {row["model"]: row for row in answer["leaderboard"]}
    ran = {name for name, baseline in answer["baselines"].items() if "unavailable" not in baseline}
    assert set(board) == {*answer["trials"], *(ran & set(weights)), "mean of the nets", "answer (the ensemble)"}
    assert set(weights) == {*answer["trials"], *(ran & set(weights))} and "AutoETS" in weights
    assert sum(row["weight"] for row in board.values() if row["kind"] != "ensemble" and row["weight"]) == (
        pytest.approx(1.0)
    )
    assert [row["validation_smape"] for row in answer["leaderboard"]] == sorted(
        row["validation_smape"] for row in answer["leaderboard"]
    )
    out = done.stdout
    assert "Leaderboard: the ensemble's candidates" in out and "answer (the ensemble)" in out
    assert "2 backtest windows of 6 before them validate" in out
    # The validation part holds both windows, 12 points a series, each forecast by every candidate.
    validation = pd.read_parquet(folder / "forecasts.parquet").query("part == 'validation'")
    assert validation.groupby("unique_id").size().eq(12).all() and validation["seasonal naive"].notna().all()
    model = AnswerModel.load(folder)
    assert [member.name for member in model.statistical] == ["seasonal naive"]
    future = pd.read_parquet(folder / "future.parquet")
    again = model.forecast(path, levels=[80])
    np.testing.assert_allclose(again["answer"], future["answer"], rtol=1e-12)
    np.testing.assert_allclose(again["answer-hi-80"], future["answer-hi-80"], rtol=1e-12)
