"""Each scheduler entry: its settings, the metric it ranks on, where its trials checkpoint, how many
checkpoints they keep, what it refuses, and the Ray Tune scheduler it builds."""

import pytest

from sweeps.plan.schedulers import (
    CHECKPOINT_EVERY_SECONDS,
    FIRST_CHECKPOINT_AFTER_SECONDS,
    SCHEDULERS,
    CheckpointSchedule,
)
from sweeps.plan.sweep_plan import PlanError, make_plan


def sweep_with(tmp_path, scheduler, **options):
    return make_plan(
        "air_rnn", scheduler=scheduler, max_epochs=300, scheduler_options=options or None, storage_path=str(tmp_path)
    ).sweep


@pytest.mark.slow
def test_checkpoints_fall_where_each_scheduler_may_stop_a_trial(tmp_path):
    def checkpoints(scheduler, **options):
        return SCHEDULERS[scheduler].checkpoints(sweep_with(tmp_path, scheduler, **options))

    assert checkpoints("asha").at == (60, 180)  # ASHA's rungs
    median = checkpoints("median")
    assert median.at == (60,) and median.on_improvement_from == 60  # it may stop a trial at any later epoch
    assert checkpoints("hyperband").at == (60, 180)
    assert checkpoints("pbt").every == 30 and checkpoints("fifo").at == ()
    for name in SCHEDULERS:  # and by time, whatever the scheduler
        assert checkpoints(name).every_seconds == CHECKPOINT_EVERY_SECONDS
        assert checkpoints(name).first_after_seconds == FIRST_CHECKPOINT_AFTER_SECONDS
    # HyperBand's brackets judge trials first at 60, 180 epochs, or never: none before the grace period.
    hyperband = SCHEDULERS["hyperband"].build(sweep_with(tmp_path, "hyperband", grace_period=60, reduction_factor=3))
    assert [[milestone for milestone, _ in bracket._rungs] for bracket in hyperband._brackets] == [[180, 60], [180], []]


@pytest.mark.parametrize("name", SCHEDULERS)
def test_every_scheduler_builds_ranks_and_keeps_checkpoints(tmp_path, name):
    from ray.tune.schedulers import TrialScheduler

    scheduler = SCHEDULERS[name]
    sweep = sweep_with(tmp_path, name)
    assert isinstance(scheduler.build(sweep), TrialScheduler)
    assert scheduler.metric(sweep) == ("val_mape" if name == "pbt" else "best_val_mape")
    assert scheduler.checkpoints_kept == (4 if name == "pbt" else 2)


def test_the_command_line_offers_every_scheduler():
    from sweeps.run import build_parser

    for name in SCHEDULERS:
        assert build_parser().parse_args(["air_rnn", "--scheduler", name]).scheduler == name


def test_a_grace_period_as_long_as_the_budget_shrinks(tmp_path):
    plan = make_plan(
        "air_rnn",
        max_epochs=8,
        scheduler_options={"grace_period": 8, "reduction_factor": 2},
        storage_path=str(tmp_path),
    )
    assert plan.sweep.scheduler_options == {"grace_period": 2, "reduction_factor": 2}


def test_pbt_refuses_what_it_cannot_work_with_before_ray_starts(tmp_path):
    import ray

    with pytest.raises(PlanError, match="--scheduler pbt explores by itself: use it with --search random"):
        make_plan("air_rnn", scheduler="pbt", search="optuna", storage_path=str(tmp_path))
    with pytest.raises(PlanError, match="needs lr \\(log-uniform\\) or batch_size \\(a choice\\) searched"):
        make_plan("air_rnn", scheduler="pbt", pins={"lr": 0.01, "batch_size": 16}, storage_path=str(tmp_path))
    assert not ray.is_initialized()


def test_a_checkpoint_is_due_at_the_last_epoch_at_scheduler_points_and_by_time():
    schedule = CheckpointSchedule(every=0, at=(60,), on_improvement_from=10, every_seconds=5.0, first_after_seconds=1.0)
    quiet = {"improved": False, "seconds_since_checkpoint": 0.5, "has_one": True}
    assert not schedule.due(5, 100, **quiet)
    assert schedule.due(100, 100, **quiet) and schedule.due(60, 100, **quiet)
    assert schedule.due(12, 100, **{**quiet, "improved": True}) and not schedule.due(
        8, 100, **{**quiet, "improved": True}
    )
    assert schedule.due(5, 100, **{**quiet, "seconds_since_checkpoint": 5.0})
    assert not schedule.due(5, 100, **{**quiet, "seconds_since_checkpoint": 1.5})
    assert schedule.due(5, 100, **{**quiet, "seconds_since_checkpoint": 1.5, "has_one": False})  # the first, early
    assert CheckpointSchedule(every=3).due(9, 100, **quiet)


def test_scheduler_options_from_the_command_line_merge_over_the_sweeps_own(tmp_path, capsys):
    from sweeps.plan.options import parse_scheduler_options
    from sweeps.run import main

    given = parse_scheduler_options(["grace_period=3"])
    plan = make_plan("air_rnn", scheduler_options=given, storage_path=str(tmp_path))
    assert plan.sweep.scheduler_options == {"grace_period": 3, "reduction_factor": 3}
    own = make_plan("air_rnn", storage_path=str(tmp_path)).sweep.scheduler_options
    assert own == {"grace_period": 60, "reduction_factor": 3}
    with pytest.raises(
        PlanError, match="--scheduler-option perturbation_interval: the asha scheduler takes grace_period"
    ):
        make_plan("air_rnn", scheduler_options={"perturbation_interval": 3}, storage_path=str(tmp_path))
    assert (
        main(
            ["air_rnn", "--scheduler", "fifo", "--scheduler-option", "grace_period=3", "--storage-path", str(tmp_path)]
        )
        == 2
    )
    assert "the fifo scheduler takes no options" in capsys.readouterr().err
