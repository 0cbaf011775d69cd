"""Every output goes through write_atomically: a failure leaves the old file and no
temporary; links are followed; special files are written in place; long names work."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading

import pytest

from asrpt_opt.model.io import write_atomically


def _writer(text):
    def write(tmp):
        with open(tmp, "w") as fh:
            fh.write(text)

    return write


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")

    def full_disk(tmp):
        with open(tmp, "w") as fh:
            fh.write("half")
        raise OSError(errno.ENOSPC, "No space left on device", tmp)

    with pytest.raises(OSError, match="No space left") as info:
        write_atomically(target, full_disk)
    assert info.value.filename == str(target)  # the path asked for, not the temporary
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_link_is_followed_and_kept(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomically(link, _writer("new"))
    assert link.is_symlink()
    assert real.read_text() == "new"


def test_a_named_pipe_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_atomically(fifo, _writer("through the pipe"))
    reader.join(timeout=10)
    assert got == ["through the pipe"]
    assert fifo.is_fifo()


def test_a_name_near_the_limit_gets_a_short_temporary(tmp_path):
    target = tmp_path / ("a" * 250 + ".json")  # 255 bytes: legal, but not with a suffix added
    write_atomically(target, _writer("x"))
    assert target.read_text() == "x"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_device_as_output_is_one_line(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\nj,1,0,1,m,5,0\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "asrpt_opt", "import", "tiresias", str(trace), "-o", "/dev/full"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr == "asrpt-opt: error: cannot write /dev/full: No space left on device\n"
    assert os.path.exists("/dev/full")
    assert not os.path.isfile("/dev/full")  # still the device, not a regular file
