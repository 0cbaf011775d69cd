"""Row-by-row reading shared by the trace adapters: strict or collecting bad rows."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator
from os import PathLike
from pathlib import Path
from typing import TypeVar

from asrpt_opt.errors import InstanceError
from asrpt_opt.model.io import input_problem

T = TypeVar("T")

#: Largest CSV field read (characters); a longer one makes its row a bad row.
FIELD_LIMIT = 1 << 20


#: How trace files are decoded, in one place: UTF-8, a leading byte-order mark dropped (some
#: tools write one; kept, it would glue itself to the first field), undecodable bytes kept as
#: lone surrogates so that only their rows fail (:func:`csv_rows` reports them).
ENCODING = "utf-8-sig"
ERRORS = "surrogateescape"

#: How many bad rows a "nothing left to import" error quotes.
QUOTED_BAD_ROWS = 3


def decode(data: bytes) -> str:
    """Bytes as text, as :data:`ENCODING` and :data:`ERRORS` say."""
    return data.decode(ENCODING, errors=ERRORS)


def nothing_left(
    source: str, errors: list[str] | None, skipped: dict[str, int] | None = None
) -> InstanceError:
    """The one-line error of an import that kept no job: how many rows were bad, the first
    :data:`QUOTED_BAD_ROWS` of them with their reasons, and the rows skipped by reason."""
    parts = []
    if errors:
        quoted = "; ".join(errors[:QUOTED_BAD_ROWS])
        more = (
            f" (and {len(errors) - QUOTED_BAD_ROWS} more)" if len(errors) > QUOTED_BAD_ROWS else ""
        )
        parts.append(f"{len(errors)} bad rows, the first: {quoted}{more}")
    if skipped:
        parts.append("skipped: " + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items())))
    detail = f" ({'; '.join(parts)})" if parts else " (the trace holds no job)"
    return InstanceError(f"no GPU job left to import{detail}", source=source)


_SURROGATE = re.compile("[\udc80-\udcff]")


def bad_text(cols: list[str]) -> bool:
    """Whether any column holds an undecodable byte (read as a lone surrogate)."""
    # Most rows are ASCII, which str.isascii() settles in C without a scan per character.
    return not all(col.isascii() for col in cols) and any(map(_SURROGATE.search, cols))


def csv_rows(text: str | Iterable[str]) -> Iterator[tuple[int, list[str] | InstanceError]]:
    """``(line, columns)`` of each non-empty CSV record, or ``(line, error)`` for a record
    that is not UTF-8 or has a field over :data:`FIELD_LIMIT` characters.

    Records split only at line ends (``\\n``, ``\\r``), never at form feeds or Unicode line
    separators inside a field, and quoted fields may span lines.

    Parameters
    ----------
    text : str or iterable of str
        The whole text, or its lines as a file opened with ``newline=""`` yields them (read
        one record at a time, so memory stays flat however long the file).
    """
    csv.field_size_limit(FIELD_LIMIT)
    reader = csv.reader(io.StringIO(text, newline="") if isinstance(text, str) else text)
    while True:
        start = reader.line_num + 1
        try:
            cols = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield start, InstanceError(f"unreadable CSV record: {exc}")
            continue
        if not cols:
            continue
        if bad_text(cols):
            yield start, InstanceError("is not UTF-8 text")
            continue
        yield start, cols


def read_rows(
    rows: Iterable[tuple[int, list[str] | InstanceError]],
    parse: Callable[[int, list[str]], T],
    *,
    source: str,
    errors: list[str] | None,
) -> list[T]:
    """Parse ``(line number, columns)`` rows.

    With ``errors`` None the first bad row raises :class:`InstanceError` naming the file, the
    line and the reason; otherwise each bad row's message is appended to ``errors`` and the
    row is skipped, so that a caller can report (never silently drop) them.
    """
    out: list[T] = []
    for lineno, cols in rows:
        try:
            if isinstance(cols, InstanceError):
                raise cols
            out.append(parse(lineno, cols))
        except InstanceError as exc:
            err = exc.within(path=f"line {lineno}", source=source)
            if errors is None:
                raise err from None
            errors.append(str(err))
    return out


def _check_input(path: str | PathLike[str]) -> None:
    problem = input_problem(path)
    if problem is not None:
        raise InstanceError(problem, source=str(path))


def read_text(path: str | PathLike[str]) -> tuple[str, str]:
    """A trace file's text (undecodable bytes kept for :func:`csv_rows` to report) and its
    name for messages."""
    _check_input(path)
    try:
        return decode(Path(path).read_bytes()), str(path)
    except OSError as exc:
        raise InstanceError(f"cannot read file: {exc.strerror or exc}", source=str(path)) from None


def csv_table(
    text: str | Iterable[str], header: tuple[str, ...] | None, source: str
) -> Iterator[tuple[int, list[str] | InstanceError]]:
    """:func:`csv_rows` after checking the header row (``None``: no header)."""
    rows = csv_rows(text)
    if header is None:
        return rows
    first = next(rows, None)
    if (
        first is None
        or isinstance(first[1], InstanceError)
        or tuple(c.strip() for c in first[1]) != header
    ):
        raise InstanceError(f"expected header {','.join(header)}", path="line 1", source=source)
    return rows


def csv_file(
    path: str | PathLike[str], header: tuple[str, ...] | None
) -> Iterator[tuple[int, list[str] | InstanceError]]:
    """:func:`csv_table` of a file, streamed record by record (the file is never read whole,
    so a trace of millions of rows imports in flat memory).

    The file is opened as UTF-8 with undecodable bytes kept as lone surrogates, so a bad byte
    spoils its row (reported by :func:`csv_rows`), not the file.
    """
    source = str(path)
    _check_input(path)
    try:
        handle = open(path, encoding=ENCODING, errors=ERRORS, newline="")  # noqa: SIM115
    except OSError as exc:
        raise InstanceError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    with handle:
        yield from csv_table(handle, header, source)
