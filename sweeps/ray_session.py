"""Which Ray the sweep runs on, and where its dashboard is.

Without --address the sweep starts a local Ray whose dashboard only this machine can reach (127.0.0.1);
with it, the sweep joins that cluster (`auto`, or host:port) as one more driver.
"""

from __future__ import annotations

import logging
import os


def start_ray(address: str | None, dashboard_host: str, dashboard_port: int):
    """Join the cluster at `address`, or start a local Ray; returns Ray's context (its dashboard_url)."""
    import ray

    if ray.is_initialized():
        return ray.get_runtime_context()
    if address:
        return ray.init(address=address, logging_level=logging.WARNING)
    return ray.init(
        include_dashboard=True,
        dashboard_host=dashboard_host,
        dashboard_port=dashboard_port,
        logging_level=logging.WARNING,
    )


def dashboard_line(context) -> str:
    url = getattr(context, "dashboard_url", None) or ""
    if not url:
        return "not running (install ray[default] for the dashboard)"
    url = url if url.startswith("http") else f"http://{url}"
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return (
            f"{url}  (token authentication is on: when the page asks, paste the token that `ray get-auth-token` prints)"
        )
    return url
