"""The NOTICE logging level: what a user should hear about by default but is not a warning
(for example, that numba is compiling kernels and why the first call is slow).

The command line shows NOTICE and above unless ``-q``; library code only logs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["NOTICE", "compile_once"]

#: Between INFO (20) and WARNING (30).
NOTICE = 25
logging.addLevelName(NOTICE, "NOTICE")

_DONE: set[str] = set()  # what compile_once has compiled in this process


def compile_once(
    what: str, usually: str, work: Callable[[], object], logger: logging.Logger
) -> float:
    """Run ``work`` (which compiles numba kernels, or loads them from numba's cache) once per
    process; later calls return at once.

    When numba really compiles (a cold cache: the first run after installing) and it takes
    longer than a second, a NOTICE says so while it works, and another how long it took.
    Loading a warm cache says nothing, however long it takes on a busy machine.

    Parameters
    ----------
    what : str
        What compiles, e.g. "the placement kernels".
    usually : str
        How long a cold compile usually takes, e.g. "20-60 s".
    work : callable
        Compiles, on a tiny input.
    logger : logging.Logger
        The caller's logger.

    Returns
    -------
    float
        Seconds it took (0 when already done in this process).
    """
    if what in _DONE:
        return 0.0
    _DONE.add(what)  # also while it runs: a call from inside ``work`` does not recurse
    compiling = _compile_listener()
    t0 = time.perf_counter()

    def say_compiling() -> None:
        if compiling.seen:
            logger.log(
                NOTICE,
                "compiling %s with numba: once after installing, usually %s (cached afterwards)",
                what,
                usually,
            )

    notice = threading.Timer(1.0, say_compiling)
    notice.daemon = True
    notice.start()
    try:
        from numba.core import event

        with event.install_listener("numba:compile", compiling):
            work()
    finally:
        notice.cancel()
    seconds = time.perf_counter() - t0
    if seconds > 1.0 and compiling.seen:
        logger.log(NOTICE, "%s compiled in %.0f s", what, seconds)
    return seconds


def _compile_listener() -> Any:
    """A numba event listener whose ``seen`` says whether anything was compiled: loading a
    function from numba's cache fires no ``numba:compile`` event."""
    # numba loads here, not when the command line imports this module.
    from numba.core import event

    class CompileSeen(event.Listener):
        seen = False

        def on_start(self, ev: object) -> None:
            self.seen = True

        def on_end(self, ev: object) -> None:
            pass

    return CompileSeen()
