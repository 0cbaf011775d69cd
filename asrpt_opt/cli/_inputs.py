"""No output over an input: before a command works, every file it will write is checked
against every file it reads (resolved through ``..`` and symbolic links, compared by device
and inode), and a written file inside a folder it reads is refused."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from asrpt_opt.errors import AsrptError, UsageError

__all__ = ["refuse_outputs_over_inputs"]

#: Arguments naming what a command reads.
INPUT_ARGS = ("instance", "source", "preset")
#: Arguments naming files a command writes, with the option a user typed.
OUTPUT_FILE_ARGS = {
    "output": "-o",
    "per_job": "--per-job",
    "gantt": "--gantt",
    "plot": "--plot",
}
#: Arguments naming folders a command writes into.
OUTPUT_DIR_ARGS = {"out": "--out", "record": "--record", "out_dir": "--out-dir"}
#: Commands whose ``--out`` is a file, not a folder.
OUT_IS_FILE = frozenset({"graph", "worst-case"})
#: Commands that read the store they are given (``export STORE -o ...``).
STORE_IS_INPUT = frozenset({"export"})


def _inputs(args: argparse.Namespace) -> list[Path]:
    from asrpt_opt.datasets import resolve_instance, resolve_preset

    found = []
    for name in INPUT_ARGS:
        value = getattr(args, name, None)
        if not value:
            continue
        try:
            path = resolve_preset(value) if name == "preset" else resolve_instance(value)
        except AsrptError:  # a bad name: the command itself reports it in one line
            path = Path(value)
        found.append(Path(path))
    if getattr(args, "command", "") in STORE_IS_INPUT and getattr(args, "store", None):
        found.append(Path(args.store))
    return [p for p in found if p.exists()]


def _outputs(args: argparse.Namespace) -> list[tuple[str, Path, bool]]:
    """``(option, path, is_folder)`` of everything the command will write."""
    out = []
    command = getattr(args, "command", "")
    for name, option in OUTPUT_FILE_ARGS.items():
        if getattr(args, name, None):
            out.append((option, Path(getattr(args, name)), False))
    for name, option in OUTPUT_DIR_ARGS.items():
        value = getattr(args, name, None)
        if value and isinstance(value, str):
            out.append((option, Path(value), not (name == "out" and command in OUT_IS_FILE)))
    return out


def refuse_outputs_over_inputs(args: argparse.Namespace) -> None:
    """Raise :class:`UsageError` when an output of the parsed command is one of its inputs
    or lies inside a folder it reads (checked before any work).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Raises
    ------
    UsageError
        Naming the option, the output and the input it would destroy.
    """
    inputs = _inputs(args)
    for option, path, is_folder in _outputs(args):
        target = Path(os.path.realpath(path))
        for source in inputs:
            real = Path(os.path.realpath(source))
            same = path.exists() and os.path.samefile(path, source)
            if same or (real.is_dir() and not is_folder and real in target.parents):
                where = "is" if same else "lies inside"
                raise UsageError(
                    f"{option} {path}: {where} the input {source}; write somewhere else "
                    "(the input would be destroyed)"
                )
