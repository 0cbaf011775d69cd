"""The toolkit's SQLite files, one base for all: the ratio sweeps' :class:`ResultStore` and
the adversary's :class:`AdversaryStore`.

:class:`SqliteStore` gives every store the same rules: the path must be a file in an existing
folder; the file's kind is ``PRAGMA application_id`` and its schema ``PRAGMA user_version``;
a file of another kind, a file that is not SQLite, and a file written by a newer version are
refused with one line; an older schema is upgraded in place, in one transaction; writes use
SQLite's write-ahead log and wait up to 30 s for another process's lock, so sweeps and
searches may share a store.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import asdict
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from asrpt_opt.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from asrpt_opt.analysis.adversary import Row, SearchSpace
    from asrpt_opt.analysis.ratio import InstanceOutcome
    from asrpt_opt.analysis.sweep import RatioConfig
    from asrpt_opt.sim.tables import Table

__all__ = [
    "ADVERSARY_SCHEMA",
    "STORE_COLUMNS",
    "STORE_SCHEMA",
    "AdversaryStore",
    "ResultStore",
    "SqliteStore",
]

#: Version of the adversary store's tables (``PRAGMA user_version``); 0: before versions.
ADVERSARY_SCHEMA = 1


class SqliteStore:
    """Base of the toolkit's SQLite stores (see the module docstring).

    A subclass names its ``kind``, ``schema``, ``application_id`` and ``tables``, creates its
    tables in :meth:`_create` and upgrades an older file in :meth:`_migrate`.

    Parameters
    ----------
    path : path-like
        The SQLite file (created when missing), or ``":memory:"``.

    Raises
    ------
    UsageError
        When ``path`` is a folder, is not SQLite, is another kind of file, or is newer.
    """

    kind: ClassVar[str] = "asrpt-opt store"
    schema: ClassVar[int] = 1
    application_id: ClassVar[int] = 0
    tables: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, path: str | PathLike[str] = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            target = Path(self.path)
            if target.is_dir():
                raise UsageError(f"{self.path}: is a folder, not an {self.kind} file")
            if not target.parent.is_dir():
                raise UsageError(f"{self.path}: folder {target.parent} does not exist")
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
            self._open()
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"{self.path}: not an {self.kind} (SQLite says: {exc})") from None

    def _open(self) -> None:
        db = self.db
        version = db.execute("PRAGMA user_version").fetchone()[0]
        app = db.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if app not in (0, self.application_id) or not tables <= self.tables:
            raise self._foreign(tables)
        if version > self.schema:
            raise UsageError(
                f"{self.path}: written by a newer asrpt-opt ({self.kind} schema {version}, "
                f"this version reads up to {self.schema})"
            )
        if tables and version < self.schema:
            self._migrate(version, tables)
        db.execute("PRAGMA journal_mode=WAL")
        self._create()
        db.execute(f"PRAGMA user_version={self.schema}")
        db.execute(f"PRAGMA application_id={self.application_id}")
        db.commit()

    def _foreign(self, tables: set[str]) -> UsageError:
        listed = ", ".join(sorted(tables)) or "none"
        return UsageError(
            f"{self.path}: an SQLite file with other tables ({listed}) is not an {self.kind}"
        )

    def _create(self) -> None:
        raise NotImplementedError

    def _migrate(self, version: int, tables: set[str]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Close the file."""
        self.db.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


class AdversaryStore(SqliteStore):
    """A SQLite file of every evaluation and the best instance per (policy, n).

    Each search round commits at once, so an interrupted search resumes from its best
    instances and never solves an instance twice. Schema version :data:`ADVERSARY_SCHEMA`;
    a store written before it had a version (the same tables) is adopted as it is.

    Parameters
    ----------
    path : str or Path
    """

    kind = "asrpt-opt adversary store"
    schema = ADVERSARY_SCHEMA
    application_id = 0x41534131  # "ASA1"
    tables = frozenset({"evaluations", "best"})

    def _create(self) -> None:
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS evaluations (policy TEXT, space TEXT, key TEXT,"
            " ratio REAL, alg REAL, opt REAL, PRIMARY KEY (policy, space, key))"
        )
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS best (policy TEXT, space TEXT, n INTEGER,"
            " ratio REAL, rows TEXT, PRIMARY KEY (policy, space, n))"
        )

    def _migrate(self, version: int, tables: set[str]) -> None:
        if tables != self.tables:  # the unversioned store had exactly these tables
            raise self._foreign(tables)

    @staticmethod
    def _space(space: SearchSpace) -> str:
        return json.dumps([list(space.servers), space.max_duration_s, space.max_release_s])

    def cache(self, policy: str, space: SearchSpace) -> dict[str, tuple[float, float, float]]:
        """Every stored evaluation of ``policy`` in ``space``.

        Parameters
        ----------
        policy : str
        space : SearchSpace

        Returns
        -------
        dict
        """
        rows = self.db.execute(
            "SELECT key, ratio, alg, opt FROM evaluations WHERE policy = ? AND space = ?",
            (policy, self._space(space)),
        )
        return {
            k: (math.nan if r is None else r, a, math.nan if o is None else o)
            for k, r, a, o in rows
        }

    def best(self, policy: str, space: SearchSpace, n: int) -> tuple[list[Row], float] | None:
        """The best stored instance of ``policy`` with ``n`` jobs, and its ratio.

        Parameters
        ----------
        policy : str
        space : SearchSpace
        n : int

        Returns
        -------
        (list of Row, float) or None
        """
        got = self.db.execute(
            "SELECT rows, ratio FROM best WHERE policy = ? AND space = ? AND n = ?",
            (policy, self._space(space), n),
        ).fetchone()
        if got is None:
            return None
        return [tuple(x) for x in json.loads(got[0])], float(got[1])

    def commit(
        self,
        policy: str,
        space: SearchSpace,
        n: int,
        new: dict[str, tuple[float, float, float]],
        best: tuple[list[Row], float] | None,
    ) -> None:
        """Add evaluations and (if better) the best instance, in one transaction.

        Parameters
        ----------
        policy : str
        space : SearchSpace
        n : int
        new : dict
            ``key -> (ratio, alg, opt)`` evaluated since the last commit.
        best : (list of Row, float) or None
        """
        sp = self._space(space)

        def num(x: float) -> float | None:
            return None if math.isnan(x) else x

        with self.db:
            self.db.executemany(
                "INSERT OR IGNORE INTO evaluations VALUES (?, ?, ?, ?, ?, ?)",
                [(policy, sp, k, num(r), a, num(o)) for k, (r, a, o) in new.items()],
            )
            if best is not None:
                old = self.best(policy, space, n)
                if old is None or best[1] > old[1]:
                    self.db.execute(
                        "INSERT OR REPLACE INTO best VALUES (?, ?, ?, ?, ?)",
                        (policy, sp, n, best[1], json.dumps(best[0])),
                    )
