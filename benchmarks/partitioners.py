"""Placement methods against the graph partitioners: the tables of docs/placement.md.

``python benchmarks/partitioners.py`` prints two Markdown tables: every DNN job of the bundled
``instances/placement/`` files (cross-server bytes per iteration against the best method,
ILP included), and GPT-style worker graphs of 64-1,024 workers on fragmented clusters (the
ILP does not prove these; ``mincut`` is the yardstick). Cuts are deterministic; times are one
run's wall time of the method alone (``PlacementResult.wall_s``).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from asrpt_opt.model import Parallelism, load_instance
from asrpt_opt.model.dnn import load_model
from asrpt_opt.model.workers import worker_graph
from asrpt_opt.placement import place
from asrpt_opt.placement.compare import instance_free_gpus

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ["ilp", "mincut", "greedy", "metis", "kahip", "consolidate"]
LARGE = ["mincut", "greedy", "metis", "kahip", "consolidate"]
#: GPT-3 6.7B as DP x PP x TP, on this many servers of 8 with random free GPUs (seed 0).
GRAPHS = [((8, 4, 2), 12), ((16, 4, 4), 40), ((32, 8, 4), 160)]
BANDWIDTH = {"intra_gbps": 300.0, "inter_gbps": 12.5}


def bundled_table() -> list[str]:
    """Totals over the bundled placement instances' jobs."""
    total: dict[str, float] = defaultdict(float)
    wall: dict[str, float] = defaultdict(float)
    above: dict[str, int] = defaultdict(int)
    best_sum, jobs = 0.0, 0
    for path in sorted((ROOT / "instances" / "placement").glob("p*.json")):
        inst = load_instance(path)
        free = instance_free_gpus(inst) or inst.cluster.servers
        for job in inst.jobs:
            wg = worker_graph(load_model(job.model), job.parallelism)
            results = {m: place(wg, free, method=m, **BANDWIDTH) for m in BUNDLED}
            best = min(r.cross_server_bytes for r in results.values())
            best_sum += best
            jobs += 1
            for m, r in results.items():
                total[m] += r.cross_server_bytes
                wall[m] += r.wall_s
                above[m] += r.cross_server_bytes > best * (1 + 1e-9) + 1e-6
    rows = [
        f"{jobs} jobs of instances/placement/",
        "",
        "| method | cross-server GB | vs best | jobs above the best | time s (all jobs) |",
        "|---|---:|---:|---:|---:|",
    ]
    for m in BUNDLED:
        rows.append(
            f"| {m} | {total[m] / 1e9:,.2f} | {total[m] / best_sum:.3f} | {above[m]} "
            f"| {wall[m]:.3f} |"
        )
    return rows


def large_table() -> list[str]:
    """GPT-style worker graphs of 64-1,024 workers on fragmented clusters."""
    rows = [
        "| workers | servers, free GPUs | method | cross-server GB | vs mincut | time s |",
        "|---:|---|---|---:|---:|---:|",
    ]
    for (dp, pp, tp), n_servers in GRAPHS:
        wg = worker_graph(load_model("gpt3-6.7b"), Parallelism(dp=dp, pp=pp, tp=tp))
        rng = np.random.default_rng(0)
        free = rng.integers(0, 9, size=n_servers)
        while free.sum() < wg.n_workers:
            free[rng.integers(n_servers)] = 8
        results = {m: place(wg, free, method=m, **BANDWIDTH) for m in LARGE}
        base = results["mincut"].cross_server_bytes
        for m, r in results.items():
            rows.append(
                f"| {wg.n_workers} | {n_servers}, {int(free.sum())} | {m} "
                f"| {r.cross_server_bytes / 1e9:,.2f} | {r.cross_server_bytes / base:.3f} "
                f"| {r.wall_s:.3f} |"
            )
    return rows


if __name__ == "__main__":
    print("\n".join([*bundled_table(), "", *large_table()]))
