"""Commands about learning-augmented scheduling: robustness."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from asrpt_opt.analysis.families import FAMILIES
from asrpt_opt.cli._common import finite, name_list, output_dir, whole, write_figure
from asrpt_opt.cli._output import Progress, add_format_option, emit_json, emit_table
from asrpt_opt.policies import POLICIES

__all__ = ["add_parsers"]


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
