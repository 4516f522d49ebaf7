"""A sweep over a panel, as a user runs it: `python -m sweeps.run m3_monthly --data panel.csv --horizon 6` on a small
panel end to end (the files and pictures a forecaster looks at, the report and the refit), no trial given a test
point of any series, the metric refused where it is undefined, short series dropped and counted, and an
interrupted panel sweep resumed."""

import dataclasses
import json
import math
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest
import ray

from forecaster.config import ForecasterConfig
from forecaster.features.transforms import TargetTransform
from forecaster.training.train import PanelDataModule
from sweeps.answer.members import FAR_BEHIND, ranking, top_checkpoints
from sweeps.answer.text import _left_out
from sweeps.driver import describe_data
from sweeps.plan.record import read_plan
from sweeps.plan.storage import CHECKPOINT_FILE
from sweeps.plan.sweep_plan import PlanError, make_plan
from sweeps.run import main
from sweeps.trials.results import collect
from sweeps.trials.tuner import trial_inputs
from tests.helpers import trial_histories
from tests.test_sweep_cli import ENV, imported, sweeps_run

HORIZON = 6
# The m3_monthly sweep's space, made small enough for a test: short windows, a small GRU, short epochs.
SMALL = [
    *("--set", "model=GRU", "--set", "hidden_dim=8", "--set", "n_rnn_layers=1", "--set", "windows_per_epoch=256"),
    *("--set", "training_length=16", "--set", "input_chunk_length=12", "--set", "batch_size=64"),
]


def panel_csv(tmp_path, lengths=(60, 72, 66, 80, 64), zero_at=None, name="panel.csv") -> str:
    """Monthly series, each with its own level, trend and season, of different lengths and starts."""
    generator = np.random.default_rng(0)
    frames = []
    for number, length in enumerate(lengths):
        t = np.arange(length)
        level = 10.0 ** (1 + number % 3)
        values = level * (1 + 0.01 * t + 0.2 * np.sin(2 * np.pi * (t + number) / 12))
        values *= 1 + 0.03 * generator.standard_normal(length)
        dates = pd.date_range(f"{2000 + number}-01-01", periods=length, freq="MS")
        frames.append(pd.DataFrame({"unique_id": f"store{number}", "ds": dates.strftime("%Y-%m-%d"), "y": values}))
    frame = pd.concat(frames, ignore_index=True)
    if zero_at is not None:
        series, position = zero_at
        frame.loc[frame.index[frame["unique_id"] == series][position], "y"] = 0.0
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return str(path)


def plan_of(tmp_path, path, pins=(), **options):
    pins = {
        "model": "GRU",
        "hidden_dim": 8,
        "n_rnn_layers": 1,
        "training_length": 16,
        "input_chunk_length": 12,
        **dict(pins),
    }
    return make_plan(
        "m3_monthly", data=path, horizon=HORIZON, pins=pins, storage_path=str(tmp_path / "sweeps"), **options
    )


@pytest.mark.parametrize("sweep", ["m3_monthly", "panel"])
def test_no_trial_is_given_a_test_point_of_any_series(tmp_path, sweep):
    """What a trial is given ends before each series' test window, whichever shape it trains (the panel sweep
    searches three; that no window of a shape reads past what it is given is tests/test_direct.py's)."""
    path = panel_csv(tmp_path)
    if sweep == "panel":
        plan = make_plan("panel", data=path, horizon=HORIZON, storage_path=str(tmp_path / "sweeps"))
        assert set(plan.sweep.space["shape"].values) == {"recurrent", "direct", "hybrid"}
    else:
        plan = plan_of(tmp_path, path)
    inputs = trial_inputs(plan)
    given, test, whole = inputs["parts"].seen, plan.parts.test, plan.panel
    assert inputs["parts"].test is None and inputs["parts"].train.lengths.sum() < given.lengths.sum()
    assert list(given.ids) == list(test.ids) == list(whole.ids) and len(whole) == 5
    assert (test.lengths == HORIZON).all() and (given.lengths + test.lengths == whole.lengths).all()
    for index in range(len(whole)):
        seen, held = given.series(index), test.series(index)
        assert seen.index.max() < held.index.min()
        assert list(seen.index.append(held.index)) == list(whole.series(index).index)
    # The validation part: backtest windows of a horizon each, stepping back from the test window, one after another;
    # each forecast from every point before it, none reaching a test point (5 series of 60-80 months: the default
    # for under 20 series, 5, which the shortest holds with 24 training points).
    parts = inputs["parts"]
    assert parts.windows == plan.sweep.val_windows == 5 and parts.metric == "smape"
    assert parts.cut.val_size == 5 * HORIZON and (parts.val.lengths == 5 * HORIZON).all()
    windows = parts.backtest_windows()
    assert len(windows) == 5
    for index, (history, window) in enumerate(windows):
        assert (window.lengths == HORIZON).all()
        assert (history.lengths == parts.train.lengths + index * HORIZON).all()
        ends = history.lengths + window.lengths
        assert (ends == given.lengths - (4 - index) * HORIZON).all()  # the last window ends where the test starts
        for series in range(len(whole)):
            assert history.series(series).index.max() < window.series(series).index.min()
            assert window.series(series).index.max() < test.series(series).index.min()
    assert (windows[-1][0].lengths + HORIZON == given.lengths).all()
    # The trials rank on the 3 earliest windows; the ensemble is weighed on the 2 latest, which no trial ranks on.
    assert (parts.ranking_windows, parts.weighing_windows) == (3, 2)
    weighed, rows = parts.weighing_part()
    assert (weighed.lengths == 2 * HORIZON).all() and (parts.val.positions[rows] >= 3 * HORIZON).all()
    np.testing.assert_array_equal(weighed.values, parts.val.values[rows])
    config = ForecasterConfig(hidden_dim=8, training_length=16, input_chunk_length=12, output_chunk_length=HORIZON)
    validation = PanelDataModule(config, parts, TargetTransform.fit(config, parts.train)).validation
    assert validation.series.tolist() == np.repeat(np.arange(5), 3).tolist()  # 3 origins a series
    scored = validation.actual.T[validation.weights.T.bool()].reshape(5, 3 * HORIZON).numpy()
    np.testing.assert_allclose(scored, parts.val.values[~rows].reshape(5, 3 * HORIZON), rtol=1e-6)


@pytest.mark.parametrize(
    "zero_at, message",
    [
        (("store2", -8), "MAPE is undefined on 1 series with zeros in their validation part: 'store2' (the first on "),
        (("store4", -2), "MAPE is undefined on 1 series with zeros in their test window: 'store4'"),
    ],
    ids=["validation", "test"],
)
def test_mape_is_refused_where_a_series_has_a_zero_in_a_scored_part(tmp_path, capsys, zero_at, message):
    path = panel_csv(tmp_path, zero_at=zero_at)
    arguments = ["m3_monthly", "--data", path, "--horizon", str(HORIZON), "--storage-path", str(tmp_path), *SMALL]
    assert main([*arguments, "--metric", "mape"]) == 2
    error = capsys.readouterr().err
    assert message in error and "rank by metric='smape' or 'mase' (--metric)" in error
    assert not ray.is_initialized() and not list(tmp_path.glob("m3_monthly-*"))
    without_log = {"target_transform": "none"}  # m3_monthly's log is undefined at the zero; sMAPE is defined there
    assert plan_of(tmp_path, path, pins=without_log).sweep.metric == "smape"


def test_data_with_a_value_below_0_is_ranked_by_mase_unless_another_metric_is_asked(tmp_path):
    """sMAPE and MAPE divide by values near 0 where a series crosses it; MASE divides by each series' own scale."""
    positive = panel_csv(tmp_path)
    frame = pd.read_csv(positive)
    frame.loc[frame.unique_id == "store0", "y"] -= frame.loc[frame.unique_id == "store0", "y"].mean()
    crossing = tmp_path / "crossing.csv"
    frame.to_csv(crossing, index=False)
    storage = str(tmp_path / "sweeps")
    assert make_plan("panel", data=positive, horizon=HORIZON, storage_path=storage).sweep.metric == "smape"
    assert make_plan("panel", data=str(crossing), horizon=HORIZON, storage_path=storage).sweep.metric == "mase"
    asked = make_plan("panel", data=str(crossing), horizon=HORIZON, metric="smape", storage_path=storage)
    assert asked.sweep.metric == "smape"


def test_series_too_short_for_the_space_are_refused_or_dropped_and_counted(tmp_path):
    path = panel_csv(tmp_path, lengths=(60, 72, 23, 80, 64))  # store2: 11 points before validating, 12 to read
    with pytest.raises(PlanError, match=r"1 of 5 series are too short for this fit: 'store2' \(with 23 points\)"):
        plan_of(tmp_path, path)
    plan = plan_of(tmp_path, path, drop_short_series=True)
    assert plan.panel.dropped == ("store2",) and len(plan.panel) == 4
    assert "4 series of 60-80 points" in describe_data(plan)[0] and "1 dropped as too short" in describe_data(plan)[0]
    assert plan.describe_data()["dropped_series"] == ["store2"]


def test_mase_of_a_constant_series_is_undefined_for_every_method_alike():
    """A series whose training part is constant has no seasonal naive error to divide by: its MASE is NaN whether a
    forecast misses (x / 0, inf before) or hits it exactly (0 / 0), so the panel's mean is None for every method."""
    from sweeps.answer.scores import mean, part_scores
    from tests.test_panel import panel_of

    part = panel_of(np.array([5.0, 5.0]), np.array([1.0, 2.0]), season=2)
    scales = np.array([0.0, 2.0])  # the first series' training part was constant
    missed, exact = (part_scores(part, np.array([first, first, 1.0, 3.0]), scales) for first in (6.0, 5.0))
    assert np.isnan(missed["mase"][0]) and np.isnan(exact["mase"][0]) and missed["mase"][1] == 0.25
    assert mean(pd.Series(missed["mase"])) is None and mean(pd.Series(missed["smape"])) is not None


@pytest.mark.slow
def test_an_interrupted_panel_sweep_resumes_to_the_planned_trials_and_writes_what_a_forecaster_looks_at(tmp_path):
    """One CLI sweep, as a user runs it on a small panel: stopped with Ctrl+C once a trial is done, resumed to its
    planned trials; then the files and pictures a forecaster looks at, the report and the refit; and once more
    resumed, with nothing left to run, and stopped with Ctrl+C while it scores its answer."""
    path = panel_csv(tmp_path)
    args = [
        *("m3_monthly", "--data", path, "--horizon", str(HORIZON), *SMALL),
        *("--num-samples", "3", "--max-epochs", "30", "--scheduler", "fifo", "--max-concurrent-trials", "1"),
        *("--seed", "2", "--storage-path", str(tmp_path), "--name", "resumable"),
    ]
    log = tmp_path / "first-run.log"
    with open(log, "w") as output:  # a file, not a pipe nobody reads while the sweep runs
        process = subprocess.Popen([sys.executable, "-m", "sweeps.run", *args], env=ENV, stdout=output, stderr=output)
    try:
        deadline = time.time() + 300
        finished = {}
        while not finished and time.time() < deadline and process.poll() is None:
            histories = trial_histories(tmp_path / "resumable", driver_pid=process.pid)  # as each result arrives
            finished = {trial: history for trial, history in histories.items() if history["epoch"].max() >= 30}
            time.sleep(0.2)
        assert finished, f"no trial finished its 30 epochs in 300 s (the sweep's exit code: {process.poll()})"
        process.send_signal(signal.SIGINT)  # two trials of 30 epochs are still to run
        process.wait(timeout=120)
    finally:
        process.kill()
    output = log.read_text()
    assert process.returncode == 130, output[-3000:]
    assert f"python -m sweeps.run m3_monthly --resume --name resumable --storage-path {tmp_path}" in output
    assert "The trials have ended" not in output  # they had not: what ran is scored, and said to be unfinished
    done = sweeps_run(*args, "--resume", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert {"torch", "ray"} <= imported(done) and "lightning" not in imported(done)  # Ray's workers train, not it
    results = pd.read_csv(tmp_path / "resumable" / "results.csv")
    assert len(results) == 3 and (results.status == "COMPLETED").all() and (results.epochs == 30).all()
    assert results["best_val_smape"].notna().all()

    out = done.stdout
    assert f"its space and budget on {path} (its own data is m3_monthly)" in out
    assert f"data       {path}: 5 series of 60-80 points (median 66), dates (MS), season 12" in out
    assert (
        "per series: the last 6 held out (no trial sees them), the 5 backtest windows of 6 before them validate" in out
    )
    assert "ranking on best_val_smape" in out and "Top trials (best validation sMAPE over all their epochs)" in out
    assert "means over series" in out and "Theta, test" in out and "% of series" in out
    assert "The trials have ended; scoring the answer and the baselines on 5 series" in out
    folder = tmp_path / "resumable"

    forecasts = pd.read_parquet(folder / "forecasts.parquet")
    assert {"unique_id", "ds", "y", "part", "answer", "seasonal naive", "AutoETS", "Theta", "AutoCES"} <= set(
        forecasts.columns
    )
    assert forecasts.groupby(["part", "unique_id"]).size().tolist() == [HORIZON] * 5 + [5 * HORIZON] * 5
    test = forecasts[forecasts["part"] == "test"]
    assert test[["answer", "seasonal naive", "Theta"]].notna().all().all()

    by_series = pd.read_csv(folder / "metrics_by_series.csv")
    baselines = {"seasonal naive", "AutoETS", "Theta", "AutoCES", "mean of the nets", "statistical combination"}
    assert set(by_series["method"]) == {"answer", "combination", *baselines}
    # The combination: the mean of the answer, AutoETS, Theta and AutoCES, point by point, on the test windows only;
    # the statistical combination the same without the answer.
    statistical = test[["AutoETS", "Theta", "AutoCES"]]
    assert np.allclose(test["combination"], pd.concat([test["answer"], statistical], axis=1).mean(axis=1))
    assert np.allclose(test["statistical combination"], statistical.mean(axis=1))
    validation = forecasts[forecasts["part"] == "validation"]
    assert validation[["combination", "statistical combination"]].isna().all().all()
    # The answer's sMAPE on each series' test window, recomputed from forecasts.parquet.
    for series_id, rows in test.groupby("unique_id"):
        mine = 200 * np.mean(np.abs(rows.y - rows.answer) / (np.abs(rows.y) + np.abs(rows.answer)))
        stored = by_series[(by_series.unique_id == series_id) & (by_series.part == "test")]
        assert stored.loc[stored.method == "answer", "smape"].item() == pytest.approx(mine, rel=1e-6)

    answer = json.loads((folder / "best_config.json").read_text())["answer"]
    test_scores = by_series[by_series.part == "test"].pivot(index="unique_id", columns="method", values="smape")
    assert answer["test_smape"] == pytest.approx(test_scores["answer"].mean(), rel=1e-9)
    assert answer["series"] == 5 and answer["horizon"] == HORIZON and answer["dropped_series"] == []
    theta = answer["baselines"]["Theta"]
    assert theta["test_smape"] == pytest.approx(test_scores["Theta"].mean(), rel=1e-9)
    share = (test_scores["answer"] < test_scores["Theta"]).mean()
    assert theta["test_beaten_by_answer"]["smape"] == pytest.approx(share)
    combination = answer["combination"]
    assert combination["of"] == ["answer", "AutoETS", "Theta", "AutoCES"]
    assert combination["test_smape"] == pytest.approx(test_scores["combination"].mean(), rel=1e-9)
    share = (test_scores["combination"] < test_scores["Theta"]).mean()
    assert combination["test_beats"]["Theta"]["smape"] == pytest.approx(share)
    assert set(combination["test_beats"]) == {"answer", *baselines} and set(answer["baselines"]) == baselines
    assert f"{'combination, test':<38}{combination['test_smape']:8.2f}" in out
    assert "combination: the mean of the answer, AutoETS, Theta and AutoCES, point by point" in out
    share = combination["test_beats"]["answer"]["smape"]
    assert f"combination better on (by sMAPE): the answer {100 * share:.0f} %, seasonal naive" in out
    for picture in ("series_forecasts.png", "errors_by_series.png", "smape_by_epoch.png"):
        assert (folder / picture).read_bytes()[:4] == b"\x89PNG" and (folder / picture).stat().st_size > 10_000

    future = pd.read_parquet(folder / "future.parquet")  # 6 points after each series' end, from the saved model
    assert len(future) == 5 * HORIZON and "Future: 6 points after each series' end" in out
    (folder / "future.parquet").unlink()
    report = sweeps_run(str(folder), module="sweeps.report")
    assert report.returncode == 0 and f"{answer['test_smape']:8.2f}" in report.stdout
    assert "lightning" not in imported(report)
    pd.testing.assert_frame_equal(pd.read_parquet(folder / "future.parquet"), future)  # rebuilt, not trained again
    assert "trained again on every point" not in report.stdout
    refit = subprocess.run(
        [sys.executable, "-m", "sweeps.refit", str(folder)], capture_output=True, text=True, env=ENV, timeout=300
    )
    assert refit.returncode == 0, refit.stdout + refit.stderr
    assert "validation sMAPE" in refit.stdout and "reproduced" in refit.stdout

    # Resumed with every trial done, it scores again; a Ctrl+C then stops it and says what is left to do.
    again = subprocess.Popen(
        [sys.executable, "-m", "sweeps.run", *args, "--resume"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    killer = threading.Timer(300, again.kill)  # a sweep that never says it scores is stopped, not waited for
    killer.start()
    try:
        lines = []
        for line in again.stdout:
            lines.append(line)
            if line.startswith("The trials have ended; scoring the answer and the baselines on 5 series"):
                again.send_signal(signal.SIGINT)
                break
        stopped = "".join(lines) + again.communicate(timeout=120)[0]
    finally:
        killer.cancel()
        again.kill()
    assert again.returncode == 130, stopped[-3000:]
    assert (
        "stopped by Ctrl+C while the answer was scored; every trial had ended and is stored. Score it and write its "
        f"files with:  python -m sweeps.report {folder}"
    ) in stopped


@pytest.mark.gpu
def test_on_gpu_fractions_the_panel_sweep_trains_its_trials_its_refit_and_its_calibration_on_the_card(tmp_path):
    """`--gpus-per-trial 0.25` on a card (the smoke test's 4 trials at once): every trial's epochs ran on the GPU (the
    history in each trial's checkpoint says where), and so did the answer's refit and calibration fits, Ray tasks of a
    trial's resources."""
    import torch

    path = panel_csv(tmp_path)
    arguments = ["panel", "--data", path, "--horizon", str(HORIZON), "--smoke-test", "--levels", "80"]
    done = sweeps_run(*arguments, "--gpus-per-trial", "0.25", "--storage-path", str(tmp_path), "--name", "card")
    assert done.returncode == 0, done.stderr[-3000:]
    folder = tmp_path / "card"
    answer = json.loads((folder / "best_config.json").read_text())["answer"]
    assert answer["refit"]["trained_on"] == ["cuda:0"] and " s on cuda:0), then forecasting" in done.stdout
    assert answer["intervals"]["calibration"]["calibration_series"] == 5
    devices = [
        state["devices"]
        for checkpoint in folder.rglob(CHECKPOINT_FILE)
        for name, state in torch.load(checkpoint, weights_only=False, map_location="cpu")["callbacks"].items()
        if name.startswith("EpochHistory")
    ]
    assert devices and all(epochs and set(epochs) == {"cuda:0"} for epochs in devices)
    # The future's refit trained on the card too, and the model it saved forecasts where torch sees no GPU.
    assert json.loads((folder / "model" / "model.json").read_text())["trained_on"] == ["cuda:0"]
    again = tmp_path / "again.csv"
    done = subprocess.run(
        [sys.executable, "-m", "sweeps.forecast", str(folder), "--data", path, "--output", str(again)],
        capture_output=True,
        text=True,
        env=ENV | {"CUDA_VISIBLE_DEVICES": ""},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    future = pd.read_parquet(folder / "future.parquet")
    forecast = pd.read_csv(again, parse_dates=["ds"])
    assert np.allclose(forecast["answer"], future["answer"], rtol=1e-5)


@pytest.mark.slow
def test_the_panel_sweep_runs_on_a_small_panel_with_intervals_in_each_series_units(tmp_path, monkeypatch, capsys):
    """`python -m sweeps.run panel --data FILE --horizon 6 --smoke-test --levels 80 95`, as a user runs it on a panel
    of their own (a month of one store at 0): its space resolved on the data, the shapes in turn, the answer and every
    baseline with
    ordered bounds at both levels around forecasts in each series' units (levels of 10 to 1,000), and their coverage
    as forecasts.parquet gives it; the answer refit through the validation part, with the answer as the trials
    trained it beside it."""
    path = panel_csv(tmp_path, zero_at=("store1", 20))  # a month of no sales, in its training part
    arguments = ["panel", "--data", path, "--horizon", str(HORIZON), "--smoke-test", "--levels", "80", "95"]
    arguments += ["--quantiles", "0.1", "0.5", "0.9"]
    done = sweeps_run(*arguments, "--storage-path", str(tmp_path), "--name", "mine", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "resolved   " in out and "(for this data)" in out
    shapes = pd.read_csv(tmp_path / "mine" / "results.csv")["shape"]
    assert sorted(shapes) == ["direct", "hybrid", "recurrent", "recurrent"]  # the smoke test's 4 trials, in turn
    assert "hybrid     the log of every series, 1 with a value at or below 0 after a shift" in out  # store1's 0
    assert "Prediction intervals on the test window" in out and "the answer's: conformal, on its validation" in out
    folder = tmp_path / "mine"
    test = pd.read_parquet(folder / "forecasts.parquet").query("part == 'test'")
    methods = ["answer", "seasonal naive", "AutoETS", "Theta", "AutoCES"]
    answer = json.loads((folder / "best_config.json").read_text())["answer"]
    intervals, refit = answer["intervals"], answer["refit"]
    assert refit["trials"] == answer["trials"] and len(refit["best_epochs"]) == len(answer["trials"]) >= 1
    # Each trial's net continued through the validation part for a quarter of its best epoch count, at least one.
    assert refit["continued_epochs"] == [max(1, round(best / 4)) for best in refit["best_epochs"]]
    # The answer's trials ranked on their last epoch's validation (the panel sweep's answer_scope), not their best's.
    plan = read_plan(str(folder))
    results = collect(plan)
    by_last = results.trials.sort_values("last_val_smape")["trial_id"].tolist()
    # A trial ASHA stopped early (which ones depends on when each reports, so on the machine's load) may end over
    # FAR_BEHIND times the best trial's score: it is left out, and the summary names it.
    last_score = results.trials.set_index("trial_id")["last_val_smape"]
    far_behind = [trial_id for trial_id in by_last if last_score[trial_id] > FAR_BEHIND * last_score.min()]
    chosen = [trial_id for trial_id in by_last if trial_id not in far_behind]
    assert [trial_id for trial_id, _ in top_checkpoints(plan, results)] == answer["trials"] == chosen
    assert answer["selection"]["far_behind"] == far_behind and ("left out:" in out) == bool(far_behind)
    # The ranking follows the scores, whatever they are: here scores 10, 11, ... in by_last's order and reversed.
    rising = dict(zip(by_last, 10.0 + np.arange(len(by_last))))
    reversed_scores = results.trials.assign(last_val_smape=results.trials["trial_id"].map(rising).rsub(100.0))
    reversed_ranking = top_checkpoints(plan, dataclasses.replace(results, trials=reversed_scores))
    assert [trial_id for trial_id, _ in reversed_ranking] == by_last[::-1]
    # A trial over twice the best's score has not learnt the data: left out of the answer, and the summary names it.
    far_scores = results.trials.assign(
        last_val_smape=results.trials["trial_id"].map({**rising, by_last[1]: 2.01 * rising[by_last[0]]})
    )
    far_results = dataclasses.replace(results, trials=far_scores)
    assert [trial_id for trial_id, _ in top_checkpoints(plan, far_results)] == [by_last[0], *by_last[2:]]
    left_out = _left_out({"far_behind": ranking(plan, far_results)[1]}, plan)
    assert left_out == [
        f"  left out: {by_last[1]}, its validation sMAPE over 2 times the best trial's (too far behind to average in)"
    ]
    assert f"the ensemble of the top {len(chosen)} trials' best models (ranked on their last epoch's validation)" in out
    assert refit["trained_on"] == ["cpu"]
    continued = ", ".join(map(str, refit["continued_epochs"]))
    assert (
        f"The trials have ended; scoring the answer and the baselines on 5 series (the top {len(chosen)} trials' "
        f"nets continued through the validation part ({continued} epochs), then through every point for the future"
    ) in out
    assert f"refit: its {len(answer['trials'])} trials' nets continued through the validation part ({continued}" in out
    assert " s on cpu), then forecasting the test window" in out
    weights = answer["ensemble"]["weights"]
    if sum(weights[trial_id] for trial_id in answer["trials"]) > 0:  # its nets trained on 30 more points per series
        assert not np.array_equal(test["answer"], test["answer before refit"])
    before = (
        test.assign(f=test["answer before refit"])
        .groupby("unique_id")[["y", "f"]]
        .apply(lambda rows: 200 * np.mean(np.abs(rows.y - rows.f) / (np.abs(rows.y) + np.abs(rows.f))))
    )
    assert answer["baselines"]["answer before refit"]["test_smape"] == pytest.approx(before.mean(), rel=1e-9)
    for method in methods:
        low80, high80, low95, high95 = (test[f"{method}-{side}-{level}"] for level in (80, 95) for side in ("lo", "hi"))
        assert ((low95 <= low80) & (low80 <= high80) & (high80 <= high95)).all(), method
        assert ((low95 <= test[method]) & (test[method] <= high95)).all(), method
        inside = ((test.y >= low80) & (test.y <= high80)).mean()
        assert intervals[method]["coverage_80"] == pytest.approx(inside), method
        assert intervals[method]["msis_95"] > 0
    # The forecast distributions WQL scores, at 0.1-0.9 by neuralforecast's names: ordered (a baseline's 20 %
    # interval may miss its own point forecast: Theta's does on store1), the 0.1 and 0.9 quantiles the 80 %
    # interval's bounds, the answer's median its point forecast; WQL in best_config.json and metrics_by_series.csv as
    # computed from them here.
    wql_quantiles = [round(0.1 * k, 1) for k in range(1, 10)]
    by_series = pd.read_csv(folder / "metrics_by_series.csv").query("part == 'test'")
    for method in methods:
        columns = test[[f"{method}_ql{q:g}" for q in wql_quantiles]].to_numpy()
        assert (np.diff(columns, axis=1) >= 0).all(), method
        assert np.allclose(test[f"{method}_ql0.1"], test[f"{method}-lo-80"]), method
        assert np.allclose(test[f"{method}_ql0.9"], test[f"{method}-hi-80"]), method
        losses = [
            2 * (test.y - test[f"{method}_ql{q:g}"]) * (q - (test.y < test[f"{method}_ql{q:g}"])) for q in wql_quantiles
        ]
        assert answer["baselines"].get(method, answer)["test_wql"] == pytest.approx(
            np.mean([loss.sum() / test.y.abs().sum() for loss in losses])
        ), method
        by_method = by_series[by_series.method == method].set_index("unique_id")["wql"].sort_index()
        per_series = test.assign(loss=np.mean(losses, axis=0)).groupby("unique_id")
        assert np.allclose(by_method, per_series.loss.sum() / per_series.y.apply(lambda y: y.abs().sum())), method
    assert np.allclose(test["answer_ql0.5"], test["answer"])
    assert "Forecast distributions on the test window, WQL" in out
    width = (test["answer-hi-80"] - test["answer-lo-80"]) / test.y  # in each series' units: relative to its level
    assert width.groupby(test.unique_id).median().between(0.001, 2).all()
    assert intervals["calibration"]["calibration_series"] == 5 and not intervals["calibration"]["unbounded_levels"]
    # calibration.parquet holds the points that set the answer's bands, the validation part's 5 backtest windows (no
    # model trained for them): 25 errors of each step ahead, each step its own pool, and each level's conformal
    # quantile of a step's errors, each over its series' scale and its point's unit (the ensemble's members' spread
    # there plus a floor), times each test point's own scale and unit, is the band's half-width at that step.
    points = pd.read_parquet(folder / "calibration.parquet")
    validation = pd.read_parquet(folder / "forecasts.parquet").query("part == 'validation'")
    assert len(points) == intervals["calibration"]["calibration_errors"] == len(validation) == 5 * 5 * HORIZON
    assert np.allclose(points.forecast, validation.answer) and points.step.between(1, HORIZON).all()
    assert sorted(points.window.unique()) == [1, 2, 3, 4, 5] and not intervals["calibration"]["steps_pooled"]
    points["score"] = np.abs(points.y - points.forecast) / points.scale / points.unit
    test_steps = test.groupby("unique_id").cumcount() + 1
    for step, rows in points.groupby("step"):
        scores = np.sort(rows.score)
        half = {level: scores[int(np.ceil((len(scores) + 1) * level / 100)) - 1] for level in (80, 95)}
        at = test[test_steps == step]
        scale80, scale95 = ((at[f"answer-hi-{level}"] - at["answer"]) / half[level] for level in (80, 95))
        assert np.allclose(scale80, scale95), step
    floor = intervals["calibration"]["spread_floor"]
    if intervals["calibration"]["members"] > 1:  # the ensemble's members disagree somewhere: units above the floor
        assert floor > 0 and (points.unit >= floor).all() and points.unit.std() > 0
    else:
        assert floor == 0 and (points.unit == 1).all()

    # The future: the answer's configurations trained on every point, forecasting the 6 months after each series' end
    # with ordered bounds, beside every baseline's and the combination; the model saved with it forecasts the same,
    # through `python -m sweeps.forecast`, without training.
    future = pd.read_parquet(folder / "future.parquet")
    frame = pd.read_csv(path, parse_dates=["ds"])
    assert future.groupby("unique_id").size().tolist() == [HORIZON] * 5
    for series_id, rows in future.groupby("unique_id"):
        last = frame.loc[frame.unique_id == series_id, "ds"].max()
        assert rows.ds.tolist() == list(pd.date_range(last, periods=HORIZON + 1, freq="MS")[1:])
    for method in methods:
        low95, low80, high80, high95 = (future[f"{method}-{name}"] for name in ("lo-95", "lo-80", "hi-80", "hi-95"))
        assert ((low95 <= low80) & (low80 <= future[method]) & (future[method] <= high80)).all(), method
        assert (high80 <= high95).all() and future[method].notna().all(), method
    statistical = future[["AutoETS", "Theta", "AutoCES"]]
    assert np.allclose(future.combination, pd.concat([future.answer, statistical], axis=1).mean(axis=1))
    assert "Future: 6 points after each series' end" in out and "nets, each continued through the test window" in out
    assert f"python -m sweeps.forecast {folder} --data NEWER.csv" in out
    assert (folder / "future.png").read_bytes()[:4] == b"\x89PNG"
    pd.testing.assert_frame_equal(pd.read_csv(folder / "future.csv", parse_dates=["ds"]), future, check_dtype=False)
    saved = json.loads((folder / "model" / "model.json").read_text())
    assert [member["trial_id"] for member in saved["members"]] == answer["trials"] and saved["trained_on"] == ["cpu"]
    # How each member was trained: its trial's best epochs, then continued through each newer part.
    assert [member["continued"] for member in saved["members"]] == [
        [{"on": "the validation part", "epochs": epochs}, {"on": "the test window", "epochs": epochs}]
        for epochs in refit["continued_epochs"]
    ]
    # Where the time went: phases that add up to the whole command, and every kind of task after the trials.
    timings = json.loads((folder / "timings.json").read_text())
    assert sum(phase["seconds"] for phase in timings["phases"]) == pytest.approx(timings["whole_seconds"], abs=0.05)
    assert [phase["phase"] for phase in timings["phases"]] == ["start", "ray", "trials", "tail", "scoring", "saving"]
    assert set(timings["tasks"]) == {"baselines", "refit", "future"}
    assert timings["tasks"]["refit"]["tasks"] == timings["tasks"]["future"]["tasks"] == len(answer["trials"])
    assert timings["tasks"]["baselines"]["tasks"] == 4  # each baseline on the 5 series, one chunk
    after = timings["after_the_last_trial"]
    assert 0 < after["seconds"] < timings["whole_seconds"] and after["tasks_at_once"] > 0
    assert "Where the time went" in out and "tasks: refit" in out and "after the last trial:" in out
    again = tmp_path / "again.csv"
    done = sweeps_run(str(folder), "--data", path, "--output", str(again), module="sweeps.forecast")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "torch" in imported(done) and not imported(done) & {"lightning", "ray"}
    forecast = pd.read_csv(again, parse_dates=["ds"])
    bounded = ["answer", *(f"answer-{name}" for name in ("lo-95", "lo-80", "hi-80", "hi-95"))]
    assert forecast.columns.tolist() == ["unique_id", "ds", *bounded]
    pd.testing.assert_frame_equal(forecast, future[["unique_id", "ds", *bounded]], check_dtype=False, rtol=1e-9)
    # --quantiles: the future's distribution at 0.1, 0.5 and 0.9, in future.parquet and from the saved model alike.
    quantile_columns = ["answer_ql0.1", "answer_ql0.5", "answer_ql0.9"]
    done = sweeps_run(
        str(folder),
        "--data",
        path,
        "--quantiles",
        "0.9",
        "0.1",
        "0.5",
        "--output",
        str(again),
        module="sweeps.forecast",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    forecast = pd.read_csv(again, parse_dates=["ds"])
    assert forecast.columns.tolist() == ["unique_id", "ds", *bounded, *quantile_columns]
    pd.testing.assert_frame_equal(forecast[quantile_columns], future[quantile_columns], check_dtype=False, rtol=1e-9)
    assert np.allclose(future["answer_ql0.1"], future["answer-lo-80"]) and np.allclose(
        future["answer_ql0.5"], future.answer
    )
    assert (future["AutoETS_ql0.1"] <= future["AutoETS_ql0.9"]).all() and "AutoETS_ql0.5" in future

    # sweeps.report on the finished folder trains and fits nothing (it forecasts with the saved nets and reads the
    # baselines' forecasts), gives the same answer, and leaves every file but those it writes as they were.
    import forecaster.baselines.statistical
    import forecaster.training.train
    from sweeps.report import main as report

    def refuse(*args, **kwargs):
        raise AssertionError("sweeps.report trained a net or fit a baseline")

    monkeypatch.setattr(forecaster.training.train, "fit", refuse)
    monkeypatch.setattr(forecaster.baselines.statistical.Statistical, "_statsforecast", refuse)
    before = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    assert report([str(folder)]) == 0
    printed = capsys.readouterr().out
    assert "from the saved test model" in printed and "from the model the sweep saved, without training" in printed
    listed = printed.split("Written to", 1)[1].splitlines()[1:]
    written = {line.strip() for line in listed if line.startswith("  ") and not line.endswith("/")}
    assert {"forecasts.parquet", "future.parquet", "best_config.json"} <= written
    changed = [path.relative_to(folder) for path, content in before.items() if path.read_bytes() != content]
    assert [path for path in changed if str(path) not in written] == []  # the saved models and the trials' files too
    rebuilt = pd.read_parquet(folder / "forecasts.parquet").query("part == 'test'")
    for method in (*methods, "answer before refit"):
        assert np.allclose(rebuilt[method], test[method], rtol=1e-6), method


@pytest.mark.slow
def test_a_time_limit_ends_a_sweep_whose_trials_would_take_longer_with_its_answer_future_and_model(tmp_path):
    """`--time-limit 2m` on a small panel whose 8 trials of 2,000 epochs would take many minutes: the command exits 0,
    within the limit and 5 %, its trials stopped early, with an answer scored beside the baselines, the future and the
    saved model, and the summary says what the limit cut, if anything. The answer's tasks run to a deadline before the
    limit, so a machine busier than the trials found it cuts members rather than carrying the command past it."""
    path = panel_csv(tmp_path)
    arguments = ["panel", "--data", path, "--horizon", str(HORIZON), "--num-samples", "8", "--max-epochs", "2000"]
    started = time.monotonic()
    done = sweeps_run(*arguments, "--time-limit", "2m", "--storage-path", str(tmp_path), "--name", "limited")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    folder = tmp_path / "limited"
    timings = json.loads((folder / "timings.json").read_text())
    assert timings["whole_seconds"] <= 120, f"the command's clock says {timings['whole_seconds']:.0f} s: {timings}"
    assert took <= 1.05 * 120, f"the command took {took:.0f} s under --time-limit 2m"
    trials = pd.read_csv(folder / "results.csv")
    assert len(trials) == 8 and trials.best_val_smape.notna().any()
    assert trials.epochs.sum() < 8 * 2000  # the limit stopped the search (a trial may finish on a fast machine)
    answer = json.loads((folder / "best_config.json").read_text())["answer"]
    assert math.isfinite(answer["test_smape"]) and answer["time_limit"]["seconds"] == 120
    assert sum(answer["ensemble"]["weights"].values()) == pytest.approx(1.0)  # the ensemble was weighed in time
    assert "--time-limit 2m: " in done.stdout and "Future: 6 points after each series' end" in done.stdout
    future = pd.read_parquet(folder / "future.parquet")
    assert len(future) == 5 * HORIZON and future.answer.notna().all()
    assert json.loads((folder / "model" / "model.json").read_text())["members"]
    assert timings["whole_seconds"] <= took and json.loads((folder / "time_spent.json").read_text())["seconds"] > 0


@pytest.mark.slow
def test_the_panel_sweep_on_what_is_left_one_series_summarises_it_as_one(tmp_path):
    """`python -m sweeps.run panel --data FILE --test-after DATE` where one of two series ends before DATE: the sweep
    drops it and says which, and the one left is summarised as a single series, in the panel sweep's metric, beside the
    answer before its refit (scored on the test window only)."""
    path = panel_csv(tmp_path, lengths=(60, 30))  # store1: 2001-01 to 2003-06, nothing after test_after
    arguments = ["panel", "--data", path, "--test-after", "2003-06-01", "--smoke-test"]
    done = sweeps_run(*arguments, "--storage-path", str(tmp_path), "--name", "one", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "18 test after 2003-06-01 (held out: no trial sees them); 1 dropped as too short ('store1')" in out
    answer = json.loads((tmp_path / "one" / "best_config.json").read_text())["answer"]
    assert answer["series"] == 1 and answer["dropped_series"] == ["store1"] and answer["metric"] == "smape"
    assert "forecasting on from what the sweep saw (sMAPE)" in out
    assert f"on the test window (18 points after 2003-06-01, which no trial saw): {answer['test_smape']:.2f}" in out
    before = answer["baselines"]["answer before refit"]
    assert before["validation_smape"] is None and f"answer before refit test {before['test_smape']:8.2f}" in out


def test_a_dataframe_plans_the_sweep_a_file_does_and_gets_the_same_errors(tmp_path):
    """From a notebook, `data=` takes the table itself: the same panel and cut as its file, a plan record that names
    it, and a gap reported at its row, as a file's is."""
    path = panel_csv(tmp_path)
    frame = pd.read_csv(path)
    from_file = plan_of(tmp_path, path)
    from_frame = plan_of(tmp_path, frame)
    np.testing.assert_array_equal(from_frame.panel.values, from_file.panel.values)
    assert list(from_frame.panel.ids) == list(from_file.panel.ids)
    assert from_frame.parts.cut == from_file.parts.cut
    assert from_frame.data_label == from_frame.options.data == f"the DataFrame given as data= ({len(frame):,} rows)"
    with pytest.raises(PlanError, match=r"the DataFrame given as data= .*row 12: series .*gap"):
        plan_of(tmp_path, frame.drop(index=11).reset_index(drop=True))
