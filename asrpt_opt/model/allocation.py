"""Allocations: which GPUs of which servers a job holds."""

from __future__ import annotations

__all__ = ["Allocation", "allocation_to_json"]

#: GPUs a job holds: ``((server, count), ...)`` sorted by server, every count > 0.
Allocation = tuple[tuple[int, int], ...]


def allocation_to_json(allocation: Allocation) -> dict[str, int]:
    """Encode an allocation as the ``{"<server index>": count}`` object of ``--json`` output.

    Parameters
    ----------
    allocation : Allocation

    Returns
    -------
    dict

    Examples
    --------
    >>> allocation_to_json(((0, 2), (3, 1)))
    {'0': 2, '3': 1}
    """
    return {str(s): c for s, c in allocation}
