"""A numba cache locator whose freshness stamp covers every kernel source of the package.

Numba's own locators stamp a cached function with its source file's modification time and
size. The package's kernels call one another across modules (the compiled event loop calls
a policy's kernel, which calls shared helpers): a change to a callee would leave the caller's
cached machine code stale. :class:`PackageLocator` wraps the locator numba would have chosen
(same folder, same file names) and replaces the stamp by a hash of the contents of every
module of the package that compiles with :func:`njit`, so any edit to any of them
invalidates every cached kernel, and an unchanged tree keeps its cache.

Loading a cached kernel does not refresh numba's compiler registries (:func:`_load_lean`):
numba refreshes them before every load, importing some sixty of its modules, although only
compiling reads them.

Each copy of the compiled loop (one per kernel module) is cached for every policy state type
it ran with, so its index can name a type from a module that is gone (a kernel written in a
script, then deleted or renamed). Numba would fail to unpickle that index with an
ImportError in every later process; :func:`njit` makes numba treat such an index as stale
instead (it recompiles and rewrites it).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
from numba.core import caching
from numba.core.runtime import rtsys

__all__ = ["PACKAGE", "PackageLocator", "kernel_sources", "njit", "source_stamp"]

logger = logging.getLogger(__name__)

#: The package whose kernels share one stamp.
PACKAGE = Path(__file__).resolve().parents[1]
#: A module compiles kernels when its text holds this import.
_MARKER = "from asrpt_opt._numba import"


def kernel_sources(root: Path = PACKAGE) -> list[Path]:
    """The package's modules that compile numba kernels, in a stable order.

    Parameters
    ----------
    root : Path
        The package folder.

    Returns
    -------
    list of Path
    """
    found = [root / "_numba" / "heaps.py"]
    for path in sorted(root.rglob("*.py")):
        if path not in found and _MARKER in path.read_text(encoding="utf-8"):
            found.append(path)
    return found


@functools.cache
def source_stamp(root: Path = PACKAGE) -> str:
    """A hash of the contents of every kernel source (computed once per process).

    Parameters
    ----------
    root : Path
        The package folder.

    Returns
    -------
    str
    """
    digest = hashlib.sha256()
    for path in kernel_sources(root):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class PackageLocator(caching._CacheLocator):
    """Numba's locator for a function of the package, with :func:`source_stamp` as stamp."""

    def __init__(self, inner: Any, root: Path) -> None:
        self._inner = inner
        self._root = root

    def ensure_cache_path(self) -> None:
        self._inner.ensure_cache_path()

    def get_cache_path(self) -> Any:
        return self._inner.get_cache_path()

    def get_source_stamp(self) -> Any:
        return source_stamp(self._root)

    def get_disambiguator(self) -> Any:
        return self._inner.get_disambiguator()

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> PackageLocator | None:
        root = _package_of(Path(py_file))
        if root is None:
            return None
        others: list[Any] = list(caching.CacheImpl._locator_classes)
        for other in others:
            if other is cls:
                continue
            inner = other.from_function(py_func, py_file)
            if inner is not None:
                return cls(inner, root)
        return None


def _package_of(path: Path) -> Path | None:
    # The asrpt_opt folder holding ``path`` (a copy of the package in another place counts).
    for parent in path.resolve().parents:
        if parent.name == PACKAGE.name and (parent / "_numba" / "cache.py").is_file():
            return parent
    return None


def _install() -> None:
    _skip_blas_probe()
    classes = caching.CacheImpl._locator_classes
    if PackageLocator not in classes:
        classes.insert(0, PackageLocator)
    index = caching.IndexDataCacheFile
    if index._load_index is not _load_index_or_stale:
        global _numba_load_index
        _numba_load_index = index._load_index
        index._load_index = _load_index_or_stale  # type: ignore[method-assign]
    cache = caching.Cache
    if cache.load_overload is not _load_lean and hasattr(cache, "_load_overload"):
        global _numba_load_overload
        _numba_load_overload = cache.load_overload
        cache.load_overload = _load_lean  # type: ignore[method-assign]


def _skip_blas_probe() -> None:
    """Import numba's array functions without their start-up probe for BLAS.

    ``numba.np.arraymath`` imports ``scipy.linalg`` when it is imported, only to record
    whether a BLAS exists (for one inner-product helper); that import is 0.1-0.2 s of a
    compiled run's start (loading a cached kernel imports ``arraymath`` when it rebuilds
    the environment of a numpy function the kernel inlined), and no kernel here uses BLAS.
    The probe is answered from whether scipy is installed, without importing it; numba's
    BLAS functions still import and check ``scipy.linalg`` themselves when first compiled.
    """
    import sys

    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    from numba.np import linalg

    probe = getattr(linalg, "ensure_blas", None)
    if probe is None:  # another numba: let it probe as it will
        return
    linalg.ensure_blas = _no_blas_yet
    try:
        from numba.np import arraymath
    finally:
        linalg.ensure_blas = probe
    arraymath.ensure_blas = probe
    arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None


def _no_blas_yet() -> None:
    raise ImportError("BLAS is checked when first needed")


_numba_load_overload: Callable[..., Any] | None = None


def _load_lean(self: Any, sig: Any, target_context: Any) -> Any:
    """numba's ``Cache.load_overload``, without the registry refresh for the package's kernels.

    numba refreshes its typing and lowering registries before it loads cached machine code:
    that imports some sixty of its modules and builds their tables, 0.1-0.3 s of a compiled
    run's start. Only compiling reads those registries, and compiling refreshes them itself
    (a test compiles a kernel after a lean load). Loaded machine code needs numba's runtime
    (NRT), which is initialised here. If a kernel cannot be loaded this way, numba's own
    load runs (with its refresh); a kernel of another package always loads as numba loads it.
    """
    assert _numba_load_overload is not None
    if not isinstance(getattr(self._impl, "locator", None), PackageLocator):
        return _numba_load_overload(self, sig, target_context)
    rtsys.initialize(target_context)
    try:
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
    except Exception as exc:  # numba's own load decides, with its refresh
        logger.info("lean load of %s failed (%r): numba's own load", self._name, exc)
    return _numba_load_overload(self, sig, target_context)


_numba_load_index: Callable[[Any], Any] | None = None


def _load_index_or_stale(self: Any) -> Any:
    # numba's own, except that an index it cannot unpickle is stale (numba recompiles).
    assert _numba_load_index is not None
    try:
        return _numba_load_index(self)
    except (ImportError, AttributeError, EOFError, pickle.UnpicklingError) as exc:
        logger.info("numba cache index %s unreadable (%s): recompiling", self._index_path, exc)
        return {}


def njit(*args: Any, **kwargs: Any) -> Callable[..., Any]:
    """:func:`numba.njit` with the package's cache locator installed first.

    Parameters
    ----------
    *args, **kwargs
        As :func:`numba.njit`.

    Returns
    -------
    callable
    """
    _install()
    return numba.njit(*args, **kwargs)
