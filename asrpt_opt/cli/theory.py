"""Commands for theorists: the adversary (worst-case) and robustness curves."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from asrpt_opt.analysis.families import FAMILIES
from asrpt_opt.cli._common import (
    finite,
    name_list,
    output_dir,
    output_file,
    registry_name,
    whole,
    write_figure,
)
from asrpt_opt.cli._output import Progress, add_format_option, emit_json, emit_table, say
from asrpt_opt.errors import UsageError
from asrpt_opt.policies import POLICIES
from asrpt_opt.solvers.params import WORK_SAFETY_S

__all__ = ["add_parsers"]


def _n_range(text: str) -> list[int]:
    """``7`` or ``4..8`` as a list of job counts."""
    lo, sep, hi = text.partition("..")
    try:
        ns = list(range(int(lo), int(hi) + 1)) if sep else [int(lo)]
    except ValueError:
        raise UsageError(f"invalid --n {text!r}: give a count (7) or a range (4..8)") from None
    if not ns or ns[0] < 1:
        raise UsageError(f"invalid --n {text!r}: counts must be >= 1 and the range not empty")
    return ns


def _interrupted(stop: Any, out: Path | None, out_dir: str | None) -> int:
    """Write the interrupted pair's best instance so far, say where, and return 130."""
    from asrpt_opt.model.io import dump_instance

    if stop.instance is None:
        say(
            f"\ninterrupted: no {stop.policy} n={stop.n} instance was proven before the stop",
            always=True,
        )
        return 130
    path = out if out is not None else Path(str(out_dir)) / f"{stop.policy}-n{stop.n}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    dump_instance(stop.instance, path)
    say(
        f"\ninterrupted: the best {stop.policy} n={stop.n} instance so far (ratio "
        f"{stop.ratio:.4f} as the search measured it, not re-verified) is in {path}; "
        "finished pairs are written already",
        always=True,
    )
    return 130


def cmd_worst_case(args: argparse.Namespace) -> int:
    """Search for instances where policies' ratios to proven optima are worst."""
    from asrpt_opt.analysis.adversary_rounds import SearchInterrupted
    from asrpt_opt.analysis.worst_case import plot_worst_ratios, worst_cases
    from asrpt_opt.model.io import dump_instance

    ns = _n_range(args.n)
    names = name_list(args.policies, POLICIES, "policy") if args.policies else [args.policy]
    single = len(ns) == 1 and len(names) == 1
    budget = args.budget.rstrip("s")
    try:
        budget_s = float(budget)
    except ValueError:
        raise UsageError(f"invalid --budget {args.budget!r}: give seconds, e.g. 300s") from None
    if not (math.isfinite(budget_s) and budget_s > 0):
        raise UsageError(f"invalid --budget {args.budget!r}: give a finite number of seconds > 0")
    if args.workers < 1:
        raise UsageError("--workers must be >= 1")
    if single:
        output_file(args.out, option="--out")
    else:
        output_dir(args.out_dir, option="--out-dir")
    if args.store:
        output_file(args.store, option="--store", notice=False)
    files: dict[tuple[str, int], str] = {}

    def write(name: str, n: int, case: Any) -> None:
        # Each pair is written as soon as it is done: an interrupt keeps the finished ones.
        path = Path(args.out) if single else Path(args.out_dir) / f"{name}-n{n}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        dump_instance(case.instance, path)
        files[(name, n)] = str(path)

    try:
        found = worst_cases(
            names,
            ns,
            family=args.family,
            budget_s=budget_s,
            evaluations=args.evaluations,
            time_limit_s=args.time_limit or (WORK_SAFETY_S if args.work_limit else 5.0),
            work_limit=args.work_limit or None,
            seed=args.seed,
            workers=args.workers,
            store=args.store,
            progress=Progress(
                "worst-case (evaluations)" if args.evaluations else "worst-case (s)", not args.json
            ),
            on_result=write,
        )
    except SearchInterrupted as stop:
        return _interrupted(stop, Path(args.out) if single else None, args.out_dir)
    plot = None
    if not single and found:
        from asrpt_opt.cli._common import use_agg

        use_agg()
        plot = str(Path(args.out_dir) / "ratio-vs-n.png")
        write_figure(plot_worst_ratios(found), plot)
    results = [
        {
            "policy": name,
            "n": n,
            "ratio": case.ratio,
            "policy_value_s": case.policy_value_s,
            "optimum_s": case.optimum_s,
            "evaluations": case.evaluations,
            "instance": files[(name, n)],
        }
        for (name, n), case in found.items()
    ]
    missing = [f"{p} n={n}" for p in names for n in ns if (p, n) not in found]
    if single and missing:
        raise UsageError("no instance with a proven optimum was found within the budget")
    if args.json:
        emit_json(results[0] if single else {"results": results, "plot": plot})
        return 0
    if single:
        r = results[0]
        print(
            f"worst ratio found for {r['policy']}: {r['ratio']:.4f} "
            f"({r['policy_value_s']:g} vs proven optimum {r['optimum_s']:g}) after "
            f"{r['evaluations']} evaluations; instance written to {r['instance']}"
        )
        return 0
    print("worst ALG/OPT found (OPT: proven continuous-time preemptive optimum, pooled)")
    emit_table(
        ("policy", *(f"n={n}" for n in ns)),
        [(p, *(found[(p, n)].ratio if (p, n) in found else "-" for n in ns)) for p in names],
    )
    if missing:
        print("no proven instance found for: " + ", ".join(missing))
    print(f"instances in {args.out_dir}; plot {plot}")
    return 0


def cmd_robustness(args: argparse.Namespace) -> int:
    """ALG/OPT against prediction error: consistency and robustness curves."""
    from asrpt_opt.analysis.robustness import parse_errors, plot_robustness, robustness

    output_dir(args.out, option="--out")
    errors = parse_errors(args.error)
    names = name_list(args.policies, POLICIES, "policy")
    report = robustness(
        args.family,
        args.n,
        names,
        errors,
        seeds=args.seeds,
        first_seed=args.seed,
        time_limit_s=args.time_limit,
        progress=Progress(f"robustness {args.family} n={args.n}", not args.json),
    )
    plot = None
    if args.out:
        from asrpt_opt.cli._common import use_agg

        use_agg()
        Path(args.out).mkdir(parents=True, exist_ok=True)
        plot = str(Path(args.out) / "robustness.png")
        write_figure(plot_robustness(report), plot)
    if args.json:
        emit_json({**report.to_json(), "plot": plot})
        return 0
    print(
        f"{args.family}, n = {args.n}: ALG/OPT over {len(report.seeds)} instances "
        "(OPT: continuous-time preemptive optimum, proven)"
        + (f"; {len(report.unproven)} left out, not proven in time" if report.unproven else "")
    )
    header = ("policy", *(f"{e} mean" for e in report.errors), *(f"{e} worst" for e in errors))
    emit_table(
        header,
        [
            (
                name,
                *(p.mean_ratio for p in rows),
                *(p.worst_ratio for p in rows),
            )
            for name, rows in report.points.items()
        ],
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
    p = sub.add_parser("worst-case", help="search for an instance with a bad ratio")
    p.add_argument(
        "--policy",
        default="a-srpt",
        type=registry_name(POLICIES, "policy"),
        metavar="NAME",
        help=f"one of {', '.join(POLICIES)} (default a-srpt)",
    )
    p.add_argument(
        "--policies",
        metavar="LIST",
        help="comma-separated policies to search each (overrides --policy)",
    )
    p.add_argument(
        "--n", default="6", help="jobs per instance: a count (7) or a range (4..8); default 6"
    )
    p.add_argument(
        "--family",
        default="poisson",
        type=registry_name(FAMILIES, "family"),
        metavar="NAME",
        help=f"restarts draw from this family: one of {', '.join(FAMILIES)} (default poisson)",
    )
    p.add_argument("--budget", default="60s", help="wall-clock budget per policy and n, e.g. 300s")
    p.add_argument(
        "--evaluations",
        type=whole(1),
        metavar="N",
        help="a budget of N evaluated instances per policy and n instead of --budget: the "
        "same seed then finds the same instance on any machine",
    )
    p.add_argument(
        "--time-limit",
        type=finite(0, strict=True),
        metavar="S",
        help="seconds for each candidate's optimum (unproven candidates do not count; "
        f"default 5, or a safety net of {WORK_SAFETY_S:g} with --work-limit)",
    )
    p.add_argument(
        "--work-limit",
        type=finite(0),
        metavar="W",
        help="deterministic work for each candidate's optimum (200 event-search LPs a unit), "
        "the time limit then a safety net: with --evaluations, the same instance on any "
        "machine, busy or quiet (default: none)",
    )
    p.add_argument("--seed", type=whole(0), default=0)
    p.add_argument("--workers", type=whole(1), default=1, help="searchers in parallel processes")
    p.add_argument(
        "--store",
        metavar="SQLITE",
        help="keep every evaluation and the best instances here; a rerun resumes from it",
    )
    p.add_argument(
        "--out", default="worst-case.json", help="instance file to write (one policy and n)"
    )
    p.add_argument(
        "--out-dir",
        default="worst-cases",
        metavar="DIR",
        help="with several policies or n: POLICY-nN.json per pair and ratio-vs-n.png",
    )
    add_format_option(p)
    p.set_defaults(func=cmd_worst_case)

    p = sub.add_parser(
        "robustness", help="ALG/OPT against prediction error (consistency and robustness)"
    )
    p.add_argument("--family", choices=sorted(FAMILIES), default="poisson")
    p.add_argument("--n", type=whole(1), default=6, help="jobs per instance (default 6)")
    p.add_argument("--policies", default="a-srpt,prr,srpt,sjf,qssf,fifo,2d-las")
    p.add_argument(
        "--error",
        default="1,1.5,2,4,8,adversarial",
        help="error levels: distortions mu >= 1 (predictions within a factor mu of the "
        "truth, 1 = exact) and adversarial (the order of the lengths reversed)",
    )
    p.add_argument("--seeds", type=whole(1), default=30, help="instances (default 30)")
    p.add_argument("--seed", type=whole(0), default=0, help="first instance's seed")
    p.add_argument(
        "--time-limit",
        type=finite(0, strict=True),
        default=10.0,
        metavar="S",
        help="seconds for each instance's optimum; unproven instances are left out and named",
    )
    p.add_argument("--out", metavar="DIR", help="write robustness.png here")
    add_format_option(p)
    p.set_defaults(func=cmd_robustness)
