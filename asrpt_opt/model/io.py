"""Reading and writing instance files (format ``asrpt-instance/1``, docs/instance-format.md).

Every problem is reported as an :class:`~asrpt_opt.errors.InstanceError` that names the file,
the JSON path and the reason, for example ``tiny.json: jobs[3].gpus: 12 exceeds the cluster's
8 GPUs``. Unknown keys are errors.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import Any

from asrpt_opt.errors import InstanceError
from asrpt_opt.model import _checks
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.files import atomic_write_text, input_problem, write_atomically
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job, Parallelism

__all__ = [
    "FORMAT",
    "atomic_write_text",
    "dump_instance",
    "dumps_instance",
    "input_problem",
    "instance_from_dict",
    "instance_to_dict",
    "load_instance",
    "loads_instance",
    "parse_json",
    "write_atomically",
]

FORMAT = "asrpt-instance/1"

logger = logging.getLogger(__name__)

_LEGACY_POLLUX = "pollux-measured"

_TOP_KEYS = frozenset({"format", "name", "cluster", "jobs", "speed_model", "provenance"})
_CLUSTER_KEYS = frozenset({"servers", "intra_server_gbps", "inter_server_gbps", "topology"})
_JOB_KEYS = frozenset(
    {
        "id",
        "release_s",
        "gpus",
        "weight",
        "duration_s",
        "spread_slowdown",
        "model",
        "parallelism",
        "iterations",
        "features",
    }
)
_PAR_KEYS = frozenset({"dp", "pp", "tp"})
_REQUIRED_KEYS = frozenset({"id", "release_s", "gpus"})
_ABSTRACT_KEYS = _REQUIRED_KEYS | {"weight", "duration_s", "spread_slowdown"}


def load_instance(path: str | PathLike[str]) -> Instance:
    """Read an instance file.

    Parameters
    ----------
    path : path-like
        A JSON file in format ``asrpt-instance/1``.

    Returns
    -------
    Instance

    Raises
    ------
    InstanceError
        If the file cannot be read, is not JSON, or breaks the contract; the message names the
        file, the JSON path and the reason.
    """
    source = str(path)
    problem = input_problem(path)
    if problem is not None:
        raise InstanceError(problem, source=source)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InstanceError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    except UnicodeDecodeError:
        raise InstanceError("is not UTF-8 text", source=source) from None
    return loads_instance(text, source=source)


def loads_instance(text: str, *, source: str = "<string>") -> Instance:
    """Parse an instance from JSON text; see :func:`load_instance`.

    Parameters
    ----------
    text : str
        JSON text.
    source : str
        Name used in error messages.

    Returns
    -------
    Instance
    """
    return instance_from_dict(parse_json(text, source=source), source=source)


def parse_json(text: str, *, source: str = "<string>") -> Any:
    """Parse JSON strictly: no NaN or Infinity, no number beyond floating point or with
    thousands of digits, no duplicate key, no absurd nesting; errors name the file, the line
    and the column.

    Parameters
    ----------
    text : str
    source : str
        Name used in error messages.

    Returns
    -------
    object
        The parsed document.

    Raises
    ------
    InstanceError
    """
    try:
        return json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            object_pairs_hook=_unique_keys,
        )
    except json.JSONDecodeError as exc:
        raise InstanceError(
            f"line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}", source=source
        ) from None
    except _BadToken as exc:
        where = _where(text, exc.token, exc.nth)
        raise InstanceError(f"{where}{exc.reason}", source=source) from None
    except RecursionError:
        raise InstanceError(
            "invalid JSON: nested too deeply (an instance nests a few levels only)",
            source=source,
        ) from None


class _BadToken(ValueError):
    def __init__(self, token: str, reason: str, *, nth: int = 1) -> None:
        self.token = token
        self.reason = reason
        self.nth = nth
        super().__init__(reason)


def _refuse_constant(name: str) -> Any:
    raise _BadToken(name, f"invalid JSON: {name} is not a number in JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadToken(text, f"number {text[:20]} is beyond floating point")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 300:  # well past any float: no silent loss, no slow parsing
        raise _BadToken(text, f"integer of {len(text)} digits is beyond floating point")
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _BadToken(json.dumps(key), f"duplicate key {key!r} in an object", nth=2)
        out[key] = value
    return out


def _where(text: str, token: str, nth: int = 1) -> str:
    """``line L column C: `` of the ``nth`` occurrence of ``token`` (best effort)."""
    at = -1
    for _ in range(nth):
        at = text.find(token, at + 1)
    if at < 0:
        return ""
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return f"line {line} column {column}: "


def instance_from_dict(data: Any, *, source: str = "<dict>") -> Instance:
    """Build and validate an instance from decoded JSON.

    Parameters
    ----------
    data : object
        The decoded JSON document.
    source : str
        Name used in error messages.

    Returns
    -------
    Instance
    """
    try:
        return _build(data)
    except InstanceError as exc:
        raise exc.within(source=source) from None


def _build(data: Any) -> Instance:
    doc = _checks.mapping(data, "(document)")
    _checks.only_keys(doc, _TOP_KEYS)
    fmt = _checks.required(doc, "format")
    if fmt != FORMAT:
        raise InstanceError(f"must be {FORMAT!r}, got {fmt!r}", path="format")
    name = _checks.string(doc.get("name", "unnamed"), "name")
    raw_cluster = _checks.required(doc, "cluster")
    try:
        cluster = _build_cluster(raw_cluster)
    except InstanceError as exc:
        raise exc.within(path="cluster") from None
    raw_jobs = _checks.sequence(_checks.required(doc, "jobs"), "jobs")
    jobs = []
    for i, raw in enumerate(raw_jobs):
        try:
            jobs.append(_build_job(raw))
        except InstanceError as exc:
            raise exc.within(path=f"jobs[{i}]") from None
    provenance = dict(_checks.mapping(doc.get("provenance", {}), "provenance"))
    speed_model = doc.get("speed_model")
    if speed_model is not None:
        speed_model = _checks.string(speed_model, "speed_model")
    elif provenance.get("speed_model") == _LEGACY_POLLUX:
        # Files written by asrpt-opt 0.1.0's Pollux importer said it inside provenance.
        logger.warning(
            'provenance.speed_model %r is deprecated: write "speed_model": %r at top level',
            _LEGACY_POLLUX,
            "measured-pollux",
        )
        del provenance["speed_model"]
        speed_model = "measured-pollux"
    return Instance(
        name=name,
        cluster=cluster,
        jobs=tuple(jobs),
        speed_model=speed_model,
        provenance=provenance,
    )


def _build_cluster(raw: Any) -> Cluster:
    obj = _checks.mapping(raw, "")
    _checks.only_keys(obj, _CLUSTER_KEYS)
    servers = _checks.sequence(_checks.required(obj, "servers"), "servers")
    intra, topology = obj.get("intra_server_gbps"), None
    if "topology" in obj:
        from asrpt_opt.model.topology import Topology

        topology, server_gbps = Topology.from_json(obj["topology"], len(servers))
        if server_gbps is not None:
            if intra is not None and server_gbps != intra:
                raise InstanceError(
                    f"gbps {server_gbps:g} differs from intra_server_gbps {intra!r}",
                    path="topology.levels[0].gbps",
                )
            intra = server_gbps
    return Cluster(
        servers=tuple(servers),
        intra_server_gbps=intra,
        inter_server_gbps=obj.get("inter_server_gbps"),
        topology=topology,
    )


def _build_job(raw: Any) -> Job:
    if type(raw) is dict and _ABSTRACT_KEYS.issuperset(raw) and raw.keys() >= _REQUIRED_KEYS:
        # An abstract job without nested objects: Job checks every field itself.
        return Job(**raw)
    obj = _checks.mapping(raw, "")
    _checks.only_keys(obj, _JOB_KEYS)
    for key in ("id", "release_s", "gpus"):
        _checks.required(obj, key)
    parallelism = None
    if "parallelism" in obj:
        par = _checks.mapping(obj["parallelism"], "parallelism")
        try:
            _checks.only_keys(par, _PAR_KEYS)
            parallelism = Parallelism(**par)
        except InstanceError as exc:
            raise exc.within(path="parallelism") from None
    features = _checks.mapping(obj.get("features", {}), "features")
    return Job(
        id=obj["id"],
        release_s=obj["release_s"],
        gpus=obj["gpus"],
        weight=obj.get("weight", 1.0),
        duration_s=obj.get("duration_s"),
        spread_slowdown=obj.get("spread_slowdown", 1.0),
        model=obj.get("model"),
        parallelism=parallelism,
        iterations=obj.get("iterations"),
        features=features,
    )


def _plain(x: float) -> float | int:
    # Integral floats are written as integers so files round-trip byte-identically.
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else x


def _job_to_dict(job: Job) -> dict[str, Any]:
    out: dict[str, Any] = {"id": job.id, "release_s": _plain(job.release_s), "gpus": job.gpus}
    if job.weight != 1.0:
        out["weight"] = _plain(job.weight)
    if job.duration_s is not None:
        out["duration_s"] = _plain(job.duration_s)
        if job.spread_slowdown != 1.0:
            out["spread_slowdown"] = _plain(job.spread_slowdown)
    else:
        assert job.parallelism is not None
        out["model"] = job.model
        p = job.parallelism
        out["parallelism"] = {"dp": p.dp, "pp": p.pp, "tp": p.tp}
        out["iterations"] = job.iterations
    if job.features:
        out["features"] = dict(job.features)
    return out


def _head_to_dict(instance: Instance) -> dict[str, Any]:
    cluster: dict[str, Any] = {"servers": list(instance.cluster.servers)}
    for key in ("intra_server_gbps", "inter_server_gbps"):
        value = getattr(instance.cluster, key)
        if value is not None:
            cluster[key] = _plain(value)
    if instance.cluster.topology is not None:
        cluster["topology"] = instance.cluster.topology.to_json()
    doc: dict[str, Any] = {"format": FORMAT, "name": instance.name, "cluster": cluster}
    if instance.speed_model is not None:
        doc["speed_model"] = instance.speed_model
    if instance.provenance:
        doc["provenance"] = dict(instance.provenance)
    return doc


def instance_to_dict(instance: Instance) -> dict[str, Any]:
    """Encode an instance as a JSON-ready dict (the inverse of :func:`instance_from_dict`).

    Parameters
    ----------
    instance : Instance

    Returns
    -------
    dict
    """
    doc = _head_to_dict(instance)
    doc["jobs"] = [_job_to_dict(job) for job in instance.jobs]
    return doc


def _instance_chunks(instance: Instance) -> Iterator[str]:
    # One job per line, produced one at a time so that writing a million-job file needs no
    # second copy of the instance in memory.
    head = _head_to_dict(instance)
    yield "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items())
    yield ',\n  "jobs": [\n'
    for i, job in enumerate(instance.jobs):
        yield ("    " if i == 0 else ",\n    ") + json.dumps(_job_to_dict(job))
    yield "\n  ]\n}\n"


def dumps_instance(instance: Instance) -> str:
    """Encode an instance as JSON text (one job per line, stable byte for byte).

    Parameters
    ----------
    instance : Instance

    Returns
    -------
    str
    """
    return "".join(_instance_chunks(instance))


def dump_instance(instance: Instance, path: str | PathLike[str]) -> None:
    """Write an instance file (atomically, streamed job by job).

    Parameters
    ----------
    instance : Instance
    path : path-like
    """

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.writelines(_instance_chunks(instance))

    write_atomically(path, write)
