"""Online scheduling policies: A-SRPT and the baselines, in a name registry.

>>> sorted(POLICIES)
['2d-las', 'a-srpt', 'fifo', 'sjf', 'srpt', 'srsf', 'srtf']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asrpt_opt.policies.asrpt import ASRPT
from asrpt_opt.policies.base import Policy
from asrpt_opt.policies.fifo import FIFO
from asrpt_opt.policies.las2d import TwoDimensionalLAS
from asrpt_opt.policies.sjf import SJF
from asrpt_opt.policies.srtf import SRPT, SRSF, SRTF

__all__ = [
    "ALIASES",
    "ASRPT",
    "FIFO",
    "POLICIES",
    "PRIMARY",
    "SJF",
    "SRPT",
    "SRSF",
    "SRTF",
    "Policy",
    "TwoDimensionalLAS",
    "make_policy",
]

#: Policy names (as used by ``--policy``) and their constructors.
POLICIES: dict[str, Callable[..., Policy]] = {
    "a-srpt": ASRPT,
    "fifo": FIFO,
    "sjf": SJF,
    "srtf": SRTF,
    "srpt": SRPT,
    "srsf": SRSF,
    "2d-las": TwoDimensionalLAS,
}


#: Names that only repeat another policy under a second name (left out of comparisons).
ALIASES: dict[str, str] = {"srpt": "srtf"}

#: The distinct policies, in the order reports list them.
PRIMARY: tuple[str, ...] = tuple(name for name in POLICIES if name not in ALIASES)


def make_policy(name: str, **params: Any) -> Policy:
    """Build a registered policy by name.

    Parameters
    ----------
    name : str
        A key of :data:`POLICIES`.
    **params
        Keyword parameters of the policy's constructor.

    Returns
    -------
    Policy

    Raises
    ------
    KeyError
        If no policy has that name; the message lists the known ones.
    """
    try:
        factory = POLICIES[name]
    except KeyError:
        known = ", ".join(sorted(POLICIES))
        raise KeyError(f"unknown policy {name!r} (known: {known})") from None
    return factory(**params)
