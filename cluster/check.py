"""`python -m cluster.check FILE.yaml ...`: is a Ray cluster file valid, and is its cluster closed to the world?

Offline, before `ray up` spends money: each file must pass Ray's own cluster-config checker, and these
security rules, which hold for every file in cluster/ and should for any file a user derives from them:
- no ingress rule opens a port to the whole internet (0.0.0.0/0 or ::/0): not Ray's ports (GCS 6379,
  dashboard 8265, client 10001, ...), and not SSH either, where the provider lets the file narrow it;
- on AWS every node type names its own security group and the head its own instance profile (otherwise
  Ray creates a security group with SSH open to the world, and a head role with full EC2 and S3 access);
  on Google Cloud every node type names its subnet (the default network opens SSH to the world);
- Ray's token authentication is on for every `ray start` (RAY_AUTH_MODE=token) and the token reaches
  every node (file_mounts of ~/.ray/auth_token);
- the dashboard is never bound to all interfaces (`--dashboard-host=0.0.0.0`): it is reached through
  `ray dashboard FILE.yaml`, an SSH tunnel.
The local twins (provider fake_multinode) start no Ray themselves and are only checked for the rest.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from typing import Any

import yaml

WORLD = ("0.0.0.0/0", "::/0")
RAY_PORTS = {6379: "GCS", 8265: "dashboard", 10001: "Ray client", 8076: "object manager", 52365: "dashboard agent"}
TOKEN_FILE = "~/.ray/auth_token"


def check_file(path: str) -> list[str]:
    """Every problem of one cluster file, in words; an empty list when it is fine."""
    try:
        with open(path) as file:
            config = yaml.safe_load(file)
    except (OSError, yaml.YAMLError) as error:
        return [f"{path}: cannot read it as YAML: {str(error).splitlines()[0]}"]
    if not isinstance(config, dict):
        return [f"{path}: not a cluster file: its top level is not a mapping of keys"]
    problems = [f"{path}: {problem}" for problem in _ray_schema(config) + security_problems(config)]
    return problems


def _ray_schema(config: dict[str, Any]) -> list[str]:
    import copy

    from ray.autoscaler._private.util import (
        fill_node_type_min_max_workers,
        merge_setup_commands,
        prepare_config,
        validate_config,
    )

    try:
        if config.get("provider", {}).get("type") == "fake_multinode":
            # Ray's wheel lacks the defaults file prepare_config reads for this provider: the twins spell
            # out every key instead, and get the rest of its preparation here.
            prepared = copy.deepcopy(config)
            merge_setup_commands(prepared)
            fill_node_type_min_max_workers(prepared)
        else:
            prepared = prepare_config(config)
        validate_config(prepared)
    except Exception as error:  # Ray raises ValueError, jsonschema's ValidationError and KeyError alike
        return [f"Ray's cluster-config checker refuses it: {str(error).splitlines()[0]}"]
    return []


def security_problems(config: dict[str, Any]) -> list[str]:
    problems = _world_open_ingress(config)
    provider = config.get("provider", {}).get("type")
    node_types = config.get("available_node_types", {})
    if provider == "aws":
        for name, node_type in node_types.items():
            if not node_type.get("node_config", {}).get("SecurityGroupIds"):
                problems.append(
                    f"node type {name!r} names no SecurityGroupIds: Ray would create a security group "
                    "with SSH open to 0.0.0.0/0; give it one that allows SSH from your address only"
                )
        head = node_types.get(config.get("head_node_type"), {}).get("node_config", {})
        if not head.get("IamInstanceProfile"):
            problems.append(
                "the head names no IamInstanceProfile: Ray would create a role with full EC2 and S3 "
                "access; give it the narrow one of cluster/aws-iam/"
            )
    if provider == "gcp":
        for name, node_type in node_types.items():
            node_config = node_type.get("node_config", {})
            if "networkInterfaces" not in node_config and "networkConfig" not in node_config:
                problems.append(
                    f"node type {name!r} names no subnet: the default network opens SSH to the world; "
                    "give it the cluster's own network"
                )
    commands = [
        str(c) for key in ("head_start_ray_commands", "worker_start_ray_commands") for c in config.get(key) or []
    ]
    for command in commands + [str(c) for c in config.get("setup_commands") or []]:
        if re.search(r"--dashboard-host[= ]+(0\.0\.0\.0|::|'0\.0\.0\.0'|\"0\.0\.0\.0\")", command):
            problems.append(
                f"the dashboard is bound to all interfaces in {command!r}: leave it on 127.0.0.1 and "
                "use `ray dashboard FILE.yaml`"
            )
    if provider != "fake_multinode":
        for command in commands:
            if re.search(r"\bray start\b", command) and "RAY_AUTH_MODE=token" not in command:
                problems.append(
                    f"{command!r} starts Ray without RAY_AUTH_MODE=token: every node must use token authentication"
                )
        if not any(re.search(r"\bray start\b.*--head", command) for command in commands):
            problems.append("no head_start_ray_commands start Ray with --head and token authentication")
        if TOKEN_FILE not in (config.get("file_mounts") or {}):
            problems.append(
                f"file_mounts does not copy the Ray token ({TOKEN_FILE}) to the nodes: workers could "
                "not join a cluster with token authentication"
            )
    return problems


def _world_open_ingress(config: dict[str, Any]) -> list[str]:
    """Ingress rules anywhere in the file (AWS IpPermissions, GCP firewall-like sourceRanges) open to all."""
    problems = []
    for rule in _find_rules(config):
        ranges = [r.get("CidrIp") or r.get("CidrIpv6") for r in rule.get("IpRanges", []) + rule.get("Ipv6Ranges", [])]
        ranges += rule.get("sourceRanges", [])
        if not any(r in WORLD for r in ranges):
            continue
        low, high = int(rule.get("FromPort", -1)), int(rule.get("ToPort", -1))
        if rule.get("IpProtocol") == "-1" or low == -1:
            opened = "every port"
        else:
            named = [f"{port} ({name})" for port, name in RAY_PORTS.items() if low <= port <= high]
            opened = ", ".join(named) or (f"port {low}" if low == high else f"ports {low}-{high}")
        problems.append(
            f"an ingress rule opens {opened} to the whole internet: narrow it to your address "
            "(SSH) or to the cluster's own security group (Ray's ports)"
        )
    return problems


def _find_rules(node: Any) -> list[dict]:
    if isinstance(node, dict):
        found = [node] if {"IpRanges", "Ipv6Ranges", "sourceRanges"} & node.keys() else []
        return found + [rule for value in node.values() for rule in _find_rules(value)]
    if isinstance(node, list):
        return [rule for value in node for rule in _find_rules(value)]
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="FILE.yaml")
    args = parser.parse_args(argv)
    logging.getLogger("ray.autoscaler").setLevel(logging.WARNING)  # its notes on filling defaults
    problems = [problem for path in args.files for problem in check_file(path)]
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"{len(args.files)} cluster file(s) valid and closed to the internet")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
