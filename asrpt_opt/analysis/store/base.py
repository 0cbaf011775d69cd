"""The base of the toolkit's SQLite stores (:class:`SqliteStore`).

It gives every store the same rules: the path must be a file in an existing folder; the
file's kind is ``PRAGMA application_id`` and its schema ``PRAGMA user_version``; a file of
another kind, a file that is not SQLite, and a file written by a newer version are refused
with one line; an older schema is upgraded in place, in one transaction; writes use SQLite's
write-ahead log and wait up to 30 s for another process's lock, so studies may share a store;
every write is one transaction (:meth:`SqliteStore.transaction`), so a full disk or an
interrupt leaves the store as it was before that write, and is reported as the
:class:`OSError` of the store's path (one line from the command line).
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import ClassVar

from asrpt_opt.errors import UsageError

__all__ = ["SqliteStore"]

#: SQLite's primary result codes that are the environment's, as the errno they stand for.
_SQLITE_ERRNO = {
    13: (errno.ENOSPC, "No space left on device"),  # SQLITE_FULL
    10: (errno.EIO, "Input/output error"),  # SQLITE_IOERR
    8: (errno.EROFS, "Read-only file system or file"),  # SQLITE_READONLY
    14: (errno.EACCES, "Cannot open the file (permission or a missing folder)"),  # CANTOPEN
}


def _environment_error(exc: sqlite3.DatabaseError, path: str) -> OSError | None:
    """The OSError an SQLite error of the environment stands for, else None."""
    code = getattr(exc, "sqlite_errorcode", None)
    known = None if code is None else _SQLITE_ERRNO.get(code & 0xFF)
    return None if known is None else OSError(known[0], known[1], path)


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
            if target.exists() and not target.is_file():
                raise UsageError(
                    f"{self.path}: is not a regular file (a device or pipe cannot hold an "
                    f"{self.kind})"
                )
            if not target.parent.is_dir():
                raise UsageError(f"{self.path}: folder {target.parent} does not exist")
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
            self._open()
        except sqlite3.DatabaseError as exc:
            env = _environment_error(exc, self.path)
            if env is not None:
                raise env from None
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

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write: committed whole or rolled back whole.

        Returns
        -------
        context manager
            Yields the connection.

        Raises
        ------
        OSError
            When the environment refuses the write (a full disk, a read-only file or folder,
            an I/O error), with the store's path as ``filename``.
        """
        try:
            with self.db:
                yield self.db
        except sqlite3.OperationalError as exc:
            env = _environment_error(exc, self.path)
            if env is None:
                raise
            raise env from None

    def close(self) -> None:
        """Close the file."""
        self.db.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
