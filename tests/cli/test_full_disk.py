"""A full disk while any output is written: exit 2, one line naming the path and the reason,
no temporary file, and every input and previous output byte-identical afterwards.

The fault is injected where the bytes land: the atomic writer's temporary file is written in
full and then the write fails with ENOSPC, as a full file system fails it; the SQLite stores
get a real SQLITE_FULL from a page limit. (A full tmpfs needs root; /dev/full is covered in
tests/model/test_write_atomically.py.)
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

import pytest

from asrpt_opt.analysis.store import base as store_base
from asrpt_opt.cli import main
from asrpt_opt.model import files
from tests.conftest import ROOT

TINY = ROOT / "instances" / "examples" / "tiny-abstract.json"
TRACE = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\nj1,1,0,1,m,5,0\n"
RATIO = ["ratio", "--family", "poisson", "--n", "3", "--seeds", "2", "--policies", "fifo", "-q"]


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(TINY, tmp_path / "x.json")
    (tmp_path / "t.csv").write_text(TRACE)
    return tmp_path


def _content(path: Path) -> bytes:
    """A file's bytes; an SQLite store's rows (its header counts writes, not content)."""
    if path.suffix != ".sqlite":
        return path.read_bytes()
    with sqlite3.connect(path) as db:
        return "\n".join(db.iterdump()).encode()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): _content(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


@pytest.fixture
def full_disk(monkeypatch):
    """Every atomic write fails with ENOSPC after its temporary file has been written."""

    def install() -> None:
        real = files._replace_atomically

        def failing(target, write):
            def write_then_fail(tmp):
                write(tmp)
                raise OSError(errno.ENOSPC, "No space left on device", tmp)

            real(target, write_then_fail)

        monkeypatch.setattr(files, "_replace_atomically", failing)

    return install


# (command line, the output path named in the error)
OUTPUTS = [
    (["simulate", "x.json", "--per-job", "jobs.csv", "-q"], "jobs.csv"),
    (["simulate", "x.json", "--per-job", "jobs.parquet", "-q"], "jobs.parquet"),
    (["simulate", "x.json", "--gantt", "g.png", "-q"], "g.png"),
    (["import", "tiresias", "t.csv", "-o", "imported.json", "-q"], "imported.json"),
    (["solve", "x.json", "--record", "rec", "-q"], "rec/"),
    (["solve", "x.json", "--plot", "s.png", "-q"], "s.png"),
    (["replay", "x.json", "--policies", "fifo", "--out", "rep", "-q"], "rep/"),
    (["demo", "--n-jobs", "6", "--out", "dem", "-q"], "dem/"),
    (["worst-case", "--n", "3", "--evaluations", "4", "--out", "w.json", "-q"], "w.json"),
    ([*RATIO, "--out", "rat"], "rat/"),
]


@pytest.mark.parametrize(("argv", "named"), OUTPUTS, ids=lambda v: v if isinstance(v, str) else "")
def test_a_full_disk_loses_nothing(work, capsys, full_disk, argv, named):
    assert main(argv) == 0  # the previous outputs, which must survive
    capsys.readouterr()
    before = _snapshot(work)
    full_disk()
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    # Besides notes ("... exists and will be replaced"), one line: the error.
    (err,) = [line for line in lines if not line.startswith("asrpt-opt: note: ")]
    assert err.startswith("asrpt-opt: error: cannot write ")
    assert err.rstrip().endswith(": No space left on device")
    assert named.rstrip("/") in err
    assert "Traceback" not in err
    assert _snapshot(work) == before  # no temporary left, inputs and old outputs intact


def test_a_full_disk_under_a_store_keeps_it_consistent(work, capsys, monkeypatch):
    store = work / "r.sqlite"
    assert main([*RATIO, "--seeds", "1", "--store", str(store)]) == 0
    capsys.readouterr()
    real = sqlite3.connect

    def capped(*args, **kwargs):
        db = real(*args, **kwargs)
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count={max(pages, 1)}")  # no room to grow
        return db

    monkeypatch.setattr(store_base.sqlite3, "connect", capped)
    # More seeds need more rows than the file can take.
    assert main([*RATIO, "--seeds", "40", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err == f"asrpt-opt: error: cannot write {store}: No space left on device\n"
    monkeypatch.setattr(store_base.sqlite3, "connect", real)
    # The store still opens, holds the first run, and a rerun with room completes it.
    assert main(["export", str(store), "-o", str(work / "out.csv")]) == 0
    assert main([*RATIO, "--seeds", "3", "--store", str(store)]) == 0


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc here")
@pytest.mark.parametrize(("cwd", "output"), [("/proc", "a.csv"), (".", "/proc/self/a.csv")])
def test_an_output_in_proc_is_one_line(work, capsys, monkeypatch, cwd, output):
    monkeypatch.chdir(cwd)
    assert main(["simulate", str(work / "x.json"), "--per-job", output, "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("asrpt-opt: error: ")
    assert len(err.splitlines()) == 1
    assert output in err


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_a_store_on_a_device_is_refused(work, capsys, device):
    if not Path(device).exists():
        pytest.skip(f"no {device} here")
    assert main([*RATIO, "--store", device]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"asrpt-opt: error: {device}: is not a regular file (a device or pipe cannot hold an "
        "asrpt-opt result store)\n"
    )
