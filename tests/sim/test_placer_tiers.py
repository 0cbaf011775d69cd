"""The simulator's placer on network tiers: a job goes into the rack that holds it, the
tier-blind reference does not, and the choice between a method and consolidation is made on
the real servers."""

from __future__ import annotations

import numpy as np
import pytest

from asrpt_opt.model import Cluster, Instance, Job, Parallelism
from asrpt_opt.model.topology import Topology
from asrpt_opt.sim.placer import Placer
from asrpt_opt.speed.cluster import ClusterSpeed

CLUSTER = Cluster(
    servers=(4, 4, 4, 4),
    intra_server_gbps=300,
    inter_server_gbps=12.5,
    topology=Topology.regular(4, [("rack", 2, 50.0)]),
)
JOB = Job(
    id="j", release_s=0, gpus=5, model="vgg16", parallelism=Parallelism(dp=5, pp=1, tp=1),
    iterations=10,
)  # fmt: skip
INSTANCE = Instance(name="t", cluster=CLUSTER, jobs=(JOB,))
FREE = np.array([4, 0, 2, 3])  # racks hold 4 and 5 free GPUs


def test_tier_aware_consolidation_stays_in_the_rack_that_holds_the_job():
    assert Placer(INSTANCE, "consolidate")(0, FREE) == ((2, 2), (3, 3))
    # Blind to racks: fewest servers, best fit, across the spine.
    assert Placer(INSTANCE, "consolidate-flat")(0, FREE) == ((0, 4), (2, 1))


@pytest.mark.parametrize("method", ["mincut", "greedy", "ilp"])
def test_graph_methods_stay_in_the_rack_and_are_no_slower_than_consolidation(method):
    speed = ClusterSpeed(CLUSTER)
    chosen = Placer(INSTANCE, method, speed)(0, FREE)
    assert chosen is not None
    assert {s // 2 for s, _ in chosen} == {1}
    assert speed.rate(JOB, chosen) >= speed.rate(JOB, ((2, 2), (3, 3))) * (1 - 1e-12)
    assert speed.rate(JOB, chosen) > speed.rate(JOB, ((0, 4), (2, 1)))


def test_the_choice_is_compared_on_the_servers_the_job_gets():
    # No rack holds 5 GPUs: the candidates are servers 0, 2 and 3 across two racks. The
    # method's split and consolidation's must be compared where they run: on the local
    # indices 0-2, local server 1 would stand for server 1, in rack 0 (both then look equally
    # fast and the split was kept, though consolidation is faster on the real servers).
    from asrpt_opt.placement import place
    from asrpt_opt.speed.cluster import worker_graph_of

    cluster = Cluster(
        servers=(4,) * 6, intra_server_gbps=300, inter_server_gbps=12.5,
        topology=Topology.regular(6, [("rack", 2, 50.0)]),
    )  # fmt: skip
    job = Job(
        id="g", release_s=0, gpus=5, model="gnmt", parallelism=Parallelism(dp=1, pp=5, tp=1),
        iterations=10,
    )  # fmt: skip
    speed = ClusterSpeed(cluster)
    free = np.array([3, 0, 2, 2, 0, 0])
    chosen = Placer(Instance(name="t", cluster=cluster, jobs=(job,)), "mincut", speed)(0, free)
    servers = np.array([0, 2, 3])
    assert cluster.topology is not None
    local = place(
        worker_graph_of(job), free[servers], method="mincut", intra_gbps=300,
        inter_gbps=12.5, topology=cluster.topology.subset(servers),
    ).allocation  # fmt: skip
    proposal = tuple((int(servers[s]), c) for s, c in local)
    consolidation = ((0, 3), (2, 2))
    assert proposal != consolidation
    assert speed.rate(job, consolidation) > speed.rate(job, proposal)
    assert chosen == consolidation
