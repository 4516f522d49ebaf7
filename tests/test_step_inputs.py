"""What each step of the net reads beside the value: the calendar of the data's frequency (a week 53 in its own place),
the covariates scaled by the stated rule, known-ahead values read over the forecast, historic ones never past its
origin."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from forecaster.config import ForecasterConfig
from forecaster.data.read import load_panel
from forecaster.features.step_inputs import DAY_NS, WEEK_NS, YEAR_NS, StepInputs, calendar_periods, time_features
from forecaster.training.net import RNNNet
from forecaster.training.train import fit


@pytest.mark.parametrize(
    ("freq", "periods"),
    [
        ("h", (DAY_NS, WEEK_NS)),
        ("30min", (DAY_NS, WEEK_NS)),
        ("D", (WEEK_NS, YEAR_NS)),
        ("W-SUN", (YEAR_NS,)),
        ("MS", ()),
        ("QS", ()),
        ("B", ()),
        (None, ()),
    ],
)
def test_the_calendar_has_the_periods_of_its_frequency(freq, periods):
    """Hourly: the hour of the day and the day of the week; daily: the day of the week and of the year; weekly: the
    week of the year; months, quarters, business days and a plain index: the place in the season instead."""
    assert calendar_periods(freq) == periods


def test_a_week_53_has_its_own_place_in_the_year_between_week_52_and_week_1():
    """ISO week 53 of 2020 (the week of 2021-01-03) is neither week 1 of 2020 nor week 1 of 2021: its place in the
    year comes between week 52's and the next week 1's, as its date does."""
    weeks = pd.DatetimeIndex(["2019-12-29", "2020-12-27", "2021-01-03", "2021-01-10"])  # week 52, 52, 53, 1
    assert weeks.isocalendar().week.tolist() == [52, 52, 53, 1]
    sin, cos = time_features(weeks.to_numpy().astype(np.int64), (YEAR_NS,)).T
    angles = np.unwrap(np.arctan2(sin, cos))
    assert np.all(np.diff(angles[1:]) > 0)  # week 52, then 53, then 1, in order around the year
    assert not np.allclose([sin[2], cos[2]], [sin[3], cos[3]], atol=0.05)  # week 53 is not folded onto week 1
    assert np.allclose([sin[0], cos[0]], [sin[1], cos[1]], atol=0.05)  # the same week a year apart: its place


def sales(days=60, stores=3, seed=0, futr_days=0):
    """Daily sales of a few stores that jump on promotion days, with a price and a temperature."""
    generator = np.random.default_rng(seed)
    frames = []
    for store in range(stores):
        total = days + futr_days
        promo = (generator.random(total) < 0.2).astype(float)
        price = 10 + store + generator.standard_normal(total)
        temperature = 20 + 5 * np.sin(np.arange(total) / 9) + generator.standard_normal(total)
        y = (100 + 20 * store) * (1 + promo) * (1 + 0.02 * generator.standard_normal(total))
        frames.append(
            pd.DataFrame(
                {
                    "unique_id": f"s{store}",
                    "ds": pd.date_range("2025-03-01", periods=total, freq="D"),
                    "y": y,
                    "promo": promo,
                    "price": price,
                    "temp": temperature,
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    data = frame.groupby("unique_id").head(days).reset_index(drop=True)
    future = frame.groupby("unique_id").tail(futr_days)[["unique_id", "ds", "promo", "price"]] if futr_days else None
    return data, future


def test_flags_keep_their_values_and_other_covariates_are_standardised_per_series_on_the_training_part():
    data, _ = sales()
    panel = load_panel(data, futr_exog=["promo", "price"], hist_exog=["temp"])
    train, _ = panel.split_last(10)
    inputs = StepInputs.fit(True, train, reads_hist=True)
    assert inputs.futr_names == ("promo", "price") and inputs.hist_names == ("temp",)
    assert np.array_equal(inputs.center[:, 0], np.zeros(3)) and np.array_equal(inputs.scale[:, 0], np.ones(3))
    for series in range(3):
        part = data[data.unique_id == f"s{series}"].head(50)  # its training part alone
        assert inputs.center[series, 1] == pytest.approx(part.price.mean())
        assert inputs.scale[series, 1] == pytest.approx(part.price.std(ddof=0))
        assert inputs.center[series, 2] == pytest.approx(part.temp.mean())
    assert StepInputs.fit(True, train, reads_hist=False).hist_names == ()  # a shape that reads none: not scaled
    # What a checkpoint stores gives the same inputs back.
    again = StepInputs.from_plain(True, train.season, inputs.state())
    assert np.array_equal(again.center, inputs.center) and again.periods == inputs.periods == (WEEK_NS, YEAR_NS)


def test_shared_scaling_standardises_a_covariate_over_every_series_and_a_new_series_takes_that_too():
    """covariate_scaling="shared": one mean and deviation over every series' training part (a temperature's degrees
    mean the same everywhere); a flag as it is; a historic 0/1 column, NaN after the data's end, still a flag. A
    series the model never trained on is scaled as the ones it did, not on its own points."""
    data, _ = sales()
    data["holiday"] = (data.ds.dt.dayofweek == 6).astype(float)
    panel = load_panel(data, futr_exog=["promo", "price"], hist_exog=["temp", "holiday"])
    train, _ = panel.split_last(10)
    inputs = StepInputs.fit(True, train, reads_hist=True, shared=True)
    parts = data.groupby("unique_id").head(50)
    for column, name in ((1, "price"), (2, "temp")):
        assert inputs.center[:, column] == pytest.approx(np.full(3, parts[name].mean()))
        assert inputs.scale[:, column] == pytest.approx(np.full(3, parts[name].std(ddof=0)))
    assert np.array_equal(inputs.center[:, [0, 3]], np.zeros((3, 2))) and np.array_equal(
        inputs.scale[:, [0, 3]], np.ones((3, 2))
    )
    fresh = StepInputs.fit(True, train.take(np.array([False, False, True])), reads_hist=True)  # its own, per series
    merged = inputs.merged(np.array([0, -1]), fresh, np.array([False, True]))
    assert np.array_equal(merged.center[1], inputs.center[0]) and not np.array_equal(fresh.center[0], inputs.center[0])
    again = StepInputs.from_plain(True, train.season, inputs.state())
    assert again.shared and np.array_equal(again.scale, inputs.scale)
    assert not StepInputs.fit(True, train, reads_hist=True).shared


HYBRID = {"loss": "mse", "target_transform": "none", "window_norm": "none", "deseasonalise": False, "calendar": False}


@pytest.mark.parametrize(
    "shape, path",
    [
        ("recurrent", "net"),
        ("direct", "net"),
        ("hybrid", "net"),
        ("recurrent", "linear"),
        ("direct", "linear"),
    ],
)
def test_a_forecast_reads_the_promotions_ahead_and_no_historic_value_after_its_origin(shape, path):
    """The direct shape and the hybrid read the temperature up to the forecast's origin and the promotions over the
    points they forecast; the recurrent shape the promotions at every step it feeds back. Changing the temperature
    after the origin changes nothing; changing a promotion ahead changes the forecast from that point (the recurrent
    shape) or of the block (the direct shape, the hybrid). With covariate_path linear the recurrent layers read
    neither: the linear term reads the promotions ahead, and each value's own."""
    data, _ = sales()
    panel = load_panel(data, futr_exog=["promo"], hist_exog=["temp"])
    settings = HYBRID if shape == "hybrid" else {"calendar": True}
    config = ForecasterConfig(
        shape=shape,
        model="GRU",
        hidden_dim=8,
        input_chunk_length=7,
        training_length=10,
        n_epochs=2,
        covariate_path=path,
        **settings,
    )
    model = fit(config, panel, val_size=7).model
    calendar = 0 if shape == "hybrid" else 4  # the hybrid has its own seasons: no calendar
    padded = shape != "recurrent"  # the mask; and the temperature, which the recurrent shape does not read
    read = 1 + (1 if padded else 0) if path == "net" else 0  # the promotion and the temperature
    assert model.rnn.input_size == 1 + calendar + read + (1 if padded else 0)
    history, _ = panel.split_last(7)  # its covariate table still holds the 7 points after
    forecast = model.forecast_columns(history, 7)
    covariates = history.covariates
    after = covariates.starts + history.lengths  # the table's row of each series' first point after the history

    def with_table(change) -> np.ndarray:
        table = covariates.table.copy()
        change(table)
        return model.forecast_columns(
            dataclasses.replace(history, covariates=dataclasses.replace(covariates, table=table)), 7
        )

    def later_temperature(table):
        for row in after:
            table[row : row + 7, 1] += 50.0

    assert np.array_equal(with_table(later_temperature), forecast)

    def promotion_on_day_4(table):
        table[after + 3, 0] = 1 - table[after + 3, 0]

    changed = with_table(promotion_on_day_4)
    assert not np.allclose(changed[3], forecast[3])
    if shape == "recurrent":  # the days before it read nothing of it
        assert np.array_equal(changed[:3], forecast[:3])
    rebuilt = RNNNet(**model.hyperparameters)
    rebuilt.load_state_dict(model.state_dict(), strict=False)
    with torch.no_grad():
        assert np.allclose(rebuilt.forecast_columns(history, 7), forecast)


@pytest.mark.parametrize("shape", ["recurrent", "direct"])
def test_a_linear_term_learns_the_promotions_and_a_net_told_to_read_none_needs_none(shape, tmp_path):
    """covariate_path linear: the promotions' effect learnt as a linear term brings the validation error far below
    that of the same fit reading no covariate, which then forecasts without them; each forecasts the same from its
    checkpoint."""
    from tests.test_transforms import saved_and_loaded

    data, _ = sales(days=150, stores=4)
    panel = load_panel(data, futr_exog=["promo"])
    config = ForecasterConfig(
        shape=shape,
        model="GRU",
        hidden_dim=16,
        input_chunk_length=14,
        training_length=21,
        output_chunk_length=7 if shape == "direct" else 0,
        n_epochs=12,
        lr=5e-3,
        batch_size=64,
        windows_per_epoch=1024,
        target_transform="log",
        window_norm="subtract",
        calendar=True,
    )
    linear = fit(config.replace(covariate_path="linear"), panel, val_size=14)
    blind = fit(config.replace(covariate_path="none"), panel, val_size=14)
    assert linear.history[-1]["val_smape"] < 0.5 * blind.history[-1]["val_smape"]
    assert blind.model.transform.step_inputs(True).names == []
    history, _ = panel.split_last(14)
    plain = load_panel(data.groupby("unique_id").head(136)[["unique_id", "ds", "y"]])  # no covariate at all
    np.testing.assert_allclose(blind.model.forecast_columns(plain, 14), blind.model.forecast_columns(history, 14))
    for result in (linear, blind):
        folder = tmp_path / result.model.config.covariate_path
        folder.mkdir()
        restored = saved_and_loaded(result.model, folder)
        np.testing.assert_allclose(restored.forecast_columns(history, 14), result.model.forecast_columns(history, 14))


def test_a_model_told_of_promotions_refuses_a_forecast_past_the_last_it_was_told_of():
    data, future = sales(futr_days=5)
    config = ForecasterConfig(model="GRU", hidden_dim=4, input_chunk_length=7, training_length=10, n_epochs=1)
    model = fit(config, load_panel(data, futr_exog=["promo"]), val_size=7).model
    told = load_panel(data, futr_exog=["promo"], futr_data=future[["unique_id", "ds", "promo"]])
    assert np.isfinite(model.forecast_columns(told, 5)).all()
    with pytest.raises(
        ValueError, match="series 's0', 's1', 's2' have fewer after the forecast's start: give them for the 6"
    ):
        model.forecast_columns(told, 6)
    with pytest.raises(ValueError, match="the data lacks promo: name them with --futr-exog"):
        model.forecast_columns(load_panel(data[["unique_id", "ds", "y"]]), 5)
