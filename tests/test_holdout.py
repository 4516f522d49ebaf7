"""A sweep with a held-out test window, on a real local Ray: no trial is given a point of the window, the answer and
the baselines are scored on it, and every trial's curves reach TensorBoard's and MLflow's own readers."""

import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from forecaster.metrics import mape
from forecaster.training.model import RNNForecaster
from sweeps.driver import run_sweep
from sweeps.output.summary import summary
from sweeps.plan.storage import BEST_MODEL_FILE
from sweeps.plan.sweep_plan import make_plan
from sweeps.trials.tuner import trial_inputs

pytestmark = pytest.mark.slow  # every test here runs a real sweep

RAY_INIT = {"num_cpus": 2}


@pytest.fixture(scope="module")
def holdout(local_ray, tmp_path_factory):
    folder = tmp_path_factory.mktemp("holdout")
    # An MLflow folder store, which MLflow 3 keeps only when asked to: the test reads it back with MLflow's client.
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        plan = make_plan(
            "air_rnn",
            num_samples=4,
            max_epochs=8,
            scheduler="fifo",
            max_concurrent_trials=1,
            seed=3,
            split_after="1958-01-01",
            test_after="1959-01-01",
            answer_top_k=2,
            levels=(80, 95),
            pins={"hidden_dim": 8, "n_rnn_layers": 1},
            storage_path=str(folder / "sweeps"),
            name="holdout",
            mlflow_uri=(folder / "mlruns").as_uri(),
        )
        yield plan, run_sweep(plan, ["test"], progress=False)
    finally:
        del os.environ["MLFLOW_ALLOW_FILE_STORE"]


def test_no_trial_is_given_a_point_of_the_test_window(holdout):
    plan, _ = holdout
    given = trial_inputs(plan)["parts"].seen.series(0)
    test = plan.parts.test.series(0)
    assert given.index.max() == pd.Timestamp("1959-01-01") and len(test) == 23
    assert not given.index.isin(test.index).any()
    assert len(given) + len(test) == len(plan.panel.values)


def test_the_trials_scored_the_validation_part_only(holdout):
    """The refit trains on what the trials were given and reproduces the best trial's score: a trial that had
    seen the test window would have scored 35 validation points, not 12."""
    from sweeps.refit import main as refit

    plan, _ = holdout
    assert refit([plan.experiment_path]) == 0


def test_the_answer_and_the_baselines_are_scored_on_the_test_window(holdout):
    plan, run = holdout
    best = json.loads(Path(plan.experiment_path, "best_config.json").read_text())
    answer = best["answer"]
    assert best["test_after"] == "1959-01-01" and answer["test_points"] == 23
    # The nets' mean: the mean forecast of the two best trials' best models, forecasting on from 1959-01.
    top = run.results.trials.trial_id.head(2).tolist()
    assert answer["trials"] == top
    models = []
    for trial_id in top:
        folder = next(Path(plan.experiment_path).glob(f"*{trial_id}*"))
        checkpoint = max(folder.glob("checkpoint_*"))
        models.append(RNNForecaster.load_from_checkpoint(checkpoint / BEST_MODEL_FILE, map_location="cpu"))
    nets = [model.forecast(plan.parts.seen.series(0), 23) for model in models]
    actual = plan.parts.test.values
    mean_of_nets = answer["baselines"]["mean of the nets"]["test_mape"]
    assert mean_of_nets == pytest.approx(float(mape(actual, np.mean(nets, axis=0))), rel=1e-6)
    # The answer: those nets and the baselines, weighed as best_config.json says (chosen on the validation part).
    weights = answer["ensemble"]["weights"]
    assert set(weights) >= {*top, "seasonal naive", "AutoETS"} and sum(weights.values()) == pytest.approx(1.0)
    test = pd.read_parquet(Path(plan.experiment_path, "forecasts.parquet")).query("part == 'test'")
    candidates = dict(zip(top, nets)) | {name: test[name].to_numpy() for name in weights if name in test}
    ensemble = sum(weight * candidates[name] for name, weight in weights.items())
    assert answer["test_mape"] == pytest.approx(float(mape(actual, ensemble)), rel=1e-6)
    # Seasonal naive on this window is the reference figure.
    assert answer["baselines"]["seasonal naive"]["test_mape"] == pytest.approx(15.75, abs=0.005)
    assert "combination" not in answer  # one series: the answer and its baselines, as before panels
    text = summary(plan, run.results, run.written, "after 1 s", scores=run.scores)
    assert "on the test window (23 points after 1959-01-01, which no trial saw)" in text
    assert "selected on validation: the lowest of" in text and "seasonal naive" in text
    assert Path(plan.experiment_path, "forecast.png").stat().st_size > 10_000


def test_tensorboard_reads_every_trials_curves(holdout):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    plan, run = holdout
    for trial_id, history in run.results.histories.items():
        folder = next(Path(plan.experiment_path).glob(f"*{trial_id}*"))
        events = EventAccumulator(str(folder))
        events.Reload()
        for tag in ("ray/tune/val_mape", "ray/tune/train_loss"):
            values = [event.value for event in events.Scalars(tag)]
            assert len(values) == len(history)
        assert [e.value for e in events.Scalars("ray/tune/val_mape")] == pytest.approx(list(history.val_mape))


def test_mlflow_holds_a_run_per_trial_with_every_epoch(holdout):
    from mlflow.tracking import MlflowClient

    plan, run = holdout
    client = MlflowClient(tracking_uri=plan.options.mlflow_uri)
    experiment = client.get_experiment_by_name(plan.name)
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == len(run.results.trials) == 4
    epochs = dict(zip(run.results.trials.trial_id, run.results.trials.epochs))
    for mlflow_run in runs:
        trial_id = next(trial for trial in epochs if trial in mlflow_run.info.run_name)
        history = client.get_metric_history(mlflow_run.info.run_id, "val_mape")
        assert len(history) == epochs[trial_id] and all(math.isfinite(point.value) for point in history)
        assert mlflow_run.data.params["hidden_dim"] == "8"


def test_the_report_rebuilds_the_answers_scores_from_storage(holdout, capsys):
    from sweeps.report import main as report

    plan, run = holdout
    assert report([plan.experiment_path]) == 0
    assert f"which no trial saw): {run.scores.answer['test_mape']:.2f} %" in capsys.readouterr().out


def test_the_answer_of_one_series_has_ordered_intervals_in_its_units_calibrated_before_the_test_window(holdout):
    plan, run = holdout
    test = pd.read_parquet(Path(plan.experiment_path, "forecasts.parquet")).query("part == 'test'")
    low80, high80, low95, high95 = (test[f"answer-{side}-{level}"] for level in (80, 95) for side in ("lo", "hi"))
    assert len(test) == 23 and ((low95 <= low80) & (low80 <= high80) & (high80 <= high95)).all()
    assert ((low95 <= test.answer) & (test.answer <= high95)).all() and (low95 >= 0).all()  # passengers, never < 0
    assert ((high80 - low80) / test.answer).between(0.01, 2).all()
    intervals = run.scores.intervals
    assert intervals["answer"]["coverage_95"] == pytest.approx(((test.y >= low95) & (test.y <= high95)).mean())
    calibration = intervals["calibration"]
    # One series: its validation part's 23 errors, every step pooled, from the answer's members as their trials kept
    # them (no model trained for them).
    assert calibration["steps_pooled"] and calibration["calibration_series"] == 1
    chosen = [name for name, weight in run.scores.ensemble.weights.items() if weight > 0]
    assert calibration["calibration_errors"] == 23 and calibration["members"] == len(chosen)
    for baseline in ("seasonal naive", "AutoETS", "Theta", "AutoCES"):
        assert 0 <= intervals[baseline]["coverage_80"] <= intervals[baseline]["coverage_95"] <= 1
