"""The exception tree of asrpt-opt.

Every error the library raises on purpose derives from :class:`AsrptError`, so a caller (and
the CLI) can tell a user's mistake from a bug with one ``except`` clause.
"""

from __future__ import annotations

__all__ = [
    "AsrptError",
    "InstanceError",
    "ModelError",
    "PolicyError",
    "ScheduleError",
    "SolverError",
]


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
