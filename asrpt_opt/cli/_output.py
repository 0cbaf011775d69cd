"""What the command line writes: JSON, tables in every ``--format``, progress and status.

Library code never prints; these helpers are the CLI's only way to stdout and stderr.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any


def emit_json(obj: Any) -> None:
    """Print ``obj`` as one line of JSON on stdout."""
    sys.stdout.write(json.dumps(obj, indent=None, separators=(",", ":")) + "\n")


def emit_json_text(text: str) -> None:
    """Print JSON text already encoded (one line) on stdout."""
    sys.stdout.write(text + "\n")


def say(text: str, *, always: bool = False) -> None:
    """Print a progress or status line on stderr (stdout stays for results); with ``-q``
    only warnings, errors and what ``always`` marks (where an interrupted run left its
    results)."""
    quiet = _QUIET["value"] and not always
    if quiet and not text.startswith(("asrpt-opt: warning", "asrpt-opt: error")):
        return
    print(text, file=sys.stderr)


def warn_unstable(label: str, stability: Any) -> None:
    """Say on stderr that a run's number of jobs in the system keeps growing
    (:class:`~asrpt_opt.sim.stability.Stability`); nothing for a stable or inconclusive run."""
    if stability.verdict != "unstable":
        return
    say(
        f"asrpt-opt: warning: {label} is unstable: the number of jobs in the system grew by "
        f"{stability.growth:.0%} of its mean ({stability.mean_in_system:,.1f}) over the "
        "second half of the arrivals, so its mean JCT grows with the number of jobs "
        "(docs/stability.md)"
    )


def fmt(value: Any) -> str:
    """A table cell: floats with a precision that suits their size."""
    if isinstance(value, float):
        if value != 0 and abs(value) < 1e-3:
            return f"{value:.4g}"
        if abs(value) >= 1e5:
            return f"{value:,.0f}"
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
    return str(value)


#: What ``--format`` accepts: how tables print (``json`` is the same as ``--json``).
TABLE_STYLES = ("table", "csv", "markdown", "latex", "json")
_style: dict[str, Any] = {"value": "table", "stdout": None}


def set_table_style(style: str) -> None:
    """How :func:`emit_table` prints for the rest of this command (``--format``).

    In the CSV, Markdown and LaTeX styles stdout carries the tables alone, so that it can be
    redirected into a file: every other line a command prints goes to stderr.
    """
    _style["value"] = style
    if style in ("csv", "markdown", "latex") and _style["stdout"] is None:
        _style["stdout"] = sys.stdout
        sys.stdout = sys.stderr


def reset_table_style() -> None:
    """Undo :func:`set_table_style` (the command has ended)."""
    if _style["stdout"] is not None:
        sys.stdout = _style["stdout"]
        _style["stdout"] = None
    _style["value"] = "table"


def emit_table(
    header: Sequence[str], rows: Sequence[Sequence[Any]], *, per_column: bool = True
) -> None:
    """Print :func:`table` on stdout (the real one in the machine-readable styles)."""
    out = _style["stdout"] or sys.stdout
    out.write(table(header, rows, per_column=per_column) + "\n")


def _column_cells(values: list[Any]) -> list[str]:
    if any(isinstance(v, bool) or not isinstance(v, float | int) for v in values) or not any(
        isinstance(v, float) for v in values
    ):
        return [fmt(v) for v in values]
    top = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
    if 0 < top < 1e-3:
        return [f"{float(v):.3e}" for v in values]
    # Decimals that give the column's largest value about four significant digits.
    places = 3 if top == 0 else max(0, min(3, 3 - math.floor(math.log10(top))))
    return [f"{float(v):,.{places}f}" if math.isfinite(v) else str(v) for v in values]


# One pass over the characters, so the braces of \textbackslash{} are not escaped again.
_LATEX = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
}


def _latex(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, per_column: bool = True) -> str:
    """A table in the style ``--format`` chose: aligned text (the first column left-aligned,
    numbers right-aligned, one number format per column), CSV (full precision), Markdown or
    LaTeX (booktabs).

    Parameters
    ----------
    header : sequence of str
    rows : sequence of sequences
    per_column : bool
        One number format per column; False for key-value tables whose rows differ in kind.
    """
    style = _style["value"]
    if style == "csv":
        buffer = io.StringIO()
        out = csv.writer(buffer, lineterminator="\n")
        out.writerow(header)
        out.writerows([repr(c) if isinstance(c, float) else c for c in row] for row in rows)
        return buffer.getvalue().rstrip("\n")
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in header]
    if per_column:
        formatted = [_column_cells(list(col)) for col in columns]
    else:
        formatted = [[fmt(v) for v in col] for col in columns]
    body = [list(r) for r in zip(*formatted, strict=True)] if rows else []
    numeric = [bool(col) and all(isinstance(v, int | float) for v in col) for col in columns]
    if style == "markdown":
        align = ["---:" if num else "---" for num in numeric]
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines)
    if style == "latex":
        spec = "".join("r" if num else "l" for num in numeric)
        lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule"]
        lines.append(" & ".join(_latex(h) for h in header) + " \\\\")
        lines.append("\\midrule")
        lines += [" & ".join(_latex(c) for c in r) + " \\\\" for r in body]
        lines += ["\\bottomrule", "\\end{tabular}"]
        return "\n".join(lines)
    cells = [[str(h) for h in header], *body]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    for k, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.rjust(w) if k and i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def add_format_option(parser: argparse.ArgumentParser) -> None:
    """``--json`` and ``--format`` for a command that prints a table."""
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--format",
        choices=TABLE_STYLES,
        default=None,
        dest="table_format",
        help="how tables print: aligned text (the default), CSV, Markdown, LaTeX (booktabs) "
        "or JSON (= --json, which no other format may be combined with)",
    )


_QUIET = {"value": False}


def set_quiet(quiet: bool) -> None:
    """``-q``: no progress bars, status lines or notices for the rest of this command."""
    _QUIET["value"] = quiet


class Progress:
    """Progress of a long command on stderr: a bar (tqdm) on a terminal, otherwise a status
    line every ``every_s`` seconds and one at the end; nothing with ``-q``.

    Call it as ``progress(done, total)`` (the library's progress callbacks), optionally with
    a short ``status`` such as the best value so far.
    """

    def __init__(self, label: str, enabled: bool = True, *, every_s: float = 10.0) -> None:
        self.label = label
        self.enabled = enabled and not _QUIET["value"]
        self.terminal = sys.stderr.isatty()
        self.every_s = every_s
        self.start = time.perf_counter()
        self.last = self.start
        self.bar: Any = None

    def __call__(self, done: int, total: int, status: str = "") -> None:
        if not self.enabled:
            return
        if self.terminal:
            if self.bar is None:
                from tqdm import tqdm

                self.bar = tqdm(
                    total=total, desc=self.label, file=sys.stderr, leave=True, delay=1.0
                )
            self.bar.total = total
            if status:
                self.bar.set_postfix_str(status, refresh=False)
            # update(), not n = ...: it honours the display delay and records the display,
            # so that close() ends the bar's line.
            if done > self.bar.n:
                self.bar.update(done - self.bar.n)
            if done >= total:
                self.bar.close()
            return
        now = time.perf_counter()
        # Quick commands stay silent: a line every every_s seconds, and a last one only
        # when the work took over two seconds.
        final = done >= total and now - self.start >= 2.0
        if final or (done < total and now - self.last >= self.every_s):
            self.last = now
            extra = f", {status}" if status else ""
            say(f"{self.label}: {done}/{total} done, {now - self.start:.0f} s{extra}")


class Ticker:
    """A status line on stderr every ``every_s`` seconds while a long step runs (a solve, a
    search, an import), for work that cannot count its steps; nothing with ``-q``.

    Use as a context manager; ``status`` is called for the line's text.
    """

    def __init__(
        self, status: Callable[[float], str], enabled: bool = True, *, every_s: float = 10.0
    ) -> None:
        self.status = status
        self.enabled = enabled and not _QUIET["value"]
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        start = time.perf_counter()
        while not self._stop.wait(self.every_s):
            say(self.status(time.perf_counter() - start))

    def __enter__(self) -> Ticker:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="ticker", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
