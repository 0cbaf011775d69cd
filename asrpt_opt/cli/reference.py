"""Generate the CLI reference (docs/cli.md) from the argparse definitions, so it cannot drift.

Run ``python -m asrpt_opt.cli.reference > docs/cli.md``; a test checks the file is current.
"""

from __future__ import annotations

import argparse
import os
import sys

from asrpt_opt.cli.main import build_parser

__all__ = ["cli_reference"]


def cli_reference(width: int = 100) -> str:
    """The Markdown reference of every ``asrpt-opt`` command.

    Parameters
    ----------
    width : int
        Line width of the help texts.

    Returns
    -------
    str
    """
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        parser = build_parser()
        parts = [
            "# `asrpt-opt` command reference",
            "",
            "Generated from the argparse definitions by "
            "`python -m asrpt_opt.cli.reference`; do not edit by hand.",
            "",
            "```text",
            parser.format_help().rstrip(),
            "```",
        ]
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, child in sub.choices.items():
            parts += [
                "",
                f"## `asrpt-opt {name}`",
                "",
                "```text",
                child.format_help().rstrip(),
                "```",
            ]
        return "\n".join(parts) + "\n"
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(cli_reference())
