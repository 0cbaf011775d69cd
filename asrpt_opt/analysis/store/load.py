"""The load sweeps' resumable store (:class:`LoadSweepStore`): one row per finished run."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING

from asrpt_opt.analysis.store.base import SqliteStore

if TYPE_CHECKING:
    from asrpt_opt.analysis.load_sweep import LoadRun

__all__ = ["LOAD_SCHEMA", "LoadSweepStore"]

#: Version of the load store's table (``PRAGMA user_version``).
LOAD_SCHEMA = 1

_RUNS = (
    "CREATE TABLE IF NOT EXISTS load_runs (key TEXT PRIMARY KEY, family TEXT NOT NULL,"
    " n INTEGER NOT NULL, policy TEXT NOT NULL, load REAL NOT NULL, seed INTEGER NOT NULL,"
    " mean_response_s REAL NOT NULL, unit_s REAL NOT NULL, verdict TEXT NOT NULL,"
    " growth REAL NOT NULL, screened INTEGER NOT NULL, wall_s REAL NOT NULL,"
    " payload TEXT NOT NULL, created REAL NOT NULL)"
)


class LoadSweepStore(SqliteStore):
    """An SQLite file holding one row per finished (configuration, policy, load, seed).

    Each row is committed as soon as it is written, so killing a sweep loses nothing that
    finished and a rerun skips it; the typed columns can be read with any SQLite client.

    Parameters
    ----------
    path : path-like
        The SQLite file (created when missing), or ``":memory:"``.
    """

    kind = "asrpt-opt load-sweep store"
    schema = LOAD_SCHEMA
    application_id = 0x41535233  # "ASR3"
    tables = frozenset({"load_runs"})

    def __init__(self, path: str | PathLike[str] = ":memory:") -> None:
        super().__init__(path)

    def _create(self) -> None:
        self.db.execute(_RUNS)

    def _migrate(self, version: int, tables: set[str]) -> None:
        raise self._foreign(tables)  # no older schema exists

    def done(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` are finished."""
        have = {row[0] for row in self.db.execute("SELECT key FROM load_runs")}
        return {k for k in keys if k in have}

    def put(self, key: str, family: str, n: int, run: LoadRun) -> None:
        """Store one finished run (one transaction).

        Parameters
        ----------
        key : str
            :meth:`~asrpt_opt.analysis.load_sweep.LoadSweepConfig.key` of the run.
        family : str
        n : int
        run : LoadRun
        """
        with self.transaction():
            self.db.execute(
                f"INSERT OR REPLACE INTO load_runs VALUES ({', '.join('?' * 14)})",
                (
                    key,
                    family,
                    n,
                    run.policy,
                    run.load,
                    run.seed,
                    run.mean_response_s,
                    run.unit_s,
                    run.verdict,
                    run.growth,
                    int(run.screened),
                    run.wall_s,
                    json.dumps(run.to_json()),
                    time.time(),
                ),
            )

    def load(self, keys: Sequence[str]) -> list[LoadRun]:
        """The runs of ``keys`` that are present, in the order of ``keys``."""
        from asrpt_opt.analysis.load_sweep import LoadRun

        out = []
        for key in keys:
            row = self.db.execute("SELECT payload FROM load_runs WHERE key=?", (key,)).fetchone()
            if row is not None:
                out.append(LoadRun(**json.loads(row[0])))
        return out
