"""Real sweeps on a real local Ray (2 CPUs): ASHA stops weak trials, every file a user gets parses,
the best trial is chosen over all epochs and its checkpoint reproduces it."""

import json
import math
import pickle
import signal
from pathlib import Path

import pandas as pd
import pytest

from sweeps.driver import run_sweep
from sweeps.plan.sweep_plan import make_plan
from tests.helpers import LeavesAMark

pytestmark = pytest.mark.slow  # every test here runs a real sweep

RAY_INIT = {"num_cpus": 2}


@pytest.fixture(scope="module")
def asha_sweep(local_ray, tmp_path_factory):
    """Eight trials of up to 12 epochs, one at a time so that ASHA's decisions are deterministic."""
    plan = make_plan(
        "air_rnn",
        num_samples=8,
        max_epochs=12,
        seed=11,
        max_concurrent_trials=1,
        scheduler_options={"grace_period": 3, "reduction_factor": 2},
        pins={"hidden_dim": 8, "n_rnn_layers": 1},
        storage_path=str(tmp_path_factory.mktemp("sweeps")),
        name="asha",
    )
    ctrl_c_before = signal.getsignal(signal.SIGINT)
    run = run_sweep(plan, ["test"])
    return plan, run.results, (ctrl_c_before, signal.getsignal(signal.SIGINT))


def test_asha_stops_some_trials_early_and_lets_others_run_all_epochs(asha_sweep):
    _, results, _ = asha_sweep
    trials = results.trials
    assert len(trials) == 8
    stopped, completed = trials[trials.status == "STOPPED"], trials[trials.status == "COMPLETED"]
    assert len(stopped) >= 1 and len(completed) >= 1
    assert (stopped.epochs < 12).all() and set(stopped.epochs) <= {3, 6}  # ASHA's rungs
    assert (completed.epochs == 12).all()
    for history in results.histories.values():
        assert list(history["epoch"]) == list(range(1, len(history) + 1))  # every epoch reported
    # One trial at a time on 2 CPUs, as asked: one worker, reused from trial to trial, ran them all.
    assert {pid for history in results.histories.values() for pid in history["pid"]} == {
        results.histories[trials.trial_id.iloc[0]]["pid"].iloc[0]
    }


def test_ctrl_c_is_pythons_again_once_the_trials_have_ended(asha_sweep):
    """Ray Tune's Ctrl+C handler is kept while the trials run only: a Ctrl+C while the answer is scored stops it."""
    _, _, (before, after) = asha_sweep
    assert after is before and "tune" not in getattr(after, "__module__", "")  # not a handler an earlier fit left


def test_every_result_file_parses_and_agrees(asha_sweep):
    plan, _, _ = asha_sweep
    folder = plan.experiment_path
    csv = pd.read_csv(f"{folder}/results.csv")
    parquet = pd.read_parquet(f"{folder}/results.parquet")
    assert len(csv) == len(parquet) == 8
    assert list(csv.trial_id) == list(parquet.trial_id)
    assert {"status", "best_val_mape", "last_val_mape", "epochs", "seconds", "model", "lr"} <= set(csv.columns)
    best = json.loads(Path(f"{folder}/best_config.json").read_text())
    assert best["best_val_mape"] == pytest.approx(csv.best_val_mape.min())
    assert best["config"]["hidden_dim"] == 8 and best["refit"].startswith("python -m sweeps.refit")
    resolved = json.loads(Path(f"{folder}/resolved_sweep.json").read_text())
    assert resolved["sweep"]["name"] == "air_rnn" and resolved["seed"] == 11
    assert resolved["pinned"] == {"hidden_dim": 8, "n_rnn_layers": 1}
    assert "git_commit" in resolved and resolved["versions"]["ray"] == "2.60.0"
    for picture in ("forecast.png", "mape_by_epoch.png"):
        assert Path(f"{folder}/{picture}").read_bytes()[:4] == b"\x89PNG"


def test_the_best_trial_is_chosen_over_all_epochs_not_the_last(asha_sweep):
    _, results, _ = asha_sweep
    best = results.best
    history = results.histories[best.trial_id]
    assert best.score == pytest.approx(history["val_mape"].min())
    assert best.best_epoch == int(history.loc[history["val_mape"].idxmin(), "epoch"])
    everyone = min(h["val_mape"].min() for h in results.histories.values())
    assert best.score == pytest.approx(everyone)


def test_refit_reproduces_the_best_trial(asha_sweep):
    from sweeps.refit import main as refit

    plan, _, _ = asha_sweep
    assert refit([plan.experiment_path]) == 0


def test_report_rebuilds_the_same_table_from_storage(asha_sweep, capsys):
    from sweeps.report import main as report

    plan, results, _ = asha_sweep
    before = pd.read_csv(f"{plan.experiment_path}/results.csv")
    assert report([plan.experiment_path]) == 0
    after = pd.read_csv(f"{plan.experiment_path}/results.csv")
    pd.testing.assert_frame_equal(before, after)
    assert f"Best: trial {results.best.trial_id}" in capsys.readouterr().out


def test_the_folder_holds_no_pickle_of_the_sweeps_own(asha_sweep):
    """Ray Tune's own state (tuner.pkl, which only --resume reads) is the one pickle; checkpoints are torch files
    that load with weights_only=True."""
    plan, _, _ = asha_sweep
    files = [path for path in Path(plan.experiment_path).rglob("*") if path.is_file()]
    assert [path.name for path in files if path.suffix in (".pkl", ".pickle")] == ["tuner.pkl"]
    assert {"sweep_plan.json", "panel.parquet", "resolved_sweep.json"} <= {path.name for path in files}


def test_report_and_refit_work_on_a_copy_of_the_folder(asha_sweep, tmp_path, capsys, monkeypatch):
    """As with a sweep's folder fetched from s3:// to a laptop, named by a relative path: the copy's plan points at
    the copy. Its tuner.pkl left behind and a pickle planted in Tune's experiment state, as whoever can write to a
    shared bucket could: both commands read the folder as data, and nothing planted runs."""
    import shutil

    from sweeps.refit import main as refit
    from sweeps.report import main as report

    plan, _, _ = asha_sweep
    copy = tmp_path / "fetched"
    shutil.copytree(
        plan.experiment_path,
        copy,
        ignore=shutil.ignore_patterns("results.*", "*.png", "best_config.json", "tuner.pkl"),
    )
    mark = tmp_path / "unpickled"
    [state] = copy.glob("experiment_state-*.json")
    experiment = json.loads(state.read_text())
    trial, metadata = experiment["trial_data"][0]
    planted = {"_type": "CLOUDPICKLE_FALLBACK", "value": pickle.dumps(LeavesAMark(mark)).hex()}
    experiment["trial_data"][0] = [json.dumps({**json.loads(trial), "storage": planted}), metadata]
    state.write_text(json.dumps(experiment))
    monkeypatch.chdir(tmp_path)
    assert report(["fetched"]) == 0
    assert f"Written to {copy}:" in capsys.readouterr().out
    pd.testing.assert_frame_equal(pd.read_csv(copy / "results.csv"), pd.read_csv(f"{plan.experiment_path}/results.csv"))
    best = json.loads((copy / "best_config.json").read_text())
    assert best["checkpoint"].startswith(str(copy)) and (copy / "forecast.png").exists()
    assert refit(["fetched"]) == 0
    assert not mark.exists() and not (copy / "tuner.pkl").exists()


def best_model_of(best):
    """What the best trial's checkpoint holds as its best model: (epoch, val_mape)."""
    import torch

    saved = torch.load(f"{best.checkpoint}/best_model.ckpt", weights_only=False)
    return saved["epoch"], saved["val_mape"]


def test_the_checkpoint_of_the_best_trial_holds_its_best_model(asha_sweep):
    _, results, _ = asha_sweep
    epoch, val_mape = best_model_of(results.best)
    assert (epoch, val_mape) == (results.best.best_epoch, pytest.approx(results.best.score))


def test_optuna_search_runs_a_sweep(local_ray, tmp_path):
    pytest.importorskip("optuna")
    plan = make_plan(
        "air_rnn",
        num_samples=3,
        max_epochs=4,
        search="optuna",
        seed=1,
        scheduler="fifo",
        max_concurrent_trials=1,  # each trial one worker, as Tune reuses it: the next is one more TPE suggestion
        pins={"hidden_dim": 8},
        storage_path=str(tmp_path),
        future=False,
        name="optuna",
    )
    results = run_sweep(plan, ["test"]).results
    assert list(results.trials.status) == ["COMPLETED"] * 3
    assert all(math.isfinite(v) for v in results.trials.best_val_mape)
    assert results.trials.training_length.gt(results.trials.input_chunk_length).all()


def test_pbt_exploits_and_mutates_trials_from_their_checkpoints(local_ray, tmp_path):
    plan = make_plan(
        "air_rnn",
        num_samples=4,
        max_epochs=12,
        scheduler="pbt",
        seed=5,
        scheduler_options={"perturbation_interval": 3},
        pins={"hidden_dim": 8, "n_rnn_layers": 1, "model": "GRU"},
        storage_path=str(tmp_path),
        future=False,
        name="pbt",
    )
    results = run_sweep(plan, ["test"]).results
    assert list(results.trials.status) == ["COMPLETED"] * 4
    # PBT's own log: each line is an exploitation, a trial restarting from another's checkpoint, mutated.
    exploits = [json.loads(line) for line in Path(f"{plan.experiment_path}/pbt_global.txt").read_text().splitlines()]
    assert exploits
    for _target, _donor, _target_epoch, _donor_epoch, old, new in exploits:
        assert new["lr"] != old["lr"] or new["batch_size"] != old["batch_size"]
    assert all(h["epoch"].max() == 12 for h in results.histories.values())


def test_median_stopping_rule_runs_a_sweep(local_ray, tmp_path):
    plan = make_plan(
        "air_rnn",
        num_samples=6,
        max_epochs=15,
        scheduler="median",
        seed=2,
        max_concurrent_trials=1,  # the rule compares each trial with the running averages of those before it
        pins={"hidden_dim": 8},
        storage_path=str(tmp_path),
        future=False,
        name="median",
    )
    results = run_sweep(plan, ["test"]).results
    assert len(results.trials) == 6 and results.trials.status.isin(["COMPLETED", "STOPPED"]).all()
    # The rule may stop a trial at any epoch after its grace period: its best model is checkpointed anyway.
    epoch, val_mape = best_model_of(results.best)
    assert (epoch, val_mape) == (results.best.best_epoch, pytest.approx(results.best.score))


def test_hyperband_first_judges_trials_at_the_grace_period(local_ray, tmp_path):
    plan = make_plan(
        "air_rnn",
        num_samples=12,
        max_epochs=8,
        scheduler="hyperband",
        seed=6,
        max_concurrent_trials=1,
        scheduler_options={"grace_period": 4, "reduction_factor": 2},
        pins={"hidden_dim": 8, "n_rnn_layers": 1},
        storage_path=str(tmp_path),
        future=False,
        name="hyperband",
    )
    trials = run_sweep(plan, ["test"]).results.trials
    assert len(trials) == 12 and trials.status.isin(["COMPLETED", "STOPPED"]).all()  # none left paused
    stopped = trials[trials.status == "STOPPED"]
    assert len(stopped) and (stopped.epochs == 4).all()  # judged at the grace period, never before


def test_a_single_series_sweep_forecasts_a_validation_length_after_its_last_month_with_its_saved_model(asha_sweep):
    """air_rnn has no horizon: its future is as long as its validation part, after Air Passengers' last month."""
    from forecaster.answer.model import AnswerModel

    plan, _, _ = asha_sweep
    future = pd.read_parquet(f"{plan.experiment_path}/future.parquet")
    assert len(future) == int(plan.parts.val.lengths[0]) == 23
    assert future.ds.tolist() == list(pd.date_range("1961-01-01", periods=23, freq="MS"))
    assert {"answer", "seasonal naive", "AutoETS", "Theta", "AutoCES"} <= set(future.columns)
    assert "combination" not in future  # a panel's only
    saved = AnswerModel.load(plan.experiment_path)
    assert saved.forecast(plan.panel).answer.tolist() == future.answer.tolist()
