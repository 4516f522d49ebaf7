"""How busy a GPU is while trials share it: its utilization (the share of time one or more kernels ran, as NVML
defines it) and memory in use, sampled in a thread every quarter second while a block of code runs, through
nvidia-ml-py where it is installed, else `nvidia-smi`.

    with GpuBusy() as busy:
        ...  # trials training on the card
    busy.summary()  # {"gpu_busy_share": 0.62, "gpu_memory_used_mb_max": 1930.0, "samples": 40, "sampled_with": ...}
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import threading

EVERY_S = 0.25


def physical_index() -> int:
    """The card torch calls cuda:0, as NVML and nvidia-smi number it (CUDA_VISIBLE_DEVICES lists physical ids)."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


class GpuBusy:
    """Samples GPU utilization and memory while the `with` block runs (see the module's docstring)."""

    def __init__(self, index: int | None = None, every_s: float = EVERY_S):
        self.index = physical_index() if index is None else index
        self.every_s = every_s
        self.busy: list[float] = []
        self.memory_mb: list[float] = []
        self.sampled_with = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> GpuBusy:
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
            self.sampled_with = "nvidia-ml-py"
            self._thread = threading.Thread(target=self._nvml, args=(pynvml, handle), daemon=True)
        except Exception as error:  # not installed, or no driver: nvidia-smi, where it is on PATH
            if shutil.which("nvidia-smi") is None:
                self.sampled_with = f"unavailable: neither nvidia-ml-py ({error}) nor nvidia-smi"
                return self
            self.sampled_with = "nvidia-smi"
            self._process = subprocess.Popen(
                [
                    "nvidia-smi",
                    f"--id={self.index}",
                    "--query-gpu=utilization.gpu,memory.used",
                    "--format=csv,noheader,nounits",
                    f"--loop-ms={int(self.every_s * 1000)}",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            self._thread = threading.Thread(target=self._smi, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._process is not None:
            self._process.terminate()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _nvml(self, pynvml, handle) -> None:
        while not self._stop.wait(self.every_s):
            self.busy.append(float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))
            self.memory_mb.append(pynvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20)

    def _smi(self) -> None:
        for line in self._process.stdout:
            busy, _, memory = line.partition(",")
            try:
                self.busy.append(float(busy))
                self.memory_mb.append(float(memory))
            except ValueError:  # "[N/A]" on cards that do not report it
                continue

    def summary(self) -> dict:
        """The mean busy share (0-1) and the most memory in use over the block, or why there are none."""
        if not self.busy:
            return {"gpu_busy_share": None, "samples": 0, "sampled_with": self.sampled_with or "no samples"}
        return {
            "gpu_busy_share": statistics.fmean(self.busy) / 100,
            "gpu_memory_used_mb_max": max(self.memory_mb),
            "samples": len(self.busy),
            "sampled_with": self.sampled_with,
        }
