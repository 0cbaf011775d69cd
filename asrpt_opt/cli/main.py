"""The ``asrpt-opt`` command line: the parser, and the one place that turns errors into exit
statuses. The commands live in one module per group (:mod:`~asrpt_opt.cli.simulate`,
:mod:`~asrpt_opt.cli.offline`, :mod:`~asrpt_opt.cli.placement`, :mod:`~asrpt_opt.cli.data`);
each parses, calls the library and prints. Only the CLI prints.

Every command that computes something prints a human-readable table, or one JSON object with
``--json``. Bad input (an :class:`~asrpt_opt.errors.AsrptError`) exits with status 2 and a
one-line message naming the file, the field and the reason, without a traceback; anything else
is a bug, shown with its traceback and a request to report it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Sequence

from asrpt_opt import __version__
from asrpt_opt.cli import data, offline, placement, simulate, theory
from asrpt_opt.cli._common import (
    Parser,
)
from asrpt_opt.cli._output import (
    reset_table_style,
    set_quiet,
    set_table_style,
)
from asrpt_opt.errors import AsrptError
from asrpt_opt.notices import NOTICE

__all__ = ["EXIT_BUG", "EXIT_INTERRUPTED", "EXIT_USAGE", "build_parser", "main"]

EXIT_USAGE = 2
EXIT_BUG = 1
EXIT_INTERRUPTED = 130

_REPORT = (
    "asrpt-opt: internal error (a bug, not a problem with your input): please report it with "
    "the traceback above and the command you ran"
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (the CLI reference in docs is generated from it).

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = Parser(
        prog="asrpt-opt",
        description="Online scheduling of distributed DL training jobs: A-SRPT, baselines, "
        "bounds and a fast simulator.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=Parser
    )
    for group in (simulate, offline, theory, placement, data):
        group.add_parsers(sub)
    return parser


class _Formatter(logging.Formatter):
    """Notices and progress read as the command's own lines; warnings and debug output
    name their level and module."""

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno in (NOTICE, logging.INFO):
            return f"asrpt-opt: {record.getMessage()}"
        return f"{record.levelname} {record.name}: {record.getMessage()}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 2 on bad input, 130 when interrupted, 1 on an internal
        error (a bug).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse has printed
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    if getattr(args, "format", None) == "json":
        args.json = True
    set_table_style(getattr(args, "format", "table"))
    set_quiet(args.quiet)
    level = logging.ERROR if args.quiet else NOTICE - 5 * min(args.verbose, 1)
    handler = logging.StreamHandler()
    handler.setFormatter(_Formatter())
    logging.basicConfig(level=level if args.verbose < 2 else logging.DEBUG, handlers=[handler])
    try:
        status: int = args.func(args)
    except AsrptError as exc:
        print(f"asrpt-opt: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("asrpt-opt: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:
        traceback.print_exc()
        print(_REPORT, file=sys.stderr)
        return EXIT_BUG
    finally:
        reset_table_style()
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
