"""Search spaces and sweep plans: what a sweep will try, checked before Ray starts."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from forecaster.config import ForecasterConfig
from sweeps.plan.options import parse_pins
from sweeps.plan.registry import SWEEPS
from sweeps.plan.resources import ResourceError, TrialResources
from sweeps.plan.space import (
    ByValue,
    Choice,
    DataShape,
    Fitting,
    Horizons,
    IfSeasonal,
    IntRange,
    InTurn,
    LogUniform,
    LongestSeason,
    Offset,
    OnlyWhen,
    SpaceError,
    Uniform,
    check_structure,
    describe,
    extremes,
    resolve,
    to_optuna,
    to_tune,
)
from sweeps.plan.sweep_plan import PlanError, make_plan

SPACE = {
    "model": Choice("RNN", "GRU"),
    "n_rnn_layers": Choice(1, 2),
    "dropout": OnlyWhen("n_rnn_layers", above=1, then=Uniform(0.1, 0.3), otherwise=0.0),
    "lr": LogUniform(1e-3, 1e-2),
    "input_chunk_length": IntRange(10, 14),
    "training_length": Offset("input_chunk_length", IntRange(2, 6)),
    "hidden_dim": 8,
}


def sample_tune(space, seed, count):
    """Resolve the param space as Tune's random search does, with its generator seeded."""
    import numpy as np
    from ray.tune.search.variant_generator import generate_variants

    param_space, rng = to_tune(space, seed), np.random.RandomState(seed)
    return [next(generate_variants(param_space, random_state=rng))[1] for _ in range(count)]


def test_random_search_respects_the_dependencies_and_is_reproducible_with_a_seed():
    configs = sample_tune(SPACE, seed=3, count=40)
    for config in configs:
        assert config["training_length"] - config["input_chunk_length"] in range(2, 7)
        if config["n_rnn_layers"] == 1:
            assert config["dropout"] == 0.0
        else:
            assert 0.1 <= config["dropout"] <= 0.3
        assert 1e-3 <= config["lr"] <= 1e-2 and config["hidden_dim"] == 8
    assert {c["n_rnn_layers"] for c in configs} == {1, 2}
    assert sample_tune(SPACE, seed=3, count=40) == configs
    assert sample_tune(SPACE, seed=4, count=40) != configs


def test_optuna_define_by_run_suggests_only_what_is_searched():
    optuna = pytest.importorskip("optuna")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    define_by_run = to_optuna(SPACE)
    for _ in range(30):
        trial = study.ask()
        constants = define_by_run(trial)
        config = {**trial.params, **constants}
        assert set(config) == set(SPACE)  # Tune's trial config: the forecaster's names, no helpers
        assert constants["hidden_dim"] == 8
        assert config["training_length"] - config["input_chunk_length"] in range(2, 7)
        assert ("dropout" in trial.params) == (config["n_rnn_layers"] > 1)
        study.tell(trial, 1.0)


def test_extremes_cover_every_corner_and_dependency():
    corners = extremes(SPACE)
    assert {c["training_length"] - c["input_chunk_length"] for c in corners} == {2, 6}
    assert {c["dropout"] for c in corners if c["n_rnn_layers"] == 2} == {0.1, 0.3}
    assert {c["dropout"] for c in corners if c["n_rnn_layers"] == 1} == {0.0}
    assert len(corners) == 2 * (1 + 2) * 2 * 2 * 2  # model x (layers 1, layers 2 x dropout) x lr x icl x extra


BY_VALUE = {
    "target_transform": Choice("log", "log_diff"),
    "window_norm": ByValue("target_transform", {"log": Choice("subtract", "divide"), "log_diff": "none"}),
}
PAIRS = {("log", "subtract"), ("log", "divide"), ("log_diff", "none")}


def test_a_value_that_goes_with_another_is_sampled_from_that_ones_entry():
    configs = sample_tune(BY_VALUE, seed=1, count=40)
    assert {(c["target_transform"], c["window_norm"]) for c in configs} == PAIRS
    optuna = pytest.importorskip("optuna")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    define_by_run, seen = to_optuna(BY_VALUE), set()
    for _ in range(40):
        trial = study.ask()
        constants = define_by_run(trial)
        config = {**trial.params, **constants}
        seen.add((config["target_transform"], config["window_norm"]))
        study.tell(trial, 1.0)
    assert seen == PAIRS
    assert {(c["target_transform"], c["window_norm"]) for c in extremes(BY_VALUE)} == PAIRS


def test_a_value_that_goes_with_another_must_cover_every_choice_of_it():
    with pytest.raises(SpaceError, match="window_norm gives nothing for target_transform = 'none'"):
        check_structure({**BY_VALUE, "target_transform": Choice("log", "log_diff", "none")})


def test_a_value_taken_in_turn_gives_each_value_an_equal_share_of_the_trials():
    """Random search takes an InTurn choice in order (10 trials of two shapes: 5 each, where a random draw of 10
    can leave one 2), what goes with it as it does for a Choice; Optuna and the checks see a plain choice."""
    space = {
        "shape": InTurn("recurrent", "direct"),
        "input_chunk_length": ByValue(
            "shape", {"recurrent": Horizons(1), "direct": Choice(Horizons(1), Horizons(1.5))}
        ),
        "lr": LogUniform(1e-3, 1e-2),
    }
    resolved = resolve(space, DataShape(horizon=8, season=4, shortest=40))
    assert (
        type(resolved["shape"]) is InTurn and describe(resolved)["shape"] == "each of ['recurrent', 'direct'] in turn"
    )
    configs = sample_tune(resolved, seed=0, count=10)
    assert [c["shape"] for c in configs] == ["recurrent", "direct"] * 5
    assert {c["input_chunk_length"] for c in configs if c["shape"] == "recurrent"} == {8}
    assert {c["input_chunk_length"] for c in configs if c["shape"] == "direct"} == {8, 12}
    assert sample_tune(resolved, seed=0, count=10) == configs
    assert {(c["shape"], c["input_chunk_length"]) for c in extremes(resolved)} == {
        ("recurrent", 8),
        ("direct", 8),
        ("direct", 12),
    }
    optuna = pytest.importorskip("optuna")
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0)).ask()
    to_optuna(resolved)(trial)
    assert trial.params["shape"] in ("recurrent", "direct")  # TPE learns which, from a plain categorical
    with pytest.raises(SpaceError, match="InTurn takes turns over the whole sweep; give a Choice inside ByValue"):
        check_structure({"shape": Choice("a", "b"), "lr": ByValue("shape", {"a": InTurn(1e-3, 2e-3), "b": 1e-3})})
    with pytest.raises(SpaceError, match="InTurn takes turns over the whole sweep; give a Choice inside OnlyWhen"):
        check_structure({"layers": Choice(1, 2), "dropout": OnlyWhen("layers", 1, InTurn(0.1, 0.2), 0.0)})


DATA_SHAPES = [
    DataShape(horizon=18, season=12, shortest=30),  # M3 monthly
    DataShape(horizon=8, season=4, shortest=8),  # M3 quarterly: its shortest series trains on 8 points
    DataShape(horizon=24, season=12, shortest=67),  # Tourism monthly
    DataShape(horizon=6, season=1, shortest=9),  # yearly data
    DataShape(horizon=1, season=7, shortest=3),
    DataShape(horizon=8, season=4, shortest=2),  # the least a sweep keeps: two points, the direct shape's one window
    DataShape(horizon=48, season=24, shortest=2000, seasons=(24, 168)),  # hourly, the week a lookback
    DataShape(horizon=14, season=7, shortest=300, known_ahead=True, numeric_covariates=True),  # a price known ahead
]


@pytest.mark.parametrize("data", DATA_SHAPES, ids=lambda d: f"h{d.horizon}-s{d.season}-n{d.shortest}")
def test_every_corner_of_the_registered_sweeps_is_a_valid_config(data):
    """Spaces stated relative to the data are resolved for it first, on panels of different horizons, seasons and
    lengths."""
    for sweep in SWEEPS.values():
        for corner in extremes(resolve(sweep.space, data)):
            config = ForecasterConfig.from_dict({**corner, "n_epochs": sweep.max_epochs})
            if config.shape == "recurrent" and sweep.name == "panel":  # its window fits the shortest series
                assert config.training_length + 1 <= max(data.shortest, 3)


def test_the_panel_sweep_chooses_how_a_numeric_covariate_is_scaled_only_where_the_data_has_one():
    """Per series or shared is the data's choice where a covariate is a number (a price, a temperature); a flag, or
    no covariate, leaves nothing to choose."""
    space = SWEEPS["panel"].space
    numeric = DataShape(horizon=14, season=7, shortest=300, known_ahead=True, numeric_covariates=True)
    assert resolve(space, numeric)["covariate_scaling"] == Choice("series", "shared")
    for flags_only in (DataShape(horizon=14, season=7, shortest=300, known_ahead=True), DATA_SHAPES[0]):
        assert resolve(space, flags_only)["covariate_scaling"] == "series"
    configs = sample_tune(resolve(space, numeric), seed=0, count=12)
    assert {config["covariate_scaling"] for config in configs} == {"series", "shared"}


def test_the_panel_sweep_resolves_on_each_panel_and_says_what_it_needs(tmp_path):
    from sweeps.driver import transform_lines
    from sweeps.run import build_parser
    from tests.test_panel import monthly_panel_frame

    monthly = tmp_path / "monthly.csv"
    monthly_panel_frame(lengths=(40, 52, 46)).to_csv(monthly, index=False)
    plan = make_plan("panel", data=str(monthly), horizon=6, storage_path=str(tmp_path))
    space = plan.sweep.space  # the shortest series trains on 40 - 12 = 28 points
    assert space["input_chunk_length"] == ByValue("shape", {"recurrent": 6, "direct": Choice(6, 9), "hybrid": 9})
    seasonal = ByValue("shape", {"recurrent": True, "direct": True, "hybrid": False})  # the hybrid's season is its own
    assert (space["training_length"], space["calendar"], space["deseasonalise"]) == (10, seasonal, seasonal)
    # The direct shape's windows from the last 4 horizons, the hybrid's from the last 5.
    assert space["windows_from_last"] == ByValue("shape", {"recurrent": 0, "direct": 24, "hybrid": 30})
    pinned = make_plan("panel", data=str(monthly), horizon=6, pins={"shape": "direct"}, storage_path=str(tmp_path))
    assert (pinned.sweep.space["calendar"], pinned.sweep.space["windows_from_last"]) == (True, 24)  # its own only
    assert len(plan.panel) == 3 and plan.panel.dropped == ()
    assert transform_lines(plan)[0] == "  transform  the log of every series (all 3 are above 0)"
    assert plan.sweep.refit_answer and not make_plan("air_rnn", storage_path=str(tmp_path)).sweep.refit_answer
    given = build_parser().parse_args(["panel", "--no-refit-answer"])
    kept = make_plan("panel", data=str(monthly), horizon=6, storage_path=str(tmp_path), refit_answer=given.refit_answer)
    assert kept.sweep.refit_answer is False and build_parser().parse_args(["panel"]).refit_answer is None
    frame = monthly_panel_frame(lengths=(40, 52, 46))
    frame.loc[frame.index[frame["unique_id"] == frame["unique_id"].iloc[-1]][3], "y"] = 0.0  # in its training part
    frame.to_csv(monthly, index=False)
    zero = make_plan("panel", data=str(monthly), horizon=6, storage_path=str(tmp_path))
    last = repr(str(frame["unique_id"].iloc[-1]))
    assert transform_lines(zero)[0] == (
        f"  transform  the log of 2 of 3 series; 1 with a value at or below 0 as they are: {last}"
    )
    frame = monthly_panel_frame(lengths=(40, 80, 86))  # s0 trains on under 3 seasons
    frame.loc[frame["unique_id"] == "s1", "y"] -= 130.0  # from 80-190 to across 0
    frame.to_csv(monthly, index=False)
    crossing = make_plan("panel", data=str(monthly), horizon=6, storage_path=str(tmp_path))
    assert transform_lines(crossing) == [
        "  transform  the log of 2 of 3 series; 1 with a value at or below 0 as they are: 's1'",
        "  seasons    1 of 3 series divided by their seasonal indices, 1 less their seasonal shifts (a value below 0, "
        "or a place always 0) ('s1'), 1 as they are (no season by Theta's test, or under 3 seasons to train)",
        "  hybrid     the log of every series, 1 with a value at or below 0 after a shift of 1 % of its mean absolute "
        "value above its lowest: 's1'",
    ]
    from tests.test_transforms import hourly_frame  # a day's and a week's seasons

    frame, _ = hourly_frame({"weekly": ("2024-01-03 05:00", 40), "daily": ("2024-01-01", 40)})
    daily = frame["unique_id"] == "daily"
    day = frame.loc[daily, "y"].to_numpy().reshape(40, 24).mean(0)  # the same every day, but for noise
    frame.loc[daily, "y"] = np.tile(day, 40) * (1 + 0.05 * np.random.default_rng(0).standard_normal(40 * 24))
    hourly = tmp_path / "hourly.csv"
    frame.to_csv(hourly, index=False)
    weeks = make_plan("panel", data=str(hourly), horizon=24, storage_path=str(tmp_path))
    assert transform_lines(weeks)[1:3] == [
        "  seasons    2 of 2 series divided by their seasonal indices, 0 less their seasonal shifts (a value below 0, "
        "or a place always 0), 0 as they are (no season by Theta's test, or under 3 seasons to train)",
        "             1 of them with a season of 168 points too (X-11's test, 3 of its cycles)",
    ]
    from tests.test_transforms import daily_frame  # a week and, over two years, a year

    days = tmp_path / "daily.csv"
    daily_frame({"long": ("2021-03-17", 900), "short": ("2021-01-01", 540)}).to_csv(days, index=False)
    years = make_plan("panel", data=str(days), horizon=14, storage_path=str(tmp_path))
    assert transform_lines(years)[2] == (
        "             1 of 2 series with the year (a smooth profile: 2 years to train)"
    )
    yearly = tmp_path / "yearly.csv"
    frame = pd.DataFrame({"ds": pd.date_range("1990", periods=14, freq="YS"), "y": np.arange(14.0) + 5})
    frame.to_csv(yearly, index=False)
    plan = make_plan("panel", data=str(yearly), horizon=3, storage_path=str(tmp_path))
    space = plan.sweep.space  # 8 points to train on: windows of 1.6 horizons (6 points) read 3
    assert (space["training_length"], space["calendar"], space["deseasonalise"]) == (5, False, False)
    assert space["input_chunk_length"] == ByValue("shape", {"recurrent": 3, "direct": Choice(3, 4), "hybrid": 4})
    assert space["windows_from_last"] == ByValue("shape", {"recurrent": 0, "direct": 12, "hybrid": 15})
    with pytest.raises(PlanError, match="the panel sweep runs on your data: give --data FILE"):
        make_plan("panel", storage_path=str(tmp_path))
    with pytest.raises(PlanError, match=r"the series has 14 points, too few for this fit: it needs at least 16 points"):
        make_plan("panel", data=str(yearly), horizon=7, storage_path=str(tmp_path))


def test_pins_parse_numbers_and_refuse_unknown_keys(tmp_path):
    assert parse_pins(["model=GRU", "lr=0.005", "n_rnn_layers=2"]) == {"model": "GRU", "lr": 0.005, "n_rnn_layers": 2}
    with pytest.raises(PlanError, match="write KEY=VALUE"):
        parse_pins(["lr"])
    with pytest.raises(PlanError, match=r"unknown hyperparameter 'hiden_dim' \(did you mean 'hidden_dim'\?\)"):
        make_plan("air_rnn", pins=parse_pins(["hiden_dim=4"]), storage_path=str(tmp_path))
    with pytest.raises(PlanError, match="--max-epochs"):
        make_plan("air_rnn", pins={"n_epochs": 5}, storage_path=str(tmp_path))


def test_a_space_that_can_produce_an_impossible_config_is_refused(tmp_path):
    with pytest.raises(PlanError, match="training_length=16 must exceed input_chunk_length=18"):
        make_plan("air_rnn", pins={"training_length": 16}, storage_path=str(tmp_path))
    with pytest.raises(PlanError, match="hidden_dim=0 must be at least 1"):
        make_plan("air_rnn", pins={"hidden_dim": 0}, storage_path=str(tmp_path))
    # Windows longer than the training part: 48 training months cannot hold windows of up to 49 points.
    with pytest.raises(PlanError, match="the training part has 48 points, too few for training_length=48"):
        make_plan("air_rnn", split_after="1952-12-01", storage_path=str(tmp_path))


def test_a_sweep_takes_every_option_of_the_direct_shape(tmp_path):
    pins = parse_pins(
        [
            *("shape=direct", "input_chunk_length=60", "output_chunk_length=6", "hidden_fc_sizes=[32, 16]"),
            *("activation=Tanh", "loss=smape", "windows_from_last=48"),
        ]
    )
    with pytest.raises(PlanError, match="loss='smape' with target_transform='log_diff'"):  # the space searches it
        make_plan("air_rnn", pins=pins, storage_path=str(tmp_path))
    plan = make_plan("air_rnn", pins={**pins, "target_transform": "log"}, storage_path=str(tmp_path), name="d")
    corner = ForecasterConfig.from_dict({**extremes(plan.sweep.space)[0], "n_epochs": 1})
    assert (corner.shape, corner.hidden_fc_sizes, corner.loss, corner.windows_from_last) == (
        "direct",
        (32, 16),
        "smape",
        48,
    )


def test_lengths_in_horizons_and_seasonal_values_resolve_for_each_panel():
    space = {
        "shape": Choice("recurrent", "direct"),
        "input_chunk_length": ByValue(
            "shape", {"recurrent": Horizons(1), "direct": Choice(Horizons(1.5), Horizons(2))}
        ),
        "calendar": IfSeasonal(True, False),
        "windows_from_last": Horizons(3),
    }
    assert resolve(space, DataShape(horizon=18, season=12, shortest=30)) == {
        "shape": Choice("recurrent", "direct"),
        "input_chunk_length": ByValue("shape", {"recurrent": 18, "direct": Choice(27, 36)}),
        "calendar": True,
        "windows_from_last": 54,
    }
    yearly = resolve(space, DataShape(horizon=1, season=1, shortest=20))  # 1.5H and 2H of 1 point: 2, once
    assert yearly["input_chunk_length"] == ByValue("shape", {"recurrent": 1, "direct": Choice(2)})
    assert (yearly["calendar"], yearly["windows_from_last"]) == (False, 3)
    assert describe(space)["windows_from_last"] == "3H" and "one of [1.5H, 2H]" in describe(space)["input_chunk_length"]
    assert parse_pins(["input_chunk_length=2.5H"]) == {"input_chunk_length": Horizons(2.5)}
    window = Fitting(Horizons(1.6), less=1)  # at most the shortest training part less one: one window each
    assert [window.resolve(DataShape(h, 12, shortest)) for h, shortest in ((18, 30), (24, 67), (8, 8))] == [29, 38, 7]
    assert Fitting(Horizons(1), share=0.6).resolve(DataShape(8, 4, 8)) == 4


def test_the_panel_sweeps_direct_shape_looks_back_a_week_of_hourly_data_and_as_before_on_monthly_data():
    """The longest season where the series hold two of it and it is longer than the lookbacks in horizons; the
    competition panels (a year shorter than 1.5 horizons) keep the lookbacks they had, and the same draws."""
    space = SWEEPS["panel"].space
    lookbacks = lambda data: resolve(space, data)["input_chunk_length"].values["direct"]  # noqa: E731
    assert lookbacks(DataShape(horizon=48, season=24, shortest=2000, seasons=(24, 168))) == Choice(48, 72, 168)
    assert lookbacks(DataShape(horizon=48, season=24, shortest=300, seasons=(24,))) == Choice(48, 72)
    monthly = DataShape(horizon=6, season=12, shortest=30, seasons=(12,))  # its one season: the calendar's
    assert lookbacks(monthly) == Choice(6, 9) == lookbacks(dataclasses.replace(monthly, seasons=()))
    daily = DataShape(horizon=14, season=7, shortest=800, seasons=(7, 365))  # the year: 26 horizons, the calendar's
    assert lookbacks(daily) == Choice(14, 21)
    assert LongestSeason(Horizons(1.5), most=Horizons(30)).resolve(daily) == 365


def test_the_panel_sweeps_recurrent_shape_reads_the_value_a_week_back_on_hourly_data_only():
    """seasonal_lag: the week of hourly (half-hourly) data where the horizon is at most a week; no other shape, and no
    monthly or daily data (a year is not a whole number of weeks), or a horizon beyond the week, gets one."""
    space = SWEEPS["panel"].space
    lag = lambda data: resolve(space, data)["seasonal_lag"]  # noqa: E731
    assert lag(DataShape(horizon=48, season=24, shortest=2000, seasons=(24, 168))) == ByValue(
        "shape", {"recurrent": 168, "direct": 0, "hybrid": 0}
    )
    assert lag(DataShape(horizon=48, season=48, shortest=4000, seasons=(48, 336))).values["recurrent"] == 336
    for data in (
        DataShape(horizon=200, season=24, shortest=2000, seasons=(24, 168)),  # the horizon beyond the week
        DataShape(horizon=48, season=24, shortest=300, seasons=(24,)),  # under two weeks to train
        DataShape(horizon=120, season=24, shortest=500, seasons=(24, 168)),  # no room for a window after a week
        DataShape(horizon=18, season=12, shortest=30, seasons=(12,)),
        DataShape(horizon=14, season=7, shortest=800, seasons=(7, 365)),
    ):
        assert lag(data) == 0


def test_the_panel_sweep_searches_how_known_ahead_covariates_enter_and_leaves_other_data_as_it_was():
    """Where the data has known-ahead covariates: read by the net, as a linear term or not at all (the hybrid: the
    first or the last), ranked on validation; elsewhere the net reads whatever covariates there are, as before."""
    space = SWEEPS["panel"].space
    told = resolve(space, DataShape(horizon=14, season=7, shortest=130, known_ahead=True, seasons=(7,)))
    either = Choice("net", "linear", "none")
    assert told["covariate_path"] == ByValue(
        "shape", {"recurrent": either, "direct": either, "hybrid": Choice("net", "none")}
    )
    assert resolve(space, DataShape(horizon=14, season=7, shortest=130, seasons=(7,)))["covariate_path"] == "net"


def test_unknown_sweep_lists_the_known_ones():
    with pytest.raises(PlanError, match="unknown sweep 'air_lstm'; the sweeps are: air_rnn"):
        make_plan("air_lstm")


def test_pins_and_budget_reach_the_plan(tmp_path):
    plan = make_plan(
        "air_rnn",
        pins={"model": "GRU", "n_rnn_layers": 1},
        num_samples=5,
        max_epochs=40,
        seed=7,
        storage_path=str(tmp_path),
        name="x",
    )
    assert plan.sweep.space["model"] == "GRU" and "model" not in plan.searched
    assert (plan.sweep.num_samples, plan.sweep.max_epochs, plan.options.seed) == (5, 40, 7)
    assert plan.sweep.scheduler_options["grace_period"] == 10  # the default 60 shrinks with a 40-epoch budget
    assert plan.experiment_path == f"{tmp_path}/x"


@pytest.mark.parametrize(
    "request_, message",
    [
        ({"tpu_chips": 0.5}, "Ray allocates TPU chips whole, 1, 2, 4 or 8"),
        ({"tpu_chips": 3}, "Ray allocates TPU chips whole, 1, 2, 4 or 8"),
        ({"gpus": 1.5}, "above 1, GPUs per trial must be whole"),
        ({"gpus": 1, "tpu_chips": 4}, "GPUs or TPU chips, not both"),
        ({"cpus": 0}, "must be a positive number of CPUs"),
        ({"gpus": 0.5, "workers": 2}, "each need a whole GPU"),
    ],
)
def test_impossible_resource_requests_are_refused(request_, message):
    with pytest.raises(ResourceError, match=message):
        TrialResources(**request_)


def test_resources_map_to_ray_bundles_and_trainer_arguments():
    quarter = TrialResources(cpus=1, gpus=0.25)
    assert quarter.trial_bundle() == {"CPU": 1.0, "GPU": 0.25}
    assert quarter.trainer_arguments() == {"accelerator": "gpu", "devices": 1, "threads": 1}
    tpu = TrialResources(cpus=2, tpu_chips=4)
    assert tpu.trial_bundle() == {"CPU": 2.0, "TPU": 4.0}
    assert tpu.trainer_arguments() == {"accelerator": "tpu", "devices": 4, "threads": 2}
    cpu = TrialResources(cpus=2)
    assert cpu.trainer_arguments() == {"accelerator": "cpu", "devices": 1, "threads": 2}
    ddp = TrialResources(cpus=2, gpus=4)
    assert ddp.data_parallel_workers == 4
    assert ddp.trial_bundle() == {"CPU": 1.0} and ddp.worker_bundle() == {"CPU": 2.0, "GPU": 1.0}


def test_fractional_tpu_is_refused_before_any_ray_starts(tmp_path):
    import ray

    assert not ray.is_initialized()
    with pytest.raises(PlanError, match="TPU chips whole"):
        make_plan("air_rnn", tpu_chips_per_trial=0.5, storage_path=str(tmp_path))
    assert not ray.is_initialized()


def test_a_run_that_ended_before_creating_every_trial_is_unfinished(tmp_path):
    import pandas as pd

    from sweeps.output.summary import interrupted
    from sweeps.trials.results import SweepResults

    plan = make_plan("air_rnn", num_samples=3, storage_path=str(tmp_path))
    done = pd.DataFrame({"status": ["COMPLETED", "STOPPED"]})
    assert interrupted(plan, SweepResults(trials=done, histories={}, best=None))  # the third was never created
    assert not interrupted(plan, SweepResults(trials=pd.concat([done, done.iloc[:1]]), histories={}, best=None))
    assert interrupted(
        plan,
        SweepResults(trials=pd.DataFrame({"status": ["COMPLETED", "UNFINISHED", "ERROR"]}), histories={}, best=None),
    )
    from sweeps.answer.members import members

    assert members(plan, SweepResults(trials=pd.DataFrame([]), histories={}, best=None)) == []  # none started


def test_the_command_for_more_trials_repeats_the_sweep_with_a_new_seed_and_name(tmp_path):
    import dataclasses

    from sweeps.output.summary import more_trials_command
    from sweeps.run import build_parser

    arguments = [
        "air_rnn",
        "--name",
        "first",
        "--seed=4",
        "--set",
        "model=GRU",
        "--storage-path",
        str(tmp_path),
        "--max-epochs",
        "50",
    ]
    plan = dataclasses.replace(
        make_plan("air_rnn", seed=4, name="first", storage_path=str(tmp_path)), arguments=tuple(arguments)
    )
    command = more_trials_command(plan)
    assert command.startswith("python -m sweeps.run air_rnn --set model=GRU --max-epochs 50 --seed 5")
    again = build_parser().parse_args(command.split()[3:])
    assert (again.seed, again.name, again.storage_path, again.pins, again.max_epochs) == (
        5,
        "first-seed5",
        str(tmp_path),
        ["model=GRU"],
        50,
    )


def test_a_series_with_two_points_to_train_on_is_kept_and_forecast_by_the_recurrent_shape_without_training(tmp_path):
    """Two points train the direct shape only: the panel sweep's recurrent window resolves to its least (2, three
    points with its target), and its trials forecast the series from its one-point input chunk without training on
    it; the banner and resolved_sweep.json name it."""
    from sweeps.driver import describe_data
    from tests.test_panel import monthly_panel_frame

    path = tmp_path / "short.csv"
    monthly_panel_frame(lengths=(40, 52, 14)).to_csv(path, index=False)  # s2: 2 points, then 6 validate, 6 test
    plan = make_plan("panel", data=str(path), horizon=6, storage_path=str(tmp_path))
    assert plan.sweep.space["training_length"] == 2 and plan.panel.dropped == () and len(plan.panel) == 3
    assert plan.parts.untrained == ("s2",) and plan.describe_data()["untrained_series"] == ["s2"]
    assert (
        "1 shorter than the recurrent shape's training window ('s2'): its trials forecast them"
        in describe_data(plan)[0]
    )
