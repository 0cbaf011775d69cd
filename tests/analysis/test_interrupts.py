"""Ctrl-C and kill -9 lose nothing and leave nothing behind."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asrpt_opt.analysis.families import make_family_instance
from asrpt_opt.analysis.sweep import RatioConfig, evaluate_instance
from asrpt_opt.model import dump_instance


def _start(args: list[str]) -> subprocess.Popen[str]:
    # A child started from a non-interactive shell may inherit SIGINT as ignored; restore it.
    return subprocess.Popen(
        [sys.executable, "-m", "asrpt_opt", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _interrupt(proc: subprocess.Popen[str], after_s: float) -> tuple[int, str, float]:
    time.sleep(after_s)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err, time.monotonic() - t0


@pytest.fixture(scope="module")
def hard(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("hard") / "bursty-40.json"
    dump_instance(make_family_instance("bursty", 40, 3), path)  # CP-SAT needs > 30 s here
    return str(path)


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_ctrl_c_stops_a_solve_at_once(hard, solver):
    proc = _start(["solve", hard, "--solver", solver, "--time-limit", "30", "--json"])
    status, err, took = _interrupt(proc, 3.0)
    assert status == 130
    assert "interrupted" in err
    assert took < 2.0


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["cpsat", "portfolio"])
def test_ctrl_c_in_a_sweep_keeps_only_finished_instances_and_resumes(tmp_path, solver):
    store = tmp_path / "r.sqlite"
    args = ["ratio", "--family", "bursty", "--n", "30", "--seeds", "3", "--policies", "fifo"]
    args += ["--solver", solver, "--time-limit", "2", "--store", str(store), "--json"]
    status, err, took = _interrupt(_start(args), 3.0)
    assert status == 130
    assert took < 2.0
    assert "run the same command again to resume" in err
    config = RatioConfig(
        family="bursty", n=30, policies=("fifo",), solver=solver, time_limit_s=2.0
    )
    with sqlite3.connect(store) as db:
        saved = dict(db.execute("SELECT seed, payload FROM results").fetchall())
        stamps = dict(db.execute("SELECT seed, created FROM results").fetchall())
    for seed, payload in saved.items():
        # A stored instance is a finished one: what an uninterrupted run computes.
        again = evaluate_instance(config, seed)
        row = json.loads(payload)
        assert row["offline_status"] == again.offline_status
        assert row["policies"]["fifo"]["value_s"] == again.policies["fifo"].value_s
    done = _start(args)
    _, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    with sqlite3.connect(store) as db:
        after = dict(db.execute("SELECT seed, created FROM results").fetchall())
    assert sorted(after) == [0, 1, 2]
    assert all(after[s] == stamps[s] for s in stamps)  # nothing finished was redone


@pytest.mark.slow
def test_kill_9_of_a_multi_worker_sweep_leaves_no_worker(tmp_path):
    store = tmp_path / "k.sqlite"
    args = ["ratio", "--family", "bursty", "--n", "30", "--seeds", "8", "--workers", "2"]
    args += ["--time-limit", "5", "--policies", "fifo", "--store", str(store), "--json"]
    proc = _start(args)
    deadline = time.monotonic() + 60
    kids: list[int] = []
    while time.monotonic() < deadline and len(kids) < 2:
        time.sleep(0.5)
        out = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True, text=True
        ).stdout
        kids = [int(x) for x in out.split()]
    assert len(kids) >= 2, "the sweep did not start its workers"
    time.sleep(3.0)  # let them work
    proc.kill()
    proc.wait()
    time.sleep(5.0)
    alive = [k for k in kids if Path(f"/proc/{k}").exists()]
    assert alive == []


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_stop_like_ctrl_c_with_their_own_status(tmp_path, name):
    number = getattr(signal, name)
    store = tmp_path / "r.sqlite"
    args = ["ratio", "--family", "bursty", "--n", "30", "--seeds", "3", "--policies", "fifo"]
    args += ["--solver", "cpsat", "--time-limit", "2", "--store", str(store), "--json"]
    proc = _start(args)
    time.sleep(3.0)
    proc.send_signal(number)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + number
    assert "run the same command again to resume" in err
    assert "Traceback" not in err
    assert not list(tmp_path.glob("*.tmp"))
    assert not list(tmp_path.glob(".*.tmp"))
    with sqlite3.connect(store) as db:  # the store is consistent and readable
        db.execute("SELECT seed, payload FROM results").fetchall()


def test_an_interrupted_worst_case_writes_its_best_instance_so_far(tmp_path):
    out = tmp_path / "w.json"
    args = ["worst-case", "--policy", "fifo", "--n", "4", "--evaluations", "100000"]
    proc = _start([*args, "--out", str(out), "-q"])
    status, err, _ = _interrupt(proc, 8.0)
    assert status == 130
    assert "Traceback" not in err
    assert "not re-verified" in err
    assert str(out) in err
    inst = json.loads(out.read_text())
    assert len(inst["jobs"]) == 4
    assert inst["name"] == "worst-fifo-n4-interrupted"


@pytest.mark.slow
def test_an_interrupted_work_limited_sweep_resumes_to_the_uninterrupted_table(tmp_path):
    args = ["ratio", "--family", "poisson", "--n", "10", "--seeds", "6", "--policies"]
    args += ["fifo,a-srpt", "--work-limit", "1", "--json", "-q"]
    whole = subprocess.run(
        [sys.executable, "-m", "asrpt_opt", *args, "--store", str(tmp_path / "a.sqlite")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    store = tmp_path / "b.sqlite"
    proc = _start([*args, "--store", str(store)])
    status, _, _ = _interrupt(proc, 4.0)
    assert status == 130  # it was stopped part way
    with sqlite3.connect(store) as db:
        done = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert done < 6
    resumed = subprocess.run(
        [sys.executable, "-m", "asrpt_opt", *args, "--store", str(store)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    strip = [json.loads(text) for text in (whole, resumed)]
    for doc in strip:
        doc.pop("store")
    assert strip[0] == strip[1]
