"""The exception tree of asrpt-opt.

Every error the library raises on purpose derives from :class:`AsrptError`, so a caller (and
the CLI) can tell a user's mistake from a bug with one ``except`` clause.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TypeVar

__all__ = [
    "AsrptError",
    "InstanceError",
    "ModelError",
    "PolicyError",
    "ScheduleError",
    "SolverError",
    "UnknownNameError",
    "UsageError",
    "did_you_mean",
    "lookup",
]

_V = TypeVar("_V")


class AsrptError(Exception):
    """Base class of every error raised on purpose by asrpt-opt."""


class InstanceError(AsrptError, ValueError):
    """An instance (file or object) breaks the instance contract.

    Parameters
    ----------
    reason : str
        What is wrong, in words a user can act on.
    path : str, optional
        JSON path of the offending field, for example ``"jobs[3].gpus"``.
    source : str, optional
        The file (or other source) the instance came from.
    """

    def __init__(self, reason: str, *, path: str = "", source: str = "") -> None:
        self.reason = reason
        self.path = path
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [p for p in (self.source, self.path) if p]
        return ": ".join([*parts, self.reason])

    def within(self, *, path: str = "", source: str = "") -> InstanceError:
        """Return a copy located under ``path`` (a JSON path prefix) and ``source``.

        Parameters
        ----------
        path : str
            Prefix for this error's path, for example ``"jobs[3]"``.
        source : str
            The file name, if this error does not name one yet.

        Returns
        -------
        InstanceError
            The same reason with the combined location.
        """
        joined = self.path
        if path:
            if not joined:
                joined = path
            elif joined.startswith("["):
                joined = path + joined
            else:
                joined = f"{path}.{joined}"
        return InstanceError(self.reason, path=joined, source=self.source or source)


class ModelError(AsrptError):
    """A job cannot be simulated or placed with the models available (for example, an
    unknown DNN model or a DNN job without an iteration-time model)."""


class PolicyError(AsrptError):
    """A scheduling policy returned a decision the simulator refuses to apply."""


class ScheduleError(AsrptError):
    """A schedule fails the independent validator."""


class SolverError(AsrptError):
    """An optimisation backend failed or is misconfigured."""


class UsageError(AsrptError, ValueError):
    """An argument of a call or of the command line is invalid (the CLI exits with 2)."""


class UnknownNameError(AsrptError, ValueError):
    """A name is not in a registry (policies, placement methods, predictors, solvers,
    trace formats, families, speed models, executors).

    Parameters
    ----------
    what : str
        What kind of name, for example ``"policy"``.
    name : str
        The name asked for.
    known : iterable of str
        The valid names, listed in the message.
    """

    def __init__(self, what: str, name: object, known: Iterable[str]) -> None:
        self.what = what
        self.name = name
        self.known = tuple(sorted(known))
        hint = did_you_mean(str(name), self.known)
        super().__init__(f"unknown {what} {name!r} (known: {', '.join(self.known)}){hint}")


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` when one of ``known`` is close to ``name``, else ``""``: the
    one hint for every misspelt name (registries and the command line's choices).

    Parameters
    ----------
    name : str
    known : iterable of str

    Returns
    -------
    str

    Examples
    --------
    >>> did_you_mean("simulat", ["simulate", "solve"])
    "; did you mean 'simulate'?"
    """
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def lookup(registry: Mapping[str, _V], name: str, *, what: str) -> _V:
    """The entry ``name`` of ``registry``, or an :class:`UnknownNameError` listing the names.

    Every registry of the package (a plain dict of names) is read through this function, so
    an unknown name always raises the same exception with the same message.

    Parameters
    ----------
    registry : mapping
    name : str
    what : str
        What kind of name, for the message.

    Returns
    -------
    object
        ``registry[name]``.

    Raises
    ------
    UnknownNameError

    Examples
    --------
    >>> lookup({"a": 1}, "a", what="letter")
    1
    """
    try:
        return registry[name]
    except (KeyError, TypeError):
        raise UnknownNameError(what, name, registry) from None
