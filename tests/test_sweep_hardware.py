"""Trials on GPU fractions, TPU chips and data-parallel workers, on a local Ray with logical GPUs and TPU
chips: Ray places and labels them as on a real cluster, while torch on this machine sees no accelerator."""

import importlib.util

import pytest
import torch

from sweeps.plan import make_plan
from sweeps.run import run_sweep

RAY_INIT = {"num_cpus": 4, "num_gpus": 2, "resources": {"TPU": 4}}


def sweep(tmp_path, name, **options):
    plan = make_plan("air_rnn", seed=0, storage_path=str(tmp_path), name=name, pins={"hidden_dim": 8}, **options)
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
def test_the_gpu_packing_bench_runs_on_logical_gpus(monkeypatch, tmp_path):
    """bench/gpu_packing.py measures trials sharing one real card; here it runs on logical GPUs, so that it keeps
    working where no GPU is lent: N trials of 1/N GPU each are placed on the one GPU and all train."""
    import ray

    from bench.gpu_packing import main, run

    if ray.is_initialized():
        ray.shutdown()  # the bench starts a Ray of its own for each count
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("SWEEPS_LOGICAL_ACCELERATORS", "1")  # the bench sets it too: restored after the test
    report = main(["--logical", "--trials", "2", "--epochs", "4"])
    for placed in (report["gpu"], report["cpu"]):
        assert [(measured["trials"], measured["epochs"]) for measured in placed] == [(2, 8)]
        assert placed[0]["aggregate_epochs_per_second"] > 0 and len(placed[0]["nodes"]) == 1
    assert [measured["gpus_per_trial"] for measured in report["gpu"]] == [0.5]
    # The panel workload: two trials of the m3_monthly sweep on one (logical) card; the bench's step for one count
    # and one placement (main runs it for each), without its CPU placement, measured above for the seed workload.
    panel = run(2, 0.5, epochs=1, storage=str(tmp_path), logical=True, workload="panel", windows_per_epoch=1024)
    assert (panel["trials"], panel["epochs"], panel["workload"], panel["gpus_per_trial"]) == (2, 2, "panel", 0.5)
    assert panel["aggregate_windows_per_second"] > 0
