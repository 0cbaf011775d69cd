"""Competitive-ratio sweeps: fitting, intervals, the resumable store, process and Dask runs."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from asrpt_opt.analysis.families import FAMILIES, make_family_instance
from asrpt_opt.analysis.ratio import RatioEstimate, fit_ab, instance_ratio, summarise
from asrpt_opt.analysis.sweep import RatioConfig, ResultStore, run_sweep
from asrpt_opt.analysis.worst_case import worst_case
from asrpt_opt.errors import UnknownNameError
from asrpt_opt.model import dumps_instance

CONFIG = RatioConfig(family="single", n=5, policies=("srpt", "fifo"), time_limit_s=10)


def test_fit_ab_hand_computed():
    # C = (4, 6), C~ = (2, 5), p = (2, 1): min a + b with 2a + 2b >= 4 and 5a + b >= 6 is
    # a = 1, b = 1; b = 0 needs a = 2; a = 1 needs b = max(1, 1) = 1.
    fit = fit_ab([4, 6], [2, 5], [2, 1])
    assert fit.a + fit.b == pytest.approx(2.0)
    assert fit.a_when_b0 == pytest.approx(2.0)
    assert fit.b_when_a1 == pytest.approx(1.0)


def test_instance_ratio_interval():
    assert instance_ratio(12, 10, 10, True) == RatioEstimate(
        ratio=1.2, ratio_lo=1.2, ratio_hi=1.2, proven=True
    )
    out = instance_ratio(12, 10, 8, False)
    assert out.ratio is None
    assert out.ratio_lo == pytest.approx(1.2)
    assert out.ratio_hi == pytest.approx(1.5)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_families_are_seeded_integral_and_distinct(family):
    a = make_family_instance(family, 7, 3)
    assert dumps_instance(a) == dumps_instance(make_family_instance(family, 7, 3))
    assert dumps_instance(a) != dumps_instance(make_family_instance(family, 7, 4))
    for job in a.jobs:
        assert float(job.release_s).is_integer()
        assert float(job.duration_s).is_integer()
        assert job.spread_slowdown == 1.0
    with pytest.raises(UnknownNameError, match="known"):
        make_family_instance("nope", 3, 0)


def test_srpt_is_optimal_on_the_single_family():
    store = ResultStore()
    outcomes = run_sweep(CONFIG, range(6), store=store)
    summary = summarise(outcomes, CONFIG.policies)
    assert summary["srpt"].proven == 6
    assert summary["srpt"].ratio_max == pytest.approx(1.0)
    assert summary["fifo"].ratio_max >= 1.0
    assert summary["srpt"].fit.b_when_a1 >= 0


def test_store_resumes_without_redoing(tmp_path):
    path = tmp_path / "r.sqlite"
    store = ResultStore(path)
    run_sweep(CONFIG, range(3), store=store)
    stamps = dict(sqlite3.connect(path).execute("SELECT seed, created FROM results").fetchall())
    calls = []
    run_sweep(CONFIG, range(5), store=store, progress=lambda d, t: calls.append((d, t)))
    after = dict(sqlite3.connect(path).execute("SELECT seed, created FROM results").fetchall())
    assert calls[0] == (3, 5)
    assert calls[-1] == (5, 5)
    assert all(after[s] == stamps[s] for s in stamps)  # finished seeds were not recomputed
    assert sorted(after) == [0, 1, 2, 3, 4]
    other = RatioConfig(family="single", n=5, policies=("srpt",), time_limit_s=10)
    assert store.done(other) == set()


def test_kill_9_loses_nothing_finished(tmp_path):
    store = tmp_path / "k.sqlite"
    base = [sys.executable, "-m", "asrpt_opt", "ratio", "--family", "single", "--n", "5"]
    base += ["--policies", "srpt", "--store", str(store), "--json"]
    proc = subprocess.Popen(
        [*base, "--seeds", "400"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 60
    count = 0
    while time.time() < deadline and count < 3:
        time.sleep(0.5)
        if store.exists():
            try:
                count = (
                    sqlite3.connect(store).execute("SELECT COUNT(*) FROM results").fetchone()[0]
                )
            except sqlite3.OperationalError:
                count = 0
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = sqlite3.connect(store).execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert 3 <= saved < 400
    # Resume a shorter sweep: everything needed is already there, nothing is recomputed.
    out = subprocess.run([*base, "--seeds", "3"], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert data["policies"]["srpt"]["instances"] == 3
    assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM results").fetchone()[0] == saved


def test_process_pool_matches_serial():
    serial = run_sweep(CONFIG, range(4), store=ResultStore())
    pooled = run_sweep(CONFIG, range(4), store=ResultStore(), workers=2)
    assert [p.policies["fifo"].value_s for p in serial] == [
        p.policies["fifo"].value_s for p in pooled
    ]


def test_dask_local_cluster_on_loopback():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        payloads = run_sweep(
            CONFIG,
            range(4),
            store=ResultStore(),
            executor="dask",
            scheduler=cluster.scheduler_address,
        )
    serial = run_sweep(CONFIG, range(4), store=ResultStore())
    assert [p.seed for p in payloads] == [0, 1, 2, 3]
    assert [p.offline_value_s for p in payloads] == [p.offline_value_s for p in serial]


def test_worst_case_finds_a_ratio_above_one(tmp_path):
    found = worst_case("fifo", 4, family="single", budget_s=3.0, time_limit_s=2.0, seed=1)
    assert found.ratio >= 1.0
    assert found.policy_value_s == pytest.approx(found.ratio * found.optimum_s)
    assert found.instance.provenance["policy"] == "fifo"
    assert np.isfinite(found.ratio)


def test_cli_ratio_and_worst_case(tmp_path, capsys):
    from asrpt_opt.cli import main

    status = main(
        [
            "ratio",
            "--family",
            "single",
            "--n",
            "4",
            "--seeds",
            "3",
            "--policies",
            "srpt,fifo",
            "--store",
            str(tmp_path / "s.sqlite"),
            "--out",
            str(tmp_path),
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert status == 0
    assert data["policies"]["srpt"]["proven"] == 3
    assert all(
        (tmp_path / f).stat().st_size > 1000 for f in ("ratio-cdf.png", "ratio-vs-load.png")
    )
    status = main(
        [
            "worst-case",
            "--policy",
            "fifo",
            "--n",
            "4",
            "--family",
            "single",
            "--budget",
            "2s",
            "--out",
            str(tmp_path / "w.json"),
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert status == 0
    assert data["ratio"] >= 1.0
    assert (tmp_path / "w.json").exists()
    assert main(["ratio", "--policies", "lifo"]) == 2
    assert "unknown policy 'lifo'" in capsys.readouterr().err
    assert main(["worst-case", "--budget", "soon"]) == 2


def test_an_outcome_reads_back_from_its_payload():
    from asrpt_opt.analysis.ratio import InstanceOutcome
    from asrpt_opt.analysis.sweep import evaluate_instance

    outcome = evaluate_instance(CONFIG, 1)
    payload = outcome.to_json()
    assert set(payload) >= {"offline_status", "offline_value_s", "load", "policies"}
    assert set(payload["policies"]["fifo"]) == {
        "value_s",
        "completion_s",
        "ratio",
        "ratio_lo",
        "ratio_hi",
        "proven",
    }
    assert InstanceOutcome.from_json(json.loads(json.dumps(payload))) == outcome
