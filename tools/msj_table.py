"""Reproduce the published multiserver-job table (Grosof et al.; isaacg1/msj-simulator's
``srpt-data.txt``) with our policies, and write the comparison as Markdown and a figure.

    python tools/msj_table.py STORE.sqlite docs/msj-table.md docs/img/msj-load-sweep.png \
        [--jobs 1000000] [--seeds 3] [--workers 2]

Runs are kept in the SQLite store: rerunning the command resumes where it stopped. A point
agrees when our mean is within 3% of the published one, or both are unstable.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import matplotlib

from asrpt_opt.analysis.load_sweep import LoadSweepConfig, run_load_sweep
from asrpt_opt.analysis.plots import plot_load_sweep
from asrpt_opt.analysis.store import LoadSweepStore
from asrpt_opt.model.io import atomic_write_text

LOADS = (0.5, 0.55, 0.6, 0.7, 0.8, 0.9, 0.98, 0.99)
U = None  # unstable in the published table
#: Published mean response times (10^7 jobs, seed 0); None: unstable; absent: not run.
PUBLISHED = {
    "serverfilling": (0.5977, 0.6257, 0.6605, 0.7645, 0.9714, 1.5838, 6.2657, 12.4251),
    "serverfilling-srpt": (0.5800, 0.5998, 0.6227, 0.6821, 0.7758, 0.9757, 1.8877, 2.7924),
    "firstfit-srpt": (0.7708, 0.8929, 1.1567, U, U),
    "greedy-srpt": (1.1191, 2.3384, U, U, U),
    "maxweight": (1.3243, 1.4625, 1.6060, 1.9247, 2.3901, 3.6349, 12.0077, 19.1214),
}
#: Ours without a published column: compared with ServerFilling-SRPT (5% asked).
OURS: dict[str, dict[str, str]] = {"a-srpt": {}}  # its defaults: the fill guide on one server
#: Agreement asked of a policy (3% by default).
TOLERANCE = {"a-srpt": 0.05}


def main() -> None:
    """Run the sweep and write the table and the figure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    parser.add_argument("table")
    parser.add_argument("figure")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--measure",
        choices=("all", "completions"),
        default="completions",
        help="completions (default): the reference's protocol, the first n completions",
    )
    args = parser.parse_args()
    t0 = time.perf_counter()
    reports = {}
    for policy in (*PUBLISHED, *OURS):
        published = PUBLISHED.get(policy, PUBLISHED["serverfilling-srpt"])
        config = LoadSweepConfig(
            family="msj",
            n=args.jobs,
            policies=(policy,),
            params={policy: OURS.get(policy, {})},
            measure=args.measure,
        )
        with LoadSweepStore(args.store) as store:
            reports[policy] = run_load_sweep(
                config,
                LOADS[: len(published)],
                range(args.seeds),
                store=store,
                workers=args.workers,
                progress=lambda d, t, p=policy: print(f"{p}: {d}/{t}", flush=True),
            )
    text = _table(reports, args)
    wall = f"\nSweep time: {time.perf_counter() - t0:,.0f} s.\n"
    atomic_write_text(Path(args.table), text + wall)
    matplotlib.use("Agg")
    merged = _merge(reports)
    fig = plot_load_sweep(merged)
    fig.savefig(args.figure, dpi=120)
    print(text)


def _merge(reports):
    from dataclasses import replace

    runs = tuple(r for rep in reports.values() for r in rep.runs)
    points = tuple(p for rep in reports.values() for p in rep.points)
    first = next(iter(reports.values()))
    config = replace(first.config, policies=tuple(reports))
    return replace(first, config=config, loads=LOADS, runs=runs, points=points)


def _table(reports, args) -> str:
    head = (
        "| policy | ρ | ours: mean [95% interval] | verdict (unstable runs) | published "
        "| ours / published | agrees |"
    )
    lines = [
        f"Multiserver-job workload (`traces.synthetic.msj`), {args.jobs:,} jobs x {args.seeds} "
        f"seeds a point (measure: {args.measure}); mean response time in time units; "
        "interval over seeds (`python tools/msj_table.py`).",
        "",
        head,
        "|---|---:|---|---|---:|---:|---|",
    ]
    for policy, report in reports.items():
        published = PUBLISHED.get(policy, PUBLISHED["serverfilling-srpt"])
        tol = TOLERANCE.get(policy, 0.03)
        for point, ref in zip(report.points, published, strict=False):
            ours = f"{point.mean_response:.4f} [{point.ci_low:.4f}, {point.ci_high:.4f}]"
            verdict = f"{point.verdict} ({point.unstable_runs}/{point.runs})"
            if ref is None:
                ok = point.verdict == "unstable"
                mark = "yes" if ok else "**no**"
                row = f"| {policy} | {point.load} | {ours} | {verdict} | unstable | | {mark} |"
                lines.append(row)
                continue
            ratio = point.mean_response / ref
            ok = point.verdict == "stable" and abs(ratio - 1) <= tol
            lines.append(
                f"| {policy} | {point.load} | {ours} | {verdict} | {ref:.4f} | {ratio:.4f} | "
                f"{'yes' if ok else '**no**'} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
