"""The placement method chooses which servers and how many GPUs a starting job gets."""

from __future__ import annotations

import pytest

from asrpt_opt.model import Cluster, Instance, Job, Parallelism
from asrpt_opt.placement import METHODS
from asrpt_opt.policies import PRIMARY, simulate
from asrpt_opt.speed.cluster import worker_graph_of
from asrpt_opt.traces.synthetic import dnn_mix

# SqueezeNet dp2 x tp4 on rooms 4,1,7,4,1,1,3 (the placement benchmark's worst case for
# consolidation): consolidating takes 7 + 1 and cuts a tensor-parallel ring; two servers of 4
# keep both rings whole and cut only the data-parallel edges.
CLUSTER = Cluster(servers=(4, 1, 7, 4, 1, 1, 3), intra_server_gbps=300, inter_server_gbps=12.5)
TP_JOB = Job(
    id="sq",
    release_s=0,
    gpus=8,
    model="squeezenet1_0",
    parallelism=Parallelism(dp=2, pp=1, tp=4),
    iterations=1000,
)


def test_graph_placement_keeps_tensor_rings_whole_and_wins():
    inst = Instance(name="tp-ring", cluster=CLUSTER, jobs=(TP_JOB,))
    wg = worker_graph_of(TP_JOB)
    tp_edge = float(wg.nbytes[wg.kind == 1][0])  # every TP ring edge carries the same bytes
    dp_edge = float(wg.nbytes[wg.kind == 2][0])
    cons = simulate(inst, "a-srpt", placement="consolidate")
    graph = simulate(inst, "a-srpt", placement="mincut")
    assert cons.schedule.runs[0].segments[0].allocation == ((1, 1), (2, 7))
    assert graph.schedule.runs[0].segments[0].allocation == ((0, 4), (2, 4))
    # Hand count: 7 + 1 splits one TP ring 3 + 1 (two ring edges cut) and separates one
    # worker from its DP partner; 4 + 4 cuts the four DP edges only.
    assert cons.segment_costs[0][0][1] == pytest.approx(2 * tp_edge + dp_edge)
    assert graph.segment_costs[0][0][1] == pytest.approx(4 * dp_edge)
    assert graph.metrics.cross_server_gb == pytest.approx(1000 * 4 * dp_edge / 1e9)
    assert graph.metrics.mean_jct_s < cons.metrics.mean_jct_s / 10
    assert graph.metrics.cross_server_gb < cons.metrics.cross_server_gb
    assert graph.metrics.placement_slowdown == pytest.approx(1.0)
    assert cons.metrics.placement_slowdown > 10


def test_every_built_in_policy_consolidates_by_default():
    inst = Instance(name="tp-ring", cluster=CLUSTER, jobs=(TP_JOB,))
    assert simulate(inst, "a-srpt").placement == "consolidate"
    assert simulate(inst, "fifo").placement == "consolidate"
    fifo_graph = simulate(inst, "fifo", placement="mincut")
    assert fifo_graph.schedule.runs[0].segments[0].allocation == ((0, 4), (2, 4))


@pytest.mark.parametrize("method", [m for m in METHODS if m != "ilp"])
@pytest.mark.parametrize("policy", PRIMARY)
def test_every_policy_runs_with_every_method(policy, method):
    jobs = (
        Job(id="a", release_s=0, gpus=3, duration_s=5),
        TP_JOB,
        Job(
            id="p",
            release_s=1,
            gpus=4,
            model="vgg16",
            parallelism=Parallelism(dp=2, pp=2),
            iterations=200,
        ),
    )
    inst = Instance(name="mix", cluster=CLUSTER, jobs=jobs)
    res = simulate(inst, policy, placement=method)  # validated inside
    assert res.placement == method
    assert res.metrics.placement_slowdown >= 1.0 - 1e-12


def test_a_placement_that_refuses_undoes_its_preemptions():
    from asrpt_opt.policies import ASRPT

    class Picky(ASRPT):
        """Refuses the wide job whenever it would have to preempt."""

        def place(self, job, free, view):
            if int(view.job_gpus[job]) == 4 and view.total_free < 4:
                return None
            return super().place(job, free, view)

    jobs = (
        Job(id="long", release_s=0, gpus=4, duration_s=20),
        Job(id="short", release_s=1, gpus=4, duration_s=2),
    )
    inst = Instance(name="picky", cluster=Cluster(servers=(4,)), jobs=jobs)
    res = simulate(inst, Picky(guide="list"))
    # SRPT would preempt the long job at t=1; the refusal leaves it running, unpreempted.
    assert res.metrics.preemptions == 0
    assert [r.completion_s for r in res.schedule.runs] == [20.0, 22.0]
    assert simulate(inst, "a-srpt").metrics.preemptions == 1


def test_the_start_rule_waits_for_a_faster_placement():
    # Two servers of 4: a (3 GPUs, 10 s) and c (3 GPUs, 2 s) leave one GPU free on each.
    # b (2 GPUs, spread slowdown 3) arrives at t=1: spread now it runs 4 x 3 = 12 s (done at
    # 13); with the rule it waits for c to finish at t=2 and runs 4 s on one server (done at 6).
    jobs = (
        Job(id="a", release_s=0, gpus=3, duration_s=10),
        Job(id="c", release_s=0, gpus=3, duration_s=2),
        Job(id="b", release_s=1, gpus=2, duration_s=4, spread_slowdown=3),
    )
    inst = Instance(name="rule", cluster=Cluster(servers=(4, 4)), jobs=jobs)
    eager = simulate(inst, "fifo")
    patient = simulate(inst, "fifo", max_placement_slowdown=1.25)
    assert eager.schedule.runs[2].completion_s == 13.0
    assert eager.schedule.runs[2].segments[0].allocation == ((0, 1), (1, 1))
    assert patient.schedule.runs[2].completion_s == 6.0
    assert patient.schedule.runs[2].segments[0].allocation == ((1, 2),)
    # An idle cluster starts the job whatever its placement costs (no deadlock).
    alone = Instance(name="alone", cluster=Cluster(servers=(1, 1)), jobs=(jobs[2],))
    assert simulate(alone, "a-srpt", max_placement_slowdown=1.0).metrics.makespan_s == 13.0
    with pytest.raises(ValueError, match="max_placement_slowdown"):
        simulate(inst, "fifo", max_placement_slowdown=0.5)


@pytest.mark.parametrize(("load", "seed"), [(0.9, 0), (0.9, 1)])
def test_asrpt_default_placement_is_never_slower_than_consolidation(load, seed):
    # The two fresh dnn_mix instances where mincut measured 2.3% and 1.2% slower than
    # consolidation (docs/placement.md): the default must not be (0.5% tolerance).
    cluster = Cluster(servers=(8,) * 8, intra_server_gbps=300, inter_server_gbps=12.5)
    inst = dnn_mix(300, cluster, load=load, seed=seed)
    default = simulate(inst, "a-srpt").metrics.mean_jct_s
    assert default <= 1.005 * simulate(inst, "a-srpt", placement="consolidate").metrics.mean_jct_s
    assert simulate(inst, "a-srpt", placement="mincut").metrics.mean_jct_s > 1.005 * default
