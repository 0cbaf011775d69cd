"""The command that checks an instance file: validate (light: it loads no solver or policy)."""

from __future__ import annotations

import argparse
from typing import Any

from asrpt_opt.cli._output import emit_json
from asrpt_opt.datasets import resolve_instance
from asrpt_opt.model.io import load_instance

__all__ = ["add_parsers"]


def cmd_validate(args: argparse.Namespace) -> int:
    """Check an instance file against the contract."""
    inst = load_instance(resolve_instance(args.instance))
    n_abstract = sum(j.is_abstract for j in inst.jobs)
    info = {
        "valid": True,
        "name": inst.name,
        "n_jobs": inst.n_jobs,
        "abstract_jobs": n_abstract,
        "dnn_jobs": inst.n_jobs - n_abstract,
        "servers": list(inst.cluster.servers),
        "total_gpus": inst.cluster.total_gpus,
    }
    if args.json:
        emit_json(info)
        return 0
    print(
        f"{args.instance}: valid ({inst.n_jobs} jobs: {n_abstract} abstract, "
        f"{inst.n_jobs - n_abstract} DNN; {inst.cluster.n_servers} servers, "
        f"{inst.cluster.total_gpus} GPUs)"
    )
    return 0


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the ``asrpt-opt`` parser.

    Parameters
    ----------
    sub : argparse subparsers action
        What ``ArgumentParser.add_subparsers`` returned.
    """
    p = sub.add_parser("validate", help="check an instance file")
    p.add_argument("instance", help="instance file (asrpt-instance/1 JSON)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_validate)
