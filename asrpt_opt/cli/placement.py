"""Commands on placement: place, graph."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from asrpt_opt.cli._common import (
    finite,
    name_list,
    output_file,
    parse_counts,
    registry_name,
    whole,
    write_figure,
)
from asrpt_opt.cli._output import (
    add_format_option,
    emit_json,
    emit_table,
    say,
)
from asrpt_opt.datasets import resolve_instance
from asrpt_opt.errors import UsageError
from asrpt_opt.model.io import load_instance
from asrpt_opt.placement.methods import METHODS

if TYPE_CHECKING:
    from asrpt_opt.placement.compare import JobComparison

__all__ = ["add_parsers"]


def cmd_place(args: argparse.Namespace) -> int:
    """Compare placement methods on every DNN job of an instance."""
    from asrpt_opt.placement.compare import compare_methods, instance_free_gpus

    inst = load_instance(resolve_instance(args.instance))
    given = parse_counts(args.free_gpus, "--free-gpus") if args.free_gpus else None
    jobs = compare_methods(
        inst,
        name_list(args.methods or _installed_methods(), METHODS, "placement method"),
        free=given,
        seed=args.seed,
        time_limit_s=args.time_limit,
    )
    own = instance_free_gpus(inst)
    free = given or (list(own) if own is not None else list(inst.cluster.servers))
    if args.json:
        emit_json({"free_gpus": free, "jobs": [j.to_json() for j in jobs]})
        return 0
    if not jobs:
        print(f"{args.instance}: no DNN jobs")
        return 0
    source = "--free-gpus" if given else "provenance.free_gpus" if own is not None else "all free"
    if not args.quiet:
        say(f"free GPUs per server {free} ({source})")
    for job in jobs:
        if job.error is not None:
            say(f"job {job.id} ({job.gpus} GPUs): {job.error}")
    emit_table(_PLACE_HEADER, [row for job in jobs for row in _place_rows(job)])
    return 0


_PLACE_HEADER = (
    "job",
    "GPUs",
    "method",
    "cross MB/iter",
    "iter s",
    "gap min %",
    "gap max %",
    "proven optimal",
    "wall s",
    "servers",
)


def _place_rows(job: JobComparison) -> list[tuple[object, ...]]:
    """One table row per method on ``job``: the gap to the optimum as a percentage interval
    (equal ends when the optimum is proven, ``-`` when nothing is known)."""
    rows: list[tuple[object, ...]] = []
    for r in job.results:
        gap = job.gap(r)
        low, high = ("-", "-") if gap is None else (100 * gap[0], 100 * gap[1])
        rows.append(
            (
                job.id,
                job.gpus,
                r.method,
                r.cross_server_bytes / 1e6,
                r.iteration_time_s,
                low,
                high,
                "yes" if r.optimal else "no",
                r.wall_s,
                " ".join(f"{s}:{c}" for s, c in r.allocation),
            )
        )
    return rows


def cmd_graph(args: argparse.Namespace) -> int:
    """Draw a job's worker graph (and a placement) to PNG."""
    from asrpt_opt.cli._common import use_agg
    from asrpt_opt.model.dnn import load_model
    from asrpt_opt.model.job import Parallelism
    from asrpt_opt.model.workers import worker_graph
    from asrpt_opt.placement.methods import place

    output_file(args.out, option="--out")
    dims = parse_counts(args.parallelism, "--parallelism")
    if len(dims) != 3 or min(dims) < 1:
        raise UsageError("--parallelism needs three integers dp,pp,tp, each >= 1")
    wg = worker_graph(load_model(args.model), Parallelism(dp=dims[0], pp=dims[1], tp=dims[2]))
    free = parse_counts(args.free_gpus, "--free-gpus") if args.free_gpus else None
    result = None
    if free is not None:
        result = place(
            wg,
            free,
            method=args.method,
            intra_gbps=args.intra_gbps,
            inter_gbps=args.inter_gbps,
            seed=args.seed,
        )
    use_agg()
    from asrpt_opt.analysis.plots import plot_worker_graph

    fig = plot_worker_graph(wg, assignment=None if result is None else result.assignment)
    write_figure(fig, args.out)
    if result is None:
        print(f"worker graph of {args.model} ({wg.n_workers} workers) written to {args.out}")
    else:
        print(
            f"{args.model} on free GPUs {free} by {result.method}: "
            f"{result.cross_server_bytes / 1e6:.1f} MB/iteration across servers, "
            f"{result.iteration_time_s:.4f} s/iteration; drawn to {args.out}"
        )
    return 0


def _installed_methods() -> str:
    from asrpt_opt.placement.partitioners import available

    return ",".join(m for m in METHODS if available(m))


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the ``asrpt-opt`` parser.

    Parameters
    ----------
    sub : argparse subparsers action
        What ``ArgumentParser.add_subparsers`` returned.
    """
    p = sub.add_parser("place", help="compare placement methods on an instance's DNN jobs")
    p.add_argument("instance")
    p.add_argument(
        "--methods",
        help=f"comma-separated, from: {', '.join(METHODS)} (default: every one whose "
        "library is installed; metis and kahip come with the partitioners extra)",
    )
    p.add_argument("--free-gpus", metavar="N,N,...", help="free GPUs per server (default: all)")
    p.add_argument(
        "--time-limit", type=finite(0, strict=True), default=10.0, metavar="S", help="for ilp"
    )
    p.add_argument("--seed", type=whole(0), default=0)
    add_format_option(p)
    p.set_defaults(func=cmd_place)

    p = sub.add_parser("graph", help="draw a job's worker graph and a placement to PNG")
    p.add_argument("model", help="a bundled model, e.g. resnet50 or gpt2-1.5b")
    p.add_argument("--parallelism", default="1,1,1", metavar="DP,PP,TP")
    p.add_argument("--free-gpus", metavar="N,N,...", help="also place it on these free GPUs")
    p.add_argument(
        "--method",
        default="mincut",
        type=registry_name(METHODS, "placement method"),
        metavar="METHOD",
        help=f"one of {', '.join(METHODS)} (default mincut)",
    )
    p.add_argument("--intra-gbps", type=finite(0, strict=True), default=300.0)
    p.add_argument("--inter-gbps", type=finite(0, strict=True), default=12.5)
    p.add_argument("--seed", type=whole(0), default=0)
    p.add_argument("--out", default="worker-graph.png")
    p.set_defaults(func=cmd_graph)
