"""The job-size sample behind Tiresias' Gittins index: reading it, and the index of attained
service computed from it as the reference simulator computes it.

References
----------
.. [1] J. Gu, M. Chowdhury, K. G. Shin, Y. Zhu, M. Jeon, J. Qian, H. Liu, C. Guo, "Tiresias:
   A GPU cluster manager for distributed deep learning", NSDI 2019.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError
from asrpt_opt.model.io import input_problem

__all__ = ["REFERENCE_SAMPLE", "SizeSample", "read_sample", "whole_array"]

#: The name of the bundled sample Tiresias' simulator reads (``yarn-gput1000.csv``,
#: asrpt_opt/data/tiresias/SOURCE.md).
REFERENCE_SAMPLE = "tiresias"

_BIG = 1 << 62  # sums of sizes at or past this leave 64-bit integers


def read_sample(sample: Sequence[float] | str | PathLike[str]) -> list[int]:
    """The sizes of a job-size sample, whole seconds.

    Parameters
    ----------
    sample : sequence of float or path
        Sizes, or a text/CSV file of sizes (one per line; a header line is skipped), or
        :data:`REFERENCE_SAMPLE` for the bundled sample of Tiresias' simulator.

    Returns
    -------
    list of int
        The sizes, truncated to whole seconds (each >= 1).

    Raises
    ------
    UsageError
        If the file cannot be read, holds a word that is not a size, or a size is below 1.
    """
    if isinstance(sample, str) and sample == REFERENCE_SAMPLE:
        from importlib import resources

        sample = str(resources.files("asrpt_opt") / "data" / "tiresias" / "yarn-gput1000.csv")
    if isinstance(sample, str | PathLike):
        path = Path(sample)
        problem = input_problem(path)
        if problem is not None:
            raise UsageError(f"{path}: cannot read the job-size sample: {problem}")
        try:
            lines = path.read_text(encoding="utf-8").split()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read the job-size sample: {exc}") from None
        values = []
        for k, word in enumerate(lines):
            try:
                values.append(float(word))
            except ValueError:
                if k:  # only a header may be text
                    raise UsageError(f"{path}: {word!r} is not a job size") from None
        sample = values
    out = [int(float(x)) for x in sample]
    if not out or min(out) < 1:
        raise UsageError("service_sample_s must list job sizes >= 1 s")
    return out


class SizeSample:
    """A job-size sample, sorted, with prefix sums: the Gittins index of attained services.

    The reference builds a table of indices, one per sample size, by scanning the sample for
    every size; learning online, that table would change at every completion. Here a new size
    is inserted in O(n) (in numpy) and the indices a queue needs are computed for the whole
    queue at once; the numbers are the reference's, operation for operation.
    """

    def __init__(self, sizes: Sequence[int], delta: int) -> None:
        # 64-bit integers while the sizes' sum and the quantum's multiples fit, Python's past
        # that (extreme inputs).
        whole = np.int64 if sum(sizes) < _BIG and delta < 2**31 else object
        self._sizes = np.sort(np.asarray(sizes, dtype=whole))
        self._prefix = np.concatenate((np.zeros(1, dtype=whole), np.cumsum(self._sizes)))
        self._delta = delta

    def add(self, size: int) -> None:
        """Insert a size."""
        if self._prefix.dtype != object and int(self._prefix[-1]) + size >= _BIG:
            self._sizes = self._sizes.astype(object)
            self._prefix = self._prefix.astype(object)
        pos = int(np.searchsorted(self._sizes, size, side="right"))
        self._sizes = np.insert(self._sizes, pos, size)
        self._prefix = np.insert(self._prefix, pos + 1, self._prefix[pos])
        self._prefix[pos + 1 :] += size

    def indices(self, attained: NDArray[np.int64]) -> NDArray[np.float64]:
        """The Gittins index of each attained service (GPU-seconds; 0 past the largest size).

        With the sizes sorted, ``lo`` the position of the first size above the attained
        service, ``a`` that size minus 1 and ``hi`` the position after the sizes up to
        ``a + delta`` (capped at the last position), the reference's index is
        ``p * 10**6 / e`` with ``p = (hi - lo) / (num - lo)`` and ``e = (sum of sizes[lo:hi]
        + delta * (num - hi)) // (num - lo)``, ``p`` and the index rounded as Python 2 rounds
        (5 and 4 digits).
        """
        sizes, delta = self._sizes, self._delta
        num = sizes.size
        last = int(sizes[-1])
        lo = np.searchsorted(sizes, attained, side="right")
        inside = lo < num
        lo = np.minimum(lo, num - 1)  # rows past the largest size get 0 below
        nxt = sizes[lo] - 1 + delta
        hi = np.where(nxt > last - 1, num - 1, np.searchsorted(sizes, nxt, side="right"))
        p = _round_half_away((hi - lo) / (num - lo), 5)
        # Python's integers when delta needs them (no copy otherwise).
        beyond = (num - hi).astype(sizes.dtype, copy=False)
        # The reference divides whole numbers here (Python 2): the mean is floored.
        e = ((self._prefix[hi] - self._prefix[lo] + delta * beyond) // (num - lo)).astype(float)
        out: NDArray[np.float64] = np.where(inside, _round_half_away(p * 1_000_000 / e, 4), 0.0)
        return out


def whole_array(values: list[int]) -> NDArray[Any]:
    """Attained services as 64-bit integers, or as Python's integers past them (extreme
    inputs).

    Parameters
    ----------
    values : list of int

    Returns
    -------
    ndarray
        Of dtype int64, or object when a value does not fit.
    """
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return np.array(values, dtype=object)


def _round_half_away(x: NDArray[np.float64], digits: int) -> NDArray[np.float64]:
    # Every value here is >= 0, where Python 2's round() is floor(x * 10**d + 0.5) / 10**d.
    scale = 10.0**digits
    out: NDArray[np.float64] = np.floor(x * scale + 0.5) / scale
    return out
