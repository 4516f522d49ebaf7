"""A sweep's one-chip TPU trials on the XLA device, through Ray Tune as on a TPU VM: Ray hands each trial a TPU
chip (logical here: resources={"TPU": 4}), the trial trains with accelerator="tpu" on torch-xla's PJRT CPU
client (the shim reaches the trial processes through PYTHONPATH, as conftest.py sets it), and reports every
epoch. Several chips per trial are refused by this client (docs/hardware.md, TPUs)."""

import pytest

pytest.importorskip("torch_xla")


# Small shapes, the same for both trials (lr and random_state, sampled, change no shape). Compiling the first three
# epochs' graphs is what a trial costs on the PJRT CPU client (its fourth epoch takes 2 s): with the space's own
# batches (8 to 32 windows) and lengths, the test took 315 s; with these, 169 s.
XLA_SHAPES = {
    "model": "GRU",
    "hidden_dim": 8,
    "n_rnn_layers": 1,
    "batch_size": 32,
    "input_chunk_length": 12,
    "training_length": 16,
    "target_transform": "log",
}


@pytest.mark.timeout(600)
def test_one_chip_trials_of_a_sweep_train_on_the_xla_device(tmp_path):
    import ray

    from sweeps.driver import run_sweep
    from sweeps.plan.sweep_plan import make_plan

    ray.init(address="local", num_cpus=2, resources={"TPU": 4}, include_dashboard=False, log_to_driver=False)
    try:
        plan = make_plan(
            "air_rnn",
            seed=0,
            num_samples=2,
            max_epochs=4,
            scheduler="fifo",
            tpu_chips_per_trial=1,
            pins=XLA_SHAPES,
            storage_path=str(tmp_path),
            name="xla",
        )
        results = run_sweep(plan, ["test"], progress=False).results
    finally:
        ray.shutdown()
    assert list(results.trials.status) == ["COMPLETED", "COMPLETED"]
    for history in results.histories.values():
        assert list(history.epoch) == [1, 2, 3, 4]
        assert history.val_mape.notna().all()
