"""cluster/: the cluster files pass Ray's checker and the security rules; the local twins autoscale for
real; a sweep goes through `ray job submit`; the dashboard's API wants the token.

Every Ray here is started with the `ray` command as a user would (`ray start --head`), on free ports, and
stopped whatever happens (tests/helpers.py: that Ray only, never another Ray of the machine); each command has a
time limit, so that a hung autoscaler fails its test instead of the CI run.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pandas as pd
import pytest
import yaml

from cluster.check import check_file, security_problems
from tests.helpers import ROOT, RayHead, free_ports, ray_command, ray_env, ray_head, ray_worker_node

CLUSTER_FILES = sorted(glob.glob(os.path.join(ROOT, "cluster", "*.yaml")))


def load(name: str) -> dict:
    with open(os.path.join(ROOT, "cluster", name)) as file:
        return yaml.safe_load(file)


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=os.path.basename)
def test_every_cluster_file_passes_rays_checker_and_the_security_rules(path):
    assert check_file(path) == []


def test_the_files_are_the_promised_ones():
    names = {os.path.basename(path) for path in CLUSTER_FILES}
    assert {"aws-gpu.yaml", "gcp-tpu.yaml", "onprem.yaml", "local-gpu.yaml", "local-tpu.yaml"} <= names
    gpu, tpu = load("aws-gpu.yaml"), load("gcp-tpu.yaml")
    assert gpu["available_node_types"]["ray.worker.gpu"]["resources"]["GPU"] == 1
    assert gpu["available_node_types"]["ray.worker.gpu"]["min_workers"] == 0
    assert tpu["available_node_types"]["ray_tpu"]["resources"]["TPU"] == 4
    twins = {"local-gpu.yaml": gpu, "local-tpu.yaml": tpu}
    for twin, cloud in twins.items():  # the twins have the cloud files' worker resources (scaled CPUs aside)
        accelerators = {
            key: value
            for node in load(twin)["available_node_types"].values()
            for key, value in node["resources"].items()
            if key != "CPU"
        }
        assert accelerators == {
            key: value
            for node in cloud["available_node_types"].values()
            for key, value in node["resources"].items()
            if key != "CPU"
        }


def spoiled(change) -> dict:
    config = copy.deepcopy(load("aws-gpu.yaml"))
    change(config)
    return config


@pytest.mark.parametrize(
    "change, problem",
    [
        (
            lambda c: c["provider"].update(
                security_group={
                    "GroupName": "open",
                    "IpPermissions": [
                        {"FromPort": 8265, "ToPort": 8265, "IpProtocol": "tcp", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}
                    ],
                }
            ),
            "opens 8265 (dashboard) to the whole internet",
        ),
        (
            lambda c: c["provider"].update(
                security_group={
                    "GroupName": "open",
                    "IpPermissions": [
                        {"FromPort": 0, "ToPort": 65535, "IpProtocol": "tcp", "Ipv6Ranges": [{"CidrIpv6": "::/0"}]}
                    ],
                }
            ),
            "opens 6379 (GCS), 8265 (dashboard), 10001 (Ray client)",
        ),
        (
            lambda c: c["available_node_types"]["ray.worker.gpu"]["node_config"].pop("SecurityGroupIds"),
            "'ray.worker.gpu' names no SecurityGroupIds: Ray would create a security group with SSH open to 0.0.0.0/0",
        ),
        (
            lambda c: c["available_node_types"]["ray.head.default"]["node_config"].pop("IamInstanceProfile"),
            "the head names no IamInstanceProfile",
        ),
        (
            lambda c: c.update(
                head_start_ray_commands=["RAY_AUTH_MODE=token ray start --head --dashboard-host=0.0.0.0"]
            ),
            "the dashboard is bound to all interfaces",
        ),
        (
            lambda c: c.update(worker_start_ray_commands=["ray start --address=$RAY_HEAD_IP:6379"]),
            "starts Ray without RAY_AUTH_MODE=token",
        ),
        (lambda c: c["file_mounts"].pop("~/.ray/auth_token"), "does not copy the Ray token"),
    ],
    ids=[
        "dashboard-port",
        "all-ports-ipv6",
        "no-security-group",
        "broad-role",
        "dashboard-host",
        "no-token-auth",
        "no-token-file",
    ],
)
def test_the_security_rules_catch_an_open_cluster(change, problem):
    assert load("aws-gpu.yaml") and not security_problems(load("aws-gpu.yaml"))
    problems = security_problems(spoiled(change))
    assert len(problems) == 1 and problem in problems[0], problems


def test_a_gcp_node_on_the_default_network_and_a_file_ray_refuses_are_caught(tmp_path):
    gcp = load("gcp-tpu.yaml")
    del gcp["available_node_types"]["ray_head_default"]["node_config"]["networkInterfaces"]
    assert "'ray_head_default' names no subnet" in security_problems(gcp)[0]
    broken = load("aws-gpu.yaml")
    broken["max_wokers"] = 8
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(broken))
    problems = check_file(str(path))
    assert (
        len(problems) == 1 and "Ray's cluster-config checker refuses it" in problems[0] and "max_wokers" in problems[0]
    )
    done = subprocess.run(
        [sys.executable, "-m", "cluster.check", str(path), *CLUSTER_FILES],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 1 and "max_wokers" in done.stderr and done.stderr.count("\n") == 1
    (tmp_path / "broken.yaml").write_text("a: [\n")
    assert "cannot read it as YAML" in check_file(str(tmp_path / "broken.yaml"))[0]
    assert "cannot read it as YAML: [Errno 2]" in check_file(str(tmp_path / "missing.yaml"))[0]


# --- real Ray clusters started with the `ray` command ------------------------------------------------


def submit(env: dict, head: RayHead, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    head.wait_for_job_agent()
    return ray_command(
        "job",
        "submit",
        "--address",
        head.dashboard,
        "--",
        "python",
        "-m",
        "sweeps.run",
        *args,
        env=env,
        timeout=timeout,
    )


NODES_WITH = """import json, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False)
print(json.dumps([node["NodeID"] for node in ray.nodes() if node["Resources"].get(sys.argv[2], 0) > 0]))
"""
"""Prints the ids of the live nodes of the cluster at argv[1] that have the resource named by argv[2]."""


def written_folder(output: str) -> str:
    return re.search(r"Written to (\S+):", output).group(1)


@pytest.mark.slow
@pytest.mark.parametrize(
    "twin, request_, accelerator",
    [
        ("local-gpu.yaml", ["--gpus-per-trial", "0.25"], "GPU"),
        ("local-tpu.yaml", ["--tpu-chips-per-trial", "2"], "TPU"),
    ],
    ids=["gpu", "tpu"],
)
def test_the_local_twin_autoscales_accelerator_workers_for_a_sweep_submitted_with_token_authentication(
    tmp_path, twin, request_, accelerator
):
    """As on the cloud files' clusters: token authentication on (the head, the nodes the autoscaler adds, the job
    and the dashboard's API all use the token file), and the sweep submitted with `ray job submit`."""
    token_file = tmp_path / "auth_token"
    token_file.write_text("a" * 32 + "\n")
    token_file.chmod(0o600)
    env = ray_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token_file), RAY_FAKE_CLUSTER="1")
    # The twin as shipped, told where the head's GCS is: off 6379, which a Ray of the user's may hold, its fake nodes
    # would look for the head at 6379.
    from ray._private.services import get_node_ip_address

    [port] = free_ports(1)
    config = load(twin)
    config["provider"]["gcs_address"] = f"{get_node_ip_address()}:{port}"
    (tmp_path / twin).write_text(yaml.safe_dump(config))
    with ray_head(env, f"--autoscaling-config={tmp_path / twin}", port=port) as head:
        job = submit(
            env,
            head,
            "air_rnn",
            "--smoke-test",
            "--num-samples",  # two trials: one worker of either twin holds both
            "2",
            "--address",
            "auto",
            *request_,
            "--train-on-cpu",  # the twins' accelerators are logical
            "--storage-path",
            str(tmp_path / "results"),
            timeout=240,
        )
        assert job.returncode == 0, (job.stdout + job.stderr)[-3000:]
        assert "succeeded" in job.stdout + job.stderr
        assert "trials wait for the autoscaler to add one" in job.stdout  # the head alone holds no trial
        added = set(
            json.loads(
                subprocess.run(  # in a process of its own: a driver of this cluster in the
                    [
                        sys.executable,
                        "-c",
                        NODES_WITH,
                        head.address,
                        accelerator,
                    ],  # test process breaks the next local Ray's actors
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=60,
                ).stdout.splitlines()[-1]
            )
        )
        assert_the_jobs_api_wants_the_token(head)
    assert added, f"the autoscaler added no {accelerator} worker"
    assert written_folder(job.stdout).startswith(str(tmp_path / "results"))
    results = pd.read_csv(os.path.join(written_folder(job.stdout), "results.csv"))
    assert len(results) == 2 and results.status.isin(["COMPLETED", "STOPPED"]).all()
    assert set(results.node) <= added  # every trial ran on a worker the autoscaler launched


def assert_the_jobs_api_wants_the_token(head: RayHead) -> None:
    """The sweep's job is listed as SUCCEEDED to the token ("a" * 32); without it, or with another, Ray refuses."""
    with urllib.request.urlopen(
        urllib.request.Request(f"{head.dashboard}/api/jobs/", headers={"Authorization": f"Bearer {'a' * 32}"}),
        timeout=30,
    ) as answer:
        jobs = json.load(answer)
    assert [job["status"] for job in jobs if "sweeps.run air_rnn" in job["entrypoint"]] == ["SUCCEEDED"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{head.dashboard}/api/jobs/", timeout=30)
    assert refused.value.code == 401
    unauthorized = ray_command(
        "job",
        "list",
        "--address",
        head.dashboard,
        env=ray_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="b" * 32),
        timeout=60,
    )
    assert unauthorized.returncode != 0


CHROMIUM = [
    "chromium",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = os.path.join(ROOT, "test-artifacts")


def browse(url: str, profile, *options: str) -> str:
    """The page as headless Chromium renders it once its scripts have run (the dashboard is a React app), or
    what `options` ask for instead (a screenshot); "" when Chromium, slowed by a busy machine, takes over 3 min."""
    try:
        done = subprocess.run(
            [*CHROMIUM, f"--user-data-dir={profile}", "--virtual-time-budget=10000", *(options or ["--dump-dom"]), url],
            capture_output=True,
            text=True,
            timeout=180,
        )
    except subprocess.TimeoutExpired:
        return ""
    return done.stdout


def alive_trial_actors(head: RayHead) -> list[dict]:
    """The sweep's trial actors that are ALIVE, from the dashboard's state API (no browser)."""
    query = "filter_keys=state&filter_predicates=%3D&filter_values=ALIVE&detail=false&limit=1000"
    with urllib.request.urlopen(f"{head.dashboard}/api/v0/actors?{query}", timeout=60) as answer:
        actors = json.load(answer)["data"]["result"]["result"]
    return [actor for actor in actors if actor["class_name"].startswith("ImplicitFunc")]


def job_story(env: dict, head: RayHead, job_id: str) -> str:
    """What the sweep's job printed, for a failure message."""
    logs = ray_command("job", "logs", "--address", head.dashboard, job_id, env=env, timeout=60)
    return (logs.stdout + logs.stderr)[-3000:]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_the_dashboard_in_a_real_browser_shows_the_running_sweep(tmp_path):
    """Token authentication off here: its login is a form, and the twins above test the token on the API. The sweep
    is far longer than the test (it ends with the Ray), so that a slow, busy machine still finds it running; its
    node has one CPU, so that one trial at a time trains while Chromium renders."""
    env = ray_env(RAY_AUTH_MODE="disabled")
    with ray_head(env) as head:
        ray_worker_node(env, head, num_cpus=1)
        head.wait_for_job_agent()
        args = [
            "air_rnn",
            "--num-samples",
            "8",
            "--max-epochs",
            "100000",
            "--scheduler",
            "fifo",
            "--set",
            "model=GRU",
            "--set",
            "hidden_dim=64",
            "--set",
            "n_rnn_layers=2",
            "--address",
            "auto",
            "--storage-path",
            str(tmp_path),
            "--no-future",
        ]
        job = ray_command(
            "job",
            "submit",
            "--no-wait",
            "--address",
            head.dashboard,
            "--",
            "python",
            "-m",
            "sweeps.run",
            *args,
            env=env,
            timeout=60,
        )
        assert job.returncode == 0, job.stderr[-2000:]
        job_id = re.search(r"Job '(\w+)' submitted successfully", job.stdout + job.stderr).group(1)
        deadline = time.time() + 300
        while time.time() < deadline and not alive_trial_actors(head):
            time.sleep(2)
        assert alive_trial_actors(head), (
            f"no trial actor ALIVE after 5 min; the job said:\n{job_story(env, head, job_id)}"
        )

        # A row per running trial: Tune's actor class, the trainable's name and ALIVE. Its actor id is not read: Ray
        # 2.60's dashboard was seen on a busy machine to list a trial under the nil id (all f), which names no job.
        deadline, trial_rows, actors = time.time() + 600, [], ""
        while time.time() < deadline and not trial_rows:
            actors = browse(f"{head.dashboard}/#/actors", tmp_path / "profile")
            trial_rows = [
                row
                for row in actors.split("<tr")[1:]
                if "ImplicitFunc<" in row and ">train_trial<" in row and ">ALIVE<" in row
            ]
        assert trial_rows, f"no trial of the sweep on the dashboard's actors page:\n{actors[-2000:]}"
        # The jobs page shows, running, the job that Ray's state API records the ALIVE trials under.
        trial_jobs = {actor["job_id"] for actor in alive_trial_actors(head)}
        assert len(trial_jobs) == 1, trial_jobs
        job = trial_jobs.pop()
        jobs = ""
        while time.time() < deadline and f">{job}<" not in jobs:
            jobs = browse(f"{head.dashboard}/#/jobs", tmp_path / "profile")
        assert "python -m sweeps.run air_rnn --num-samples 8" in jobs and "RUNNING" in jobs, jobs[-2000:]
        assert f">{job}<" in jobs, jobs[-2000:]  # the trials belong to the sweep's job
        os.makedirs(ARTIFACTS, exist_ok=True)
        screenshot = os.path.join(ARTIFACTS, "dashboard-actors.png")
        browse(
            f"{head.dashboard}/#/actors", tmp_path / "profile", f"--screenshot={screenshot}", "--window-size=1600,1000"
        )
        assert os.path.getsize(screenshot) > 10_000
