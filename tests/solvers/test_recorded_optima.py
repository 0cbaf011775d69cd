"""The optima recorded in instances/optima still hold for the instance files they name."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from asrpt_opt.model import dumps_instance, load_instance
from asrpt_opt.solvers import SolverParams, solve

ROOT = Path(__file__).resolve().parents[2]
RECORDS = sorted((ROOT / "instances" / "optima").glob("*.json"))


def test_there_are_records():
    assert len(RECORDS) >= 12


@pytest.mark.parametrize(
    "record",
    [pytest.param(r, marks=pytest.mark.slow) if ".nonpmtn." not in r.name else r for r in RECORDS],
    ids=[r.name for r in RECORDS],
)
def test_record_reproduces(record):
    data = json.loads(record.read_text())
    inst = load_instance(ROOT / "instances" / "examples" / data["instance"])
    assert hashlib.sha256(dumps_instance(inst).encode()).hexdigest() == data["instance_sha256"]
    assert data["status"] == "optimal"
    assert data["objective_s"] == data["bound_s"]
    grid = data["model"]["time"] != "continuous"
    assert grid == (".grid." in record.name)
    res = solve(
        inst,
        preemption=("grid" if grid else "continuous") if data["preemptive"] else "none",
        cluster_model=data["placement"],
        params=SolverParams(time_limit_s=60),
    )
    assert res.status == "optimal"
    assert res.model() == data["model"]
    assert res.objective_s == pytest.approx(data["objective_s"])
