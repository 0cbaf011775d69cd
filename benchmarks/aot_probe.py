"""The list scheduler's compiled loop built ahead of time with ``numba.pycc``: a probe.

The issue on bursts asks whether ahead-of-time (AOT) compilation would pay for the compiled
core's start-up. This module answers it for one kernel family, for measurement only (the
package does not use it): :func:`build` compiles, into an extension module, one function
that builds the simulator and list-scheduler states and runs the same loop the package
runs (:func:`asrpt_opt.sim.compiled.loop.loop_for`). Importing that module needs numpy and
not numba. ``python benchmarks/aot_probe.py FOLDER [CPU]`` builds it into FOLDER.

pycc needs a C compiler and setuptools, and numba has marked it "pending deprecation"
(since 0.57, "replacement technology is being developed").
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit, types

from asrpt_opt.model import Instance
from asrpt_opt.policies import list_scheduler_kernel as kernel
from asrpt_opt.sim.compiled.loop import loop_for
from asrpt_opt.sim.compiled.state import new_state

#: The extension module's name.
MODULE = "asrpt_aot_list_loop"
#: The loop the package compiles for the list scheduler's states.
_LOOP = loop_for(kernel.__name__)


def _run(
    capacity: Any, release: Any, order: Any, gpus: Any, work: Any, slowdown: Any,
    best_rate: Any, predicted: Any, rule: int, backfill: bool,
) -> Any:  # fmt: skip
    # What run_compiled does for a list-scheduler kernel, as one compiled function.
    s = new_state(capacity, release, order, gpus, work, slowdown, best_rate, predicted, 0.0, True)
    p = kernel.new_state(s, rule, backfill, np.zeros(0))
    return _LOOP(s, p)


def build(folder: Path, *, target_cpu: str = "") -> Path:
    """Compile the probe's extension module into ``folder`` (numba's generic CPU by default,
    as a wheel would be; ``"host"`` for this machine's).

    Parameters
    ----------
    folder : Path
    target_cpu : str, optional

    Returns
    -------
    Path
        The extension module's file.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc's pending deprecation
        from numba.pycc import CC
    ints, floats = types.int64[:], types.float64[:]
    args = (ints, floats, ints, ints, floats, floats, floats, floats, types.int64, types.boolean)
    typed = njit(_run)
    typed.compile(args)
    cc = CC(MODULE)
    cc.output_dir = str(folder)
    cc.target_cpu = target_cpu
    cc.export("run", typed.nopython_signatures[0])(_run)
    cc.compile()
    return folder / cc.output_file


def arguments(instance: Instance, rule: str) -> tuple[Any, ...]:
    """The exported ``run``'s arguments for abstract ``instance`` under ``rule`` (exact
    predictions, backfill on), as :func:`~asrpt_opt.sim.compiled.run_columns` passes them.

    Parameters
    ----------
    instance : Instance
    rule : str
        A key rule of ``list_scheduler_kernel.KEYS``.

    Returns
    -------
    tuple
    """
    n = instance.n_jobs
    release = np.array([job.release_s for job in instance.jobs])
    work = np.array([job.duration_s for job in instance.jobs])
    ones = np.ones(n)
    return (
        np.asarray(instance.cluster.servers, dtype=np.int64),
        release,
        np.argsort(release, kind="stable").astype(np.int64),
        np.array([job.gpus for job in instance.jobs], dtype=np.int64),
        work,
        ones,
        ones.copy(),
        work.copy(),
        kernel.KEYS.index(rule),
        True,
    )


if __name__ == "__main__":
    print(build(Path(sys.argv[1]), target_cpu=sys.argv[2] if len(sys.argv) > 2 else ""))
