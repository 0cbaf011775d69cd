"""Every trace format ``asrpt-opt import`` reads, behind one registry.

Each importer takes the trace file and the common options and returns an instance of abstract
jobs; bad rows are collected in ``errors`` (or the first one raises when ``errors`` is None).
"""

from __future__ import annotations

from collections.abc import Callable
from os import PathLike
from pathlib import Path
from typing import Any

from asrpt_opt.errors import InstanceError, UsageError, lookup
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job, Parallelism
from asrpt_opt.traces.adapters import (
    Reader,
    read_helios,
    read_pai,
    read_philly,
    read_tiresias,
    trace_instance,
)
from asrpt_opt.traces.gavel import gavel_instance
from asrpt_opt.traces.pollux import pollux_instance

__all__ = ["TRACE_FORMATS", "import_trace", "load_jobs", "make_importer", "map_models"]


Importer = Callable[..., Instance]


def _gavel(
    source: str | PathLike[str],
    *,
    servers: tuple[int, ...],
    n_jobs: int | None,
    errors: list[str] | None,
    gpu_kind: str = "v100",
    **_: Any,
) -> Instance:
    return gavel_instance(
        n_jobs=n_jobs or 10**9,
        servers=servers,
        gpu_kind=gpu_kind,
        trace=source,
        errors=errors,
        name=Path(source).stem,
    )


def _pollux(
    source: str | PathLike[str],
    *,
    servers: tuple[int, ...],
    errors: list[str] | None,
    seed: int = 0,
    **_: Any,
) -> Instance:
    return pollux_instance(source, servers=servers, seed=seed, errors=errors)


def _rows(fmt: str, reader: Reader) -> Importer:
    # A format of one row per job (asrpt_opt.traces.adapters).
    def read(
        source: str | PathLike[str],
        *,
        servers: tuple[int, ...],
        n_jobs: int | None,
        errors: list[str] | None,
        **_: Any,
    ) -> Instance:
        return trace_instance(fmt, reader, source, servers=servers, n_jobs=n_jobs, errors=errors)

    read.__name__ = f"import_{fmt}"
    return read


#: Trace formats by name (``import FORMAT``) and their importers: the one registry.
TRACE_FORMATS: dict[str, Importer] = {
    "gavel": _gavel,
    "pollux": _pollux,
    "tiresias": _rows("tiresias", read_tiresias),
    "philly": _rows("philly", read_philly),
    "helios": _rows("helios", read_helios),
    "pai": _rows("pai", read_pai),
}


def make_importer(name: str) -> Importer:
    """The importer of trace format ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`TRACE_FORMATS`.

    Returns
    -------
    callable
        ``f(source, *, servers, n_jobs, errors, seed, gpu_kind) -> Instance``.
    """
    return lookup(TRACE_FORMATS, name, what="trace format")


def import_trace(
    fmt: str,
    source: str | PathLike[str],
    *,
    servers: tuple[int, ...] = (8,) * 16,
    n_jobs: int | None = None,
    errors: list[str] | None = None,
    seed: int = 0,
    gpu_kind: str = "v100",
    model_map: dict[str, str] | None = None,
    intra_gbps: float = 300.0,
    inter_gbps: float = 12.5,
) -> Instance:
    """Read a trace of format ``fmt`` into an instance (abstract jobs, or DNN jobs for the
    trace models named in ``model_map``).

    Parameters
    ----------
    fmt : str
        A key of :data:`TRACE_FORMATS`.
    source : path-like
        The trace file (pai: the folder with ``pai_task_table.csv``).
    servers : tuple of int
    n_jobs : int, optional
        Keep only the first N jobs (gavel, tiresias, philly, helios, pai).
    errors : list, optional
        Collect bad rows' messages here; without it the first bad row raises.
    seed : int
        pollux: seed of the imputed lengths.
    gpu_kind : str
        gavel: GPU kind of the throughputs.
    model_map : dict, optional
        Trace model name -> bundled model: those jobs become DNN jobs
        (:func:`map_models`).
    intra_gbps, inter_gbps : float
        The cluster's bandwidths, with ``model_map``.

    Returns
    -------
    Instance
    """
    inst = make_importer(fmt)(
        source, servers=servers, n_jobs=n_jobs, errors=errors, seed=seed, gpu_kind=gpu_kind
    )
    if model_map:
        inst = map_models(inst, model_map, intra_gbps=intra_gbps, inter_gbps=inter_gbps)
    return inst


def load_jobs(spec: str) -> Instance:
    """Jobs to evaluate predictors on, named as ``asrpt-opt predict`` accepts them.

    Parameters
    ----------
    spec : str
        ``gavel`` (the bundled trace), ``pollux[:K]`` (bundled Pollux workload K, lengths
        imputed), ``recurring[:N]`` (synthetic recurring jobs), a Gavel ``.trace`` file, or an
        instance file.

    Returns
    -------
    Instance
    """
    from asrpt_opt.model.io import load_instance
    from asrpt_opt.traces.synthetic import recurring_jobs

    name, _, arg = spec.partition(":")
    if name in ("gavel", "pollux", "recurring") and arg:
        try:
            count = int(arg)
        except ValueError:
            raise UsageError(f"invalid source {spec!r}: {name}:N needs a whole number") from None
    if spec == "gavel":
        return gavel_instance(n_jobs=2000, servers=(8,) * 8)
    if name == "pollux":
        return pollux_instance(count if arg else 1)
    if name == "recurring":
        return recurring_jobs(count if arg else 5000, seed=0)
    if spec.endswith(".trace"):
        return gavel_instance(n_jobs=10**9, servers=(8,) * 8, trace=spec)
    from asrpt_opt.datasets import resolve_instance

    return load_instance(resolve_instance(spec))


def map_models(
    instance: Instance,
    mapping: dict[str, str],
    *,
    intra_gbps: float = 300.0,
    inter_gbps: float = 12.5,
) -> Instance:
    """Turn abstract jobs whose ``features["model"]`` is mapped into DNN jobs.

    A mapping value is a bundled model, optionally with pipeline and tensor parallelism:
    ``resnet50`` (data-parallel, dp = the job's GPUs) or ``gpt2-1.5b/pp2tp4`` (pp = 2, tp = 4,
    dp = GPUs / 8 for every job whose width is a multiple of 8; narrower or other widths fall
    back to data parallelism). ``iterations = round(duration_s / tau)``, tau being the model's
    iteration time on the job's best placement in an empty cluster: the measured run time
    divided by a modelled speed. The cluster gains the two bandwidths; the mapping and this
    rule go into the provenance. Unmapped jobs stay abstract.

    Parameters
    ----------
    instance : Instance
    mapping : dict
        Trace model name -> ``MODEL[/ppPtpT]`` (see :data:`asrpt_opt.model.dnn.MODELS`).
    intra_gbps, inter_gbps : float

    Returns
    -------
    Instance
    """
    import re

    from asrpt_opt.model.dnn import MODELS
    from asrpt_opt.speed.cluster import ClusterSpeed

    targets: dict[str, tuple[str, int, int]] = {}
    for trace_name, value in mapping.items():
        found = re.fullmatch(r"([\w.\-]+?)(?:/(?:pp(\d+))?(?:tp(\d+))?)?", value)
        model = found.group(1) if found else value
        if found is None or model not in MODELS:
            raise InstanceError(
                f"--map-models {trace_name}={value}: unknown model {model!r} "
                f"(known: {', '.join(MODELS)}; add /ppPtpT for pipeline and tensor parallelism)"
            )
        pp, tp = int(found.group(2) or 1), int(found.group(3) or 1)
        if pp < 1 or tp < 1:
            raise InstanceError(f"--map-models {trace_name}={value}: pp and tp must be >= 1")
        targets[trace_name] = (model, pp, tp)
    cluster = Cluster(
        servers=instance.cluster.servers,
        intra_server_gbps=intra_gbps,
        inter_server_gbps=inter_gbps,
    )
    speed = ClusterSpeed(cluster)
    jobs = []
    mapped = 0
    for job in instance.jobs:
        target = targets.get(str(job.features.get("model", "")))
        if target is None or job.duration_s is None:
            jobs.append(job)
            continue
        model, pp, tp = target
        if job.gpus % (pp * tp):
            pp, tp = 1, 1
        parallelism = Parallelism(dp=job.gpus // (pp * tp), pp=pp, tp=tp)
        dnn = Job(
            id=job.id,
            release_s=job.release_s,
            gpus=job.gpus,
            weight=job.weight,
            model=model,
            parallelism=parallelism,
            iterations=1,
            features=dict(job.features),
        )
        tau = 1.0 / speed.best_rate(dnn, cluster)
        iterations = max(1, round(job.duration_s / tau))
        jobs.append(
            Job(
                id=job.id,
                release_s=job.release_s,
                gpus=job.gpus,
                weight=job.weight,
                model=model,
                parallelism=parallelism,
                iterations=iterations,
                features=dict(job.features),
            )
        )
        mapped += 1
    provenance = dict(instance.provenance)
    provenance["map_models"] = ",".join(f"{k}={v}" for k, v in sorted(mapping.items()))
    provenance["mapped_jobs"] = mapped
    provenance["mapped_iterations"] = (
        "round(run time / modelled iteration time on the best placement); dp x pp x tp as "
        "mapped where the width allows, else data-parallel"
    )
    return Instance(name=instance.name, cluster=cluster, jobs=tuple(jobs), provenance=provenance)
