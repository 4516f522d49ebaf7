"""A panel sweep with a covariate of each kind, as a user runs it on daily sales: a promotion known ahead, the
temperature measured, each store's size and region; the answer forecasts the promotions it is told of, and its saved
model forecasts again with the future's promotions, through `python -m sweeps.forecast`, without Ray."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.test_sweep_cli import imported, sweeps_run

HORIZON = 14
STORES = 8
DAYS = 160


def sales_files(tmp_path) -> dict[str, str]:
    """Daily sales of 8 stores that jump 2.5 times on promotion days (12 % of days, drawn at random: no calendar
    foretells them), with a weekly season, 2 % noise, a temperature column, a column no flag names, the stores'
    statics, and the promotions of the 14 days after the data."""
    generator = np.random.default_rng(0)
    data, future, statics = [], [], []
    for store in range(STORES):
        days = DAYS + HORIZON
        promo = (generator.random(days) < 0.12).astype(int)
        week = 1 + 0.2 * np.sin(2 * np.pi * np.arange(days) / 7 + store)
        sales = generator.uniform(50, 150) * week * (1 + 1.5 * promo) * (1 + 0.02 * generator.standard_normal(days))
        temperature = 15 + 10 * np.sin(2 * np.pi * np.arange(days) / 365) + generator.standard_normal(days)
        frame = pd.DataFrame(
            {
                "unique_id": f"store{store}",
                "ds": pd.date_range("2025-01-01", periods=days, freq="D").strftime("%Y-%m-%d"),
                "y": sales.round(2),
                "promo": promo,
                "temp": temperature.round(1),
                "note": "checked",
            }
        )
        data.append(frame.iloc[:DAYS])
        future.append(frame.iloc[DAYS:][["unique_id", "ds", "promo"]])
        statics.append({"unique_id": f"store{store}", "size": 1 + store % 3, "region": ("north", "south")[store % 2]})
    paths = {"data": tmp_path / "sales.csv", "future": tmp_path / "promotions.csv", "stores": tmp_path / "stores.csv"}
    pd.concat(data).to_csv(paths["data"], index=False)
    pd.concat(future).to_csv(paths["future"], index=False)
    pd.DataFrame(statics).to_csv(paths["stores"], index=False)
    return {name: str(path) for name, path in paths.items()}


@pytest.mark.slow
def test_a_sweep_told_of_the_promotions_ahead_forecasts_them_and_its_saved_model_reads_the_future_ones(tmp_path):
    """The same sweep (same seed, the same two trials: a recurrent one, which reads the promotions and the statics,
    and a direct one, which reads the temperature too, both through their recurrent layers) with `--futr-exog promo
    --hist-exog temp --static-data` and without: told the promotions, the answer's test sMAPE is at most half; the
    banner names every column and what it is; the future and the saved model carry the promotions of --futr-data, and
    sweeps.forecast refuses to forecast without them (exit 2)."""
    files = sales_files(tmp_path)
    common = [
        *(
            "panel",
            "--data",
            files["data"],
            "--horizon",
            str(HORIZON),
            "--smoke-test",
            "--seed",
            "0",
            "--num-samples",
            "2",
        ),
        *("--max-epochs", "10", "--scheduler", "fifo", "--set", "batch_size=64", "--set", "ema_decay=0"),
        *("--set", "lr=0.004", "--set", "covariate_path=net"),
        *("--storage-path", str(tmp_path)),
    ]
    told = sweeps_run(
        *common,
        *("--futr-exog", "promo", "--hist-exog", "temp", "--static-data", files["stores"]),
        *("--futr-data", files["future"], "--name", "told"),
        timeout=900,
    )
    assert told.returncode == 0, told.stderr[-3000:]
    assert "  covariates known ahead: promo; historic: temp; static: size, region (3 columns)" in told.stdout
    assert "  not used   note (name them with --futr-exog, --hist-exog" in told.stdout
    untold = sweeps_run(*common, "--no-future", "--name", "untold", timeout=900)
    assert untold.returncode == 0, untold.stderr[-3000:]
    assert "  not used   promo, temp, note (name them with" in untold.stdout

    scores = {
        name: json.loads((tmp_path / name / "best_config.json").read_text())["answer"]["test_smape"]
        for name in ("told", "untold")
    }
    assert scores["told"] <= 0.5 * scores["untold"], scores

    folder = tmp_path / "told"
    future = pd.read_parquet(folder / "future.parquet")
    promotions = pd.read_csv(files["future"], parse_dates=["ds"])
    assert (
        future[["unique_id", "ds"]]
        .astype({"ds": "datetime64[ns]"})
        .equals(promotions[["unique_id", "ds"]].astype({"ds": "datetime64[ns]"}))
    )
    # The answer's future follows the promotions it was told of: the days of a promotion forecast well above the
    # same store's other days.
    joined = future.merge(promotions, on=["unique_id", "ds"])
    lift = joined.groupby(["unique_id", "promo"])["answer"].mean().unstack().dropna()  # stores with both kinds
    assert (lift[1] > 1.5 * lift[0]).all() and len(lift) >= STORES // 2
    saved = json.loads((folder / "model" / "model.json").read_text())
    assert saved["data"]["covariates"] == {"futr_exog": ["promo"], "hist_exog": ["temp"], "static": ["size", "region"]}
    assert all(member["step_inputs"]["futr_names"] == ["promo"] for member in saved["members"])
    assert f"python -m sweeps.forecast {folder} --data NEWER.csv --futr-data FUTURE.csv" in told.stdout

    again = tmp_path / "again.csv"
    command = [str(folder), "--data", files["data"], "--static-data", files["stores"], "--output", str(again)]
    done = sweeps_run(*command, "--futr-data", files["future"], module="sweeps.forecast")
    assert done.returncode == 0, done.stderr[-3000:]
    assert not imported(done) & {"lightning", "ray"}
    forecast = pd.read_csv(again)
    assert np.allclose(forecast["answer"], future["answer"], rtol=1e-9)
    refused = sweeps_run(*command, module="sweeps.forecast")
    assert refused.returncode == 2 and "--futr-data FILE" in refused.stderr
