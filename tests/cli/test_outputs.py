"""Every output path is checked before the work starts; files are written atomically."""

from __future__ import annotations

import json
import os
import time

import pytest

from asrpt_opt.cli import main
from asrpt_opt.model import dump_instance, load_instance
from asrpt_opt.model.io import atomic_write_text
from tests.conftest import TINY


def test_a_folder_where_a_file_goes_is_refused_before_the_search(capsys, tmp_path):
    t0 = time.monotonic()
    status = main(["worst-case", "--n", "4", "--budget", "60s", "--out", str(tmp_path)])
    assert status == 2
    assert time.monotonic() - t0 < 5  # refused at once, not after the 60 s search
    err = capsys.readouterr().err
    assert err.startswith("asrpt-opt: error: --out ")
    assert "is a folder, not a file" in err


def test_a_file_where_a_folder_goes_is_refused(capsys, tmp_path):
    blocker = tmp_path / "demo"
    blocker.write_text("x")
    assert main(["demo", "--n-jobs", "20", "--out", str(blocker)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_missing_folders_are_created_and_an_existing_file_is_replaced_with_a_note(
    capsys, tmp_path
):
    gantt = tmp_path / "a" / "b" / "gantt.png"
    assert main(["simulate", TINY, "--gantt", str(gantt)]) == 0
    assert gantt.read_bytes()[:4] == b"\x89PNG"
    assert "will be replaced" not in capsys.readouterr().err
    assert main(["simulate", TINY, "--gantt", str(gantt)]) == 0
    assert "will be replaced" in capsys.readouterr().err
    assert oct(gantt.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("suffix", ["svg", "pdf", "png"])
def test_figure_type_follows_the_extension(tmp_path, suffix):
    out = tmp_path / f"g.{suffix}"
    assert main(["simulate", TINY, "--gantt", str(out)]) == 0
    head = out.read_bytes()[:5]
    assert head == {"svg": b"<?xml", "pdf": b"%PDF-", "png": b"\x89PNG\r"}[suffix]


def test_a_failed_write_keeps_the_previous_file(tmp_path):
    path = tmp_path / "inst.json"
    dump_instance(load_instance(TINY), path)
    before = path.read_text()

    class Boom(Exception):
        pass

    from asrpt_opt.model.io import write_atomically

    def half(tmp: str) -> None:
        with open(tmp, "w") as fh:
            fh.write("{ trunc")
        raise Boom

    with pytest.raises(Boom):
        write_atomically(path, half)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["inst.json"]  # no temporary file left
    atomic_write_text(path, json.dumps({"ok": True}))
    assert json.loads(path.read_text()) == {"ok": True}
