"""The answer saved as one model (forecaster.answer.model) and `python -m sweeps.forecast`: load it and forecast the
series it trained on a month later, series it never saw, dated and integer time, a model saved on a card on a machine
without one, without Ray or Lightning imported; and each kind of data it cannot forecast refused, naming where, with
nothing written. The models are small fits through every point, as a sweep's future refit trains them
(tests/test_panel_sweep.py runs the whole path from a sweep)."""

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from forecaster.answer.intervals import SPREAD_WEIGHT
from forecaster.answer.model import AnswerModel, Calibration, ModelCovariates, ModelData, SavedMember
from forecaster.config import ForecasterConfig
from forecaster.data.read import SeriesError, load_panel
from forecaster.training.train import fit_through
from sweeps.forecast import main as forecast_cli
from tests.test_model import ROOT
from tests.test_panel import monthly_panel_frame, write_csv

HORIZON = 4
SMALL = ForecasterConfig(
    hidden_dim=8, input_chunk_length=6, training_length=10, batch_size=32, target_transform="log_if_positive"
)


def answer_model(frame: pd.DataFrame, season_length=None, config=SMALL) -> AnswerModel:
    """Two members trained through every point of `frame`, with a calibration of made-up scaled errors."""
    panel = load_panel(frame, season_length=season_length)
    nets = [fit_through(config.replace(random_state=seed), 2, panel, threads=1)[0] for seed in (0, 1)]
    errors = np.abs(np.random.default_rng(0).standard_normal((HORIZON, 40)))
    data = ModelData(panel.freq, panel.season, HORIZON, tuple(panel.ids), sweep="t")
    calibration = Calibration(errors, np.ones(len(panel)), levels=(80.0, 95.0))
    return AnswerModel([SavedMember(net, f"trial{n}", 2) for n, net in enumerate(nets)], data, calibration)


@pytest.fixture(scope="module")
def monthly():
    frame = monthly_panel_frame()
    return frame, answer_model(frame)


@pytest.fixture(scope="module")
def saved(monthly, tmp_path_factory):
    folder = tmp_path_factory.mktemp("saved") / "model"
    monthly[1].save(folder)
    return folder


def test_a_saved_answer_forecasts_the_months_after_each_series_with_ordered_bounds_as_before_it_was_saved(
    monthly, saved
):
    frame, model = monthly
    loaded = AnswerModel.load(saved.parent)  # a results folder holding model/, or the model folder itself
    future = loaded.forecast(frame)
    assert future.columns.tolist() == [
        *("unique_id", "ds", "answer"),
        *("answer-lo-95", "answer-lo-80", "answer-hi-80", "answer-hi-95"),
    ]
    assert future.groupby("unique_id").size().tolist() == [HORIZON] * 3
    for series_id, rows in future.groupby("unique_id"):
        last = frame.loc[frame.unique_id == series_id, "ds"].max()
        assert rows["ds"].tolist() == list(pd.date_range(last, periods=HORIZON + 1, freq="MS")[1:])
    low95, low80, high80, high95 = (future[f"answer-{name}"] for name in ("lo-95", "lo-80", "hi-80", "hi-95"))
    assert ((low95 <= low80) & (low80 < future.answer) & (future.answer < high80) & (high80 <= high95)).all()
    pd.testing.assert_frame_equal(future, model.forecast(frame))
    # A month more of every series: the dates move on by one, and the forecasts read the new month.
    later = pd.concat(
        [rows.iloc[-1:].assign(ds=rows.ds.iloc[-1] + pd.DateOffset(months=1)) for _, rows in frame.groupby("unique_id")]
    )
    month_later = loaded.forecast(pd.concat([frame, later]).sort_values(["unique_id", "ds"]))
    assert (month_later.ds.to_numpy() == (future.ds + pd.DateOffset(months=1)).to_numpy()).all()
    assert not np.allclose(month_later.answer, future.answer)
    assert loaded.forecast(frame, h=2, levels=[]).columns.tolist() == ["unique_id", "ds", "answer"]


def test_each_point_widens_with_its_members_spread_and_a_model_saved_before_the_units_keeps_its_widths(
    monthly, tmp_path
):
    """A calibration with a spread floor: each half-width is the step's quantile times the members' spread at the
    point plus the floor times the half-width without units; saved and loaded with it. A model.json without the
    floor (saved before 2026-12-05) forecasts as it did, every unit 1."""
    frame, model = monthly
    floored = dataclasses.replace(model, calibration=dataclasses.replace(model.calibration, spread_floor=0.5))
    loaded = AnswerModel.load(floored.save(tmp_path / "model"))
    assert loaded.calibration.spread_floor == 0.5

    def half_widths(found: pd.DataFrame) -> np.ndarray:  # (steps, S), from the upper bound: no floor at 0 there
        return (found["answer-hi-80"] - found["answer"]).to_numpy().reshape(-1, HORIZON).T

    plain, widened = half_widths(model.forecast(frame)), half_widths(loaded.forecast(frame))
    spread = loaded.member_forecasts(loaded.read(frame), HORIZON).std(axis=0)
    assert (spread > 0).all()
    per_step = (widened - 0.5 * plain) / spread
    np.testing.assert_allclose(per_step, per_step[:, :1].repeat(per_step.shape[1], axis=1))
    record = json.loads((tmp_path / "model" / "model.json").read_text())
    del record["calibration"]["spread_floor"]
    (tmp_path / "model" / "model.json").write_text(json.dumps(record))
    pd.testing.assert_frame_equal(AnswerModel.load(tmp_path / "model").forecast(frame), model.forecast(frame))


def test_a_series_only_one_member_reads_is_its_forecast_with_the_median_spread_as_its_unit(monthly):
    """A new series too short for the member that reads 24 points: the other member's forecast alone, and its
    half-widths those of the median spread (the floor over SPREAD_WEIGHT, plus the floor)."""
    frame, model = monthly
    panel = load_panel(frame)
    longer = fit_through(SMALL.replace(input_chunk_length=24, training_length=28, random_state=2), 2, panel, threads=1)
    members = [model.members[0], SavedMember(longer[0], "trial2", 2)]
    plain = dataclasses.replace(model, members=members)
    floored = dataclasses.replace(plain, calibration=dataclasses.replace(model.calibration, spread_floor=0.5))
    short = frame[frame.unique_id == "s0"].tail(12).assign(unique_id="short")
    alone = dataclasses.replace(model, members=members[:1]).forecast(short, levels=[])
    found = {name: m.forecast(pd.concat([frame, short])) for name, m in (("plain", plain), ("floored", floored))}
    rows = found["plain"].unique_id == "short"
    np.testing.assert_allclose(found["floored"].answer[rows], alone.answer)
    half = {name: (table["answer-hi-80"] - table["answer"])[rows] for name, table in found.items()}
    np.testing.assert_allclose(half["floored"], (0.5 / SPREAD_WEIGHT + 0.5) * half["plain"])


def test_a_series_the_model_never_saw_is_forecast_from_its_own_history_and_named(monthly, saved, tmp_path, capsys):
    frame, model = monthly
    stranger = monthly_panel_frame(lengths=(30,), start=("2002-05",), seed=3).assign(unique_id="new store")
    stranger["y"] *= 7  # on a scale of its own: its scaler is fit on its own history
    both = pd.concat([frame, stranger])
    future = model.forecast(both)
    assert model.new_series(load_panel(both)) == ["new store"]
    mine = future[future.unique_id == "new store"]
    assert len(mine) == HORIZON and mine.answer.between(0.3 * stranger.y.min(), 3 * stranger.y.max()).all()
    pd.testing.assert_frame_equal(future[future.unique_id != "new store"], model.forecast(frame))
    output = tmp_path / "next.parquet"
    assert forecast_cli([str(saved), "--data", write_csv(tmp_path, both), "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    assert "1 series the model never trained on: 'new store'" in printed and f"{len(future)} rows" in printed
    pd.testing.assert_frame_equal(pd.read_parquet(output), future, check_dtype=False)


def test_a_new_hourly_series_is_forecast_by_each_shape_with_its_week_and_by_a_model_saved_before_the_weeks_table():
    """Hourly data: the recurrent member divides by the week's table, the hybrid's smoothing holds the day's places;
    a series neither trained on is forecast by both, by the recurrent one with its weekend below its weekdays as in
    its history. A model saved
    before the week's table (24 places a series) forecasts it too, taking the week's table down to the day's."""
    from tests.test_transforms import hourly_frame

    frame, _ = hourly_frame({"a": ("2024-01-01", 24), "b": ("2024-01-03 05:00", 22)})
    stranger, _ = hourly_frame({"new": ("2024-01-02 03:00", 23)})
    stranger["y"] *= 3
    recurrent = SMALL.replace(input_chunk_length=24, training_length=36, deseasonalise=True, calendar=True)
    hybrid = recurrent.replace(
        shape="hybrid", loss="pinball", target_transform="none", deseasonalise=False, calendar=False
    )
    both = pd.concat([frame, stranger])
    saturday = slice(5 * 24, 6 * 24)
    for config in (recurrent, hybrid):
        model = answer_model(frame, config=config)
        future = model.forecast(both, h=168, levels=[])
        mine = future[future.unique_id == "new"].assign(place=lambda rows: rows.ds.dt.dayofweek * 24 + rows.ds.dt.hour)
        week = mine.groupby("place").answer.mean()
        assert len(mine) == 168 and mine.answer.between(0.3 * stranger.y.min(), 3 * stranger.y.max()).all()
        if config.shape == "recurrent":  # the hybrid's smoothing holds the day's season only
            assert week.iloc[saturday].mean() < 0.9 * week.iloc[: 5 * 24].mean()
    old = answer_model(frame, config=recurrent)
    for member in old.members:
        table = member.net.transform.seasonal
        member.net.transform = dataclasses.replace(
            member.net.transform, seasonal=table.reshape(len(table), 7, 24).mean(1)
        )
    assert old.members[0].net.transform.seasonal_period == 24
    future = old.forecast(both, h=48, levels=[])
    assert future.answer.notna().all() and len(future) == 3 * 48


def test_a_saved_daily_answer_forecasts_the_year_of_a_series_it_trained_on_and_of_one_it_never_saw(tmp_path):
    """Daily data: the members divide by each series' year, a new series' from its own two years; saved and loaded,
    the answer forecasts January above September for both, as their histories are."""
    from tests.test_transforms import daily_frame, year_factor

    frame = daily_frame({"a": ("2020-01-10", 1000)})  # both end on 4 October 2022
    stranger = daily_frame({"new": ("2020-03-01", 950)}).assign(y=lambda rows: 3 * rows.y)
    config = SMALL.replace(input_chunk_length=28, training_length=40, deseasonalise=True, calendar=True)
    answer_model(frame, config=config).save(tmp_path / "model")
    model = AnswerModel.load(tmp_path / "model")
    assert model.members[0].net.transform.year is not None
    future = model.forecast(pd.concat([frame, stranger]), h=90, levels=[])  # 5 October 2022 to 2 January 2023
    for name in ("a", "new"):
        mine = future[future.unique_id == name]
        days = pd.DatetimeIndex(mine.ds)
        october, winter = days.month == 10, days >= "2022-12-15"
        truth = year_factor(days)
        expected = truth[winter].mean() / truth[october].mean()
        assert mine.answer[winter].mean() / mine.answer[october].mean() == pytest.approx(expected, rel=0.1)


def test_a_model_whose_members_read_no_covariate_needs_none_of_the_sweeps_to_forecast():
    """Members told to read none (covariate_path none, as a sweep may choose on validation) make a model that asks no
    --futr-data of the promotions its sweep was given; one member reading them makes the model ask for them."""
    from tests.test_step_inputs import sales

    data, future = sales(stores=2, futr_days=4)
    panel = load_panel(data, futr_exog=["promo"])
    record = ModelData("D", 7, 4, tuple(panel.ids), sweep="t", covariates=ModelCovariates(futr_exog=("promo",)))

    def model(*paths: str) -> AnswerModel:
        nets = [fit_through(SMALL.replace(covariate_path=path), 1, panel, threads=1)[0] for path in paths]
        return AnswerModel([SavedMember(net, f"t{n}", 1) for n, net in enumerate(nets)], record)

    blind = model("none", "none")
    assert blind.futr_exog == []
    assert len(blind.forecast(data[["unique_id", "ds", "y"]], h=4, levels=[])) == 8
    told = model("none", "linear")
    assert told.futr_exog == ["promo"]
    with pytest.raises(SeriesError, match="reads the known-ahead covariates promo: give their values"):
        told.forecast(data, h=4, levels=[])
    assert told.forecast(data, h=4, levels=[], futr_data=future[["unique_id", "ds", "promo"]]).answer.notna().all()


def test_a_new_series_is_scaled_by_each_members_own_covariate_rule_whichever_member_comes_first():
    """Members that scale a price per series and shared: the per-series member scales each of two new stores' price
    on that store's own history, the shared one with the pair it trained with, in either order."""
    from tests.test_step_inputs import sales

    data, _ = sales(stores=3)
    data.loc[data.unique_id == "s2", "price"] += 40  # a dear store: its own mean is far from the others'
    everything = load_panel(data, futr_exog=["promo", "price"])
    trained = load_panel(data[data.unique_id == "s0"], futr_exog=["promo", "price"])
    config = SMALL.replace(calendar=True)
    nets = {
        rule: fit_through(config.replace(covariate_scaling=rule), 1, trained, threads=1)[0]
        for rule in ("shared", "series")
    }
    own_price = data.loc[data.unique_id == "s2", "price"]
    for order in (("shared", "series"), ("series", "shared")):
        model = AnswerModel([SavedMember(nets[rule], rule, 1) for rule in order], ModelData(None, 1, 1, ()), None)
        fitted: dict = {}
        centers = {rule: model._transform_for(nets[rule], everything, fitted)[1].inputs.center[2, 1] for rule in order}
        assert centers["series"] == pytest.approx(own_price.mean()), order
        assert centers["shared"] == pytest.approx(nets["shared"].transform.inputs.center[0, 1]), order


def test_new_series_are_forecast_alike_whichever_covariate_path_its_first_member_reads():
    """A sweep's members may read the covariates or not (covariate_path): a store none of them trained on gets a
    finite forecast, the same whichever member reads it first (each fits that store's inputs by its own path)."""
    from tests.test_step_inputs import sales

    data, future = sales(stores=3, futr_days=4)
    trained = load_panel(data[data.unique_id == "s0"], futr_exog=["promo", "price"], hist_exog=["temp"])
    config = SMALL.replace(shape="direct", output_chunk_length=4)
    nets = {path: fit_through(config.replace(covariate_path=path), 1, trained, threads=1)[0] for path in PATHS}
    covariates = ModelCovariates(futr_exog=("promo", "price"), hist_exog=("temp",))
    record = ModelData("D", 7, 4, ("s0",), sweep="t", covariates=covariates)
    answers = []
    for order in (PATHS, PATHS[::-1]):
        model = AnswerModel([SavedMember(nets[path], path, 1) for path in order], record)
        answers.append(model.forecast(data, h=4, levels=[], futr_data=future).answer.to_numpy())
    assert np.isfinite(answers[0]).all()
    np.testing.assert_allclose(answers[0], answers[1], rtol=1e-6)


PATHS = ("none", "net", "linear")


def test_on_integer_time_the_forecast_continues_each_series_integers_in_its_season():
    frame = monthly_panel_frame(lengths=(40, 46))
    frame["ds"] = frame.groupby("unique_id").cumcount() + np.where(frame.unique_id == "s0", 1, 101)
    model = answer_model(frame, season_length=12, config=SMALL.replace(calendar=True))
    future = model.forecast(frame)
    assert future.ds.tolist() == [41, 42, 43, 44, 147, 148, 149, 150]
    # A series read again from a later start keeps the season count its model learnt (its first point as trained).
    later = frame[frame.ds > 12]
    assert np.allclose(model.forecast(later).answer, future.answer)
    with pytest.raises(SeriesError, match="holds integers; the model was trained on dates of frequency 'MS'"):
        answer_model(monthly_panel_frame(lengths=(30,)), config=SMALL).forecast(load_panel(frame, season_length=12))


SAVED_ON_A_CARD = """
import sys, torch
from tests.test_answer_model import answer_model
from tests.test_panel import monthly_panel_frame

model = answer_model(monthly_panel_frame())
# torch.save tags every storage with its device; a model trained on a card saves them tagged cuda:0, as this does.
torch.serialization.register_package(0, lambda storage: "cuda:0", lambda storage, location: None)
model.save(sys.argv[1])
print(model.forecast(monthly_panel_frame()).answer.tolist())
"""

FORECAST_WITHOUT_RAY = """
import json, sys
from forecaster.answer.model import AnswerModel
future = AnswerModel.load(sys.argv[1]).forecast(sys.argv[2])
imported = {name: name in sys.modules for name in ("ray", "lightning")}
print(json.dumps({"answer": future.answer.tolist(), **imported}))
"""


def test_a_model_saved_on_a_gpu_loads_and_forecasts_without_one_and_without_ray_or_lightning(tmp_path):
    import torch

    folder = tmp_path / "model"
    saved = subprocess.run(
        [sys.executable, "-c", SAVED_ON_A_CARD, str(folder)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    if not torch.cuda.is_available():  # what a plain torch.load makes of such a file here
        with pytest.raises(RuntimeError, match=r"on a CUDA device but torch\.cuda\.is_available"):
            torch.load(folder / "tensors.pt", weights_only=True)
    data = write_csv(tmp_path, monthly_panel_frame())
    done = subprocess.run(
        [sys.executable, "-c", FORECAST_WITHOUT_RAY, str(folder), data], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout)
    assert printed == {"answer": json.loads(saved.stdout), "ray": False, "lightning": False}
    assert json.loads((folder / "model.json").read_text())["members"][0]["config"]["hidden_dim"] == 8


def _with(frame: pd.DataFrame, series: str, position: int, **values) -> pd.DataFrame:
    frame = frame.copy()
    where = frame.index[frame.unique_id == series][position]
    for column, value in values.items():
        frame.loc[where, column] = value
    return frame


@pytest.mark.parametrize(
    "make, options, message",
    [
        (
            lambda f: f.rename(columns={"y": "sales"}).assign(extra=1.0),
            [],
            "has 4 columns (unique_id, ds, sales, extra): name the date and value columns",
        ),
        (
            lambda f: monthly_panel_frame().assign(ds=lambda g: g.groupby("unique_id").cumcount()),
            [],
            "its time column holds integers; the model was trained on dates of frequency 'MS'",
        ),
        (
            lambda f: f.assign(
                ds=f.groupby("unique_id").cumcount().map(lambda k: pd.Timestamp("2020-01-06"))
                + pd.to_timedelta(7 * f.groupby("unique_id").cumcount(), unit="D")
            ),
            [],
            "its dates have frequency 'W-MON'; the model was trained on 'MS' data",
        ),
        (
            lambda f: _with(f, "s1", -2, y=0.0),
            [],
            "series 's1', line 92: value 0 at 2004-05-01, and a member of the model (log_if_positive) takes the log",
        ),
        (
            lambda f: pd.concat(
                [f, pd.DataFrame({"unique_id": "tiny", "ds": pd.date_range("2003-01", periods=3, freq="MS"), "y": 5.0})]
            ),
            [],
            "series 'tiny' has 3 point(s); the model reads at least the last 6 of a series",
        ),
        (
            lambda f: f,
            ["--horizon", "6", "--levels", "80"],
            "the intervals were calibrated on 4 steps ahead and 6 are asked for",
        ),
    ],
    ids=["columns", "integer-time", "frequency", "log-of-zero", "too-short", "horizon"],
)
def test_data_the_model_cannot_forecast_exits_2_naming_what_and_where_and_writes_nothing(
    monthly, saved, tmp_path, capsys, make, options, message
):
    frame = make(monthly[0])
    data = write_csv(tmp_path, frame)
    output = tmp_path / "forecast.csv"
    assert forecast_cli([str(saved), "--data", data, "--output", str(output), *options]) == 2
    error = capsys.readouterr().err
    assert message in error, error
    assert not output.exists()


def test_a_model_of_one_series_reads_a_newer_file_of_it_as_its_own_and_a_logged_new_series_needs_values_above_0():
    """A file of one series is named after the file: a month later it comes under another name, and is still the
    series the model trained on (its scaler, its place in the season). A series a log member never saw has its scaler
    fit on all of its points, so each must be above 0."""
    frame = monthly_panel_frame(lengths=(40,)).assign(unique_id="sales-2025")
    model = answer_model(frame, config=SMALL.replace(target_transform="log"))
    renamed = frame.assign(unique_id="sales-2026")
    assert model.new_series(load_panel(renamed)) == []
    assert np.allclose(model.forecast(renamed).answer, model.forecast(frame).answer)
    stranger = monthly_panel_frame(lengths=(30,), seed=5).assign(unique_id="new")
    stranger.loc[3, "y"] = 0.0
    with pytest.raises(
        SeriesError, match=r"series 'new', row 44: value 0 at 2001-04-01, and a member of the model \(log\)"
    ):
        model.forecast(pd.concat([frame, stranger], ignore_index=True))
