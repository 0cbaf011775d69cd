"""A-SRPT's default guide: ``fill`` on one server, ``list`` on several."""

from __future__ import annotations

import pytest

from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job
from asrpt_opt.policies.asrpt import resolve_guide
from asrpt_opt.policies.registry import simulate
from asrpt_opt.traces.synthetic import msj, philly_like


@pytest.mark.parametrize(
    ("guide", "servers", "expected"),
    [("auto", 1, "fill"), ("auto", 2, "list"), ("auto", 16, "list"), ("list", 1, "list"),
     ("fill", 4, "fill")],
)  # fmt: skip
def test_resolve_guide(guide, servers, expected):
    assert resolve_guide(guide, servers) == expected


def _starts(result):
    return [run.to_json() for run in result.schedule.runs]


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_the_default_is_fill_on_one_server(engine):
    inst = msj(1500, load=0.85, seed=4)
    default = simulate(inst, "a-srpt", engine=engine)
    assert _starts(default) == _starts(simulate(inst, "a-srpt", guide="fill", engine=engine))
    assert _starts(default) != _starts(simulate(inst, "a-srpt", guide="list", engine=engine))


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_the_default_is_list_on_several_servers(engine):
    inst = philly_like(600, servers=(8,) * 4, load=0.9, seed=2)
    default = simulate(inst, "a-srpt", engine=engine)
    assert _starts(default) == _starts(simulate(inst, "a-srpt", guide="list", engine=engine))
    assert _starts(default) != _starts(simulate(inst, "a-srpt", guide="fill", engine=engine))


def test_the_hand_computed_one_server_case_follows_fill():
    # One 4-GPU server: j0 (4 GPUs, 5 s) at 0, j1 (1 GPU, 4.9 s) at 0. j1 ranks first (less
    # virtual work). fill serves the prefix {j1, j0} widest first: j0 takes the server and
    # j1 waits (completions 5 and 9.9); list runs j1 first and j0 after it (4.9 and 9.9).
    inst = Instance(
        name="one-server",
        cluster=Cluster(servers=(4,)),
        jobs=(
            Job(id="j0", release_s=0, gpus=4, duration_s=5),
            Job(id="j1", release_s=0, gpus=1, duration_s=4.9),
        ),
    )
    done = [run.completion_s for run in simulate(inst, "a-srpt").schedule.runs]
    assert done == pytest.approx([5.0, 9.9])
    listed = simulate(inst, "a-srpt", guide="list").schedule.runs
    assert [run.completion_s for run in listed] == pytest.approx([9.9, 4.9])
