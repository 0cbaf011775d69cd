"""Every ``asrpt-opt`` command README and the docs show parses with today's command line:
a renamed or removed option in the docs fails here. (The commands that name bundled files
also run, from a fresh install, in ``test_readme.py``; the others are experiments of minutes
to hours, so only their syntax is checked.)"""

from __future__ import annotations

import re
import shlex

import pytest

from asrpt_opt.cli.main import build_parser
from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GENERATED = {"cli.md"}  # the reference, generated from the parser itself
# Placeholders the docs write in capitals, and a valid value for each.
PLACEHOLDERS = {
    "INSTANCE": "tiny-abstract",
    "FILE": "tiny-abstract",
    "P": "fifo",
    "NAME": "fifo",
    "F": "poisson",
    "FORMAT": "tiresias",
    "SOURCE": "trace.csv",
    "SCHEDULER": "scheduler",
    "PATH": "x.sqlite",
}


def _commands() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        if page.name in GENERATED:
            continue
        text = page.read_text(encoding="utf-8")
        lines = re.findall(r"`(asrpt-opt [^`]+)`", text)
        for block in re.findall(r"```(?:bash|text|console)?\n(.*?)```", text, flags=re.S):
            block = block.replace("\\\n", " ")
            lines += [
                line.removeprefix("$ ").split(" #")[0]
                for line in block.splitlines()
                if line.removeprefix("$ ").startswith("asrpt-opt ")
            ]
        for line in lines:
            line = " ".join(line.split())
            # Usage synopses ([optional], a|b, ...) and bare command names in prose.
            if any(mark in line for mark in ("[", "|", "...", "COMMAND")) or len(line.split()) < 3:
                continue
            found.append((page.name, line))
    return found


COMMANDS = _commands()


def test_the_docs_show_many_commands():
    assert len(COMMANDS) >= 25


@pytest.mark.parametrize(("page", "line"), COMMANDS, ids=[f"{p}:{c[:50]}" for p, c in COMMANDS])
def test_a_documented_command_parses(page, line):
    words = [PLACEHOLDERS.get(w, w) for w in shlex.split(line)]
    assert words[0] == "asrpt-opt"
    command = next((w for w in words[1:] if not w.startswith("-")), None)
    try:
        build_parser(command).parse_args(words[1:])
    except SystemExit as exc:  # argparse printed why
        pytest.fail(f"{page}: {line!r} does not parse (exit {exc.code})")
