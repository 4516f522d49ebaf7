"""--time-limit's arithmetic: durations read as a command line gives them, the least a sweep needs, and what gives
way, in its documented order, when the answer's work does not fit in the time left."""

import pytest

from sweeps.answer import TailPlan
from sweeps.answer.members import Member
from sweeps.plan.budget import (
    LEAST_SECONDS,
    TAIL_SECONDS,
    Cut,
    check_time_limit,
    epochs_cost,
    give_way,
    start_seconds,
)
from sweeps.plan.options import PlanError, parse_duration, shown_duration


@pytest.mark.parametrize(
    "text, seconds",
    [("90s", 90), ("10m", 600), ("2h", 7200), ("1h30m", 5400), ("5m30s", 330), ("1.5h", 5400), ("300", 300)],
)
def test_a_duration_reads_as_a_command_line_gives_it(text, seconds):
    assert parse_duration(text) == seconds
    assert parse_duration(shown_duration(seconds)) == seconds


@pytest.mark.parametrize("text", ["", "soon", "10x", "-5m", "0s", "m"])
def test_a_duration_that_is_none_says_how_to_give_one(text):
    with pytest.raises(PlanError, match="--time-limit"):
        parse_duration(text)


def test_a_limit_below_the_least_a_sweep_needs_says_the_least_that_would_do():
    check_time_limit(None, 1000)  # no limit, nothing to check
    check_time_limit(LEAST_SECONDS + 10, 10)
    with pytest.raises(PlanError, match=r"--time-limit 30s is too short .* 12 s are spent already .* at least "):
        check_time_limit(30, 12)


def test_tasks_take_their_work_over_the_slots_and_at_least_the_longest():
    assert epochs_cost([4, 4, 4], [2.0, 2.0, 2.0], slots=2) == 15  # 30 s of work on 2 slots (an epoch more each)
    assert epochs_cost([20, 1], [1.0, 1.0], slots=4) == 21  # the longest task
    assert epochs_cost([], [], slots=2) == 0


def tail(members=3):
    chosen = [Member(f"t{n}", b"", 16, epoch_seconds=2.0) for n in range(members)]
    return TailPlan(chosen, refit_epochs=[4] * members, future_epochs=[4] * members)


@pytest.mark.parametrize(
    "left, cut, members, refit, future",
    [
        # 3 members, each two tasks of 4 epochs (and one more each) of 2 s on 2 slots (30 s), the baselines' 92 s of
        # work on 2 slots (46 s)
        (100, Cut(), 3, [4] * 3, [4] * 3),  # 15 + 30 + 46
        (80, Cut(baselines=("AutoETS",)), 3, [4] * 3, [4] * 3),  # 15 + 30 + 16: the most work left first
        (50, Cut(baselines=("AutoETS", "AutoCES")), 3, [4] * 3, [4] * 3),  # 15 + 30 + 1
        (35, Cut(baselines=("AutoETS", "AutoCES", "Theta"), members=1), 2, [4] * 2, [4] * 2),  # 15 + 20
        (  # one member: 15 + 10 s, then without its refit 15 + 10 (its future alone), then one future epoch: 15 + 4
            20,
            Cut(baselines=("AutoETS", "AutoCES", "Theta"), members=2, refit=True, future=True),
            1,
            [0],
            [1],
        ),
    ],
)
def test_what_gives_way_does_so_in_its_order_until_the_answer_fits(left, cut, members, refit, future):
    baselines = {"AutoCES": 30.0, "AutoETS": 60.0, "Theta": 2.0}
    assert TAIL_SECONDS == 15
    cut_tail, found = give_way(tail(), left, slots=2, baselines=baselines)
    assert found == cut
    assert [member.trial_id for member in cut_tail.members] == [f"t{n}" for n in range(members)]
    assert (cut_tail.refit_epochs, cut_tail.future_epochs) == (refit, future)


def test_a_trials_start_is_its_first_epochs_seconds_beyond_the_others_and_the_tail_counts_it():
    assert start_seconds([9.0, 1.0, 1.5, 0.5]) == 8.0  # imports and setup: 9 s, less the median epoch's 1 s
    assert start_seconds([0.5, 1.0, 1.0]) == 0.0 and start_seconds([7.0]) == 0.0  # none seen before a second epoch
    cold = [Member(f"t{n}", b"", 16, epoch_seconds=2.0, start_seconds=10.0) for n in range(3)]
    plan = TailPlan(cold, refit_epochs=[4] * 3, future_epochs=[4] * 3)
    # 15 + 30 fit in 50 s, but not with a start of 10 s before the members' first epochs: one member gives way.
    assert give_way(tail(), 50, slots=2, baselines={})[1] == Cut()
    cut_tail, found = give_way(plan, 50, slots=2, baselines={})
    assert found == Cut(members=1) and len(cut_tail.members) == 2  # 15 + 10 + 20


def test_a_continuation_stops_at_its_deadline_after_at_least_one_epoch():
    """--time-limit's deadline inside the answer's tasks: a member's continuation past it trains one epoch, and says
    so, instead of the epochs it was planned."""
    import time

    from forecaster.config import ForecasterConfig
    from forecaster.data.read import load_panel
    from forecaster.training.train import fit_through
    from sweeps.answer.refits import continued
    from tests.test_panel import monthly_panel_frame

    panel = load_panel(monthly_panel_frame())
    config = ForecasterConfig(hidden_dim=8, input_chunk_length=6, training_length=10, batch_size=32)
    net, _ = fit_through(config, 1, panel, threads=1)
    _, _, ran = continued(net, 50, panel, stop_at=time.time(), fit_options={"threads": 1})
    assert ran == 1
    _, _, ran = continued(net, 3, panel, stop_at=time.time() + 3600, fit_options={"threads": 1})
    assert ran == 3
    assert Cut(shortened=("t2",)).lines() == ["the continuations of t2: stopped at the deadline, short of their epochs"]


def test_what_was_cut_is_said_in_the_order_it_gave_way():
    assert Cut().lines() == []
    lines = Cut(baselines=("AutoCES",), members=2, refit=True, future=True).lines()
    assert lines[0] == "AutoCES (not finished)" and lines[1] == "the last 2 of the answer's members"
    assert "validation part" in lines[2] and "test window, to one epoch" in lines[3]


def test_a_resumed_sweep_counts_the_time_its_earlier_runs_spent(tmp_path):
    import time

    from sweeps.plan.budget import MARGIN_SHARE, TimeBudget, read_spent, spent_writer
    from sweeps.plan.storage import SweepFolder

    folder = SweepFolder(str(tmp_path / "sweep"))
    assert read_spent(folder) == 0.0  # a new sweep has spent nothing
    spent_writer(folder)(95.04)
    assert read_spent(folder) == 95.0
    budget = TimeBudget(limit=300.0, started=time.time() - 10.0, spent_before=read_spent(folder))
    assert budget.spent() == pytest.approx(105.0, abs=0.5)
    assert budget.left() == pytest.approx(300.0 * (1 - MARGIN_SHARE) - 105.0, abs=0.5)
    assert TimeBudget(limit=None, started=time.time()).left() == float("inf")


def test_at_the_deadline_the_tasks_that_ended_stay_and_the_others_are_cancelled(local_ray):
    """The answer's tasks past --time-limit's deadline: the members whose tasks all ended stay, the others are left
    out and their tasks cancelled; where none has ended, the first to end is waited for (an answer needs one)."""
    import time

    from sweeps.answer.tasks import Runner
    from sweeps.plan.resources import TrialResources

    runner = Runner(TrialResources(cpus=1), on_ray=True)
    quick = runner.submit("refit", "quick", time.sleep, 0, trains=False)
    slow = runner.submit("refit", "slow", time.sleep, 600, trains=False)
    local_ray.get(quick.value)
    assert runner.ended_by([[slow], [quick]], deadline=time.time() + 1) == [1]
    runner.cancel(slow)
    with pytest.raises(local_ray.exceptions.TaskCancelledError):
        local_ray.get(slow.value, timeout=60)

    slow = runner.submit("refit", "slow", time.sleep, 600, trains=False)
    after = runner.submit("future", "after", time.sleep, 1, trains=False)
    assert runner.ended_by([[slow], [after]], deadline=time.time() - 1) == [1]  # past it: waits for the first
    runner.cancel(slow)
    assert [timing.label for timing in runner.timings()] == ["quick", "after"]


def test_autoarima_with_covariates_runs_only_where_its_fits_take_no_longer_than_the_trials(local_ray):
    """When the trials end, AutoARIMA with covariates still running is kept where its whole work (40 series at 2 s
    each, over the 2 slots: 40 s) fits in the trials' time, and cancelled with the reason where it does not; the
    other baselines are waited for as before."""
    import time

    import numpy as np

    ARIMA_COVARIATES = "AutoARIMA with covariates"

    from sweeps.answer.baselines import BaselineJobs, within_the_trials_time
    from sweeps.answer.tasks import Runner
    from sweeps.plan.resources import TrialResources

    runner = Runner(TrialResources(cpus=1), on_ray=True)
    arima = [runner.submit("baselines", "AutoARIMA, series 1-40", time.sleep, 600, trains=False)]
    ets = [runner.submit("baselines", "AutoETS, series 1-40", time.sleep, 0, trains=False)]
    jobs = BaselineJobs(
        {ARIMA_COVARIATES: arima, "AutoETS": ets},
        [np.arange(40)],
        ("test",),
        False,
        priors={ARIMA_COVARIATES: 2.0},
        cuttable=("AutoETS", ARIMA_COVARIATES),
    )
    assert within_the_trials_time(jobs, runner, trials_seconds=41.0) is jobs
    cut = within_the_trials_time(jobs, runner, trials_seconds=39.0)
    assert list(cut.handles) == ["AutoETS"]
    assert cut.not_run[ARIMA_COVARIATES].startswith(
        "its fits would take about 40 s on 2 task slot(s) (2.00 s a series)"
    )
    assert "longer than the trials' 39 s" in cut.not_run[ARIMA_COVARIATES]
    with pytest.raises(local_ray.exceptions.TaskCancelledError):
        local_ray.get(arima[0].value, timeout=60)


def test_members_left_out_at_the_deadline_are_named():
    assert Cut(late=("t1", "t3")).lines() == ["the members of t1, t3: their tasks had not ended by the deadline"]


def test_the_stopper_cuts_the_baselines_one_at_a_time_before_it_stops_the_trials():
    """Short of time, the baselines give way first (their tasks hold slots the trials could use), even before any
    trial has reported; once none is left to cut, the trials stop, but only after one has reported an epoch."""
    import time

    from sweeps.plan.budget import ACTIVE, Active, TimeBudget
    from sweeps.trials.tuner import BudgetStopper

    unfinished, spent = ["AutoCES", "AutoETS"], []
    ACTIVE["sweep"] = Active(
        TimeBudget(limit=100.0, started=time.time() - 90.0),  # 7 s left of the 97 s it spends
        tail_seconds=lambda trials: 20.0,
        spent=spent.append,
        warm=lambda: None,
        cut_baseline=lambda: unfinished.pop(0) if unfinished else None,
    )
    try:
        stopper = BudgetStopper("sweep")
        assert stopper.stop_all() is False and unfinished == ["AutoETS"]  # AutoCES cut, no trial has reported
        assert stopper.stop_all() is False and unfinished == []
        assert stopper.stop_all() is False  # nothing left to cut, but no model yet
        stopper("t1", {"time_this_iter_s": 1.0, "epoch": 1, "val_smape": 20.0})
        assert stopper.stop_all() is True and spent
    finally:
        ACTIVE.pop("sweep")
