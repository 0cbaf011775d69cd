"""The narrow protocol every scheduling policy follows."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from asrpt_opt.sim.view import ClusterView, Decision

__all__ = ["Policy"]


class Policy(Protocol):
    """An online scheduling policy.

    The simulator calls :meth:`reset` once, :meth:`on_arrival` and :meth:`on_completion` as
    jobs come and go, and :meth:`decide` once per instant at which something happened. The
    policy reads the read-only :class:`~asrpt_opt.sim.view.ClusterView` and answers with a
    :class:`~asrpt_opt.sim.view.Decision`; the simulator validates and applies it.
    """

    name: str

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Forget any previous run and prepare for a new one."""

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """``job`` has been released (its prediction is in ``view.predicted_work``)."""

    def on_completion(self, job: int, view: ClusterView) -> None:
        """``job`` has finished."""

    def decide(self, view: ClusterView) -> Decision:
        """Return the preemptions and starts to apply now."""
