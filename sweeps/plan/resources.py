"""The hardware of one trial: what it asks Ray for, and what its Lightning Trainer is told.

- CPUs only: one process, as many torch threads as CPUs held.
- A GPU or a fraction of one (0.25 packs four trials onto a card): accelerator="gpu", devices=1; Ray sets
  CUDA_VISIBLE_DEVICES to the card it chose.
- Several whole GPUs: data-parallel workers under Ray Train (one per GPU, DDP), the supported route;
  DDP started inside a plain Tune trial hangs (ray-project/ray#13483).
- TPU chips: Ray's "TPU" resource, whole chips only (1, 2, 4 or 8), accelerator="tpu", devices=chips.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

TPU_CHIP_COUNTS = (1, 2, 4, 8)


class ResourceError(ValueError):
    """A resource request that Ray could never satisfy or that makes no sense; says how to fix it."""


@dataclasses.dataclass(frozen=True)
class TrialResources:
    cpus: float = 1.0
    """CPUs per trial (per worker when the trial is data-parallel)."""
    gpus: float = 0.0
    """GPUs per trial: a fraction up to 1 shares a card; a whole number above 1 runs data-parallel."""
    tpu_chips: int = 0
    """TPU chips per trial: 1, 2, 4 or 8."""
    workers: int = 0
    """Data-parallel workers; 0 means one per GPU when there are several GPUs, else a single process."""
    train_on_cpu: bool = False
    """Place the trial by its GPU or TPU request, train it on the CPU: on a local twin of a GPU or TPU cluster, whose
    accelerators are logical resources (Ray's fake_multinode provider)."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.cpus) and self.cpus > 0):
            raise ResourceError(f"--cpus-per-trial {self.cpus} must be a positive number of CPUs")
        if not (math.isfinite(self.gpus) and self.gpus >= 0):
            raise ResourceError(f"--gpus-per-trial {self.gpus} must be 0 or more")
        if self.gpus > 1 and not float(self.gpus).is_integer():
            raise ResourceError(
                f"--gpus-per-trial {self.gpus}: above 1, GPUs per trial must be whole (each data-parallel worker "
                "gets one card); use a fraction up to 1 to share a card, or a whole number to spread over cards"
            )
        if float(self.tpu_chips) not in TPU_CHIP_COUNTS and self.tpu_chips != 0:
            raise ResourceError(
                f"--tpu-chips-per-trial {self.tpu_chips}: Ray allocates TPU chips whole, 1, 2, 4 or 8 per trial "
                "(a fractional request would abort the whole sweep, not one trial)"
            )
        object.__setattr__(self, "tpu_chips", int(self.tpu_chips))
        if self.gpus and self.tpu_chips:
            raise ResourceError(
                "a trial can use GPUs or TPU chips, not both: drop --gpus-per-trial or --tpu-chips-per-trial"
            )
        if self.workers < 0:
            raise ResourceError(f"--workers-per-trial {self.workers} must be 0 (automatic) or more")
        if self.workers > 1 and self.tpu_chips:
            raise ResourceError("data-parallel TPU trials are not supported: one process drives all chips of a trial")
        if self.workers > 1 and 0 < self.gpus < 1:
            raise ResourceError("data-parallel workers each need a whole GPU: use --gpus-per-trial N with N > 1")

    @property
    def data_parallel_workers(self) -> int:
        """Workers of a data-parallel trial under Ray Train; 1 means the trial trains in its own process."""
        if self.workers:
            return self.workers
        return int(self.gpus) if self.gpus > 1 else 1

    @property
    def kind(self) -> str:
        return "tpu" if self.tpu_chips else "gpu" if self.gpus else "cpu"

    def trial_bundle(self) -> dict[str, float]:
        """What one trial process asks Ray for: everything, or for a data-parallel trial only its driver."""
        if self.data_parallel_workers > 1:
            return {"CPU": 1.0}
        bundle = {"CPU": float(self.cpus)}
        if self.gpus:
            bundle["GPU"] = float(self.gpus)
        if self.tpu_chips:
            bundle["TPU"] = float(self.tpu_chips)
        return bundle

    def worker_bundle(self) -> dict[str, float]:
        """What each data-parallel worker asks Ray for."""
        bundle = {"CPU": float(self.cpus)}
        if self.gpus:
            bundle["GPU"] = 1.0
        return bundle

    def trainer_arguments(self) -> dict[str, Any]:
        """accelerator, devices and CPU threads for forecaster.fit in one trial process (or worker)."""
        threads = max(1, int(self.cpus))
        if self.train_on_cpu:
            return {"accelerator": "cpu", "devices": 1, "threads": threads}
        if self.tpu_chips:
            return {"accelerator": "tpu", "devices": self.tpu_chips, "threads": threads}
        if self.gpus:
            return {"accelerator": "gpu", "devices": 1, "threads": threads}
        return {"accelerator": "cpu", "devices": 1, "threads": threads}

    def task_options(self, accelerated: bool = True) -> dict[str, object]:
        """ray.remote's options of a task that takes a trial's share of a node: its CPUs and, for one that trains
        (`accelerated`), its GPU fraction (one whole GPU at most: a data-parallel trial's configuration trains again
        on one) or TPU chips."""
        options: dict[str, object] = {"num_cpus": float(self.cpus)}
        if accelerated and self.gpus:
            options["num_gpus"] = min(float(self.gpus), 1.0)
        if accelerated and self.tpu_chips:
            options["resources"] = {"TPU": float(self.tpu_chips)}
        return options

    def task_fit_options(self) -> dict[str, object]:
        """threads, accelerator and devices of a fit in such a task: a trial's, on one GPU at most."""
        arguments = self.trainer_arguments()
        return arguments | ({"devices": 1} if arguments["accelerator"] == "gpu" else {})

    def describe(self) -> str:
        per = f"{self.cpus:g} CPU"
        if self.gpus:
            per += f", {self.gpus:g} GPU"
        if self.tpu_chips:
            per += f", {self.tpu_chips} TPU chip{'s' if self.tpu_chips > 1 else ''}"
        workers = self.data_parallel_workers
        if workers > 1:
            unit = "1 GPU" if self.gpus else f"{self.cpus:g} CPU"
            per = f"{workers} data-parallel workers of {unit} each (Ray Train, DDP)"
        return per + (", trained on the CPU" if self.train_on_cpu and (self.gpus or self.tpu_chips) else "")


DEFAULT_RESOURCES = TrialResources()
"""What a trial takes when its sweep asks for nothing else: one CPU."""
