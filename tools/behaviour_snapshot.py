"""Write the CLI's ``--json`` outputs on every bundled instance into a folder.

Run it before and after a refactoring that must not change behaviour, then compare the two
folders (``diff -r before after``)::

    python tools/behaviour_snapshot.py /tmp/before
    # ... change the code ...
    python tools/behaviour_snapshot.py /tmp/after
    diff -r /tmp/before /tmp/after

It covers ``simulate --json`` with every policy on every bundled instance, ``relax --json``
on every bundled instance, ``solve --json`` on ``instances/examples/`` and ``demo --json``.
Wall-clock fields (``wall_s``, ``jobs_per_s``) are removed, since they change from run to run.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from asrpt_opt.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("a-srpt", "fifo", "sjf", "srtf", "srpt", "srsf", "2d-las")
WALL = {"wall_s", "jobs_per_s"}


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in WALL}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _run(argv: list[str]) -> str:
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        status = main(argv)
    if status != 0:
        return f"exit {status}: {err.getvalue()}"
    return json.dumps(_strip(json.loads(buf.getvalue())), indent=1, sort_keys=True) + "\n"


def _instances() -> list[Path]:
    out = []
    for path in sorted((ROOT / "instances").rglob("*.json")):
        try:
            head = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(head, dict) and head.get("format") == "asrpt-instance/1":
            out.append(path)
    return out


def snapshot(folder: Path) -> None:
    """Write every output into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in _instances():
        rel = path.relative_to(ROOT / "instances").with_suffix("")
        stem = str(rel).replace("/", "__")
        (folder / f"relax__{stem}.json").write_text(_run(["relax", str(path), "--json"]))
        for policy in POLICIES:
            text = _run(["simulate", str(path), "--policy", policy, "--json"])
            (folder / f"simulate__{policy}__{stem}.json").write_text(text)
        if rel.parts[0] == "examples":
            for flags in ([], ["--preemptive"]):
                text = _run(["solve", str(path), "--json", *flags])
                tag = "pmtn" if flags else "nonpmtn"
                (folder / f"solve__{tag}__{stem}.json").write_text(text)
        print(path.name, file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        (folder / "demo.json").write_text(
            _run(["demo", "--json", "--out", tmp]).replace(tmp, "<out>")
        )


if __name__ == "__main__":
    snapshot(Path(sys.argv[1]))
