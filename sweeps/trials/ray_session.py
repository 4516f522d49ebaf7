"""Which Ray the sweep runs on, and where its dashboard is.

- No --address (and no RAY_ADDRESS): the sweep starts a Ray of its own on this machine, which stops with it.
  Any number of sweeps can run side by side this way, each on its own Ray with its own dashboard: on
  127.0.0.1:8265, or the next free port when another Ray's dashboard holds it. A Ray already started here
  with `ray start` is left alone (the banner says it is there; `--address auto` runs on it instead).
- `--address local`: the same, said explicitly (Ray's own word for a new local instance).
- `--address auto` or `--address host:port`: join that cluster as one more driver, as several sweeps can.
- Inside a Ray job (`ray job submit` sets RAY_ADDRESS): join the job's cluster, as Ray's convention is.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
from typing import Any

from sweeps.trials.cluster_probe import ray_started_on_this_machine

WARM_WORKERS: dict[str, object] = {
    "preload_python_modules": ["sweeps.trials.warm"],
    "prestart_worker_first_driver": False,
}
"""Ray's settings for nodes whose workers start warm (sweeps/trials/warm_pool.py): every worker imports torch, Lightning
and the trial's code as it starts (sweeps/trials/warm.py), and the raylet prestarts none with the job's plain
environment, which no trial could use. The sweep's own Ray passes them to ray.init; a cluster's `ray start` lines set
them as RAY_preload_python_modules and RAY_prestart_worker_first_driver. SWEEPS_WARM_WORKERS=0 turns them off (each idle
warm worker holds torch in memory: bench/sweep.py reports how much)."""


def warm_workers_enabled() -> bool:
    return os.environ.get("SWEEPS_WARM_WORKERS", "1") != "0"


def warm_workers() -> dict[str, object]:
    return WARM_WORKERS if warm_workers_enabled() else {}


def trial_priority() -> dict[str, int]:
    """Ray runs its workers at nice 15, so that its own daemons keep the CPU; on a machine that anything else
    keeps busy (a build, a browser, another sweep's driver) such trials get a few percent of a core and crawl.
    The sweep's own Ray runs them at normal priority instead, unless the user set RAY_worker_niceness."""
    return {} if "RAY_worker_niceness" in os.environ else {"worker_niceness": 0}


class RaySessionError(RuntimeError):
    """Ray cannot be started or joined as asked; the message says what to change."""


@dataclasses.dataclass(frozen=True)
class RaySession:
    own: bool
    """True: a Ray started by this sweep for itself (stopped when it ends); False: an existing cluster joined."""
    address: str
    """The cluster's GCS address."""
    how: str
    """How it was chosen, in words, for the banner."""
    dashboard_url: str
    dashboard_missing: str = ""
    """Why a Ray of the sweep's own has no dashboard (its packages are not installed), or empty."""

    def describe(self) -> str:
        if self.own:
            return f"a new local Ray of this sweep's own ({self.address}), stopped when the sweep ends{self.how}"
        return f"the existing Ray cluster at {self.address}, joined {self.how}"


def requested_address(address: str | None) -> str | None:
    """The cluster to join, or None for a Ray of the sweep's own: --address, else RAY_ADDRESS, else None."""
    if address == "local":
        return None
    return address or os.environ.get("RAY_ADDRESS") or None


def check_dashboard_port(host: str, port: int) -> None:
    """Refuse, before anything starts, a dashboard port that something else holds."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise RaySessionError(
                f"--dashboard-port {port}: {host}:{port} is taken ({error.strerror}), most likely by another Ray's "
                "dashboard; leave --dashboard-port out to take the next free port, or give another one"
            ) from None


def dashboard_packages_missing() -> str:
    """What keeps Ray's dashboard from starting here, or empty: Ray's own test (it imports what the dashboard imports,
    which `ray[tune]` alone, a slim image or Ray installed without its dependencies lack), made before ray.init,
    which would otherwise refuse to start at all ("Cannot include dashboard with missing packages")."""
    try:
        import ray.dashboard.optional_deps  # noqa: F401
    except ImportError as error:
        return str(error)
    return ""


def start_ray(address: str | None, dashboard_host: str, dashboard_port: int | None) -> RaySession:
    """Join the cluster asked for, or start a Ray of the sweep's own (see the module's docstring)."""
    import ray

    if ray.is_initialized():  # a caller (a test, a notebook) runs the sweep on its own session
        context = ray.get_runtime_context()
        return RaySession(False, context.gcs_address, "(this process's Ray session)", _dashboard_url(context))
    join = requested_address(address)
    if join:
        try:
            joined: Any = ray.init(address=join, logging_level=logging.WARNING)
        except ConnectionError as error:
            raise RaySessionError(f"cannot join the Ray cluster at {join}: {error}") from None
        how = "(RAY_ADDRESS)" if not address else f"(--address {address})"
        return RaySession(False, joined.address_info["gcs_address"], how, _dashboard_url(joined))
    if dashboard_port is not None:
        check_dashboard_port(dashboard_host, dashboard_port)
    other = ray_started_on_this_machine()
    missing = dashboard_packages_missing()
    try:
        started: Any = ray.init(
            address="local",
            include_dashboard=not missing,
            dashboard_host=dashboard_host,
            dashboard_port=dashboard_port,
            logging_level=logging.WARNING,
            _system_config={**warm_workers(), **trial_priority()},
        )
    except ValueError as error:  # the port was taken between the check and Ray's own
        ray.shutdown()
        raise RaySessionError(f"--dashboard-port {dashboard_port}: {error}") from None
    note = f"; another Ray runs here at {other} (--address auto runs the sweep on it)" if other else ""
    return RaySession(True, started.address_info["gcs_address"], note, _dashboard_url(started), missing)


def _dashboard_url(context: object) -> str:
    url = getattr(context, "dashboard_url", None) or ""
    return url if not url or url.startswith("http") else f"http://{url}"


def dashboard_line(session: RaySession) -> str:
    if session.dashboard_missing:
        return (
            f"off: this Ray's environment lacks the dashboard's packages ({session.dashboard_missing}); "
            "pip install 'ray[default]' for it"
        )
    if not session.dashboard_url:
        return "not running (pip install 'ray[default]' for the dashboard)"
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return (
            f"{session.dashboard_url}  (token authentication is on: when the page asks, paste the token that "
            "`ray get-auth-token` prints)"
        )
    return session.dashboard_url
