"""The tiered-placement table of docs/placement.md: every method on one 256-worker GPT-3 job
over three tiers (run: ``python docs/_scripts/tiered_placement.py``)."""

from __future__ import annotations

import numpy as np

from asrpt_opt.model import Cluster
from asrpt_opt.model.dnn import load_model
from asrpt_opt.model.job import Parallelism
from asrpt_opt.model.workers import worker_graph
from asrpt_opt.placement import place
from asrpt_opt.placement.methods import warm_up_kernels

METHODS = ("consolidate", "greedy", "metis", "kahip", "kl", "mincut", "ilp")


def main() -> None:
    cluster = Cluster.tiered(servers_per_rack=4, racks=16, racks_per_pod=4, oversubscription=3)
    assert cluster.topology is not None
    wg = worker_graph(load_model("gpt3-6.7b"), Parallelism(dp=8, pp=4, tp=8))
    rng = np.random.default_rng(0)
    free = np.array(cluster.servers) - rng.integers(0, 5, size=cluster.n_servers)
    gbps = cluster.level_gbps
    warm_up_kernels()
    print(f"free GPUs {int(free.sum())}; level GB/s {gbps}")
    print(
        "| method | tier-weighted cut (s/iteration) | iteration time (s) "
        "| GB across racks / pods | wall (s) |"
    )
    print("|---|---:|---:|---:|---:|")
    for method in METHODS:
        r = place(
            wg, free, method=method, intra_gbps=gbps[0], inter_gbps=gbps[-1],
            topology=cluster.topology, time_limit_s=10.0,
        )  # fmt: skip
        per = dict(r.cross_tier_bytes)
        bound = (
            ""
            if r.lower_bound_tier_cost_s is None
            else f" (bound {r.lower_bound_tier_cost_s:.2f})"
        )
        print(
            f"| {method} | {r.tier_cost_s:.2f}{bound} | {r.iteration_time_s:.2f} | "
            f"{per['rack'] / 1e9:.0f} / {per['pod'] / 1e9:.0f} | {r.wall_s:.2f} |"
        )


if __name__ == "__main__":
    main()
