"""``asrpt-opt load-sweep``: mean response time against offered load, with a stability
verdict per point."""

from __future__ import annotations

import argparse
import math
from typing import Any

from asrpt_opt.analysis.executors import EXECUTORS
from asrpt_opt.analysis.load_sweep import LOAD_FAMILIES, MEASURES
from asrpt_opt.cli._common import (
    name_list,
    output_file,
    policy_params,
    registry_name,
    whole,
    write_figure,
)
from asrpt_opt.cli._output import Progress, add_format_option, emit_json, emit_table, say
from asrpt_opt.policies import POLICIES

__all__ = ["add_parsers"]


def _loads(text: str) -> tuple[float, ...]:
    try:
        loads = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma list of numbers: {text!r}") from None
    if not loads or any(not (math.isfinite(x) and x > 0) for x in loads):
        raise argparse.ArgumentTypeError(f"loads must be finite and > 0, got {text!r}")
    return loads


def cmd_load_sweep(args: argparse.Namespace) -> int:
    """Mean response time against offered load for several policies."""
    from asrpt_opt.analysis.load_sweep import LoadSweepConfig, run_load_sweep
    from asrpt_opt.analysis.store import LoadSweepStore

    output_file(args.store, option="--store", notice=False)
    output_file(args.plot, option="--plot")
    policies = name_list(args.policies, POLICIES, "policy")
    config = LoadSweepConfig(
        family=args.family,
        n=args.jobs,
        policies=policies,
        params=policy_params(args.param, policies),
        screen_jobs=args.screen_jobs or None,
        measure=args.measure,
    )
    store = LoadSweepStore(args.store or ":memory:")
    try:
        report = run_load_sweep(
            config,
            args.loads,
            range(args.seeds),
            store=store,
            workers=args.workers,
            executor=args.executor,
            scheduler=args.scheduler,
            progress=Progress(f"{args.family} x {args.jobs:,} jobs", not args.json),
        )
    except KeyboardInterrupt:
        store.close()
        where = f"are saved in {args.store}; run the same command again to resume"
        say(
            f"\ninterrupted: the finished runs {where if args.store else 'are lost (no --store)'}",
            always=True,
        )
        return 130
    store.close()
    if args.plot:
        from asrpt_opt.analysis.plots import plot_load_sweep
        from asrpt_opt.cli._common import use_agg

        use_agg()
        write_figure(plot_load_sweep(report), args.plot)
    if args.json:
        emit_json({**report.to_json(), "store": args.store, "plot": args.plot})
        return 0
    unit = "time units" if args.family == "msj" else "s"
    print(
        f"{args.family}: {args.jobs:,} jobs x {args.seeds} seeds; mean response time in {unit} "
        "[95% interval]; unstable: the number in system keeps growing (docs/stability.md)"
    )
    emit_table(("load", *policies), _rows(report, policies))
    if args.plot:
        print(f"\nplot written to {args.plot}")
    return 0


def _rows(report: Any, policies: tuple[str, ...]) -> list[tuple[Any, ...]]:
    cell = {(p.policy, p.load): p for p in report.points}
    rows = []
    for load in report.loads:
        row: list[Any] = [load]
        for name in policies:
            p = cell[(name, load)]
            if p.verdict == "unstable":
                row.append(f"unstable ({p.unstable_runs}/{p.runs})")
            else:
                text = f"{p.mean_response:.4f} [{p.ci_low:.4f}, {p.ci_high:.4f}]"
                row.append(text if p.verdict == "stable" else f"{text} ?")
        rows.append(tuple(row))
    return rows


def add_parsers(sub: Any) -> None:
    """Add the ``load-sweep`` command.

    Parameters
    ----------
    sub : argparse subparsers
        The CLI's subcommands.
    """
    p = sub.add_parser("load-sweep", help="mean response time against load, with stability")
    p.add_argument(
        "--family",
        default="msj",
        type=registry_name(LOAD_FAMILIES, "load family"),
        metavar="NAME",
        help=f"workload: one of {', '.join(LOAD_FAMILIES)} (default msj)",
    )
    p.add_argument(
        "--loads",
        type=_loads,
        default=(0.5, 0.6, 0.7, 0.8, 0.9),
        metavar="X,Y,...",
        help="offered loads (default 0.5,0.6,0.7,0.8,0.9)",
    )
    p.add_argument("--policies", default="a-srpt,serverfilling-srpt,fifo")
    p.add_argument(
        "--param",
        action="append",
        metavar="[POLICY:]NAME=VALUE",
        help="a policy parameter (repeatable), e.g. a-srpt:guide=fill",
    )
    p.add_argument("--jobs", type=whole(1), default=100_000, help="jobs per run (default 1e5)")
    p.add_argument("--seeds", type=whole(1), default=3, help="runs per point, seeds 0..N-1")
    p.add_argument(
        "--screen-jobs",
        type=whole(0),
        default=50_000,
        metavar="N",
        help="stop a longer run after its first N jobs when they are already unstable "
        "(default 50000; 0: never)",
    )
    p.add_argument(
        "--measure",
        choices=MEASURES,
        default="all",
        help="mean over all jobs (default), or over the first --jobs completions while "
        "arrivals continue (the reference simulator msj-simulator's protocol)",
    )
    p.add_argument("--workers", type=whole(1), default=1, help="parallel processes (default 1)")
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="loky",
        help="where runs are evaluated: this process, a local process pool (loky, default) "
        "or Dask",
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://host:8786")
    p.add_argument(
        "--store",
        metavar="PATH",
        help="SQLite file keeping finished runs, skipped on a rerun (default: none, in memory)",
    )
    p.add_argument("--plot", metavar="PATH", help="write E[T] against load (PNG, PDF, SVG)")
    add_format_option(p)
    p.set_defaults(func=cmd_load_sweep)
