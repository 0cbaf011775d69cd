"""numba's on-disk cache follows every kernel source of the package (asrpt_opt._numba)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from asrpt_opt._numba.cache import PACKAGE, kernel_sources, source_stamp

PROBE = (
    "import json, numpy as np\n"
    "from asrpt_opt.relaxation._kernels import srpt_loop\n"
    "done = srpt_loop(np.array([0.0, 1.0]), np.array([3.0, 1.0]), np.array([0, 1]))\n"
    "stats = srpt_loop.stats\n"
    "print(json.dumps([done.tolist(), sum(stats.cache_hits.values()),"
    " sum(stats.cache_misses.values())]))\n"
)


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    shutil.copytree(
        PACKAGE, root / "asrpt_opt", ignore=shutil.ignore_patterns("__pycache__", "data")
    )
    return root


def _run(root: Path, cache: Path) -> list:
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, cwd=root
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_kernel_module_is_stamped():
    names = {p.relative_to(PACKAGE).as_posix() for p in kernel_sources()}
    assert {
        "_numba/heaps.py",
        "sim/compiled/loop.py",
        "sim/compiled/state.py",
        "policies/list_scheduler_kernel.py",
        "policies/asrpt_kernel.py",
        "policies/_selection_kernel.py",
        "policies/tiresias_kernel.py",
        "policies/_gittins_sample_kernel.py",
        "placement/_kernels.py",
        "relaxation/_kernels.py",
    } <= names
    # A module that compiles kernels with numba's own njit would escape the stamp.
    for path in PACKAGE.rglob("*.py"):
        assert "from numba import njit" not in path.read_text(encoding="utf-8"), path


def test_editing_another_kernel_module_recompiles_a_cached_kernel(tmp_path):
    root, cache = _copy(tmp_path), tmp_path / "cache"
    first = _run(root, cache)
    again = _run(root, cache)
    assert first[0] == again[0] == [4.0, 2.0]  # job 1 preempts job 0 at t=1
    assert (first[1], first[2]) == (0, 1)  # compiled
    assert (again[1], again[2]) == (1, 0)  # loaded from the cache
    # The heap srpt_loop calls changes: srpt_loop's own file does not, yet it recompiles.
    heaps = root / "asrpt_opt" / "_numba" / "heaps.py"
    before = source_stamp(root / "asrpt_opt")
    heaps.write_text(heaps.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    source_stamp.cache_clear()
    assert source_stamp(root / "asrpt_opt") != before
    edited = _run(root, cache)
    assert edited[0] == [4.0, 2.0]
    assert (edited[1], edited[2]) == (0, 1)


def test_kernels_load_without_importing_scipy_linalg_and_blas_still_works():
    # numba imports scipy.linalg only to probe for BLAS; the package answers the probe
    # without it, and numba's own BLAS functions still find it when compiled.
    probe = (
        "import sys, numpy as np\n"
        "from asrpt_opt.relaxation._kernels import srpt_loop\n"
        "srpt_loop(np.array([0.0, 1.0]), np.array([3.0, 1.0]), np.array([0, 1]))\n"
        "print('scipy.linalg' in sys.modules)\n"
        "from asrpt_opt._numba import njit\n"
        "dot = njit(lambda a, b: np.dot(a, b))\n"
        "print(dot(np.ones(3), np.arange(3.0)), 'scipy.linalg' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "3.0", "True"]


def test_a_cached_kernel_loads_without_numbas_compiler_registries(tmp_path):
    # Loading the package's cached kernels skips numba's registry refresh (it imports
    # modules only compiling reads, such as numba.cpython.cmathimpl). Another package's
    # cached function still loads with numba's refresh, and compiling afterwards works.
    (tmp_path / "theirs.py").write_text(
        "import numba\n\n@numba.njit(cache=True)\ndef bump(x):\n    return x + 1\n",
        encoding="utf-8",
    )
    probe = (
        "import json, sys, numpy as np\n"
        "def compiler_tables():\n"
        "    return 'numba.cpython.cmathimpl' in sys.modules\n"
        "from asrpt_opt.relaxation._kernels import srpt_loop\n"
        "done = srpt_loop(np.array([0.0, 1.0]), np.array([3.0, 1.0]), np.array([0, 1]))\n"
        "ours = [sum(srpt_loop.stats.cache_hits.values()), compiler_tables()]\n"
        "from theirs import bump\n"
        "theirs = [bump(1), sum(bump.stats.cache_hits.values()), compiler_tables()]\n"
        "from asrpt_opt._numba import njit\n"
        "twice = njit(lambda a: np.sort(a) * 2.0)\n"
        "print(json.dumps([done.tolist(), ours, theirs, twice(np.array([3.0, 1.0])).tolist()]))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}

    def run() -> list:
        out = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, cwd=tmp_path
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, again = run(), run()
    assert first == [[4.0, 2.0], [0, True], [2, 0, True], [2.0, 6.0]]  # compiled
    assert again == [[4.0, 2.0], [1, False], [2, 1, True], [2.0, 6.0]]  # loaded


def test_an_index_naming_a_gone_module_reads_as_stale(tmp_path):
    # A kernel written in a script leaves its state type in the loop's cache index; once the
    # script is gone, numba would fail to unpickle that index in every later process.
    import pickle

    import numba
    from numba.core import caching

    from asrpt_opt._numba import njit

    njit(lambda: 0)  # installs the package's cache hooks
    index = caching.IndexDataCacheFile(
        cache_path=str(tmp_path), filename_base="gone", source_stamp="stamp"
    )
    with open(tmp_path / "gone.nbi", "wb") as f:
        pickle.dump(numba.__version__, f, protocol=-1)
        f.write(b"cno_such_module_of_a_deleted_script\nState\n.")
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(b"cno_such_module_of_a_deleted_script\nState\n.")
    assert index._load_index() == {}


class _FakeCache:
    # What _load_lean reads of numba's Cache: its locator, its I/O guard and its load.
    def __init__(self, locator: object, load: object) -> None:
        import contextlib
        import types

        self._impl = types.SimpleNamespace(locator=locator)
        self._name = "fake"
        self._guard_against_spurious_io_errors = contextlib.nullcontext
        self._load_overload = load


@pytest.mark.parametrize("ours", [True, False])
def test_lean_load_falls_back_to_numbas_own(monkeypatch, ours):
    # A lean load that fails, or a function of another package, goes through numba's own
    # load (with its refresh); a lean load that works returns what it loaded.
    from numba.core.registry import cpu_target

    from asrpt_opt._numba import cache

    cache._install()
    locator = cache.PackageLocator(None, PACKAGE) if ours else object()
    calls: list[str] = []
    monkeypatch.setattr(
        cache, "_numba_load_overload", lambda self, sig, ctx: calls.append("numba") or "numba's"
    )

    def broken(sig: object, ctx: object) -> None:
        calls.append("lean")
        raise RuntimeError("a registry was needed after all")

    ctx = cpu_target.target_context
    assert cache._load_lean(_FakeCache(locator, broken), (), ctx) == "numba's"
    assert calls == (["lean", "numba"] if ours else ["numba"])
    if ours:
        assert (
            cache._load_lean(_FakeCache(locator, lambda sig, ctx: "lean's"), (), ctx) == "lean's"
        )
