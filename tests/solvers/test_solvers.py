"""Exact offline optima: known answers, cross-checks between backends, honest statuses."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from asrpt_opt.errors import SolverError, UnknownNameError
from asrpt_opt.model import Cluster, Instance, Job
from asrpt_opt.policies import POLICIES, simulate
from asrpt_opt.relaxation import lower_bounds
from asrpt_opt.sim import validate_schedule
from asrpt_opt.solvers import SolverParams, load_preset, solve
from asrpt_opt.solvers._data import discretise
from asrpt_opt.solvers.cpsat import CPSATModel
from asrpt_opt.solvers.milp import TimeIndexedMILP
from asrpt_opt.speed.base import PooledSpeed
from tests.conftest import ROOT, TINY, instances, make_instance

KLASSES = {
    "1|r_j,pmtn|sum C_j": True,
    "1|r_j|sum C_j": False,
    "P|r_j|sum w_j C_j": False,
    "P|size_j,r_j|sum w_j C_j": False,
}


def _cases(known_answers, klass):
    for case in known_answers[klass]["instances"]:
        n = len(case["r"])
        jobs = zip(
            case["r"], case.get("size", [1] * n), case["p"], case.get("w", [1] * n), strict=True
        )
        inst = make_instance(list(jobs), servers=(case.get("m", 1),))
        yield inst, case.get("opt_sum_wC", case.get("opt_sum_C"))


def _model_optimum(model_cls, inst, preemptive):
    data = discretise(inst, "pooled", preemptive=preemptive)
    out = model_cls(data, preemptive=preemptive).solve(time_limit_s=120)
    assert out.status == "optimal"
    return out.bound_units * data.unit_s


@pytest.mark.parametrize("model_cls", [CPSATModel, TimeIndexedMILP])
@pytest.mark.parametrize("klass", [k for k, pre in KLASSES.items() if not pre])
def test_known_answers_nonpreemptive_both_backends(known_answers, klass, model_cls):
    for inst, opt in _cases(known_answers, klass):
        assert _model_optimum(model_cls, inst, False) == pytest.approx(opt)


@pytest.mark.slow
@pytest.mark.parametrize("model_cls", [CPSATModel, TimeIndexedMILP])
def test_known_answers_preemptive_both_backends(known_answers, model_cls):
    # About 8 s (CP-SAT) and 20 s (MILP) on one core: the time-indexed preemptive model is big.
    for inst, opt in _cases(known_answers, "1|r_j,pmtn|sum C_j"):
        assert _model_optimum(model_cls, inst, True) == pytest.approx(opt)


@pytest.mark.parametrize("klass", list(KLASSES))
def test_known_answers_through_the_front_door(known_answers, klass):
    for inst, opt in _cases(known_answers, klass):
        res = solve(inst, preemption="continuous" if KLASSES[klass] else "none")
        assert res.status == "optimal"
        assert res.objective_s == pytest.approx(opt)
        assert res.bound_s == pytest.approx(opt)
        validate_schedule(inst, res.schedule, speed=PooledSpeed())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_jobs=6, weighted=True))
def test_backends_agree_and_respect_every_bound(inst):
    params = SolverParams(time_limit_s=30)
    milp = solve(inst, cluster_model="pooled", solver="milp", params=params)
    cpsat = solve(inst, cluster_model="pooled", solver="cpsat", params=params)
    assert milp.status == cpsat.status == "optimal"
    assert milp.objective_s == pytest.approx(cpsat.objective_s)
    lb = lower_bounds(inst, speed=PooledSpeed())
    assert milp.objective_s >= lb.lower_bound_s - 1e-6
    pre = solve(inst, cluster_model="pooled", preemption="continuous", params=params)
    assert pre.status == "optimal"
    assert pre.objective_s <= milp.objective_s + 1e-6
    for name in POLICIES:
        # On integer data, pooled, every policy's schedule is feasible for both models
        # (preemptive ones preempt only at integer event times).
        online = simulate(inst, name, speed=PooledSpeed()).metrics.total_weighted_completion_s
        assert pre.objective_s <= online + 1e-6
        if name in ("fifo", "sjf"):
            assert milp.objective_s <= online + 1e-6


@settings(max_examples=10, deadline=None)
@given(inst=instances(max_jobs=5))
def test_spread_lies_between_pooled_and_server_local(inst):
    pooled = solve(inst, cluster_model="pooled")
    spread = solve(inst, cluster_model="spread")
    local = solve(inst, cluster_model="server-local")
    assert spread.status == pooled.status == "optimal"
    assert pooled.objective_s <= spread.objective_s + 1e-6
    if local.status == "infeasible":
        assert any(j.gpus > max(inst.cluster.servers) for j in inst.jobs)
    else:
        assert spread.objective_s <= local.objective_s + 1e-6
        milp = solve(inst, cluster_model="server-local", solver="milp")
        assert milp.objective_s == pytest.approx(local.objective_s)
        local_pre = solve(inst, cluster_model="server-local", preemption="continuous")
        assert local_pre.objective_s <= local.objective_s + 1e-6
        for run in local.schedule.runs:
            assert all(len(seg.allocation) == 1 for seg in run.segments)


def _hard_instance(n=30, seed=3):
    rng = np.random.default_rng(seed)
    jobs = tuple(
        Job(
            id=f"j{i}",
            release_s=int(rng.integers(0, 20)),
            gpus=int(rng.choice([1, 2, 4, 8])),
            duration_s=int(rng.integers(1, 11)),
            weight=float(rng.integers(1, 4)),
        )
        for i in range(n)
    )
    return Instance(name="hard", cluster=Cluster(servers=(4, 4)), jobs=jobs)


@pytest.mark.parametrize("backend", ["milp", "cpsat"])
def test_time_limited_solve_is_never_called_optimal(backend):
    inst = _hard_instance()
    res = solve(inst, solver=backend, params=SolverParams(time_limit_s=0.3), lp_bound=False)
    assert res.status in ("feasible", "optimal")
    if res.status == "optimal":  # only if the bound really meets the schedule's value
        assert res.objective_s <= res.bound_s + 1e-6
    else:
        assert res.bound_s < res.objective_s
    validate_schedule(inst, res.schedule, speed=PooledSpeed())
    assert res.objective_s == pytest.approx(res.schedule.total_weighted_completion_s(inst))


def test_time_scaling_is_exact():
    inst = make_instance([(0, 1, 0.5), (0.25, 1, 0.25)], servers=(1,))
    res = solve(inst)
    assert res.params["time_unit_s"] == 0.25
    assert res.objective_s == pytest.approx(0.5 + 0.75)


def test_bad_requests():
    inst = make_instance([(0, 1, 1.0)], servers=(1,))
    with pytest.raises(UnknownNameError, match="unknown solver 'gurobi'"):
        solve(inst, solver="gurobi")
    with pytest.raises(UnknownNameError, match="unknown cluster model"):
        solve(inst, cluster_model="anywhere")
    with pytest.raises(SolverError, match="spread at a slowdown are not modelled"):
        solve(inst, preemption="continuous", cluster_model="spread")
    with pytest.raises(SolverError, match="cpsat solver only"):
        solve(inst, cluster_model="spread", solver="milp")
    off_grid = make_instance([(0, 1, float(np.pi)), (0, 1, 1.0)], servers=(1,))
    with pytest.raises(SolverError, match=r"grid model cannot be built.*coarser grid"):
        solve(off_grid, preemption="grid")
    # Without a grid model asked for, the interval of the policies (here proven: SPT).
    assert solve(off_grid).objective_s == pytest.approx(1.0 + 1.0 + np.pi)
    with pytest.raises(SolverError, match="time_limit_s"):
        SolverParams(time_limit_s=0)


def test_presets(tmp_path):
    # One truth: the bundled default preset is what solve() uses without one.
    assert load_preset(ROOT / "solvers" / "default.toml") == SolverParams()
    bad = tmp_path / "bad.toml"
    bad.write_text("time_limit = 3\n")
    with pytest.raises(SolverError, match="unknown key 'time_limit'"):
        load_preset(bad)
    bad.write_text("time_limit_s = [\n")
    with pytest.raises(SolverError, match="invalid TOML"):
        load_preset(bad)


def test_cli_solve_json_contract(capsys, tmp_path):
    from asrpt_opt.cli import main

    png = tmp_path / "s.png"
    status = main(
        [
            "solve",
            TINY,
            "--cluster-model",
            "spread",
            "--json",
            "--plot",
            str(png),
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert status == 0
    assert data["status"] == "optimal"
    assert data["objective_s"] == data["bound_s"]
    assert {"status", "objective_s", "bound_s", "jobs"} <= set(data)
    assert png.read_bytes()[:4] == b"\x89PNG"
    status = main(["solve", TINY, "--cluster-model", "server-local", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "infeasible"
    assert data["objective_s"] is None
    status = main(["solve", TINY, "--preset", "nope.toml"])
    assert status == 2
    assert "nope.toml: cannot read preset" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("limit_s", [1.0, 3.0])
def test_time_limit_covers_the_whole_solve(limit_s):
    # 40 bursty jobs, preemptive: building the MILP alone used to take over a second, so a
    # 1 s limit ran for 4-5 s. The limit now covers building; HiGHS may take up to about two
    # seconds to answer a stop (the documented tolerance).
    from asrpt_opt.analysis.families import make_family_instance

    inst = make_family_instance("bursty", 40, 1)
    t0 = time.perf_counter()
    res = solve(inst, preemption="continuous", params=SolverParams(time_limit_s=limit_s))
    wall = time.perf_counter() - t0
    assert wall < limit_s + 2.5
    assert res.bound_s <= res.objective_s


def test_the_old_preemptive_spelling_warns_and_means_the_same():
    inst = _cases_first_preemptive()
    with pytest.warns(DeprecationWarning, match="preemption="):
        old = solve(inst, preemptive=True)
    assert old.objective_s == solve(inst, preemption="continuous").objective_s
    with pytest.warns(DeprecationWarning, match="preemption="):
        grid = solve(inst, preemptive=True, preemption="grid")
    assert grid.preemption == "grid"
    with pytest.warns(DeprecationWarning, match="preemption="):
        none = solve(inst, preemptive=False, preemption="grid")
    assert not none.preemptive
    with pytest.raises(UnknownNameError, match="preemption model"):
        solve(inst, preemption="sometimes")


def _cases_first_preemptive():
    jobs = (
        Job(id="a", release_s=0, gpus=1, duration_s=4),
        Job(id="b", release_s=1, gpus=1, duration_s=1),
    )
    return Instance(name="two", cluster=Cluster(servers=(1,)), jobs=jobs)
