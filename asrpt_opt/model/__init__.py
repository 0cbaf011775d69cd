"""The scheduling model: clusters, jobs, instances and their file format."""

from typing import TYPE_CHECKING, Any

from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.io import (
    FORMAT,
    dump_instance,
    dumps_instance,
    instance_from_dict,
    instance_to_dict,
    load_instance,
    loads_instance,
)
from asrpt_opt.model.job import Job, Parallelism

if TYPE_CHECKING:
    from asrpt_opt.model.columns import JobColumns, ScheduleColumns


def __getattr__(name: str) -> Any:
    # The columnar forms need numpy, which validating or writing a file does not load.
    if name in ("JobColumns", "ScheduleColumns"):
        from asrpt_opt.model import columns

        return getattr(columns, name)
    raise AttributeError(f"module 'asrpt_opt.model' has no attribute {name!r}")


__all__ = [
    "FORMAT",
    "Cluster",
    "Instance",
    "Job",
    "JobColumns",
    "Parallelism",
    "ScheduleColumns",
    "dump_instance",
    "dumps_instance",
    "instance_from_dict",
    "instance_to_dict",
    "load_instance",
    "loads_instance",
]
