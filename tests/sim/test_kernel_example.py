"""The kernel example of docs/architecture.md runs in the compiled loop as documented."""

from __future__ import annotations

import importlib.util
import re
import sys

import numpy as np
import pytest

from asrpt_opt.sim import simulate
from asrpt_opt.traces.synthetic import philly_like
from tests.conftest import ROOT


@pytest.fixture
def example(tmp_path, monkeypatch):
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("### Adding a built-in policy with a kernel", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    path = tmp_path / "oldest_kernel.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("oldest_kernel", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "oldest_kernel", module)
    spec.loader.exec_module(module)
    return module


def test_the_documented_kernel_runs_fifo_without_backfill(example):
    from asrpt_opt.sim.compiled.loop import run_loop
    from asrpt_opt.sim.compiled.state import OK, new_state

    inst = philly_like(60, servers=(4, 8), load=1.2, seed=3)
    jobs = inst.jobs
    n = len(jobs)
    release = np.array([j.release_s for j in jobs])
    gpus = np.array([j.gpus for j in jobs], dtype=np.int64)
    work = np.array([j.duration_s for j in jobs])
    state = new_state(
        np.array(inst.cluster.servers, dtype=np.int64),
        release,
        np.argsort(release, kind="stable").astype(np.int64),
        gpus,
        work,
        np.array([j.spread_slowdown for j in jobs]),
        np.ones(n),
        work,
        0.0,
        True,
    )
    code, completion, *_ = run_loop(state, example.new_state(state))
    # Oldest first, never past a job that does not fit: FIFO without backfill.
    expected = simulate(inst, "fifo", backfill=False, engine="python")
    assert code == OK
    assert completion.tolist() == [run.completion_s for run in expected.schedule.runs]
