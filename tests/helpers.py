"""Helpers the test modules share: reading a sweep's progress files while Tune may still be writing them, a
trial slow enough for a fault to land in its middle, Rays started with the `ray` command as a user would, and
waiting for a process tree to end."""

import contextlib
import dataclasses
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pandas as pd


def trial_histories(experiment_path, driver_pid: int | None = None) -> dict[str, pd.DataFrame]:
    """{trial folder in the sweep's storage: the rows it has reported so far}, for every trial that has reported an
    epoch. While this process drives the sweep, the rows come from the driver's own copy of each progress.csv,
    which Tune writes as each result arrives; the copy in the sweep's folder is synced only every ~10 s and at
    checkpoints, too late for a test that acts on a trial's progress. `driver_pid`: the sweep is driven by that
    process, on a local Ray it started; its driver's copies are read."""
    histories = {}
    for path in progress_files(experiment_path, driver_pid):
        try:
            history = pd.read_csv(path)
        except (pd.errors.EmptyDataError, pd.errors.ParserError, FileNotFoundError):
            continue  # caught mid-write, or a driver's copy removed once synced: the next look will have it
        if len(history) and "epoch" in history:
            histories[os.path.join(str(experiment_path), os.path.basename(os.path.dirname(path)))] = history
    return histories


def progress_files(experiment_path, driver_pid: int | None = None) -> list[str]:
    import ray

    name = os.path.basename(str(experiment_path).rstrip("/"))
    drivers_copies = f"artifacts/*/{name}/driver_artifacts/*/progress.csv"
    if driver_pid is not None:  # Ray names a session's folder after the process that started it
        from ray._common.utils import get_default_ray_temp_dir

        return glob.glob(f"{get_default_ray_temp_dir()}/session_2*_{driver_pid}/{drivers_copies}")
    if ray.is_initialized():
        from ray._private.worker import _global_node

        live = glob.glob(f"{_global_node.get_session_dir_path()}/{drivers_copies}")
        if live:
            return live
    return glob.glob(f"{experiment_path}/*/progress.csv")


def trial_progress(experiment_path):
    """{trial folder: (last epoch, pid of its latest process)} for the trials that reported."""
    return {
        folder: (int(history["epoch"].iloc[-1]), int(history["pid"].iloc[-1]))
        for folder, history in trial_histories(experiment_path).items()
        if "pid" in history
    }


# A model slow enough (about 40 ms an epoch) for a fault to land in the middle of a trial.
SLOW_TRIAL = {"model": "GRU", "hidden_dim": 64, "n_rnn_layers": 2, "dropout": 0.1, "batch_size": 8}


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def ray_env(**extra: str) -> dict[str, str]:
    """The environment of a `ray` command or a sweep started by a test: this venv's tools, no inherited address."""
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}", **extra)
    env.pop("RAY_ADDRESS", None)
    return env


DASHBOARD_PACKAGES = ("aiohttp", "aiohttp_cors", "grpc", "opencensus", "opentelemetry", "prometheus_client")
"""What `ray[default]` adds to `ray[tune]` and Ray's dashboard imports (ray/dashboard/optional_deps.py)."""
HIDE_INSTALLED = """import importlib.machinery, os, sys, sysconfig
SITE, HIDDEN = sysconfig.get_paths()["purelib"], {hidden!r}

class HideInstalled:
    # The copies pip installed cannot be imported; the aiohttp that Ray vendors for its runtime environment agent,
    # which every Ray install has, still can.
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in HIDDEN:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            where = spec and (spec.origin or next(iter(spec.submodule_search_locations or []), None))
            if where and os.path.relpath(where, SITE).startswith(top):
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, HideInstalled())
"""


def without_dashboard_packages(env: dict[str, str], folder) -> dict[str, str]:
    """`env` in which no process (the sweep's driver, Ray's daemons, its workers) can import the dashboard's packages,
    as where only `ray[tune]` is installed: a sitecustomize on PYTHONPATH that every Python process runs first."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "sitecustomize.py"), "w") as module:
        module.write(HIDE_INSTALLED.format(hidden=set(DASHBOARD_PACKAGES)))
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))}


def ray_command(*args: str, env: dict, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [os.path.join(BIN, "ray"), *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout
    )


@dataclasses.dataclass(frozen=True)
class RayHead:
    address: str  # the GCS, as `ray start --address` takes it
    dashboard: str  # the dashboard's URL, where `ray job submit --address` goes
    agent_port: int  # the head's dashboard agent's HTTP port, through which the dashboard starts a job

    def wait_for_job_agent(self, timeout_s: float = 120) -> None:
        """Until the head's dashboard agent listens: `ray start` returns before it does, and a job submitted before
        it registers is refused after 10 s ("No available agent to submit job"), which a busy machine can exceed."""
        deadline = time.time() + timeout_s
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.agent_port), timeout=5):
                return
            assert time.time() < deadline, f"the head's dashboard agent is not listening after {timeout_s} s"
            time.sleep(0.5)


@contextlib.contextmanager
def ray_head(env: dict, *options: str, num_cpus: int = 0, port: int | None = None):
    """`ray start --head` on this machine as a user would, but on free ports (a Ray the user runs here keeps 6379 and
    8265; `port` is the GCS's, if given); on the way out, every process of this Ray is stopped (its nodes, workers and
    jobs) and no other Ray."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    free, dashboard, client, agent = free_ports(4)
    port = port or free
    started = ray_command(
        "start",
        "--head",
        f"--port={port}",
        f"--num-cpus={num_cpus}",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dashboard}",
        f"--ray-client-server-port={client}",
        f"--dashboard-agent-listen-port={agent}",
        *options,
        env=env,
        timeout=120,
    )
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        address = re.search(r"ray start --address='([^']+)'", started.stdout + started.stderr).group(1)
        yield RayHead(address, f"http://127.0.0.1:{dashboard}", agent)
    finally:
        stop_ray(port)


def ray_worker_node(env: dict, head: RayHead, num_cpus: int) -> None:
    """`ray start --address` on this machine: a worker node of `head`, stopped with it."""
    [agent] = free_ports(1)
    started = ray_command(
        "start",
        f"--address={head.address}",
        f"--num-cpus={num_cpus}",
        f"--dashboard-agent-listen-port={agent}",
        env=env,
        timeout=120,
    )
    assert started.returncode == 0, started.stderr[-2000:]


def cluster_head_args() -> dict:
    """`head_node_args` of a `ray.cluster_utils.Cluster` whose head trains nothing, its dashboard and dashboard agent
    on free ports. On Ray's fixed defaults (8265, 52365) two heads started at once by the two test workers collide,
    and one waits 60 s (RAY_DASHBOARD_STARTUP_TIMEOUT_S) for a dashboard that never comes up."""
    dashboard, agent = free_ports(2)
    return {"num_cpus": 0, "dashboard_port": dashboard, "dashboard_agent_listen_port": agent}


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on now, all different."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for held in sockets:
            held.bind(("127.0.0.1", 0))
        return [held.getsockname()[1] for held in sockets]


def stop_ray(gcs_port: int, timeout_s: float = 60) -> None:
    """Kill the Ray whose GCS listens on `gcs_port` (`ray stop --force` would kill every Ray of this user): each
    process that names that port (GCS, raylets, monitors, dashboard, workers) with all it started (agents, jobs)."""
    names_port = re.compile(rf"[:=]{gcs_port}(?!\d)")
    for _ in range(3):  # a raylet may have started a worker after the listing: look again
        roots = [pid for pid, command in commands(all_pids(), width=100_000).items() if names_port.search(command)]
        doomed = process_tree(*roots) - {os.getpid()}
        if not doomed:
            break
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_until_gone(doomed, timeout_s, f"the Ray on port {gcs_port}")
    from ray._common.utils import get_ray_address_file

    with contextlib.suppress(FileNotFoundError):  # as `ray stop` does: `--address auto` no longer finds it
        with open(get_ray_address_file(None)) as current:
            named = names_port.search(current.read())
        if named:
            os.remove(get_ray_address_file(None))


def process_tree(*pids: int) -> set[int]:
    """Processes and all their descendants now (a driver with its embedded Ray: GCS, raylet, workers)."""
    listing = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in listing.splitlines():
        child, parent = map(int, line.split())
        children.setdefault(parent, []).append(child)
    tree, frontier = set(pids), list(pids)
    while frontier:
        for child in children.get(frontier.pop(), []):
            tree.add(child)
            frontier.append(child)
    return tree


def wait_until_gone(pids: set[int], timeout_s: float, what: str) -> None:
    """Wait until none of `pids` runs (a zombie has ended), at most `timeout_s`; fail naming what is left."""

    def running(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rpartition(")")[2].split()[0] != "Z"
        except (FileNotFoundError, ProcessLookupError):
            return False

    deadline = time.monotonic() + timeout_s
    while left := {pid for pid in pids if running(pid)}:
        assert time.monotonic() < deadline, f"{what}: {commands(left)} still run after {timeout_s} s"
        time.sleep(0.1)


def commands(pids: set[int], width: int = 200) -> dict[int, str]:
    """{pid: its command line, cut to `width` characters}; from /proc, since `ps` cuts them to 80 where it sees no
    terminal (under pytest)."""
    lines = {}
    for pid in sorted(pids):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError), open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            lines[pid] = cmdline.read().replace(b"\0", b" ").decode(errors="replace")[:width]
    return lines


def all_pids() -> set[int]:
    return {int(entry) for entry in os.listdir("/proc") if entry.isdigit()}


class LeavesAMark:
    """What a pickle can do when it is loaded: run code (here, create a file at `path`)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def reports_then_leaves_a_newer_checkpoint_and_fails(config):
    """A Tune trainable: on its first run it reports checkpoints 0 and 1, writes checkpoint 5 (complete, its report in
    the trial's progress.csv but the checkpoint not registered: as when Tune's state was saved before it registered
    the trial's last checkpoint), 6 (cut short) and 7 (complete, its report never recorded: as when the driver was
    killed while the trial ran on), and fails; on its retry it reports which checkpoint it resumes from."""
    import csv
    import os
    import tempfile
    import time

    import torch
    from ray import tune

    from sweeps.plan.storage import CHECKPOINT_FILE
    from sweeps.trials.trial import newest_checkpoint

    given = tune.get_checkpoint()
    if given is not None:
        tune.report(
            {"resumed_from": os.path.basename(newest_checkpoint(given).path), "given": os.path.basename(given.path)}
        )
        return
    for epoch in range(2):
        with tempfile.TemporaryDirectory() as folder:
            torch.save({"epoch": epoch}, os.path.join(folder, CHECKPOINT_FILE))
            tune.report({"epoch": epoch}, checkpoint=tune.Checkpoint.from_directory(folder))
    storage = tune.get_context().get_storage()
    trial_folder = storage.trial_fs_path
    # The driver writes progress.csv in its staging folder and copies it to the trial's folder now and then: the
    # report of checkpoint 5 goes into both, once the driver has written the two reports.
    copies = [os.path.join(folder, "progress.csv") for folder in (storage.trial_driver_staging_path, trial_folder)]
    deadline = time.monotonic() + 60
    rows: list[dict] = []
    while len(rows) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        if os.path.exists(copies[0]):
            with open(copies[0], newline="") as stream:
                rows = list(csv.DictReader(stream))
    for copy in copies:
        with open(copy, "a" if os.path.exists(copy) else "w", newline="") as stream:
            writer = csv.DictWriter(stream, fieldnames=list(rows[-1]))
            if stream.tell() == 0:
                writer.writeheader()
                writer.writerows(rows)
            writer.writerow(rows[-1] | {"epoch": 5, "checkpoint_dir_name": "checkpoint_000005"})
    for index, content in ((5, None), (6, b"cut sh"), (7, None)):
        os.makedirs(os.path.join(trial_folder, f"checkpoint_{index:06d}"))
        path = os.path.join(trial_folder, f"checkpoint_{index:06d}", CHECKPOINT_FILE)
        if content is None:
            torch.save({"epoch": index}, path)
        else:
            with open(path, "wb") as stream:
                stream.write(content)
    raise RuntimeError("the trial's process dies")
