"""The scheduling model: clusters, jobs, instances and their file format."""

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

__all__ = [
    "FORMAT",
    "Cluster",
    "Instance",
    "Job",
    "Parallelism",
    "dump_instance",
    "dumps_instance",
    "instance_from_dict",
    "instance_to_dict",
    "load_instance",
    "loads_instance",
]
