"""Test-only shim: Lightning's XLAAccelerator accepts torch-xla's PJRT CPU device (PJRT_DEVICE=CPU).

Lightning counts TPU chips (`torch_xla._internal.tpu.num_available_devices()`), finds none on a machine
without a TPU and refuses `accelerator="tpu"`. Where PJRT_DEVICE=CPU, this makes `XLAAccelerator.is_available`
and `auto_device_count` (of `lightning.fabric`, which `lightning.pytorch`'s inherits) count the CPU devices of
the PJRT CPU client instead: CPU_NUM_DEVICES, 1 by default. Nothing else changes; on a TPU (PJRT_DEVICE=TPU)
this does nothing.

It lives only in tests/xla: tests/xla/conftest.py installs it in the pytest process, and puts this folder on
PYTHONPATH for the subprocesses the tests start (`python -m forecaster.fit ...`, and the processes torch-xla
spawns), where Python imports this file as `sitecustomize` at startup. It patches Lightning when Lightning's
module is first imported (an import hook), so that a process that never imports Lightning pays nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

_MODULE = "lightning.fabric.accelerators.xla"


def pjrt_cpu_device_count() -> int:
    """The devices of the PJRT CPU client: torch-xla reads CPU_NUM_DEVICES (default 1)."""
    return int(os.environ.get("CPU_NUM_DEVICES", "1"))


def patch(module) -> None:
    """Make `module.XLAAccelerator` (Lightning's fabric one) count PJRT CPU devices where PJRT_DEVICE=CPU."""
    accelerator = module.XLAAccelerator
    if getattr(accelerator, "_pjrt_cpu_shim", False):
        return
    tpu_count, tpu_available = accelerator.auto_device_count, accelerator.is_available

    def auto_device_count() -> int:
        return pjrt_cpu_device_count() if os.environ.get("PJRT_DEVICE") == "CPU" else tpu_count()

    def is_available() -> bool:
        return pjrt_cpu_device_count() > 0 if os.environ.get("PJRT_DEVICE") == "CPU" else tpu_available()

    accelerator.auto_device_count = staticmethod(auto_device_count)
    accelerator.is_available = staticmethod(is_available)
    accelerator._pjrt_cpu_shim = True


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches Lightning's XLA accelerator module right after it is first executed."""

    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            patch(module)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Patch now if Lightning's module is loaded, else when it is."""
    if _MODULE in sys.modules:
        patch(sys.modules[_MODULE])
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


install()
