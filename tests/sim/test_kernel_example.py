"""The kernel example of docs/architecture.md runs in the compiled loop as documented, in its
own process and numba cache (a kernel outside the package must not touch the package's)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from asrpt_opt.policies import simulate
from asrpt_opt.traces.synthetic import philly_like
from tests.conftest import ROOT

RUN = """
import json, sys
import numpy as np
import oldest_kernel
from asrpt_opt.sim.compiled.loop import run_loop
from asrpt_opt.sim.compiled.state import new_state
from asrpt_opt.traces.synthetic import philly_like

inst = philly_like(60, servers=(4, 8), load=1.2, seed=3)
jobs = inst.jobs
release = np.array([j.release_s for j in jobs])
work = np.array([j.duration_s for j in jobs])
state = new_state(
    np.array(inst.cluster.servers, dtype=np.int64), release,
    np.argsort(release, kind="stable").astype(np.int64),
    np.array([j.gpus for j in jobs], dtype=np.int64), work,
    np.array([j.spread_slowdown for j in jobs]), np.ones(len(jobs)), work, 0.0, True,
)
code, completion, *_ = run_loop(state, oldest_kernel.new_state(state))
print(json.dumps([int(code), completion.tolist()]))
"""

BUILT_IN = (
    "from asrpt_opt.policies import simulate\n"
    "from asrpt_opt.traces.synthetic import philly_like\n"
    "inst = philly_like(40, servers=(4, 8), load=1.2, seed=3)\n"
    "print(simulate(inst, 'fifo', engine='compiled').metrics.mean_jct_s)\n"
)


def _example_code() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("### Adding a built-in policy with a kernel", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def _python(code: str, path: str, cache: str) -> str:
    env = {**os.environ, "PYTHONPATH": path, "NUMBA_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=path
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_the_documented_kernel_runs_fifo_without_backfill(tmp_path):
    (tmp_path / "oldest_kernel.py").write_text(_example_code(), encoding="utf-8")
    cache = str(tmp_path / "cache")
    code, completion = json.loads(_python(RUN, str(tmp_path), cache))
    # Oldest first, never past a job that does not fit: FIFO without backfill.
    inst = philly_like(60, servers=(4, 8), load=1.2, seed=3)
    expected = simulate(inst, "fifo", backfill=False, engine="python")
    assert code == 0
    assert completion == [run.completion_s for run in expected.schedule.runs]
    # The example's loop has its own cache index, naming its state type; once the module is
    # gone, a built-in policy still runs (its loop's index names only its own types; an
    # index naming a gone module reads as stale: tests/_numba/test_cache.py).
    (tmp_path / "oldest_kernel.py").unlink()
    inst = philly_like(40, servers=(4, 8), load=1.2, seed=3)
    got = float(_python(BUILT_IN, str(tmp_path), cache))
    assert got == simulate(inst, "fifo", engine="python").metrics.mean_jct_s
