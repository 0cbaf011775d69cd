"""Deterministic work limits: the same result on a busy machine as on a quiet one, the limit
that stopped a solve recorded, and ratio sweeps that recompute exactly."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import asdict

import pytest

from asrpt_opt.analysis.families import make_family_instance
from asrpt_opt.analysis.sweep import RatioConfig
from asrpt_opt.cli import main
from asrpt_opt.errors import SolverError
from asrpt_opt.solvers import solve
from asrpt_opt.solvers.continuous import continuous_preemptive_optimum
from asrpt_opt.solvers.params import SolverParams, load_preset


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), True, "3"])
def test_work_limit_must_be_a_positive_number(bad):
    with pytest.raises(SolverError, match="work_limit"):
        SolverParams(work_limit=bad)


def test_a_preset_may_set_the_work_limit(tmp_path):
    preset = tmp_path / "p.toml"
    preset.write_text("work_limit = 2.5\ntime_limit_s = 60\n")
    assert load_preset(preset).work_limit == 2.5


def _burn():
    """Two processes spinning on the machine's cores, as a loaded machine has."""
    code = "import time\nend = time.time() + 60\nwhile time.time() < end: pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]


def _solved(preemption: str) -> str:
    inst = make_family_instance("poisson", 10, 3)
    res = solve(inst, preemption=preemption, params=SolverParams(time_limit_s=120, work_limit=0.2))
    doc = res.to_json()
    doc.pop("wall_s")
    return json.dumps(doc, sort_keys=True)


@pytest.mark.parametrize("preemption", ["none", "continuous"])
def test_a_work_limited_solve_is_the_same_on_a_loaded_machine(preemption):
    quiet = _solved(preemption)
    burners = _burn()
    try:
        loaded = _solved(preemption)
    finally:
        for p in burners:
            p.kill()
            p.wait()
    assert loaded == quiet
    assert json.loads(quiet)["params"]["stopped_by"] in ("work", "none")


def test_the_limit_that_stopped_the_search_is_recorded():
    inst = make_family_instance("poisson", 10, 3)
    out = continuous_preemptive_optimum(inst, time_limit_s=120, max_nodes=5)
    assert out.stopped_by == "work"
    assert out.status == "feasible" or out.objective_s is None
    assert 5 <= out.nodes <= 5 + 2 * len(inst.jobs)  # one expansion past the limit at most
    res = solve(inst, preemption="continuous", params=SolverParams(time_limit_s=0.05))
    assert res.params["stopped_by"] == "time"


def test_wall_clock_sweeps_keep_their_store_keys():
    config = RatioConfig(family="poisson", n=4, policies=("fifo",))
    # The key as stores written before work limits computed it.
    doc = asdict(config)
    doc["backend"] = doc.pop("solver")
    del doc["work_limit"]
    text = json.dumps({**doc, "seed": 3}, sort_keys=True)
    assert config.key(3) == hashlib.sha256(text.encode()).hexdigest()[:24]
    assert RatioConfig(family="poisson", n=4, policies=("fifo",), work_limit=1.0).key(3) != (
        config.key(3)
    )


def test_a_resumed_work_limited_sweep_equals_an_uninterrupted_one(tmp_path, monkeypatch, capsys):
    argv = ["ratio", "--family", "poisson", "--n", "8", "--policies", "fifo,a-srpt"]
    argv += ["--work-limit", "0.2", "--store", "r.sqlite", "--json", "-q"]
    outputs = []
    for name, steps in (("whole", ["4"]), ("resumed", ["2", "4"])):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        for seeds in steps:
            capsys.readouterr()
            assert main([*argv, "--seeds", seeds]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    summary = json.loads(outputs[0])
    assert summary["config"]["work_limit"] == 0.2
