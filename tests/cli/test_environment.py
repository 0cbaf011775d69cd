"""When the environment misbehaves around stdout: a full device, a closed descriptor, a
reader that leaves. One line and a status, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "asrpt_opt"]


def _run(args, **kwargs):
    return subprocess.run([*CLI, *args], capture_output=False, text=True, timeout=120, **kwargs)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_stdout_is_one_line_and_exit_2(tmp_path):
    err = tmp_path / "err.txt"
    with open("/dev/full", "w") as full, open(err, "w") as e:
        out = _run(["simulate", "tiny-abstract", "--json"], stdout=full, stderr=e)
    text = err.read_text()
    assert out.returncode == 2
    assert text == "asrpt-opt: error: cannot write standard output: No space left on device\n"


def test_a_closed_stdout_is_one_line_and_exit_2():
    out = subprocess.run(
        ["sh", "-c", f"'{sys.executable}' -m asrpt_opt simulate tiny-abstract --json >&-"],
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr == "asrpt-opt: error: standard output is closed\n"


def test_a_reader_that_leaves_ends_quietly():
    out = subprocess.run(
        ["sh", "-c", f"'{sys.executable}' -m asrpt_opt replay tiny-abstract -q | head -c 10"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0
    assert "Traceback" not in out.stderr
    assert "Exception ignored" not in out.stderr
