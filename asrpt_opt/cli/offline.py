"""Commands on offline optima: solve, ratio, export."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from asrpt_opt.analysis.families import FAMILIES
from asrpt_opt.analysis.sweep import EXECUTORS
from asrpt_opt.cli._common import (
    DeprecatedFlag,
    finite,
    name_list,
    output_dir,
    output_file,
    registry_name,
    table_path,
    whole,
    write_figure,
)
from asrpt_opt.cli._output import (
    Progress,
    Ticker,
    add_format_option,
    emit_json,
    emit_table,
    say,
)
from asrpt_opt.datasets import resolve_instance, resolve_preset
from asrpt_opt.errors import UsageError
from asrpt_opt.model.io import atomic_write_text, load_instance
from asrpt_opt.policies import POLICIES
from asrpt_opt.solvers.params import (
    CONTINUOUS_MAX_JOBS,
    MILP_NODES_PER_WORK,
    SEARCH_NODES_PER_WORK,
    WORK_SAFETY_S,
)
from asrpt_opt.solvers.solve import PREEMPTION_MODELS, SOLVERS
from asrpt_opt.speed.default import SOLVE_CLUSTER_MODELS

__all__ = ["add_parsers"]


def cmd_solve(args: argparse.Namespace) -> int:
    """Compute the offline optimum (or a proven interval) of an instance."""
    from dataclasses import replace

    from asrpt_opt.solvers.result import optimum_record
    from asrpt_opt.solvers.solve import SolverParams, load_preset, solve

    output_file(args.plot, option="--plot")
    output_dir(args.record, option="--record")
    inst = load_instance(resolve_instance(args.instance))
    params = load_preset(resolve_preset(args.preset)) if args.preset else SolverParams()
    if args.time_limit is not None:
        params = replace(params, time_limit_s=args.time_limit)
    if args.work_limit is not None:
        params = replace(params, work_limit=args.work_limit or None)
    limit = params.time_limit_s
    with Ticker(lambda t: f"solve: {t:.0f} s of at most {limit:g} s", not args.json):
        res = solve(
            inst,
            preemption=args.preemption if args.preemptive else "none",
            cluster_model=args.cluster_model,
            solver=args.solver,
            params=params,
        )
    if args.record:
        kind = (
            ("pmtn" if res.preemption == "continuous" else "grid") if res.preemptive else "nonpmtn"
        )
        path = Path(args.record) / f"{inst.name}.{res.cluster_model}.{kind}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        record = optimum_record(res, inst, source=Path(resolve_instance(args.instance)).name)
        atomic_write_text(path, json.dumps(record, indent=2) + "\n")
        if not args.json:
            print(f"recorded in {path}")
    if args.plot and res.schedule is not None:
        from asrpt_opt.cli._common import use_agg

        use_agg()
        from asrpt_opt.analysis.gantt import plot_gantt

        kind = "preemptive" if args.preemptive else "non-preemptive"
        title = f"{inst.name}: offline {kind} {res.status}"
        write_figure(plot_gantt(inst, res.schedule, title=title), args.plot)
    if args.json:
        emit_json(res.to_json())
        return 0
    rows = [
        ("status", res.status.value),
        ("objective sum w_j C_j (s)", res.objective_s if res.objective_s is not None else "-"),
        ("proven lower bound (s)", res.bound_s if res.bound_s is not None else "-"),
        ("backend", res.backend),
        (
            "model",
            f"{res.cluster_model}, "
            + (f"preemptive ({res.model()['time']})" if res.preemptive else "non-preemptive"),
        ),
        *(
            [
                (
                    f"unit-grid optimum (preempting at multiples of {res.grid.time_unit_s:g} s)",
                    f"{res.grid.objective_s} ({res.grid.status.value})",
                )
            ]
            if res.grid is not None
            else []
        ),
        ("solver", res.solver),
        ("wall (s)", res.wall_s),
    ]
    emit_table(("field", "value"), rows, per_column=False)
    if res.message:
        print(res.message)
    if args.plot and res.schedule is not None:
        print(f"Gantt chart written to {args.plot}")
    return 0


#: ``ratio``'s default work limit per instance.
RATIO_WORK_LIMIT = 10.0


def _ratio_limits(time_limit_s: float | None, work_limit: float | None) -> dict[str, Any]:
    """The limits of a ratio sweep: deterministic work by default (a table recomputes the
    same on any machine); the wall clock alone with ``--work-limit 0`` or with only
    ``--time-limit`` given (as before work limits, so such stores resume)."""
    if work_limit is None:
        work = RATIO_WORK_LIMIT if time_limit_s is None else None
    else:
        work = work_limit or None
    if time_limit_s is None:
        time_limit_s = 10.0 if work is None else WORK_SAFETY_S
    return {"time_limit_s": time_limit_s, "work_limit": work}


def cmd_ratio(args: argparse.Namespace) -> int:
    """Empirical competitive ratios of online policies against offline optima."""
    from asrpt_opt.analysis.sweep import RatioConfig, ResultStore, ratio_sweep

    if args.n < 1 or args.seeds < 1 or args.workers < 1:
        raise UsageError("--n, --seeds and --workers must be >= 1")
    output_dir(args.out, option="--out")
    output_file(args.store, option="--store", notice=False)
    config = RatioConfig(
        family=args.family,
        n=args.n,
        policies=name_list(args.policies, POLICIES, "policy"),
        preemptive=not args.nonpreemptive_opt,
        preemption=args.preemption,
        solver=args.solver,
        **_ratio_limits(args.time_limit, args.work_limit),
    )
    store = ResultStore(args.store)
    if not args.quiet:
        say(
            f"asrpt-opt: results are kept in {args.store} "
            f"({'resuming: ' if store.done(config) else ''}a rerun skips finished "
            "instances; --store PATH to choose another file)"
        )
    try:
        sweep = ratio_sweep(
            **asdict(config),
            seeds=args.seeds,
            store=store,
            workers=args.workers,
            executor=args.executor,
            scheduler=args.scheduler,
            progress=Progress(f"{args.family} n={args.n}", not args.json),
        )
    except KeyboardInterrupt:
        done = len(store.done(config))
        store.close()
        say(
            f"\ninterrupted: {done} of {args.seeds} instances are saved in {args.store}; "
            "run the same command again to resume",
            always=True,
        )
        return 130
    store.close()
    outcomes, summary = sweep.outcomes, sweep.summary
    files = []
    if args.out:
        from asrpt_opt.cli._common import use_agg

        use_agg()
        from asrpt_opt.analysis.plots import plot_ratio_cdf, plot_ratio_vs_load

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        title = f"{config.family}, n = {config.n}, {len(outcomes)} instances"
        for name, draw in (
            ("ratio-cdf.png", plot_ratio_cdf),
            ("ratio-vs-load.png", plot_ratio_vs_load),
        ):
            write_figure(draw(outcomes, config.policies, title=title), out / name)
            files.append(str(out / name))
    if args.json:
        emit_json(
            {
                "config": {
                    **config.__dict__,
                    "backend": config.solver,  # the solver's name in asrpt-opt 0.1.0
                    "policies": list(config.policies),
                },
                "store": args.store,
                "plots": files,
                "policies": {name: s.to_json() for name, s in summary.items()},
            }
        )
        return 0
    opt = (
        f"preemptive ({'continuous time' if config.preemption == 'continuous' else 'unit grid'})"
        if config.preemptive
        else "non-preemptive"
    )
    print(
        f"{args.seeds} instances of family {args.family!r}, n={args.n}; OPT = offline {opt} "
        "optimum on the pooled cluster"
    )
    rows = []
    for name, s in summary.items():
        rows.append(
            (
                name,
                f"{s.proven}/{s.instances}",
                s.ratio_mean if s.ratio_mean is not None else "-",
                s.ratio_p95 if s.ratio_p95 is not None else "-",
                s.ratio_max if s.ratio_max is not None else "-",
                s.ratio_hi_max,
                "nan, nan" if s.fit is None else f"{s.fit.a:.3f}, {s.fit.b:.3f}",
            )
        )
    emit_table(("policy", "proven", "mean", "p95", "max", "max ALG/LB", "(a, b)"), rows)
    for name, s in summary.items():
        for lo, hi in s.unproven_intervals:
            print(f"  {name}: unproven instance, ratio in [{lo:.4f}, {hi:.4f}]")
    if files:
        print("plots: " + ", ".join(files))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write a ratio store's rows as a table (CSV or Parquet)."""
    from asrpt_opt.analysis.sweep import ResultStore
    from asrpt_opt.sim.tables import write_table

    if not Path(args.store).is_file():
        raise UsageError(f"{args.store}: no such result store")
    table_path(args.output, option="-o")
    store = ResultStore(args.store)
    try:
        rows = store.table()
    finally:
        store.close()
    write_table(rows, args.output)
    if args.json:
        emit_json({"store": args.store, "output": args.output, "rows": len(rows)})
        return 0
    print(f"{args.store}: {len(rows)} rows (instance x policy) written to {args.output}")
    return 0


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the ``asrpt-opt`` parser.

    Parameters
    ----------
    sub : argparse subparsers action
        What ``ArgumentParser.add_subparsers`` returned.
    """
    p = sub.add_parser("solve", help="offline optimum of sum w_j C_j (exact models)")
    p.add_argument("instance")
    p.add_argument(
        "--preemptive",
        action="store_true",
        help="allow preemption (at any time; see --preemption)",
    )
    p.add_argument(
        "--preemption",
        choices=PREEMPTION_MODELS,
        default="continuous",
        help="with --preemptive: preempt at any real time (continuous: exact on the pooled "
        f"cluster for up to {CONTINUOUS_MAX_JOBS} jobs, otherwise an interval), or only at "
        "multiples of "
        "the instance's time unit (grid: an upper bound on the continuous optimum); "
        "default continuous",
    )
    p.add_argument(
        "--cluster-model",
        choices=SOLVE_CLUSTER_MODELS,
        default="instance",
        help="how jobs share GPUs: as the instance states (instance: spread where a job has a "
        "spread slowdown, else pooled), one pool (pooled; a relaxation when slowdowns "
        "exceed 1), one server per job (server-local), or spreading at the job's slowdown "
        "(spread); default instance",
    )
    p.add_argument(
        "--placement",
        dest="cluster_model",
        choices=SOLVE_CLUSTER_MODELS,
        action=DeprecatedFlag,
        new="--cluster-model",
        help=argparse.SUPPRESS,
    )
    p.add_argument(
        "--solver",
        choices=SOLVERS,
        default="portfolio",
        help="exact solver (default portfolio: CP-SAT, then the MILP)",
    )
    p.add_argument(
        "--backend",
        dest="solver",
        choices=SOLVERS,
        action=DeprecatedFlag,
        new="--solver",
        help=argparse.SUPPRESS,
    )
    p.add_argument(
        "--time-limit",
        type=finite(0, strict=True),
        metavar="S",
        help="seconds for the whole solve, model building included (overrides the preset; "
        "default 10)",
    )
    p.add_argument(
        "--work-limit",
        type=finite(0),
        metavar="W",
        help="deterministic work units for the whole solve (CP-SAT deterministic seconds; "
        f"{MILP_NODES_PER_WORK} MILP nodes or {SEARCH_NODES_PER_WORK} event-search LPs each): "
        "the same result on any machine; --time-limit stays a safety net (0 or default: none)",
    )
    p.add_argument(
        "--preset",
        metavar="TOML",
        help="solver preset: a TOML file or a bundled name (default = solvers/default.toml)",
    )
    p.add_argument("--plot", metavar="PNG", help="draw the schedule as a Gantt chart")
    p.add_argument(
        "--record",
        metavar="DIR",
        help="also write the result with its provenance into DIR (instances/optima)",
    )
    add_format_option(p)
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("ratio", help="competitive ratios against offline optima (sweep)")
    p.add_argument(
        "--family",
        default="poisson",
        type=registry_name(FAMILIES, "family"),
        metavar="NAME",
        help=f"instance family: one of {', '.join(FAMILIES)} (default poisson)",
    )
    p.add_argument("--n", type=whole(1), default=8, help="jobs per instance (default 8)")
    p.add_argument(
        "--seeds", type=whole(1), default=20, help="instances, seeds 0..N-1 (default 20)"
    )
    p.add_argument("--policies", default="a-srpt,srpt,fifo,sjf,srsf,2d-las")
    p.add_argument("--workers", type=whole(1), default=1, help="parallel processes (default 1)")
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="loky",
        help="where instances are evaluated: this process, a local process pool "
        "(loky, default) or Dask",
    )
    p.add_argument(
        "--backend",
        dest="executor",
        choices=EXECUTORS,
        action=DeprecatedFlag,
        new="--executor",
        help=argparse.SUPPRESS,
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://host:8786")
    p.add_argument(
        "--store",
        default="ratio-results.sqlite",
        help="SQLite file; finished instances are kept and skipped on a rerun",
    )
    p.add_argument(
        "--solver", choices=SOLVERS, default="portfolio", help="offline solver (default portfolio)"
    )
    p.add_argument(
        "--time-limit",
        type=finite(0, strict=True),
        metavar="S",
        help="offline solver seconds per instance, model building included; alone, the only "
        f"limit (default: a safety net of {WORK_SAFETY_S:g} behind the work limit, 10 with "
        "--work-limit 0)",
    )
    p.add_argument(
        "--work-limit",
        type=finite(0),
        metavar="W",
        help="deterministic work units per instance (CP-SAT deterministic seconds; "
        f"{MILP_NODES_PER_WORK} MILP nodes or {SEARCH_NODES_PER_WORK} event-search LPs each), "
        "so that the table is the same on any machine, busy or quiet; 0 for the wall clock "
        f"alone (default {RATIO_WORK_LIMIT:g} unless only --time-limit is given)",
    )
    p.add_argument(
        "--preemption",
        choices=PREEMPTION_MODELS,
        default="continuous",
        help="preemptive OPT over every schedule (continuous, the default: exact for small n, "
        "an interval otherwise) or over schedules preempting at integer times only (grid)",
    )
    p.add_argument(
        "--nonpreemptive-opt",
        action="store_true",
        help="compare with the non-preemptive optimum instead",
    )
    p.add_argument("--out", metavar="DIR", help="write ratio-cdf.png and ratio-vs-load.png here")
    add_format_option(p)
    p.set_defaults(func=cmd_ratio)

    p = sub.add_parser("export", help="a ratio store's rows as a CSV or Parquet table")
    p.add_argument("store", help="the SQLite file of `asrpt-opt ratio --store`")
    p.add_argument(
        "-o", "--output", required=True, metavar="PATH", help="table to write: .csv or .parquet"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_export)
