"""How large an instance the continuous-time preemptive search proves within a time limit.

Usage: python tools/continuous_scale.py [--n 6,7,8,9,10] [--seeds 5] [--limit 60]

For every family, n and seed, runs ``solve(preemptive=True)`` (grid solve, then the event
search) and prints per (family, n) how many optima were proven and the median and largest
wall time.
"""

from __future__ import annotations

import argparse
import statistics

from asrpt_opt.analysis.families import FAMILIES, make_family_instance
from asrpt_opt.solvers import SolverParams, solve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="6,7,8,9,10")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--families", default=",".join(FAMILIES))
    args = parser.parse_args()
    print("| family | n | proven | median s | max s |")
    print("|---|---:|---:|---:|---:|")
    for family in args.families.split(","):
        for n in (int(x) for x in args.n.split(",")):
            walls, proven = [], 0
            for seed in range(args.seeds):
                inst = make_family_instance(family, n, seed)
                res = solve(
                    inst,
                    preemptive=True,
                    cluster_model="pooled",
                    params=SolverParams(time_limit_s=args.limit),
                )
                walls.append(res.wall_s)
                proven += res.status == "optimal"
            print(
                f"| {family} | {n} | {proven}/{args.seeds} | "
                f"{statistics.median(walls):.2f} | {max(walls):.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
