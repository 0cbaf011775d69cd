"""What every command of the CLI shares: argument types, output paths and deprecations."""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from asrpt_opt.cli._output import (
    say,
)
from asrpt_opt.errors import UsageError, did_you_mean


def name_list(text: str, known: Any, what: str) -> tuple[str, ...]:
    """Comma-separated names, each checked against a registry."""
    from asrpt_opt.errors import lookup

    names = tuple(p.strip() for p in text.split(",") if p.strip())
    if not names:
        raise UsageError(f"give at least one {what}")
    for name in names:
        lookup(known, name, what=what)
    return names


def registry_name(registry: Any, what: str) -> Any:
    """An argparse type accepting the names of ``registry`` (its message lists them)."""
    from asrpt_opt.errors import UnknownNameError

    def check(text: str) -> str:
        if text not in registry:
            raise argparse.ArgumentTypeError(str(UnknownNameError(what, text, registry)))
        return text

    check.__name__ = what
    return check


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default unless its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """Usage errors as one line ``asrpt-opt: error: ...`` (exit 2), like every other error;
    ``--help`` shows every option's default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _DefaultsFormatter)
        super().__init__(*args, **kwargs)
        # -v and -q work before and after the command; a command's own leaves the top
        # level's value alone when not given.
        top = not str(self.prog).count(" ")
        self.add_argument(
            "-v",
            "--verbose",
            action="count",
            default=0 if top else argparse.SUPPRESS,
            help="more logging; -v also streams solver progress (incumbent, bound, gap)",
        )
        self.add_argument(
            "-q",
            "--quiet",
            action="store_true",
            default=False if top else argparse.SUPPRESS,
            help="no progress bars, status lines or notices (warnings and errors still show)",
        )

    def error(self, message: str) -> NoReturn:
        """Print ``message`` on one line and exit with status 2.

        A misspelt choice gets the closest valid ones ("did you mean"); a missing command
        gets the list of commands after the line.
        """
        # A command's errors name the command; the top level's need no second "asrpt-opt".
        where = f"{self.prog}: " if " " in str(self.prog) else ""
        if "required: COMMAND" in message:
            self.exit(2, f"asrpt-opt: error: no command given\n\n{self._command_list()}")
        self.exit(2, f"asrpt-opt: error: {where}{message}{_did_you_mean(message)}\n")

    def _command_list(self) -> str:
        """The commands with their one-line help, as ``--help`` lists them."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                width = max(map(len, helps))
                lines = [f"  {name:<{width}}  {text}" for name, text in helps.items()]
                return "commands:\n" + "\n".join(lines) + "\n\nasrpt-opt COMMAND --help for one\n"
        return ""


def _did_you_mean(message: str) -> str:
    """``" (did you mean 'x'?)"`` for argparse's "invalid choice" message, else ``""``."""
    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if not found:
        return ""
    choices = re.findall(r"'([^']*)'", found.group(2)) or [
        c.strip() for c in found.group(2).split(",")
    ]
    return did_you_mean(found.group(1), choices)


def _literal(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    if "," in text:
        return tuple(_literal(part) for part in text.split(",") if part.strip())
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def policy_params(items: Sequence[str] | None, policies: Sequence[str]) -> dict[str, dict]:
    """``--param [POLICY:]NAME=VALUE`` items as checked keyword parameters per policy.

    An item without ``POLICY:`` applies to every listed policy that has the parameter (and
    must fit at least one); values are ``true``/``false``, numbers, comma lists or text.
    """
    from asrpt_opt.policies.registry import check_policy_params, policy_parameters

    raw: dict[str, dict] = {name: {} for name in policies}
    for item in items or ():
        key, sep, value = item.partition("=")
        target, colon, name = key.rpartition(":") if ":" in key else ("", "", key)
        if not sep or not name.strip():
            raise UsageError(f"invalid --param {item!r}: use NAME=VALUE or POLICY:NAME=VALUE")
        name = name.strip()
        if colon:
            if target not in raw:
                raise UsageError(
                    f"invalid --param {item!r}: {target!r} is not among the policies run "
                    f"({', '.join(policies)})"
                )
            targets = [target]
        else:
            targets = [p for p in policies if name in policy_parameters(p)]
            if not targets:
                have = sorted({k for p in policies for k in policy_parameters(p)})
                raise UsageError(
                    f"invalid --param {item!r}: no policy run here has a parameter {name!r} "
                    f"(parameters: {', '.join(have)})"
                )
        for t in targets:
            raw[t][name] = _literal(value)
    return {name: check_policy_params(name, params) for name, params in raw.items()}


def whole(minimum: int) -> Any:
    """An argparse type: a whole number >= ``minimum``."""

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    check.__name__ = "whole number"
    return check


def finite(minimum: float, *, strict: bool = False) -> Any:
    """An argparse type: a finite number >= ``minimum`` (> with ``strict``)."""

    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        bad = not math.isfinite(value) or value < minimum or (strict and value == minimum)
        if bad:
            rule = ">" if strict else ">="
            raise argparse.ArgumentTypeError(f"must be a finite number {rule} {minimum:g}")
        return value

    check.__name__ = "number"
    return check


def parse_servers(text: str) -> tuple[int, ...]:
    """``SERVERSxGPUS`` (16x8) or a list of GPUs per server (8,8,4), as an argparse type."""
    try:
        servers = _servers_of(text) if "x" in text else tuple(int(p) for p in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid cluster {text!r}: use SERVERSxGPUS (16x8) or a list of GPUs (8,8,4)"
        ) from None
    if not servers or min(servers) < 1:
        raise argparse.ArgumentTypeError(f"invalid cluster {text!r}: GPU counts must be >= 1")
    return servers


def _servers_of(text: str) -> tuple[int, ...]:
    # SERVERSxGPUS is checked against the limits before a tuple of that length is built.
    from asrpt_opt.model._checks import MAX_SERVERS, MAX_TOTAL_GPUS

    count, size = (int(p) for p in text.split("x", 1))
    if count > MAX_SERVERS or count * size > MAX_TOTAL_GPUS:
        raise argparse.ArgumentTypeError(
            f"invalid cluster {text!r}: at most {MAX_SERVERS:,} servers and "
            f"{MAX_TOTAL_GPUS:,} GPUs are supported"
        )
    return (size,) * count


def parse_counts(text: str, what: str) -> list[int]:
    """Comma-separated counts >= 0."""
    try:
        values = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise UsageError(f"invalid {what} {text!r}: give comma-separated integers") from None
    if not values or min(values) < 0:
        raise UsageError(f"invalid {what} {text!r}: counts must be >= 0")
    return values


def output_file(path: str | None, *, option: str, notice: bool = True) -> None:
    """Check, before any work, that a file can be written at ``path``.

    The convention for every file the CLI writes: missing parent folders are created, a
    folder in the way is refused, and an existing file is replaced (atomically, once the work
    is done) with a note on stderr.
    """
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{option} {path}: is a folder, not a file")
    _writable_folder(target.parent, option=option, path=path)
    if notice and target.is_file():  # a device or pipe is written in place, not replaced
        say(f"asrpt-opt: note: {option} {path} exists and will be replaced")


def table_path(path: str | None, *, option: str = "--per-job") -> None:
    """Check a table's output path (.csv or .parquet, writable) before any work."""
    if path is None:
        return
    from asrpt_opt.sim.tables import table_format

    try:
        table_format(path)
    except UsageError as exc:
        raise UsageError(f"{option}: {exc}") from None
    output_file(path, option=option)


def output_dir(path: str | None, *, option: str) -> None:
    """Check, before any work, that files can be written into the folder ``path`` (created
    when missing; files already in it are replaced)."""
    if path is None:
        return
    _writable_folder(Path(path), option=option, path=path)


def _writable_folder(folder: Path, *, option: str, path: str) -> None:
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {path}: {folder} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{option} {path}: cannot create folder {folder}: {exc.strerror or exc}"
        ) from None
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{option} {path}: folder {folder} is not writable")


def use_agg() -> None:
    """Draw without a display: the CLI only writes files (library code never does this)."""
    import matplotlib

    matplotlib.use("Agg")


def write_figure(fig: Any, path: str | Path) -> None:
    """Write a figure (atomically; the type follows the extension) and close it."""
    import matplotlib.pyplot as plt

    from asrpt_opt.analysis.plots import save_figure

    save_figure(fig, path)
    plt.close(fig)


class DeprecatedFlag(argparse.Action):
    """An old spelling of a flag: stores into the new destination and warns on stderr."""

    def __init__(self, *args: Any, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(*args, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        say(
            f"asrpt-opt: warning: {option_string} is deprecated here and will be removed in "
            f"the next release; use {self.new}"
        )
        setattr(namespace, self.dest, values)
