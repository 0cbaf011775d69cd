"""The ratio sweeps' resumable store (:class:`ResultStore`)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict
from os import PathLike
from typing import TYPE_CHECKING, Any

from asrpt_opt.analysis.store.base import SqliteStore

if TYPE_CHECKING:
    import pandas as pd

    from asrpt_opt.analysis.ratio import InstanceOutcome
    from asrpt_opt.analysis.sweep import RatioConfig
    from asrpt_opt.sim.tables import Table

__all__ = ["STORE_COLUMNS", "STORE_SCHEMA", "ResultStore"]


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


class ResultStore(SqliteStore):
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

    kind = "asrpt-opt result store"
    schema = STORE_SCHEMA
    application_id = 0x41535231  # "ASR1"
    tables = frozenset({"results", "policy_results"})

    def __init__(self, path: str | PathLike[str] = ":memory:") -> None:
        super().__init__(path)

    def _create(self) -> None:
        self.db.execute(_RESULTS)
        self.db.execute(_POLICY_RESULTS)

    def _migrate(self, version: int, tables: set[str]) -> None:
        if version > 0:
            return  # schema 1 lacked only tables that _create adds
        # asrpt-opt 0.1.0 wrote one table of payloads: add the typed columns and rows.
        columns = [r[1] for r in self.db.execute("PRAGMA table_info(results)")]
        if tables != {"results"} or columns != _V0_COLUMNS:
            raise self._foreign(tables)
        self._upgrade_from_v0()

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

    def put(self, config: RatioConfig, seed: int, outcome: InstanceOutcome) -> None:
        """Store one finished instance (atomically: one transaction).

        Parameters
        ----------
        config : RatioConfig
        seed : int
        outcome : InstanceOutcome
        """
        key = config.key(seed)
        payload = outcome.to_json()
        with self.transaction():
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

    def load(self, config: RatioConfig, seeds: Sequence[int]) -> list[InstanceOutcome]:
        """The outcomes of ``seeds`` (those present), in seed order.

        Parameters
        ----------
        config : RatioConfig
        seeds : sequence of int

        Returns
        -------
        list of InstanceOutcome
        """
        from asrpt_opt.analysis.ratio import InstanceOutcome

        out = []
        for seed in seeds:
            row = self.db.execute(
                "SELECT payload FROM results WHERE key=?", (config.key(seed),)
            ).fetchone()
            if row is not None:
                out.append(InstanceOutcome.from_json(json.loads(row[0])))
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
