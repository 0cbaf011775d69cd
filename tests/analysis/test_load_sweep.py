"""Load sweeps: points, intervals, verdicts, the resumable store, executors and the CLI."""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import replace

import numpy as np
import pytest

from asrpt_opt.analysis import load_sweep
from asrpt_opt.analysis.load_sweep import (
    LoadRun,
    LoadSweepConfig,
    evaluate_run,
    run_load_sweep,
    summarise_runs,
)
from asrpt_opt.analysis.plots import plot_load_sweep
from asrpt_opt.analysis.store import LoadSweepStore
from asrpt_opt.cli.main import main
from asrpt_opt.errors import UnknownNameError, UsageError
from asrpt_opt.sim.stability import Verdict

CONFIG = LoadSweepConfig(family="msj", n=3000, policies=("serverfilling-srpt", "greedy-srpt"))


def _run(policy, load, seed, mean_s, verdict="stable", unit_s=1000.0):
    return LoadRun(
        policy=policy,
        load=load,
        seed=seed,
        n=100,
        unit_s=unit_s,
        mean_response_s=mean_s,
        batch_half_width_s=50.0,
        verdict=verdict,
        growth=0.0,
        screened=False,
        wall_s=0.1,
    )


def test_a_point_over_seeds_has_the_t_interval_in_time_units():
    # Seed means 1, 2, 3 units: mean 2, sd 1, half-width t(0.975, 2) / sqrt(3) = 2.4843.
    runs = [_run("p", 0.5, s, 1000.0 * (s + 1)) for s in range(3)]
    (point,) = summarise_runs(runs)
    assert point.mean_response == pytest.approx(2.0)
    assert point.ci_high - point.mean_response == pytest.approx(4.303 / math.sqrt(3), rel=1e-6)
    assert point.verdict is Verdict.STABLE


def test_one_seed_uses_its_batch_means_and_most_runs_decide_the_verdict():
    (one,) = summarise_runs([_run("p", 0.5, 0, 2000.0)])
    assert (one.ci_low, one.ci_high) == pytest.approx((1.95, 2.05))
    split = [_run("p", 0.9, 0, 1.0, "unstable"), _run("p", 0.9, 1, 1.0), _run("p", 0.9, 2, 1.0)]
    assert summarise_runs(split)[0].verdict is Verdict.INCONCLUSIVE
    most = [*split[:2], _run("p", 0.9, 1, 1.0, "unstable")]
    assert summarise_runs(most)[0].verdict is Verdict.UNSTABLE


def test_a_sweep_finds_greedy_srpt_unstable_where_serverfilling_srpt_is_not():
    report = run_load_sweep(CONFIG, [0.5, 0.8], [0], executor="serial")
    verdict = {(p.policy, p.load): p.verdict for p in report.points}
    assert verdict[("serverfilling-srpt", 0.8)] is Verdict.STABLE
    assert verdict[("greedy-srpt", 0.8)] is Verdict.UNSTABLE  # published: unstable from 0.6
    sf = next(p for p in report.points if p.policy == "serverfilling-srpt" and p.load == 0.5)
    assert 0.4 < sf.mean_response < 0.8  # published 0.5800 at 10^7 jobs
    assert sf.ci_low < sf.mean_response < sf.ci_high


def test_the_screen_stops_an_unstable_run_early():
    config = LoadSweepConfig(family="msj", n=12000, policies=("greedy-srpt",), screen_jobs=3000)
    run = evaluate_run((config, "greedy-srpt", 0.9, 0))
    assert run.screened
    assert (run.n, run.verdict) == (3000, "unstable")
    stable = evaluate_run((config, "serverfilling-srpt", 0.5, 0))
    assert not stable.screened
    assert stable.n == 12000


@pytest.mark.parametrize("measure", ["all", "completions"])
@pytest.mark.parametrize(("policy", "load"), [("serverfilling-srpt", 0.8), ("greedy-srpt", 0.9)])
def test_runs_in_chunks_give_the_runs_from_instances(monkeypatch, policy, load, measure):
    # From compiles_from on, msj runs of regenerative policies are simulated in chunks
    # (simulate_stream); below it from an Instance. Both give the same runs, screens included.
    config = LoadSweepConfig(
        family="msj", n=4000, policies=(policy,), screen_jobs=1000, measure=measure
    )
    seen = []
    monkeypatch.setattr(load_sweep, "simulate_stream", _spy(load_sweep.simulate_stream, seen))
    monkeypatch.setattr(load_sweep, "compiles_from", lambda policy: math.inf)
    whole = evaluate_run((config, policy, load, 2))
    assert not seen
    monkeypatch.setattr(load_sweep, "compiles_from", lambda policy: 0)
    chunked = evaluate_run((config, policy, load, 2))
    assert seen
    assert replace(chunked, wall_s=0.0) == replace(whole, wall_s=0.0)


def _spy(fn, seen):
    def spy(*args, **kwargs):
        seen.append(args[0].n_jobs)
        return fn(*args, **kwargs)

    return spy


def test_the_store_resumes_without_redoing(tmp_path):
    path = tmp_path / "load.sqlite"
    config = LoadSweepConfig(family="msj", n=2000, policies=("fifo",))
    first = run_load_sweep(config, [0.5], [0, 1], store=LoadSweepStore(path), executor="serial")
    stamps = dict(sqlite3.connect(path).execute("SELECT seed, created FROM load_runs"))
    calls = []
    again = run_load_sweep(
        config,
        [0.5],
        [0, 1, 2],
        store=LoadSweepStore(path),
        executor="serial",
        progress=lambda d, t: calls.append((d, t)),
    )
    after = dict(sqlite3.connect(path).execute("SELECT seed, created FROM load_runs"))
    assert (calls[0], calls[-1]) == ((2, 3), (3, 3))
    assert all(after[s] == stamps[s] for s in stamps)
    assert again.runs[:2] == first.runs


def test_a_process_pool_gives_the_serial_runs():
    config = LoadSweepConfig(family="msj", n=2000, policies=("fifo", "serverfilling-srpt"))
    serial = run_load_sweep(config, [0.7], [0], executor="serial")
    pooled = run_load_sweep(config, [0.7], [0], workers=2)
    mean = [r.mean_response_s for r in serial.runs]
    assert mean == [r.mean_response_s for r in pooled.runs]


def test_bad_configurations_are_refused():
    with pytest.raises(UnknownNameError, match="msj"):
        LoadSweepConfig(family="nope", n=10, policies=("fifo",))
    with pytest.raises(UsageError, match="screen_jobs"):
        LoadSweepConfig(family="msj", n=10, policies=("fifo",), screen_jobs=10)
    with pytest.raises(UsageError, match="loads"):
        run_load_sweep(CONFIG, [0.0], [0])


def test_the_plot_draws_stable_lines_and_marks_unstable_points():
    import matplotlib

    matplotlib.use("Agg", force=False)
    runs = [_run("a", x, 0, 500.0 * (1 + x)) for x in (0.5, 0.8)]
    runs.append(_run("b", 0.8, 0, 1.0, "unstable"))
    report = run_load_sweep.__globals__["LoadSweepReport"](
        config=CONFIG,
        loads=(0.5, 0.8),
        seeds=(0,),
        runs=tuple(runs),
        points=tuple(summarise_runs(runs)),
    )
    fig = plot_load_sweep(report)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(labels) == ["a", "b (unstable)"]


def test_cli_load_sweep(tmp_path, capsys):
    store, plot = tmp_path / "s.sqlite", tmp_path / "e.png"
    argv = ["load-sweep", "--jobs", "2000", "--seeds", "1", "--loads", "0.5,0.9"]
    argv += ["--policies", "fifo,greedy-srpt", "--executor", "serial"]
    argv += ["--store", str(store), "--plot", str(plot), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert {(p["policy"], p["load"]) for p in out["points"]} == {
        (a, b) for a in ("fifo", "greedy-srpt") for b in (0.5, 0.9)
    }
    assert plot.stat().st_size > 0
    assert store.exists()
    assert main([*argv[:-1], "--format", "csv"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "load,fifo,greedy-srpt"
    assert "unstable" in text
    assert main(["load-sweep", "--loads", "0,1"]) == 2
    assert "loads must be" in capsys.readouterr().err
    assert np.isfinite(out["runs"][0]["mean_response_s"])
