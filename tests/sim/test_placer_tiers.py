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


def _fragmented_instance() -> Instance:
    """Three long jobs, consolidated, leave 1, 1, 2 and 4 free GPUs; then a 4-GPU
    data-parallel ResNet-50 (2.6% slower on fragments) arrives, then a 4-GPU tensor-parallel
    GPT-2 (63% slower across servers)."""

    def job(name: str, t: float, model: str, dp: int, tp: int, iters: int) -> Job:
        return Job(
            id=name, release_s=t, gpus=dp * tp, model=model,
            parallelism=Parallelism(dp=dp, pp=1, tp=tp), iterations=iters,
        )  # fmt: skip

    jobs = (
        job("a", 0, "resnet50", 3, 1, 10**7),
        job("b", 0, "resnet50", 3, 1, 10**7),
        job("c", 0, "resnet50", 2, 1, 10**7),
        job("d", 1, "resnet50", 4, 1, 20_000),
        job("e", 2, "gpt2-1.5b", 1, 4, 20_000),
    )
    cluster = Cluster(servers=(4,) * 4, intra_server_gbps=300, inter_server_gbps=12.5)
    return Instance(name="fragmented", cluster=cluster, jobs=jobs)


def test_keeping_a_whole_server_free_lets_a_later_wide_job_run_on_one_server():
    from asrpt_opt import simulate
    from asrpt_opt.sim import Placement

    inst = _fragmented_instance()
    myopic = simulate(inst, "fifo")
    keep = simulate(inst, "fifo", placement=Placement(choice="fragmentation"))
    runs = {name: dict(zip([j.id for j in inst.jobs], r.schedule.runs, strict=True))
            for name, r in (("myopic", myopic), ("keep", keep))}  # fmt: skip
    # Myopic: d takes the whole server 3 and the GPT-2 job is spread over three servers.
    assert runs["myopic"]["d"].segments[0].allocation == ((3, 4),)
    assert len(runs["myopic"]["e"].segments[0].allocation) == 3
    # Fragmentation-aware: c already fills the fragments a and b left (2.6% slower), so d
    # and then the GPT-2 job each find a whole server.
    assert runs["keep"]["c"].segments[0].allocation == ((0, 1), (1, 1))
    assert runs["keep"]["d"].segments[0].allocation == ((2, 4),)
    assert runs["keep"]["e"].segments[0].allocation == ((3, 4),)
    done = {n: {j: r.completion_s for j, r in runs[n].items()} for n in runs}
    assert done["keep"]["e"] < 0.7 * done["myopic"]["e"]
    assert done["keep"]["d"] < 1.03 * done["myopic"]["d"]
    assert keep.placement == "consolidate+fragmentation"


def test_a_zero_tolerance_keeps_the_fastest():
    from asrpt_opt import simulate
    from asrpt_opt.sim import Placement

    inst = _fragmented_instance()
    strict = simulate(inst, "fifo", placement=Placement(choice="fragmentation", tolerance=0))
    assert strict.schedule.runs == simulate(inst, "fifo").schedule.runs


def test_a_placement_rule_refuses_unknown_choices_and_tolerances():
    from asrpt_opt.errors import UnknownNameError, UsageError
    from asrpt_opt.sim import Placement

    with pytest.raises(UnknownNameError, match="fragmentation"):
        Placement(choice="tidy")
    with pytest.raises(UsageError, match="tolerance"):
        Placement(choice="fragmentation", tolerance=1.5)
