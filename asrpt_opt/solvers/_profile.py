"""Free GPUs over integer time as a step function, for the list schedules of
:mod:`asrpt_opt.solvers._data`."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.allocation import Allocation

__all__ = ["Profile", "pool_alloc"]

_NEVER = np.iinfo(np.int64).max


class Profile:
    """Free GPUs of each server over integer time, as a step function: column ``i`` of
    ``free`` holds from ``times[i]`` to ``times[i + 1]`` (the last one for ever).

    A list schedule of n jobs has at most 2n + 1 steps whatever its horizon, so memory and
    each search are linear in n, not in time (the unit-time arrays this replaces held
    servers x horizon cells: gigabytes for long instances, minutes for a 10,000-job burst).
    """

    def __init__(self, caps: list[int]) -> None:
        self.times = np.zeros(1, dtype=np.int64)
        self.free = np.asarray(caps, dtype=np.int64).reshape(-1, 1).copy()

    def _step(self, t: int) -> int:
        return int(np.searchsorted(self.times, t, side="right")) - 1

    def _split(self, t: int) -> int:
        i = self._step(t)
        if self.times[i] == t:
            return i
        self.times = np.insert(self.times, i + 1, t)
        self.free = np.insert(self.free, i + 1, self.free[:, i], axis=1)
        return i + 1

    def earliest(self, row: NDArray[np.int64], start: int, length: int, need: int) -> int:
        """First t >= start with ``row >= need`` throughout [t, t + length); ``row`` is a
        server's free GPUs per step or a sum of them, and ``need`` at most its last value
        (every GPU is free after the last reservation)."""
        i = self._step(start)
        bad = np.flatnonzero(row[i:] < need) + i
        if bad.size == 0:
            return start
        # A window starts at ``start`` or where a bad step ends, and must end by the start of
        # the next bad step.
        begin = np.concatenate(([start], self.times[bad + 1]))
        stop = np.concatenate((np.maximum(self.times[bad], start), [_NEVER]))
        return int(begin[np.flatnonzero(stop - begin >= length)[0]])

    def room(self, start: int, length: int) -> NDArray[np.int64]:
        """Per server, the GPUs free throughout [start, start + length)."""
        i, k = self._step(start), self._step(start + length - 1)
        return self.free[:, i : k + 1].min(axis=1)

    def next_change(self, start: int, length: int) -> int:
        """The next start after ``start`` whose window covers other steps."""
        times = self.times
        left = times[min(self._step(start) + 1, times.size - 1)]
        right = times[min(self._step(start + length - 1) + 1, times.size - 1)] - length + 1
        later = [int(x) for x in (left, right) if x > start]
        return min(later) if later else start + 1

    def reserve(self, start: int, length: int, alloc: Allocation) -> None:
        """Take ``alloc``'s GPUs during [start, start + length)."""
        i = self._split(start)
        k = self._split(start + length)
        for s, c in alloc:
            self.free[s, i:k] -= c


def pool_alloc(profile: Profile, t: int, length: int, need: int) -> Allocation:
    """Take ``need`` GPUs free throughout [t, t+length) from the roomiest servers.

    Parameters
    ----------
    profile : Profile
    t, length : int
        The window, in time units.
    need : int
        GPUs wanted.

    Returns
    -------
    Allocation
        Sorted by server; fewer than ``need`` GPUs when the window has less room.
    """
    room = profile.room(t, length)
    alloc = []
    for s in np.argsort(-room, kind="stable").tolist():
        if need <= 0:
            break
        take = int(min(room[s], need))
        if take > 0:
            alloc.append((int(s), take))
            need -= take
    return tuple(sorted(alloc))
