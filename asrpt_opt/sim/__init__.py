"""The discrete-event simulator, its schedule records and the independent validator."""

from asrpt_opt.model.schedule import JobRun, Schedule, Segment
from asrpt_opt.sim.engine import Simulator
from asrpt_opt.sim.placer import Placement
from asrpt_opt.sim.result import SimulationResult
from asrpt_opt.sim.simulation import simulate
from asrpt_opt.sim.stream import StreamResult, simulate_stream
from asrpt_opt.sim.validate import validate_columns, validate_schedule
from asrpt_opt.sim.view import (
    DONE,
    NO_DECISION,
    RUNNING,
    UNRELEASED,
    WAITING,
    ClusterView,
    Decision,
    Start,
)

__all__ = [
    "DONE",
    "NO_DECISION",
    "RUNNING",
    "UNRELEASED",
    "WAITING",
    "ClusterView",
    "Decision",
    "JobRun",
    "Placement",
    "Schedule",
    "Segment",
    "SimulationResult",
    "Simulator",
    "Start",
    "StreamResult",
    "simulate",
    "simulate_stream",
    "validate_columns",
    "validate_schedule",
]
