"""Only regular files are read as input, in one place (issue: /dev/zero as an instance ate
memory; ``file.json/`` read the file)."""

from __future__ import annotations

import os
import shutil

import pytest

from asrpt_opt.cli import main
from asrpt_opt.model.io import input_problem
from tests.conftest import ROOT

TINY = ROOT / "instances" / "examples" / "tiny-abstract.json"
DEVICE = "/dev/zero"
SAMPLE = f"service_sample_s={DEVICE}"


def test_input_problem_names_each_kind(tmp_path):
    assert input_problem(TINY) is None
    assert "folder" in input_problem(tmp_path)
    assert "cannot read" in input_problem(tmp_path / "missing.json")
    assert "trailing /" in input_problem(f"{TINY}/")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "not a regular file" in input_problem(fifo)


@pytest.mark.skipif(not os.path.exists(DEVICE), reason="no /dev/zero here")
@pytest.mark.parametrize(
    "argv",
    [
        ["validate", DEVICE],
        ["simulate", DEVICE],
        ["import", "tiresias", DEVICE, "-o", "{out}"],
        ["import", "gavel", DEVICE, "-o", "{out}"],
        ["import", "philly", DEVICE, "-o", "{out}"],
        ["solve", "tiny-abstract", "--preset", DEVICE],
        [
            "simulate",
            "tiny-abstract",
            "--policy",
            "gittins",
            "--param",
            f"service_sample_s={DEVICE}",
        ],
    ],
)
def test_a_device_is_refused_in_one_line(capsys, tmp_path, argv):
    argv = [a.format(out=tmp_path / "o.json") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert DEVICE in err
    assert "not a regular file" in err
    assert not (tmp_path / "o.json").exists()


def test_a_trailing_slash_never_reads_the_file(capsys, tmp_path):
    copy = tmp_path / "t.json"
    shutil.copy(TINY, copy)
    assert main(["validate", f"{copy}/"]) == 2
    assert "trailing /" in capsys.readouterr().err
    assert main(["validate", str(copy)]) == 0


def test_a_binary_preset_is_one_line(capsys, tmp_path):
    preset = tmp_path / "p.toml"
    preset.write_bytes(b"\xff\xfe\x00binary")
    assert main(["solve", "tiny-abstract", "--preset", str(preset)]) == 2
    assert "not UTF-8 text" in capsys.readouterr().err
