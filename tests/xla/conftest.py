"""The XLA tests run on a real XLA device without a TPU: torch-xla's PJRT CPU client (PJRT_DEVICE=CPU), in the
separate environment `make xla-env` builds (torch 2.9 + torch-xla 2.9). `make test-xla` runs them; the main
`make test` never collects this folder (pyproject.toml: norecursedirs), and without torch-xla every module here
skips.

Lightning refuses accelerator="tpu" where it counts no TPU chip: pjrt_cpu_shim/sitecustomize.py makes it count
the PJRT CPU devices instead. It is installed here for this process, and its folder goes on PYTHONPATH for every
subprocess a test starts (and the processes torch-xla spawns from those), where Python imports it at startup.
"""

import importlib.util
import os

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pjrt_cpu_shim")

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ["PYTHONPATH"] = os.pathsep.join([SHIM, *filter(None, [os.environ.get("PYTHONPATH")])])
_spec = importlib.util.spec_from_file_location("pjrt_cpu_shim", os.path.join(SHIM, "sitecustomize.py"))
_spec.loader.exec_module(importlib.util.module_from_spec(_spec))  # installs the shim in this process


def pytest_configure(config):
    # Lightning 2.6 calls torch-xla's deprecated names (xm.xla_device, xm.mark_step) at every step; and with the shim,
    # the CPU fits the tests compare with hear that a "TPU" is available but not used.
    for message in ("Use torch_xla.device instead", "Use torch_xla.sync instead", "TPU available but not used"):
        config.addinivalue_line("filterwarnings", f"ignore:{message}")
