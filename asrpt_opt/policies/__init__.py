"""Online scheduling policies: A-SRPT and the baselines, in a name registry.

>>> sorted(POLICIES)  # doctest: +NORMALIZE_WHITESPACE
['2d-las', 'a-srpt', 'easy-backfill', 'fifo', 'firstfit-srpt', 'gittins', 'greedy-srpt',
 'maxweight', 'msf', 'prr', 'qssf', 'serverfilling', 'serverfilling-srpt', 'sjf', 'srpt',
 'srsf', 'srtf', 'tiresias-2d-las', 'tiresias-gittins']
"""

from __future__ import annotations

from asrpt_opt.policies.asrpt import ASRPT
from asrpt_opt.policies.easy import EasyBackfill
from asrpt_opt.policies.fifo import FIFO
from asrpt_opt.policies.las2d import TwoDimensionalLAS
from asrpt_opt.policies.list_scheduler import ListScheduler
from asrpt_opt.policies.msf import MostServersFirst
from asrpt_opt.policies.prr import PreferentialRoundRobin
from asrpt_opt.policies.qssf import QSSF
from asrpt_opt.policies.registry import (
    POLICIES,
    make_policy,
    register_policy,
    simulate,
    simulate_stream,
)
from asrpt_opt.policies.serverfilling import (
    FirstFitSRPT,
    GreedySRPT,
    MaxWeight,
    ServerFilling,
    ServerFillingSRPT,
)
from asrpt_opt.policies.sjf import SJF
from asrpt_opt.policies.srtf import SRPT, SRSF, SRTF
from asrpt_opt.policies.tiresias import Gittins, TiresiasDLAS, TiresiasGittins
from asrpt_opt.sim.view import Policy

__all__ = [
    "ALIASES",
    "ASRPT",
    "FIFO",
    "POLICIES",
    "PRIMARY",
    "QSSF",
    "SJF",
    "SRPT",
    "SRSF",
    "SRTF",
    "EasyBackfill",
    "FirstFitSRPT",
    "Gittins",
    "GreedySRPT",
    "ListScheduler",
    "MaxWeight",
    "MostServersFirst",
    "Policy",
    "PreferentialRoundRobin",
    "ServerFilling",
    "ServerFillingSRPT",
    "TiresiasDLAS",
    "TiresiasGittins",
    "TwoDimensionalLAS",
    "make_policy",
    "register_policy",
    "simulate",
    "simulate_stream",
]

#: Names that only repeat another policy under a second name (left out of comparisons).
ALIASES: dict[str, str] = {"srpt": "srtf", "gittins": "tiresias-gittins"}

#: The distinct policies, in the order reports list them.
PRIMARY: tuple[str, ...] = tuple(name for name in POLICIES if name not in ALIASES)
