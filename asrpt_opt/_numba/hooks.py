"""Hooks: functions whose compiled implementation depends on the numba type of their first
argument, so that a loop compiled in a lower layer calls the kernels of upper layers it
never imports (numba's ``@overload``, one implementation per state type); and
:class:`StateType`, the base of those state types (numba structrefs: mutable records).

A kernel's state is declared as::

    @structref.register
    class QueueStateType(StateType):
        # the numba type of QueueState

    class QueueState(structref.StructRefProxy):
        # what the kernel keeps between events

    structref.define_proxy(QueueState, QueueStateType, ["jobs", "n_jobs"])
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from numba import types
from numba.extending import overload

__all__ = ["StateType", "implement"]


class StateType(types.StructRef):
    """Base of the numba types of compiled states: fields keep their plain types (an int
    field given a literal stays an int64 that can change)."""

    def preprocess_fields(self, fields: Any) -> Any:
        return tuple((name, types.unliteral(t)) for name, t in fields)


def implement(hook: Callable[..., Any], state_type: type) -> Callable[[Any], Any]:
    """Decorator: the decorated function is ``hook`` wherever its first argument is of numba
    type ``state_type`` (a ``StructRef`` subclass).

    Parameters
    ----------
    hook : callable
        A plain Python function that stands for the hook (its body never runs).
    state_type : type
        The numba type class of the policy state the implementation serves.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.
    """

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        def typer(*args: Any) -> Any:
            return impl if isinstance(args[0], state_type) else None

        # numba checks that the typing and implementing functions name the same arguments.
        typer.__signature__ = inspect.signature(impl)  # type: ignore[attr-defined]
        overload(hook)(typer)
        return impl

    return register
