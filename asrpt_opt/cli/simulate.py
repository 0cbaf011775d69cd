"""Commands that run the simulator: relax, simulate, demo, replay, sensitivity."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from asrpt_opt.cli._common import (
    finite,
    name_list,
    output_dir,
    output_file,
    parse_servers,
    policy_params,
    registry_name,
    table_path,
    whole,
    write_figure,
)
from asrpt_opt.cli._output import (
    Progress,
    add_format_option,
    emit_json,
    emit_json_text,
    emit_table,
    fmt,
    say,
    warn_unstable,
)
from asrpt_opt.datasets import resolve_instance
from asrpt_opt.model.io import load_instance
from asrpt_opt.placement.methods import METHODS
from asrpt_opt.policies import POLICIES, PRIMARY, TiresiasGittins
from asrpt_opt.policies.registry import simulate
from asrpt_opt.prediction import PREDICTORS, make_predictor, seed_params
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.sim.compiled import COMPILED_FROM, ENGINES, PREEMPTIVE_FROM
from asrpt_opt.sim.metrics import Metrics
from asrpt_opt.sim.placer import CHOICES, Placement
from asrpt_opt.speed.default import default_speed

__all__ = ["add_parsers"]

_METRICS_HEADER = (
    "policy",
    "mean JCT h",
    "p95 JCT h",
    "makespan h",
    "sum wC s",
    "lower bound s",
    "ratio",
    "placement slowdown",
    "cross-server GB",
)


_GITTINS_FROM = TiresiasGittins.compiles_from


def _metrics_rows(metrics: dict[str, Metrics], lb: float) -> list[tuple[Any, ...]]:
    h = 3600.0
    return [
        (
            name,
            m.mean_jct_s / h,
            m.p95_jct_s / h,
            m.makespan_s / h,
            m.total_weighted_completion_s,
            lb,
            m.total_weighted_completion_s / lb,
            m.placement_slowdown,
            m.cross_server_gb,
        )
        for name, m in metrics.items()
    ]


def cmd_relax(args: argparse.Namespace) -> int:
    """Print the single-machine relaxation's lower bounds."""
    inst = load_instance(resolve_instance(args.instance))
    lb = lower_bounds(inst, speed=default_speed(inst))
    out = lb.to_json()
    if args.json:
        emit_json(out)
        return 0
    rows = [
        ("SRPT on the area relaxation (sum C_j)", lb.srpt_area_bound_s),
        ("sum w_j (r_j + p_j)", lb.release_plus_length_bound_s),
        ("mean busy time (Goemans), weighted", lb.mean_busy_time_bound_s),
        (f"lower bound on sum w_j C_j [{lb.lower_bound_kind}]", lb.lower_bound_s),
    ]
    emit_table(("bound", "seconds"), rows)
    if lb.weighted:
        print("weights differ: the SRPT value bounds sum C_j only, not sum w_j C_j")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Simulate one policy on an instance."""
    output_file(args.gantt, option="--gantt")
    table_path(args.per_job)
    inst = load_instance(resolve_instance(args.instance))
    params: dict[str, Any] = seed_params(args.predictor, args.seed)
    if args.predictor == "noisy":
        params.update(mu=args.mu, bias=args.bias)
    res = simulate(
        inst,
        args.policy,
        predictor=make_predictor(args.predictor, **params),
        restore_overhead_s=args.restore_overhead,
        seed=args.seed,
        placement=_placement(args),
        engine=args.engine,
        **policy_params(args.param, [args.policy])[args.policy],
    )
    lb = lower_bounds(inst, speed=default_speed(inst)).lower_bound_s
    if args.per_job:
        from asrpt_opt.sim.tables import write_table

        write_table(res.per_job(), args.per_job)
    if args.gantt:
        from asrpt_opt.cli._common import use_agg

        use_agg()
        from asrpt_opt.analysis.gantt import plot_gantt

        fig = plot_gantt(inst, res.schedule, title=f"{inst.name}: {res.policy}")
        write_figure(fig, args.gantt)
    warn_unstable(f"{res.policy} on {inst.name}", res.metrics.stability)
    if args.json:
        emit_json_text(res.to_json_text(lower_bound_s=lb, seed=args.seed, placement=res.placement))
        return 0
    m = res.metrics
    print(f"{inst.name}: {res.policy} on {inst.n_jobs} jobs, {inst.cluster.total_gpus} GPUs")
    rows = [(k, v) for k, v in m.to_json().items() if k != "stability"]
    rows.append(("stability", f"{m.stability.verdict} (growth {m.stability.growth:+.1%})"))
    emit_table(("metric", "value"), rows, per_column=False)
    print(
        f"lower bound on sum w_j C_j: {fmt(lb)}  (ratio {m.total_weighted_completion_s / lb:.4f})"
    )
    if args.gantt:
        print(f"Gantt chart written to {args.gantt}")
    if args.per_job:
        print(f"per-job table written to {args.per_job}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Simulate A-SRPT and every baseline on the bundled Gavel/Philly workload."""
    from asrpt_opt.analysis.replay import replay
    from asrpt_opt.cli._common import use_agg
    from asrpt_opt.traces.gavel import gavel_instance

    output_dir(args.out, option="--out")
    inst = gavel_instance(n_jobs=args.n_jobs, servers=args.cluster)
    if inst.n_jobs < args.n_jobs:
        say(
            f"asrpt-opt: note: the bundled trace holds {inst.n_jobs} jobs that fit; "
            f"simulating {inst.n_jobs}, not {args.n_jobs}"
        )
    out = Path(args.out)
    if not args.json:
        say(
            f"{inst.name}: {inst.n_jobs} jobs on {inst.cluster.n_servers} servers "
            f"({inst.cluster.total_gpus} GPUs); simulating {len(PRIMARY)} policies"
        )
    report = replay(
        inst,
        PRIMARY,
        seed=args.seed,
        policy_params=policy_params(args.param, PRIMARY),
        progress=Progress(inst.name, not args.json),
    )
    use_agg()
    from asrpt_opt.analysis.gantt import plot_gantt
    from asrpt_opt.analysis.plots import plot_comparison

    lb = report.lower_bound_s
    write_figure(
        plot_comparison(
            report.metrics,
            lower_bound_s=lb,
            title=f"{inst.name}: {inst.n_jobs} jobs on {inst.cluster.label}",
        ),
        out / "comparison.png",
    )
    write_figure(
        plot_gantt(inst, report.schedules["a-srpt"], title=f"{inst.name}: A-SRPT"),
        out / "gantt-a-srpt.png",
    )
    if args.json:
        policies = {
            k: {
                **m.to_json(),
                "ratio_to_lower_bound": m.total_weighted_completion_s / lb,
                "wall_s": report.wall_s[k],
            }
            for k, m in report.metrics.items()
        }
        emit_json(
            {
                "instance": inst.name,
                "lower_bound_s": lb,
                "output_dir": str(out),
                "policies": policies,
            }
        )
        return 0
    emit_table(_METRICS_HEADER, _metrics_rows(report.metrics, lb))
    print(f"\nplots written to {out}/: comparison.png, gantt-a-srpt.png")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay an instance under several policies, with plots and a provenance file."""
    from asrpt_opt.analysis.replay import plot_replay, replay
    from asrpt_opt.cli._common import use_agg

    output_dir(args.out, option="--out")
    table_path(args.per_job)
    inst = load_instance(resolve_instance(args.instance))
    policies = name_list(args.policies, POLICIES, "policy")
    report = replay(
        inst,
        policies,
        policy_params=policy_params(args.param, policies),
        placement=_placement(args),
        predictor=args.predictor,
        refit_every=args.refit_every,
        seed=args.seed,
        progress=Progress(f"{inst.name}", not args.json),
    )
    for name, m in report.metrics.items():
        warn_unstable(f"{name} on {inst.name}", m.stability)
    use_agg()
    files = plot_replay(report, args.out)
    if args.per_job:
        from asrpt_opt.sim.tables import write_table

        write_table(report.per_job(), args.per_job)
        files.append(args.per_job)
    if args.json:
        emit_json({**report.to_json(), "files": files})
        return 0
    print(
        f"{inst.name}: {inst.n_jobs} jobs on {inst.cluster.total_gpus} GPUs "
        f"(predictor {args.predictor}, seed {args.seed})"
    )
    emit_table(_METRICS_HEADER, _metrics_rows(report.metrics, report.lower_bound_s))
    print(f"\nwritten: {', '.join(files)}")
    return 0


def cmd_sensitivity(args: argparse.Namespace) -> int:
    """Mean JCT and ratio to the lower bound as prediction error grows."""
    from asrpt_opt.analysis.sensitivity import plot_sensitivity, sensitivity
    from asrpt_opt.errors import UsageError

    output_dir(args.out, option="--out")
    inst = load_instance(resolve_instance(args.instance))
    try:
        mus = [float(m) for m in args.mu.split(",") if m.strip()]
    except ValueError:
        raise UsageError(f"invalid --mu {args.mu!r}: give numbers >= 1") from None
    if not mus or min(mus) < 1 or not all(math.isfinite(m) for m in mus):
        raise UsageError(f"invalid --mu {args.mu!r}: give finite numbers >= 1")
    names = name_list(args.policies, POLICIES, "policy")
    report = sensitivity(
        inst,
        names,
        mus,
        seed=args.seed,
        seeds=args.seeds,
        progress=Progress(f"{inst.name} sensitivity", not args.json),
    )
    plot = None
    if args.out:
        from asrpt_opt.cli._common import use_agg

        use_agg()
        Path(args.out).mkdir(parents=True, exist_ok=True)
        plot = str(Path(args.out) / "sensitivity.png")
        write_figure(plot_sensitivity(report), plot)
    if args.json:
        emit_json({**report.to_json(), "plot": plot})
        return 0
    header = ("policy", *(f"mu={m:g}" for m in report.mus))
    last = args.seed + args.seeds - 1
    seeds = f"seed {args.seed}" if args.seeds == 1 else f"mean of seeds {args.seed}..{last}"
    print(f"{inst.name}: mean JCT (s) with noisy predictions ({seeds})")
    emit_table(header, [(n, *(p.mean_jct_s for p in r)) for n, r in report.points.items()])
    print("\nsum w_j C_j / lower bound")
    emit_table(
        header, [(n, *(p.ratio_to_lower_bound for p in r)) for n, r in report.points.items()]
    )
    if plot:
        print(f"plot written to {plot}")
    return 0


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the ``asrpt-opt`` parser.

    Parameters
    ----------
    sub : argparse subparsers action
        What ``ArgumentParser.add_subparsers`` returned.
    """
    p = sub.add_parser("relax", help="lower bounds from the single-machine relaxation")
    p.add_argument("instance")
    add_format_option(p)
    p.set_defaults(func=cmd_relax)

    p = sub.add_parser("simulate", help="simulate one policy on an instance")
    p.add_argument("instance")
    p.add_argument(
        "--policy",
        default="a-srpt",
        type=registry_name(POLICIES, "policy"),
        metavar="NAME",
        help=f"one of: {', '.join(POLICIES)} (default a-srpt)",
    )
    p.add_argument("--seed", type=whole(0), default=0, help="random seed (default 0)")
    p.add_argument(
        "--restore-overhead",
        type=finite(0),
        default=0.0,
        metavar="S",
        help="seconds a resumed job needs before it progresses (default 0)",
    )
    p.add_argument(
        "--predictor",
        type=registry_name(PREDICTORS, "predictor"),
        default="oracle",
        metavar="NAME",
        help=f"length predictions the policy sees: one of {', '.join(PREDICTORS)} "
        "(default oracle, the truth)",
    )
    p.add_argument(
        "--placement",
        type=registry_name(METHODS, "placement method"),
        metavar="METHOD",
        help=f"how DNN jobs' GPUs are chosen: one of {', '.join(METHODS)} (default: the "
        "policy's own: consolidate for the built-in policies)",
    )
    _choice_arguments(p)
    p.add_argument("--mu", type=finite(1), default=2.0, help="noisy predictor's distortion")
    p.add_argument(
        "--bias", type=finite(0, strict=True), default=1.0, help="noisy predictor's bias"
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="where the event loop runs: auto (compiled for the built-in policies on "
        f"{COMPILED_FROM:,} or more abstract jobs, for the preemptive ones and easy-backfill on "
        f"{PREEMPTIVE_FROM:,} or more, for tiresias-gittins on {_GITTINS_FROM:,} or more, "
        "else Python), python, or compiled; both give the same schedule (default auto)",
    )
    p.add_argument("--gantt", metavar="PNG", help="also draw the schedule to this file")
    p.add_argument(
        "--per-job",
        metavar="PATH",
        help="write one row per job to this .csv or .parquet file",
    )
    add_format_option(p)
    p.add_argument(
        "--param",
        action="append",
        metavar="[POLICY:]NAME=VALUE",
        help="a policy parameter (repeatable), e.g. backfill=false for strict FIFO or "
        "a-srpt:finished_order=virtual; checked against the policy",
    )
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("sensitivity", help="policies under growing prediction error")
    p.add_argument("instance")
    p.add_argument("--policies", default="a-srpt,srpt,sjf,2d-las")
    p.add_argument("--mu", default="1,1.5,2,4,8", help="distortions to try (>= 1)")
    p.add_argument("--seed", type=whole(0), default=0)
    p.add_argument(
        "--seeds",
        type=whole(1),
        default=1,
        help="average over this many seeds (--seed, --seed + 1, ...); the plot shows a 95%% "
        "confidence band",
    )
    p.add_argument("--out", metavar="DIR", help="write sensitivity.png here")
    add_format_option(p)
    p.set_defaults(func=cmd_sensitivity)

    p = sub.add_parser("replay", help="every policy on an instance: table, plots, provenance")
    p.add_argument("instance")
    p.add_argument(
        "--per-job",
        metavar="PATH",
        help="write one row per job and policy to this .csv or .parquet file",
    )
    p.add_argument("--policies", default="a-srpt,fifo,srtf,2d-las,sjf")
    p.add_argument(
        "--placement",
        type=registry_name(METHODS, "placement method"),
        metavar="METHOD",
        help=f"how DNN jobs' GPUs are chosen, for every policy: one of {', '.join(METHODS)} "
        "(default: each policy's own: consolidate for the built-in policies)",
    )
    _choice_arguments(p)
    p.add_argument(
        "--predictor",
        default="oracle",
        type=registry_name(PREDICTORS, "predictor"),
        metavar="NAME",
        help=f"length predictor: one of {', '.join(PREDICTORS)} (default oracle)",
    )
    p.add_argument(
        "--refit-every",
        type=whole(1),
        metavar="K",
        help="refit the predictor after every K completions",
    )
    p.add_argument("--seed", type=whole(0), default=0)
    p.add_argument("--out", default="asrpt-replay", help="folder for plots and results.json")
    add_format_option(p)
    p.add_argument(
        "--param",
        action="append",
        metavar="[POLICY:]NAME=VALUE",
        help="a policy parameter (repeatable), e.g. backfill=false for strict FIFO or "
        "a-srpt:finished_order=virtual; checked against the policy",
    )
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("demo", help="A-SRPT vs every baseline on the bundled workload")
    p.add_argument("--out", default="asrpt-demo", help="folder for the plots (default asrpt-demo)")
    p.add_argument(
        "--n-jobs", type=whole(1), default=400, help="jobs from the trace (default 400)"
    )
    p.add_argument(
        "--cluster",
        type=parse_servers,
        default=(8,) * 8,
        help="SERVERSxGPUS or a list of GPUs per server (default 8x8)",
    )
    p.add_argument("--seed", type=whole(0), default=0)
    add_format_option(p)
    p.add_argument(
        "--param",
        action="append",
        metavar="[POLICY:]NAME=VALUE",
        help="a policy parameter (repeatable), e.g. backfill=false for strict FIFO or "
        "a-srpt:finished_order=virtual; checked against the policy",
    )
    p.set_defaults(func=cmd_demo)


def _choice_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--placement-choice",
        type=registry_name(CHOICES, "placement choice"),
        default="myopic",
        metavar="CHOICE",
        help=f"how a starting DNN job's GPUs are chosen among candidates: one of "
        f"{', '.join(CHOICES)} (default myopic: the fastest now; fragmentation: keep whole "
        "racks and servers free when the job is at most --placement-tolerance slower)",
    )
    p.add_argument(
        "--placement-tolerance",
        type=finite(0),
        default=0.05,
        help="relative slowdown the fragmentation choice accepts (default 0.05)",
    )


def _placement(args: argparse.Namespace) -> Any:
    """The --placement method alone, or with its choice among candidates."""
    if args.placement_choice == "myopic":
        return args.placement
    return Placement(
        method=args.placement, choice=args.placement_choice, tolerance=args.placement_tolerance
    )
