"""Every trace format ``asrpt-opt import`` reads, behind one registry.

Each importer takes the trace file and the common options and returns an instance of abstract
jobs; bad rows are collected in ``errors`` (or the first one raises when ``errors`` is None).
"""

from __future__ import annotations

from collections.abc import Callable
from os import PathLike
from pathlib import Path
from typing import Any

from asrpt_opt.errors import UsageError, lookup
from asrpt_opt.model.instance import Instance
from asrpt_opt.traces.adapters import FORMATS, trace_instance
from asrpt_opt.traces.adapters import map_models as map_models_onto
from asrpt_opt.traces.gavel import gavel_instance
from asrpt_opt.traces.pollux import pollux_instance

__all__ = ["TRACE_FORMATS", "import_trace", "load_jobs", "make_importer"]

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


def _adapter(fmt: str) -> Importer:
    def read(
        source: str | PathLike[str],
        *,
        servers: tuple[int, ...],
        n_jobs: int | None,
        errors: list[str] | None,
        **_: Any,
    ) -> Instance:
        return trace_instance(fmt, source, servers=servers, n_jobs=n_jobs, errors=errors)

    read.__name__ = f"import_{fmt}"
    return read


#: Trace formats by name (``import FORMAT``) and their importers.
TRACE_FORMATS: dict[str, Importer] = {
    "gavel": _gavel,
    "pollux": _pollux,
    **{fmt: _adapter(fmt) for fmt in FORMATS},
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
    map_models: dict[str, str] | None = None,
    intra_gbps: float = 300.0,
    inter_gbps: float = 12.5,
) -> Instance:
    """Read a trace of format ``fmt`` into an instance (abstract jobs, or DNN jobs for the
    trace models named in ``map_models``).

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
    map_models : dict, optional
        Trace model name -> bundled model: those jobs become DNN jobs
        (:func:`~asrpt_opt.traces.adapters.map_models`).
    intra_gbps, inter_gbps : float
        The cluster's bandwidths, with ``map_models``.

    Returns
    -------
    Instance
    """
    inst = make_importer(fmt)(
        source, servers=servers, n_jobs=n_jobs, errors=errors, seed=seed, gpu_kind=gpu_kind
    )
    if map_models:
        inst = map_models_onto(inst, map_models, intra_gbps=intra_gbps, inter_gbps=inter_gbps)
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
    return load_instance(spec)
