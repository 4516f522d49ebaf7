"""The yardsticks: seasonal naive checked by hand, the statistical models on series whose forecast is known, and the
published figures on Air Passengers."""

import numpy as np
import pandas as pd
import pytest

from forecaster.baselines import BASELINES, BaselineUnavailable, forecast, seasonal_naive
from forecaster.data import load_series, split_series
from forecaster.metrics import mape


def monthly(values, start="2020-01-01"):
    return pd.Series(np.asarray(values, dtype=float), index=pd.date_range(start, periods=len(values), freq="MS"))


def test_seasonal_naive_repeats_the_last_season_by_hand():
    history = monthly(range(1, 25))  # two years: the last one is 13..24
    assert seasonal_naive(history, 3).tolist() == [13.0, 14.0, 15.0]
    assert seasonal_naive(history, 14).tolist() == [*range(13, 25), 13, 14]


def test_seasonal_naive_is_naive_without_a_season():
    yearly = pd.Series([5.0, 7.0, 9.0], index=pd.date_range("2000-01-01", periods=3, freq="YS"))
    assert seasonal_naive(yearly, 2).tolist() == [9.0, 9.0]
    assert seasonal_naive(monthly([1.0, 2.0, 3.0]), 2).tolist() == [3.0, 3.0]  # shorter than a season


@pytest.mark.parametrize("method", ["AutoETS", "AutoCES"])
def test_statistical_models_continue_a_pure_seasonal_pattern(method):
    pytest.importorskip("statsforecast")
    pattern = 100 + 20 * np.sin(2 * np.pi * np.arange(12) / 12)
    noise = np.random.default_rng(0).normal(0, 0.5, 72)  # AutoCES cannot fit a series without any
    history = monthly(np.tile(pattern, 6) + noise)
    assert mape(pattern, forecast(method, history, 12)) < 1.5


def test_a_series_a_statistical_model_cannot_fit_says_so():
    pytest.importorskip("statsforecast")
    with pytest.raises(BaselineUnavailable, match="AutoCES could not fit this series"):
        forecast("AutoCES", monthly(np.tile(100 + 20 * np.sin(2 * np.pi * np.arange(12) / 12), 6)), 12)


def test_the_published_figures_on_air_passengers():
    """The reference figures (../shared/README.md): seasonal naive 15.75 %, AutoCES 4.03 %, AutoETS 13.87 %."""
    train, val = split_series(load_series("air_passengers"))
    assert mape(val.to_numpy(), forecast("seasonal naive", train, len(val))) == pytest.approx(15.75, abs=0.005)
    pytest.importorskip("statsforecast")
    assert mape(val.to_numpy(), forecast("AutoCES", train, len(val))) == pytest.approx(4.03, abs=0.005)
    assert mape(val.to_numpy(), forecast("AutoETS", train, len(val))) == pytest.approx(13.87, abs=0.005)


def test_an_unknown_baseline_names_the_known_ones():
    with pytest.raises(ValueError, match=", ".join(BASELINES)):
        forecast("prophet", monthly(range(24)), 3)
