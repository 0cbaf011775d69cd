"""The adversary's store (:class:`AdversaryStore`): every evaluation and the best instance
per (policy, n)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

from asrpt_opt.analysis.store.base import SqliteStore

if TYPE_CHECKING:
    from asrpt_opt.analysis.adversary import Row, SearchSpace

__all__ = ["ADVERSARY_SCHEMA", "AdversaryStore"]

#: Version of the adversary store's tables (``PRAGMA user_version``); 0: before versions.
ADVERSARY_SCHEMA = 1


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

        with self.transaction():
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
