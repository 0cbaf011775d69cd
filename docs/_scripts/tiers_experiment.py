"""The tiered-placement experiment of docs/placement.md.

Run (each part writes its rows to a JSON file; two parts fit two cores)::

    python docs/_scripts/tiers_experiment.py run --over 1 --seeds 0 1 2 --out /tmp/t1.json
    python docs/_scripts/tiers_experiment.py run --over 3 --seeds 0 1 2 --out /tmp/t3.json
    python docs/_scripts/tiers_experiment.py table /tmp/t1.json /tmp/t3.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from asrpt_opt.analysis.tiers_study import TierRow, summarize, tiers_study
from asrpt_opt.model.files import atomic_write_text


def _run(args: argparse.Namespace) -> None:
    rows = tiers_study(
        args.jobs,
        loads=args.loads,
        oversubscription=args.over,
        policies=args.policies,
        seeds=args.seeds,
        progress=lambda done, total: print(f"{done}/{total}", flush=True),
    )
    atomic_write_text(args.out, json.dumps([r.to_json() for r in rows], indent=1))


def _table(args: argparse.Namespace) -> None:
    rows = [TierRow(**r) for path in args.files for r in json.loads(Path(path).read_text())]
    print(
        "| load | over | policy | placement | seeds | mean JCT (s) | vs consolidate [95% CI] "
        "| p95 JCT (s) | GB across racks |"
    )
    print("|---:|---:|---|---|---:|---:|---|---:|---:|")
    for s in summarize(rows):
        print(
            f"| {s.load:g} | {s.oversubscription:g}:1 | {s.policy} | {s.placement} | {s.runs} "
            f"| {s.mean_jct_s:,.0f} | {s.ratio:.3f} [{s.ratio_low:.3f}, {s.ratio_high:.3f}] "
            f"| {s.p95_jct_s:,.0f} | {s.cross_rack_gb:,.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(required=True)
    run = sub.add_parser("run")
    run.add_argument("--jobs", type=int, default=300)
    run.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.7, 0.9])
    run.add_argument("--over", type=float, nargs="+", default=[1.0, 3.0])
    run.add_argument("--policies", nargs="+", default=["a-srpt", "fifo", "srtf"])
    run.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    run.add_argument("--out", required=True)
    run.set_defaults(fn=_run)
    table = sub.add_parser("table")
    table.add_argument("files", nargs="+")
    table.set_defaults(fn=_table)
    args = parser.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
