"""Ratio sweeps: what to compute per instance, a resumable SQLite store, and the executors.

For each instance of a family, the online policies are simulated on the pooled cluster (every
family has no spread slowdown, so the pooled model is the instance as written), the offline
optimum is computed (by default the continuous-time preemptive optimum, exact for small n), and
per policy the ratio ALG/OPT is recorded, or the interval ALG/UB .. ALG/LB when the optimum is
not proven. Results go to an SQLite store one instance at a time, so an
interrupted sweep resumes without redoing or losing finished instances.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import signal
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asrpt_opt.analysis.families import make_family_instance
from asrpt_opt.analysis.ratio import instance_ratio
from asrpt_opt.errors import UnknownNameError, UsageError, lookup
from asrpt_opt.relaxation.bounds import lower_bounds, min_lengths, virtual_sizes
from asrpt_opt.relaxation.srpt import srpt
from asrpt_opt.sim.engine import simulate
from asrpt_opt.speed.base import PooledSpeed

if TYPE_CHECKING:
    import pandas as pd

    from asrpt_opt.sim.tables import Table

__all__ = [
    "EXECUTORS",
    "STORE_COLUMNS",
    "STORE_SCHEMA",
    "RatioConfig",
    "ResultStore",
    "evaluate_instance",
    "run_sweep",
]

#: Where a sweep's instances are evaluated: in this process, in a local process pool (loky),
#: or on a Dask cluster.
EXECUTORS = ("serial", "loky", "dask")


@dataclass(frozen=True, kw_only=True)
class RatioConfig:
    """What a sweep computes for every instance.

    Parameters
    ----------
    family : str
    n : int
        Jobs per instance.
    policies : tuple of str
    preemptive : bool
        Offline model: preemptive (the default, matching preemptive policies) or
        non-preemptive.
    preemption : {"continuous", "grid"}
        With ``preemptive``: preemption at any time (the default: OPT over every preemptive
        schedule), or only at multiples of the time unit (``grid``, an upper bound on it,
        what asrpt-opt 0.1 computed).
    solver : str
        Offline solver (``portfolio``, ``cpsat``, ``milp``).
    time_limit_s : float
        Per backend and instance.
    """

    family: str
    n: int
    policies: tuple[str, ...]
    preemptive: bool = True
    solver: str = "portfolio"
    time_limit_s: float = 10.0
    preemption: str = "continuous"

    def __post_init__(self) -> None:
        from asrpt_opt.solvers.solve import PREEMPTION_MODELS

        lookup(dict.fromkeys(PREEMPTION_MODELS), self.preemption, what="preemption model")

    def key(self, seed: int) -> str:
        """A stable key of (config, seed) for the store."""
        # "backend" was the solver's field name when the first stores were written, and they
        # held grid optima: keep those keys, so that existing stores still resume.
        doc = asdict(self)
        doc["backend"] = doc.pop("solver")
        if doc["preemption"] == "grid" or not self.preemptive:
            del doc["preemption"]
        text = json.dumps({**doc, "seed": seed}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def evaluate_instance(config: RatioConfig, seed: int) -> dict[str, Any]:
    """Solve one instance offline and simulate every policy on it.

    Parameters
    ----------
    config : RatioConfig
    seed : int

    Returns
    -------
    dict
        JSON-ready: instance data, offline status/value/bound, and per policy the value,
        the ratio interval and the per-job completion times.
    """
    from asrpt_opt.solvers.solve import SolverParams, solve

    inst = make_family_instance(config.family, config.n, seed)
    t0 = time.perf_counter()
    off = solve(
        inst,
        preemptive=config.preemptive,
        preemption=config.preemption,
        cluster_model="pooled",
        solver=config.solver,
        params=SolverParams(time_limit_s=config.time_limit_s),
    )
    wall = time.perf_counter() - t0
    speed = PooledSpeed()
    lengths = min_lengths(inst, speed=speed)
    release = np.array([j.release_s for j in inst.jobs])
    virtual = srpt(release, virtual_sizes(inst, lengths)).completion_s
    lb = lower_bounds(inst, speed=speed).lower_bound_s
    bound = max(off.bound_s or 0.0, lb)
    area = float(sum(j.gpus * p for j, p in zip(inst.jobs, lengths, strict=True)))
    span = float(release.max() + lengths.max())
    out: dict[str, Any] = {
        "family": config.family,
        "n": config.n,
        "seed": seed,
        "load": area / (inst.cluster.total_gpus * span),
        "offline_status": off.status,
        "offline_value_s": off.objective_s,
        "offline_bound_s": bound,
        "offline_wall_s": wall,
        "lengths_s": lengths.tolist(),
        "virtual_completion_s": virtual.tolist(),
        "policies": {},
    }
    for name in config.policies:
        res = simulate(inst, name, speed=speed)
        value = res.metrics.total_weighted_completion_s
        out["policies"][name] = {
            "value_s": value,
            "completion_s": [r.completion_s for r in res.schedule.runs],
            **instance_ratio(value, off.objective_s, bound, off.status == "optimal").to_json(),
        }
    return out


#: Version of the store's tables (``PRAGMA user_version``); 0 was asrpt-opt 0.1.0's.
STORE_SCHEMA = 2

_RESULTS = (
    "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, family TEXT NOT NULL,"
    " n INTEGER NOT NULL, seed INTEGER NOT NULL, config TEXT NOT NULL, payload TEXT NOT NULL,"
    " created REAL NOT NULL, offline_status TEXT, offline_value_s REAL, offline_bound_s REAL,"
    " offline_wall_s REAL, load REAL)"
)
_POLICY_RESULTS = (
    "CREATE TABLE IF NOT EXISTS policy_results (key TEXT NOT NULL, policy TEXT NOT NULL,"
    " value_s REAL NOT NULL, ratio REAL, ratio_lo REAL, ratio_hi REAL, proven INTEGER NOT NULL,"
    " PRIMARY KEY (key, policy))"
)
_V0_COLUMNS = ["key", "family", "n", "seed", "config", "payload", "created"]


class ResultStore:
    """An SQLite file holding one row per finished (config, seed).

    Each row is committed as soon as it is written, so killing a sweep loses nothing that
    finished and a rerun skips it. Besides the full JSON payload, the offline result and each
    policy's value and ratio are typed columns (tables ``results`` and ``policy_results``), so
    the store can be read with any SQLite client. The schema version is ``PRAGMA
    user_version`` (:data:`STORE_SCHEMA`); a store of asrpt-opt 0.1.0 is upgraded in place,
    and a file that is not a store of ours, or one written by a newer version, is refused.
    Two sweeps may share a store: each computes what it finds missing, and a row written by
    both holds the same result.

    Parameters
    ----------
    path : path-like
        The SQLite file (created when missing), or ``":memory:"``.

    Raises
    ------
    UsageError
        When ``path`` is a folder, is not SQLite, holds other tables, or is newer.
    """

    def __init__(self, path: str | PathLike[str] = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            target = Path(self.path)
            if target.is_dir():
                raise UsageError(f"{self.path}: is a folder, not a result store file")
            if not target.parent.is_dir():
                raise UsageError(f"{self.path}: folder {target.parent} does not exist")
        try:
            self.db = sqlite3.connect(self.path)
            self._open()
        except sqlite3.DatabaseError as exc:
            raise UsageError(
                f"{self.path}: not an asrpt-opt result store (SQLite says: {exc})"
            ) from None

    def _open(self) -> None:
        db = self.db
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version > STORE_SCHEMA:
            raise UsageError(
                f"{self.path}: written by a newer asrpt-opt (store schema {version}, this "
                f"version reads up to {STORE_SCHEMA})"
            )
        if version == 0 and tables:
            columns = [r[1] for r in db.execute("PRAGMA table_info(results)")]
            if tables != {"results"} or columns != _V0_COLUMNS:
                raise UsageError(
                    f"{self.path}: an SQLite file with other tables ({', '.join(sorted(tables))})"
                    " is not an asrpt-opt result store"
                )
            self._upgrade_from_v0()
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(_RESULTS)
        db.execute(_POLICY_RESULTS)
        db.execute(f"PRAGMA user_version={STORE_SCHEMA}")
        db.commit()

    def _upgrade_from_v0(self) -> None:
        db = self.db
        for column, kind in (
            ("offline_status", "TEXT"),
            ("offline_value_s", "REAL"),
            ("offline_bound_s", "REAL"),
            ("offline_wall_s", "REAL"),
            ("load", "REAL"),
        ):
            db.execute(f"ALTER TABLE results ADD COLUMN {column} {kind}")
        db.execute(_POLICY_RESULTS)
        for key, payload in db.execute("SELECT key, payload FROM results").fetchall():
            self._typed(key, json.loads(payload))
        db.commit()

    def _typed(self, key: str, payload: dict[str, Any]) -> None:
        self.db.execute(
            "UPDATE results SET offline_status=?, offline_value_s=?, offline_bound_s=?,"
            " offline_wall_s=?, load=? WHERE key=?",
            (
                payload.get("offline_status"),
                payload.get("offline_value_s"),
                payload.get("offline_bound_s"),
                payload.get("offline_wall_s"),
                payload.get("load"),
                key,
            ),
        )
        for policy, row in payload.get("policies", {}).items():
            self.db.execute(
                "INSERT OR REPLACE INTO policy_results VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    policy,
                    row["value_s"],
                    row.get("ratio"),
                    row.get("ratio_lo"),
                    row.get("ratio_hi"),
                    int(bool(row.get("proven"))),
                ),
            )

    def done(self, config: RatioConfig) -> set[int]:
        """Seeds already finished for ``config``."""
        rows = self.db.execute(
            "SELECT seed, key FROM results WHERE family=? AND n=?", (config.family, config.n)
        )
        return {seed for seed, key in rows if key == config.key(seed)}

    def put(self, config: RatioConfig, seed: int, payload: dict[str, Any]) -> None:
        """Store one finished instance (atomically: one transaction)."""
        key = config.key(seed)
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO results (key, family, n, seed, config, payload, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    config.family,
                    config.n,
                    seed,
                    json.dumps(asdict(config), sort_keys=True),
                    json.dumps(payload),
                    time.time(),
                ),
            )
            self._typed(key, payload)

    def load(self, config: RatioConfig, seeds: Sequence[int]) -> list[dict[str, Any]]:
        """Payloads of ``seeds`` (those present), in seed order."""
        out = []
        for seed in seeds:
            row = self.db.execute(
                "SELECT payload FROM results WHERE key=?", (config.key(seed),)
            ).fetchone()
            if row is not None:
                out.append(json.loads(row[0]))
        return out

    def table(self) -> Table:
        """One row per (instance, policy) of every sweep in the store, typed columns
        (:data:`STORE_COLUMNS`), ordered by family, n, seed and policy.

        ``ratio_lo``/``ratio_hi`` is the interval ALG/UB .. ALG/LB, equal when ``exact``
        (the optimum ``opt_s`` was proven); ``lower_bound_s`` and ``upper_bound_s`` are the
        offline solve's proven bound and best verified value.

        Returns
        -------
        Table
        """
        from asrpt_opt.sim.tables import Table

        rows = self.db.execute(
            "SELECT r.family, r.n, r.seed, p.policy, p.value_s, p.ratio_lo, p.ratio_hi,"
            " p.proven, CASE WHEN r.offline_status = 'optimal' THEN r.offline_value_s END,"
            " r.offline_bound_s, r.offline_value_s, r.offline_status, r.offline_wall_s,"
            " r.load, r.key FROM results r JOIN policy_results p ON p.key = r.key"
            " ORDER BY r.family, r.n, r.seed, p.policy"
        ).fetchall()
        typed = [(*row[:7], bool(row[7]), *row[8:]) for row in rows]
        return Table(columns=STORE_COLUMNS, rows=tuple(typed))

    def to_frame(self) -> pd.DataFrame:
        """:meth:`table` as a pandas DataFrame (``pip install "asrpt-opt[tables]"``)."""
        from asrpt_opt.sim.tables import to_frame

        return to_frame(self.table())

    def close(self) -> None:
        """Close the database."""
        self.db.close()


#: Columns of :meth:`ResultStore.table` and ``asrpt-opt export``.
STORE_COLUMNS = (
    "family",
    "n",
    "seed",
    "policy",
    "value_s",
    "ratio_lo",
    "ratio_hi",
    "exact",
    "opt_s",
    "lower_bound_s",
    "upper_bound_s",
    "offline_status",
    "offline_wall_s",
    "load",
    "key",
)


def _results(
    config: RatioConfig, seeds: list[int], workers: int, executor: str, scheduler: str | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    if executor not in EXECUTORS:
        raise UnknownNameError("executor", executor, EXECUTORS)
    if executor == "dask":
        from dask.distributed import Client, as_completed

        if scheduler:
            try:
                client = Client(scheduler, timeout=5)
            except (OSError, TimeoutError, ValueError) as exc:
                raise UsageError(
                    f"cannot reach the Dask scheduler {scheduler!r} within 5 s: {exc}"
                ) from None
        else:
            client = Client(processes=True, n_workers=workers)
        try:
            futures = {client.submit(evaluate_instance, config, s, pure=False): s for s in seeds}
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        finally:
            client.close()
        return
    if executor == "serial" or workers <= 1:
        for s in seeds:
            yield s, evaluate_instance(config, s)
        return
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=workers, backend="loky", return_as="generator_unordered")
    tasks = (delayed(_tagged)(config, s) for s in seeds)
    yield from parallel(tasks)


def _tagged(config: RatioConfig, seed: int) -> tuple[int, dict[str, Any]]:
    _die_with_parent()
    return seed, evaluate_instance(config, seed)


def _die_with_parent() -> None:
    # A worker process outlives a sweep killed with SIGKILL (nothing runs in the sweep to
    # stop it); on Linux the kernel can kill the worker when its parent dies.
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def run_sweep(
    config: RatioConfig,
    seeds: Sequence[int],
    *,
    store: ResultStore,
    workers: int = 1,
    executor: str = "loky",
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate every seed not yet in ``store``, then return all payloads in seed order.

    Parameters
    ----------
    config : RatioConfig
    seeds : sequence of int
    store : ResultStore
    workers : int
        Processes on this machine (``loky``) or local Dask workers when no scheduler is given.
    executor : {"serial", "loky", "dask"}
        ``serial`` evaluates in this process (as ``loky`` does with one worker).
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:port``).
    progress : callable, optional
        Called as ``progress(done, total)`` after each instance.

    Returns
    -------
    list of dict
    """
    seeds = list(seeds)
    finished = store.done(config)
    todo = [s for s in seeds if s not in finished]
    done = len(seeds) - len(todo)
    if progress:
        progress(done, len(seeds))
    for seed, payload in _results(config, todo, workers, executor, scheduler):
        store.put(config, seed, payload)
        done += 1
        if progress:
            progress(done, len(seeds))
    return store.load(config, seeds)
