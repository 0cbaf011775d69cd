"""Where a study's independent tasks run: in this process, in a local process pool (loky), or
on a Dask cluster. The ratio sweep and the load sweep share this one implementation.
"""

from __future__ import annotations

import ctypes
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from asrpt_opt.errors import UnknownNameError, UsageError

__all__ = ["EXECUTORS", "run_tasks"]

#: Where a study's tasks are evaluated: in this process, in a local process pool (loky), or
#: on a Dask cluster.
EXECUTORS = ("serial", "loky", "dask")

T = TypeVar("T")
R = TypeVar("R")


def run_tasks(
    fn: Callable[[T], R],
    tasks: Iterable[T],
    *,
    workers: int = 1,
    executor: str = "loky",
    scheduler: str | None = None,
) -> Iterator[tuple[T, R]]:
    """Evaluate ``fn`` on every task and yield ``(task, result)`` as each finishes.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled for the worker processes).
    tasks : iterable
        Picklable arguments, one per call.
    workers : int
        Processes on this machine (``loky``) or local Dask workers when no scheduler is given.
    executor : {"serial", "loky", "dask"}
        ``serial`` evaluates in this process (as ``loky`` does with one worker).
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:port``).

    Returns
    -------
    iterator of (task, result)
        In completion order, which need not be the tasks' order.
    """
    if executor not in EXECUTORS:
        raise UnknownNameError("executor", executor, EXECUTORS)
    items = list(tasks)
    if executor == "dask":
        yield from _dask(fn, items, workers, scheduler)
    elif executor == "serial" or workers <= 1:
        for task in items:
            yield task, fn(task)
    else:
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=workers, backend="loky", return_as="generator_unordered")
        yield from parallel(delayed(_tagged)(fn, task) for task in items)


def _dask(
    fn: Callable[[T], R], items: list[T], workers: int, scheduler: str | None
) -> Iterator[tuple[T, R]]:
    from dask.distributed import Client, as_completed

    if scheduler:
        try:
            client = Client(scheduler, timeout=5)
        except (OSError, TimeoutError, ValueError) as exc:
            raise UsageError(
                f"cannot reach the Dask scheduler {scheduler!r} within 5 s: {exc}"
            ) from None
    else:
        client = Client(processes=True, n_workers=workers)
    try:
        futures = {client.submit(fn, task, pure=False): k for k, task in enumerate(items)}
        for fut in as_completed(futures):
            yield items[futures[fut]], fut.result()
    finally:
        client.close()


def _tagged(fn: Callable[[T], R], task: T) -> tuple[T, R]:
    _die_with_parent()
    return task, fn(task)


def _die_with_parent() -> None:
    # A worker process outlives a study killed with SIGKILL (nothing runs in the study to
    # stop it); on Linux the kernel can kill the worker when its parent dies.
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
