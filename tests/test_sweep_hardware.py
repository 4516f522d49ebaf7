"""Trials on GPU fractions, TPU chips and data-parallel workers, on a local Ray with logical GPUs and TPU
chips: Ray places and labels them as on a real cluster, while torch on this machine sees no accelerator."""

import importlib.util
import json
import os

import pytest
import torch

from bench.gpu_check import STEPS, WHOLE_BUDGET_S, Step, last_json, main, run_step
from sweeps.driver import run_sweep
from sweeps.plan.sweep_plan import make_plan
from tests.helpers import ROOT, wait_until_gone

RAY_INIT = {"num_cpus": 4, "num_gpus": 2, "resources": {"TPU": 4}}


def sweep(tmp_path, name, **options):
    plan = make_plan(
        "air_rnn", seed=0, storage_path=str(tmp_path), name=name, pins={"hidden_dim": 8}, future=False, **options
    )
    return run_sweep(plan, ["test"]).results


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="asserts what a trial says where torch sees no CUDA device")
def test_four_quarter_gpu_trials_share_one_gpu_and_each_sees_it(local_ray, tmp_path):
    # No retry: each trial's one attempt says what it was given (a retry would say it again, in a new worker).
    results = sweep(tmp_path, "quarters", gpus_per_trial=0.25, num_samples=4, max_epochs=2, max_failures=0)
    trials = results.trials
    assert len(trials) == 4 and (trials.status == "ERROR").all()
    for error in trials.error:
        # Bin-packed onto GPU 0 although GPU 1 is free, and told so through CUDA_VISIBLE_DEVICES; torch here
        # has no CUDA, and the trial says that instead of training on the CPU.
        assert "this trial was given GPU ids [0] (CUDA_VISIBLE_DEVICES=0)" in error
        assert "sees no CUDA device" in error


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("torch_xla") is not None, reason="asserts what a trial says without torch-xla"
)
def test_tpu_trials_get_whole_chips_of_their_own(local_ray, tmp_path):
    results = sweep(tmp_path, "tpu", tpu_chips_per_trial=2, num_samples=2, max_epochs=2, max_failures=0)
    errors = list(results.trials.error)
    assert len(errors) == 2 and all("needs torch-xla" in e for e in errors)
    chips = sorted(e.split("TPU_VISIBLE_CHIPS=")[1].split(")")[0] for e in errors)
    assert chips == ["0,1", "2,3"]


@pytest.mark.slow
def test_a_data_parallel_trial_trains_with_ddp_under_ray_train(local_ray, tmp_path):
    results = sweep(tmp_path, "ddp", workers_per_trial=2, num_samples=1, max_epochs=3, scheduler="fifo")
    trial = results.trials.iloc[0]
    assert trial.status == "COMPLETED", trial.error
    history = next(iter(results.histories.values()))
    assert list(history.epoch) == [1, 2, 3]
    assert history.val_mape.notna().all() and history.best_val_mape.iloc[-1] == history.val_mape.min()


@pytest.mark.slow
def test_the_gpu_packing_bench_runs_on_logical_gpus(monkeypatch):
    """bench/gpu_packing.py measures trials sharing one real card; here it runs on logical GPUs, so that it keeps
    working where no GPU is lent: N trials of 1/N GPU each are placed on the one GPU and all train."""
    import ray

    from bench.gpu_check import packing_figures
    from bench.gpu_packing import main

    if ray.is_initialized():
        ray.shutdown()  # the bench starts a Ray of its own for each count
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    report = main(["--logical", "--trials", "2", "--epochs", "4"])
    for placed in (report["gpu"], report["cpu"]):
        assert [(measured["trials"], measured["epochs"]) for measured in placed] == [(2, 8)]
        assert len(placed[0]["nodes"]) == 1
    assert [measured["gpus_per_trial"] for measured in report["gpu"]] == [0.5]
    figures = packing_figures(report)  # what bench/gpu_check.py keeps of it
    assert figures["gpu"]["trials"] == figures["cpu"]["trials"] == 2 and "gpu_over_cpu_epochs_per_second" in figures
    # The panel workload: two trials of the m3_monthly sweep on one (logical) card, on the card only, as
    # bench/gpu_check.py runs it; the CPU placement was measured above for the seed workload.
    on_the_card = ["--placements", "gpu", "--windows-per-epoch", "1024"]
    report = main(["--logical", "--workload", "panel", "--trials", "2", "--epochs", "1", *on_the_card])
    [panel] = report["gpu"]
    assert report["cpu"] == [] and list(packing_figures(report)) == ["gpu"]
    assert (panel["trials"], panel["epochs"], panel["workload"], panel["gpus_per_trial"]) == (2, 2, "panel", 0.5)


def test_the_gpu_check_lists_its_steps_within_eight_minutes_and_says_what_it_would_skip(capsys):
    assert main(["--dry-run"]) == 0
    report = json.loads(capsys.readouterr().out)
    steps = report["steps"]
    assert list(steps) == ["gpu_tests", "panel_fit", "packing_seed", "packing_panel", "sweep_gpu", "sweep_cpu"]
    assert sum(step["budget_seconds"] for step in steps.values()) <= WHOLE_BUDGET_S <= 8 * 60
    for step in steps.values():  # each runs a script of the bench, pytest or a sweep, as this checkout has them
        words = step["command"].split()
        assert words[:2] in (["-m", "pytest"], ["-m", "sweeps.run"]) or os.path.exists(os.path.join(ROOT, words[0]))
    if not torch.cuda.is_available():
        assert not any(step["would_run"] for step in steps.values())
        assert all("sees no CUDA GPU" in why for why in report["skipped"].values())
        assert len(report["skipped"]) == len(STEPS) and report["device"]["gpu"] is None
    assert main(["--dry-run", "--budget-scale", "2"]) == 0  # a slower card: every budget doubled
    doubled = json.loads(capsys.readouterr().out)
    assert doubled["budget_seconds"] == 2 * WHOLE_BUDGET_S
    assert [step["budget_seconds"] for step in doubled["steps"].values()] == [2 * step.budget_s for step in STEPS]


def test_a_gpu_check_step_that_overruns_its_budget_is_stopped_with_every_process_it_started(tmp_path):
    """A sweep's step starts a Ray of its own (its daemons are the step's children): none may outlive the step."""
    started_a_child = (
        "import subprocess, sys, time; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); "
        "print('log line', child.pid, flush=True); time.sleep(300)"
    )
    record, out = run_step(Step("sleeper", 3, (), lambda folder: ["-c", started_a_child]), 3, str(tmp_path))
    assert record["status"] == "timed out" and record["budget_seconds"] == 3 and "log line" in record["output_tail"]
    wait_until_gone({int(out.split()[-1])}, 30, "the step's child")
    assert last_json('a log line {not json}\n{\n "bench": "x",\n "rows": [1]\n}\n') == {"bench": "x", "rows": [1]}
