"""No output over an input: refused before any work, through '..', symbolic links and input
folders, and every input byte-identical afterwards."""

from __future__ import annotations

import shutil

import pytest

from asrpt_opt.cli import main
from tests.conftest import ROOT

TINY = ROOT / "instances" / "examples" / "tiny-abstract.json"
TRACE = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\nj1,1,0,1,m,5,0\n"


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(TINY, tmp_path / "x.json")
    (tmp_path / "t.csv").write_text(TRACE)
    (tmp_path / "sub").mkdir()
    (tmp_path / "pai").mkdir()
    (tmp_path / "pai" / "pai_task_table.csv").write_text("")
    (tmp_path / "link.csv").symlink_to(tmp_path / "t.csv")
    return tmp_path


CASES = [
    (["import", "tiresias", "t.csv", "-o", "t.csv"], "t.csv"),
    (["import", "tiresias", "t.csv", "-o", "./sub/../t.csv"], "t.csv"),
    (["import", "tiresias", "t.csv", "-o", "link.csv"], "t.csv"),
    (["import", "pai", "pai", "-o", "pai/pai_task_table.csv"], "pai/pai_task_table.csv"),
    (["simulate", "x.json", "--per-job", "x.json"], "x.json"),
    (["simulate", "x.json", "--gantt", "x.json"], "x.json"),
    (["solve", "x.json", "--plot", "x.json"], "x.json"),
]


@pytest.mark.parametrize(
    ("argv", "kept"), CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_an_output_over_an_input_is_refused(work, capsys, argv, kept):
    before = (work / kept).read_bytes()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "the input" in err
    assert "would be destroyed" in err
    assert (work / kept).read_bytes() == before


def test_export_refuses_to_write_over_its_store(work, capsys):
    store = work / "r.sqlite"
    argv = ["ratio", "--family", "poisson", "--n", "3", "--seeds", "1", "--policies", "fifo"]
    assert main([*argv, "--store", str(store), "-q"]) == 0
    before = store.read_bytes()
    assert main(["export", str(store), "-o", str(store)]) == 2
    assert "is the input" in capsys.readouterr().err
    assert store.read_bytes() == before


def test_distinct_outputs_still_work(work):
    assert main(["simulate", "x.json", "--per-job", "jobs.csv", "-q"]) == 0
    assert (work / "jobs.csv").exists()
    assert main(["import", "tiresias", "t.csv", "-o", "sub/t.json", "-q"]) == 0
