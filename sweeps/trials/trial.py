"""One trial of a sweep: train the forecaster with the trial's hyperparameters, reporting every epoch to Tune.

The data (the plan's parts, cut and checked once: every series' training and validation parts, never its test window)
reaches trials through Ray's object store (`tune.with_parameters` puts it there once per sweep; every trial on a node
maps the same copy): trials never read the data file, which may not exist on the node they run on, and never check
again what the plan checked. torch and Lightning are imported inside the functions: the driver only pickles
`train_trial` by name, and must not spend seconds importing them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from forecaster.training.parts import FitParts
from sweeps.plan.resources import TrialResources
from sweeps.plan.schedulers import CheckpointSchedule
from sweeps.plan.storage import CHECKPOINT_FILE

if TYPE_CHECKING:
    from ray.train import Checkpoint

    from forecaster.shapes.base import Shape
    from sweeps.trials.epoch_reporter import EpochReporter, Report


@dataclasses.dataclass(frozen=True)
class TrialSettings:
    """What every trial of a sweep shares, besides the data."""

    max_epochs: int
    resources: TrialResources
    checkpoints: CheckpointSchedule
    """When to checkpoint: so that a trial stopped by its scheduler has its best model in its last checkpoint."""
    storage_path: str | None = None
    """Where data-parallel trials keep their Ray Train runs (the sweep's storage)."""
    shapes: tuple[Shape, ...] = ()
    """The shapes registered in the driver (forecaster.shapes.register), which a worker registers before it reads a
    configuration (`known_shapes`)."""


def by_value(objects: Iterable[object]) -> None:
    """Let these objects of the user's own (a registered shape or baseline) travel to Ray's workers by value: a
    worker need not import the module that defines one (a notebook's, a test's)."""
    from ray import cloudpickle

    register: Callable[[ModuleType], None] = cloudpickle.register_pickle_by_value
    for found in objects:
        module = type(found).__module__
        if not module.startswith("forecaster.") and module in sys.modules and module != "__main__":
            register(sys.modules[module])


def shipped_shapes() -> tuple[Shape, ...]:
    """The shapes registered in this process, set to travel to Ray's workers by value."""
    from forecaster.shapes import registered

    shapes = registered()
    by_value(shapes)
    return shapes


def known_shapes(shapes: tuple[Shape, ...]) -> None:
    """Register in this worker the shapes the driver registered."""
    from forecaster.shapes import register

    for shape in shapes:
        register(shape)


def train_trial(config: dict[str, Any], *, parts: FitParts, settings: TrialSettings) -> None:
    """Tune's trainable: fit the forecaster, resuming from the trial's checkpoint when Tune restarts it."""
    warm = "lightning" in sys.modules  # imported before the trial came: a warm worker (sweeps/trials/warm_pool.py)
    from ray import tune

    from sweeps.trials.epoch_reporter import EpochReporter

    if settings.resources.data_parallel_workers > 1:
        _run_data_parallel(config, parts, settings)
        return
    arguments = _trainer_arguments(settings.resources)
    report = _with_node(tune.report, warm)
    trial = tune.get_context().get_trial_id()
    reporter = EpochReporter(report, tune.Checkpoint, settings.checkpoints, trial, parts.metric)
    checkpoint = newest_checkpoint(tune.get_checkpoint())
    reporter.resumed_recorded = checkpoint is None or recorded(checkpoint)
    _fit(config, parts, settings, reporter, checkpoint, **arguments)


def newest_checkpoint(given: Checkpoint | None) -> Checkpoint | None:
    """The checkpoint a restarted trial resumes from: the newest complete one in its own folder whose report Tune
    recorded (its progress.csv names it), where Tune gave it an older one of its own or none. Tune registers a
    checkpoint a moment after the trial reported and wrote it (Tune's save step), and its experiment state may be
    saved in between, by a Ctrl+C or before a kill -9: the trial would otherwise run again the epochs it had run, even
    its last (and write them twice in its progress.csv). A checkpoint whose report was never recorded (a driver killed
    while its trials ran on for an epoch or two) is passed over: the epochs after the newest recorded one run again,
    so that every epoch's report is in the trial's history. A checkpoint of another trial's (a PBT donor's) is left as
    it is."""
    import re

    import pyarrow.fs
    from ray import tune

    storage = tune.get_context().get_storage()
    folder, filesystem = storage.trial_fs_path, storage.storage_filesystem
    if given is not None and os.path.normpath(os.path.dirname(given.path)) != os.path.normpath(folder):
        return given
    given_index = -1 if given is None else int(given.path.rsplit("_", 1)[-1])
    found = filesystem.get_file_info(pyarrow.fs.FileSelector(folder, allow_not_found=True))
    newer = sorted(
        (int(match.group(1)), info.path)
        for info in found
        if info.type == pyarrow.fs.FileType.Directory
        and (match := re.fullmatch(r"checkpoint_(\d+)", info.base_name))
        and int(match.group(1)) > given_index
    )
    names = _recorded_checkpoints()
    for _, path in reversed(newer):
        candidate = tune.Checkpoint(path, filesystem=filesystem)
        if (names is None or os.path.basename(os.path.normpath(path)) in names) and _complete(candidate):
            return candidate
    return given


def recorded(checkpoint: Checkpoint) -> bool:
    """Whether the report that came with `checkpoint` is in Tune's record of this trial: its progress.csv, which the
    driver writes as it takes each report, names the checkpoint's folder. The trial writes the checkpoint first, so
    a driver killed in between leaves a checkpoint whose report it never recorded. True where the record cannot be
    read (nothing to compare with: the report is not made twice)."""
    names = _recorded_checkpoints()
    return names is None or os.path.basename(os.path.normpath(checkpoint.path)) in names


def _recorded_checkpoints() -> set[str] | None:
    """The checkpoint folders the trial's progress.csv names (empty where no report was ever recorded); None where
    it cannot be read."""
    import io

    import pandas as pd
    from ray import tune

    storage = tune.get_context().get_storage()
    try:
        with storage.storage_filesystem.open_input_stream(f"{storage.trial_fs_path}/progress.csv") as stream:
            history = pd.read_csv(io.BytesIO(stream.readall()))
    except FileNotFoundError:
        return set()  # no report of this trial's was ever recorded
    except (OSError, ValueError, pd.errors.ParserError):
        return None
    if "checkpoint_dir_name" not in history:
        return set()
    return set(history["checkpoint_dir_name"].dropna().astype(str))


def _complete(checkpoint: Checkpoint) -> bool:
    """Whether a checkpoint holds a training state that loads (one being written when its process was killed does
    not)."""
    import torch

    try:
        with checkpoint.as_directory() as folder:
            torch.load(os.path.join(folder, CHECKPOINT_FILE), map_location="cpu", weights_only=False)
    except Exception:  # missing, or cut short: any failure to read it means it is not one to resume from
        return False
    return True


def _with_node(report: Report, warm: bool) -> Report:
    """Every report names the Ray node it came from (the results say where each trial ran, and moved to) and whether
    its process was warm (had torch and Lightning imported before the trial came)."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    return lambda metrics, **options: report({**metrics, "node": node, "warm_start": int(warm)}, **options)


def _fit(
    config: dict[str, Any],
    parts: FitParts,
    settings: TrialSettings,
    reporter: EpochReporter,
    checkpoint: Checkpoint | None,
    **arguments: Any,
) -> None:
    from forecaster.config import ForecasterConfig
    from forecaster.training.train import fit, quiet_lightning

    quiet_lightning()
    logging.getLogger("ray.train").setLevel(logging.WARNING)  # one "checkpoint created" line per checkpoint
    known_shapes(settings.shapes)
    hyperparameters = ForecasterConfig.from_dict({**config, "n_epochs": settings.max_epochs})
    with checkpoint.as_directory() if checkpoint else contextlib.nullcontext() as folder:
        fit(
            hyperparameters,
            parts,
            callbacks=[reporter],
            ckpt_path=os.path.join(folder, CHECKPOINT_FILE) if folder else None,
            **arguments,
        )


def _trainer_arguments(resources: TrialResources) -> dict[str, Any]:
    arguments = resources.trainer_arguments()
    _check_hardware(arguments["accelerator"])
    return arguments


def _check_hardware(accelerator: str) -> None:
    """A trial given a GPU (or TPU chips) that torch cannot see fails at once, saying what Ray gave it."""
    import ray

    from forecaster.training.train import AcceleratorError, check_accelerator

    try:
        check_accelerator(accelerator)
    except AcceleratorError as error:
        given = {
            "gpu": f"GPU ids {ray.get_gpu_ids()} (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')})",
            "tpu": f"TPU chips (TPU_VISIBLE_CHIPS={os.environ.get('TPU_VISIBLE_CHIPS')})",
        }.get(accelerator, accelerator)
        raise AcceleratorError(f"this trial was given {given}: {error}") from None


def _run_data_parallel(config: dict[str, Any], parts: FitParts, settings: TrialSettings) -> None:
    """A trial of several GPUs: this process drives a Ray Train run whose workers train with DDP."""
    import ray.train
    from ray import tune
    from ray.train.torch import TorchTrainer
    from ray.tune.integration.ray_train import TuneReportCallback

    report_callback: Callable[[], TuneReportCallback] = TuneReportCallback
    resources = settings.resources
    trial = tune.get_context().get_trial_id()
    trainer = TorchTrainer(
        _data_parallel_worker,
        train_loop_config={"config": config, "parts": parts, "settings": settings, "trial": trial},
        scaling_config=ray.train.ScalingConfig(
            num_workers=resources.data_parallel_workers,
            use_gpu=resources.gpus > 0,
            resources_per_worker=resources.worker_bundle(),
        ),
        run_config=ray.train.RunConfig(
            # Named after the trial, so that a restarted trial resumes this Train run from its checkpoint.
            name=f"train-{trial}",
            storage_path=settings.storage_path,
            callbacks=[report_callback()],  # type: ignore[list-item]  # Ray Train's, for Tune
        ),
    )
    trainer.fit()


def _data_parallel_worker(loop_config: dict[str, Any]) -> None:
    """One DDP worker: Lightning with Ray's DDP strategy and cluster environment."""
    import ray.train
    from ray.train.lightning import RayDDPStrategy, RayLightningEnvironment, prepare_trainer

    from sweeps.trials.epoch_reporter import EpochReporter

    ddp_strategy: Callable[[], RayDDPStrategy] = RayDDPStrategy
    lightning_environment: Callable[[], RayLightningEnvironment] = RayLightningEnvironment
    settings: TrialSettings = loop_config["settings"]
    arguments = _trainer_arguments(settings.resources)
    arguments["devices"] = "auto"  # Ray Train gives each worker its device
    report = _with_node(ray.train.report, warm="lightning" in sys.modules)
    parts: FitParts = loop_config["parts"]
    reporter = EpochReporter(report, ray.train.Checkpoint, settings.checkpoints, loop_config["trial"], parts.metric)
    _fit(
        loop_config["config"],
        parts,
        settings,
        reporter,
        ray.train.get_checkpoint(),
        trainer_options={"strategy": ddp_strategy(), "plugins": [lightning_environment()]},
        prepare_trainer=prepare_trainer,
        **arguments,
    )
