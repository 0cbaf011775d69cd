"""The ``asrpt-opt`` command line: the parser, and the one place that turns errors into exit
statuses. The commands live in one module per group (:mod:`~asrpt_opt.cli.simulate`,
:mod:`~asrpt_opt.cli.offline`, :mod:`~asrpt_opt.cli.placement`, :mod:`~asrpt_opt.cli.data`);
each parses, calls the library and prints. Only the CLI prints.

Every command that computes something prints a human-readable table, or one JSON object with
``--json``. Bad input (an :class:`~asrpt_opt.errors.AsrptError`) exits with status 2 and a
one-line message naming the file, the field and the reason, without a traceback; anything else
is a bug, shown with its traceback and a request to report it. That includes a
:class:`~asrpt_opt.errors.ScheduleError`: every schedule the commands validate is one the
toolkit made.
"""

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import logging
import os
import signal
import sys
import traceback
from collections.abc import Sequence

from asrpt_opt import __version__
from asrpt_opt.cli._common import (
    Parser,
)
from asrpt_opt.cli._inputs import refuse_outputs_over_inputs
from asrpt_opt.cli._output import (
    reset_table_style,
    set_quiet,
    set_table_style,
)
from asrpt_opt.errors import AsrptError, ScheduleError
from asrpt_opt.notices import NOTICE

__all__ = ["COMMANDS", "EXIT_BUG", "EXIT_INTERRUPTED", "EXIT_USAGE", "build_parser", "main"]

EXIT_USAGE = 2
EXIT_BUG = 1
EXIT_INTERRUPTED = 130

_REPORT = (
    "asrpt-opt: internal error (a bug, not a problem with your input): please report it with "
    "the traceback above and the command you ran"
)


#: Every command, in the order ``--help`` lists them: the CLI module (``asrpt_opt.cli.<group>``)
#: that builds it and the one line ``--help`` shows. A command's module, and the registries
#: and libraries it needs, load only when that command runs: ``asrpt-opt --help`` and
#: ``validate`` start at once. A test checks this table against the modules' parsers.
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("check", "check an instance file"),
    "relax": ("simulate", "lower bounds from the single-machine relaxation"),
    "simulate": ("simulate", "simulate one policy on an instance"),
    "sensitivity": ("simulate", "policies under growing prediction error"),
    "replay": ("simulate", "every policy on an instance: table, plots, provenance"),
    "demo": ("simulate", "A-SRPT vs every baseline on the bundled workload"),
    "solve": ("offline", "offline optimum of sum w_j C_j (exact models)"),
    "ratio": ("offline", "competitive ratios against offline optima (sweep)"),
    "export": ("offline", "a ratio store's rows as a CSV or Parquet table"),
    "load-sweep": ("load", "mean response time against load, with stability"),
    "worst-case": ("theory", "search for an instance with a bad ratio"),
    "robustness": ("theory", "ALG/OPT against prediction error (consistency and robustness)"),
    "place": ("placement", "compare placement methods on an instance's DNN jobs"),
    "graph": ("placement", "draw a job's worker graph and a placement to PNG"),
    "predict": ("data", "rolling-origin evaluation of length predictors"),
    "import": ("data", "convert a trace into an instance file"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser (the CLI reference in docs is generated from it).

    Parameters
    ----------
    command : str, optional
        Build only this command's group in full (the others are listed by name and help
        only, without loading their modules); every command when None.

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
    wanted = COMMANDS[command][0] if command in COMMANDS else None
    built: set[str] = set()
    for name, (group, line) in COMMANDS.items():
        if command is None or group == wanted:
            if group not in built:
                built.add(group)
                importlib.import_module(f"asrpt_opt.cli.{group}").add_parsers(sub)
        else:
            sub.add_parser(name, help=line, add_help=False)
    return parser


def _command(argv: Sequence[str]) -> str:
    """The command named on the line: its first word that is one ("" if none is)."""
    return next((word for word in argv if word in COMMANDS), "")


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
    if argv is None:
        # This process owns the interpreter: the cycle collector runs every 50,000 new
        # objects instead of 700. A command builds hundreds of thousands of long-lived,
        # acyclic objects (jobs, segments, records), which the default threshold traverses
        # again and again (70 ms of a 1 s, 20,000-job simulation); cycles are still freed.
        gc.set_threshold(50_000, 10, 10)
        _stop_on_termination()
        code = main(sys.argv[1:])
        if code == EXIT_INTERRUPTED and _TERMINATED:
            # Stopped by SIGTERM or SIGHUP, handled as Ctrl-C: the shell's 128 + signal.
            code = 128 + _TERMINATED[0]
        if code == EXIT_INTERRUPTED or _TERMINATED:
            # Interrupted, with everything finished already saved and said: leave now. A
            # solver's native threads can abort the interpreter's normal shutdown after a
            # Ctrl-C ("terminate called without an active exception", exit -6), which would
            # hide the 130 a caller relies on.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        # Done: what is left is freed at exit, where the interpreter's last collections
        # would traverse every object still alive (numba's registries and compiled code
        # after a compiled run: 0.1-0.2 s, a fifth of a 10,000-job simulation). Frozen, they
        # are skipped; atexit handlers and finalizers of objects still referenced run as
        # before.
        gc.freeze()
        return code
    if sys.stdout is None:  # started with stdout closed (>&-): nowhere to print results
        print("asrpt-opt: error: standard output is closed", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser(_command(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse has printed
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    style = getattr(args, "table_format", None)
    if getattr(args, "json", False) and style not in (None, "json"):
        print(
            f"asrpt-opt: error: --json and --format {style} ask for two outputs: give one",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if hasattr(args, "table_format"):
        args.json = args.json or style == "json"
        args.table_format = "json" if args.json else (style or "table")
    set_table_style(getattr(args, "table_format", "table"))
    set_quiet(args.quiet)
    level = logging.ERROR if args.quiet else NOTICE - 5 * min(args.verbose, 1)
    handler = logging.StreamHandler()
    handler.setFormatter(_Formatter())
    logging.basicConfig(level=level if args.verbose < 2 else logging.DEBUG, handlers=[handler])
    try:
        refuse_outputs_over_inputs(args)
        status: int = args.func(args)
    except ScheduleError:
        # No command takes a schedule from the user: one of ours failing the validator is
        # a bug, not bad input.
        traceback.print_exc()
        print(_REPORT, file=sys.stderr)
        return EXIT_BUG
    except AsrptError as exc:
        print(f"asrpt-opt: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        _silence_stdout()  # the reader left (| head): end quietly, as Unix tools do
        return 0
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            raise
        where = exc.filename if exc.filename else "standard output"
        _silence_stdout()
        print(f"asrpt-opt: error: cannot write {where}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
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


_TERMINATED: list[int] = []  # the termination signal received, if any


def _stop_on_termination() -> None:
    """SIGTERM and SIGHUP stop a command as Ctrl-C does: the current unit of work is
    finished or discarded, what is done stays saved, temporary files are removed; the exit
    status is then 128 + the signal's number."""

    def stop(signum: int, frame: object) -> None:
        if not _TERMINATED:
            _TERMINATED.append(signum)
        raise KeyboardInterrupt

    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            signal.signal(number, stop)


#: Write failures that are the environment's (a full disk or quota, a read-only or failing
#: device, a closed descriptor, a folder without write permission, a name too long), reported
#: in one line; any other OSError is a bug. (Inputs are checked before they are read, and an
#: output's folder before the command runs, so ENOENT at a write is a folder that vanished or
#: a pseudo file system such as /proc refusing a new file.)
_ENVIRONMENT_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.ENOENT,
        errno.EDQUOT,
        errno.EROFS,
        errno.EIO,
        errno.EBADF,
        errno.EFBIG,
        errno.EACCES,
        errno.EPERM,
        errno.ENAMETOOLONG,
    }
)


def _silence_stdout() -> None:
    """Point descriptor 1 at /dev/null, so that the interpreter's last flush of what could
    not be written fails no second time (no "Exception ignored" after our one line)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
