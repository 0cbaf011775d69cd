"""Row-by-row reading shared by the trace adapters: strict or collecting bad rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from asrpt_opt.errors import InstanceError

T = TypeVar("T")


def read_rows(
    rows: Iterable[tuple[int, list[str]]],
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
            out.append(parse(lineno, cols))
        except InstanceError as exc:
            err = exc.within(path=f"line {lineno}", source=source)
            if errors is None:
                raise err from None
            errors.append(str(err))
    return out
