"""The adversary: it improves on where it starts, its ratios are recomputed from validated
schedules and proven optima, and its store resumes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from asrpt_opt.analysis.adversary import (
    Evaluator,
    Search,
    SearchSpace,
    canonical,
    mutate,
    to_instance,
)
from asrpt_opt.analysis.adversary_rounds import search_rounds
from asrpt_opt.analysis.store import AdversaryStore
from asrpt_opt.analysis.worst_case import verify, worst_cases
from asrpt_opt.cli import main
from asrpt_opt.errors import UsageError
from asrpt_opt.model import load_instance
from asrpt_opt.policies import simulate
from asrpt_opt.sim import validate_schedule
from asrpt_opt.solvers import SolverParams, solve
from asrpt_opt.speed.base import PooledSpeed

SPACE = SearchSpace()
#: A-SRPT is optimal here: three 1-GPU jobs released together on 8 GPUs.
EASY = [(0.0, 1, 2.0, 1.0), (0.0, 1, 3.0, 1.0), (0.0, 1, 4.0, 1.0)]


def test_a_narrow_long_job_blocks_wide_short_ones_only_under_the_list_guide():
    # The family behind A-SRPT's bad ratios under guide="list" (the default): a 1-GPU 20 s
    # job finishes at 2.5 on the virtual machine, keeps the top rank, and six 8-GPU 1 s jobs
    # released at 3 wait until 20. Under guide="fill" the top-ranked prefix {long, wide} is
    # served widest first: each wide job takes the cluster in turn (3..9) and the long one
    # resumes to 26, which is the optimum.
    rows = [(0.0, 1, 20.0, 1.0)] + [(3.0, 8, 1.0, 1.0)] * 6
    case = verify("a-srpt", rows, SPACE, name="blocked")
    assert case.policy_value_s == pytest.approx(20 + sum(20 + i for i in range(1, 7)))
    assert case.optimum_s == pytest.approx(65.0)  # wide jobs at 3..9, the long one to 26
    assert case.ratio == pytest.approx(161 / 65)
    inst = to_instance(rows, SPACE, name="blocked")
    filled = simulate(inst, "a-srpt", guide="fill", speed=PooledSpeed())
    assert filled.schedule.total_weighted_completion_s(inst) == pytest.approx(65.0)


def test_moves_stay_in_the_space_and_order_does_not_matter():
    rng = np.random.default_rng(0)
    rows = EASY
    for _ in range(300):
        rows = mutate(rows, SPACE, rng)
        assert len(rows) == 3
        for r, q, p, _w in rows:
            assert 0 <= r <= SPACE.max_release_s
            assert 1 <= q <= SPACE.total_gpus
            assert 1 <= p <= SPACE.max_duration_s
    assert canonical(rows) == canonical(list(reversed(rows)))


def test_the_search_improves_on_its_start_and_the_ratio_is_recomputed():
    evaluator = Evaluator("a-srpt", SPACE, time_limit_s=5)
    assert evaluator.score(EASY) == pytest.approx(1.0)
    rows, ratio, evaluations = search_rounds(
        Search(policy="a-srpt", space=SPACE, family="poisson", time_limit_s=5.0),
        3,
        start=EASY,
        rng=np.random.default_rng(3),
        budget_s=4.0,
        workers=1,
        store=None,
    )
    assert rows is not None
    assert evaluations > 10
    assert ratio > 1.05
    # Independently: a fresh solve proves the optimum, both schedules pass the validator,
    # and the ratio is theirs.
    inst = to_instance(rows, SPACE)
    off = solve(inst, preemption="continuous", params=SolverParams(time_limit_s=30))
    assert off.status == "optimal"
    validate_schedule(inst, off.schedule, speed=PooledSpeed())
    alg = simulate(inst, "a-srpt", speed=PooledSpeed())
    validate_schedule(inst, alg.schedule, speed=PooledSpeed())
    recomputed = alg.schedule.total_weighted_completion_s(inst) / off.objective_s
    assert recomputed == pytest.approx(ratio)


def test_store_resumes_from_its_best_and_never_solves_twice(tmp_path):
    path = tmp_path / "adv.sqlite"
    first = worst_cases(["fifo"], [3], budget_s=2.0, seed=1, store=path)
    db = AdversaryStore(path)
    best = db.best("fifo", SPACE, 3)
    cached = db.cache("fifo", SPACE)
    db.close()
    assert best is not None
    assert best[1] == pytest.approx(first[("fifo", 3)].ratio)
    assert len(cached) > 0
    again = worst_cases(["fifo"], [3], budget_s=1.0, seed=2, store=path)
    assert again[("fifo", 3)].ratio >= first[("fifo", 3)].ratio - 1e-12
    evaluator = Evaluator("fifo", SPACE, time_limit_s=5, cache=cached)
    assert evaluator.score(best[0]) == pytest.approx(best[1])
    assert evaluator.evaluations == 0  # answered from the store


def test_a_store_that_is_not_one_is_refused(tmp_path, capsys):
    bad = tmp_path / "x.sqlite"
    bad.write_text("not a database")
    status = main(["worst-case", "--n", "3", "--budget", "1s", "--store", str(bad)])
    assert status == 2
    assert "not an asrpt-opt adversary store" in capsys.readouterr().err


def test_cli_searches_every_policy_and_n(tmp_path, capsys):
    out = tmp_path / "worst"
    argv = ["worst-case", "--policies", "a-srpt,fifo", "--n", "3..4", "--budget", "1.5s"]
    assert main([*argv, "--out-dir", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    pairs = {(r["policy"], r["n"]) for r in data["results"]}
    assert pairs == {("a-srpt", 3), ("a-srpt", 4), ("fifo", 3), ("fifo", 4)}
    for r in data["results"]:
        assert r["ratio"] >= 1.0
        inst = json.loads((out / f"{r['policy']}-n{r['n']}.json").read_text())
        assert len(inst["jobs"]) == r["n"]
        assert inst["provenance"]["ratio"] == pytest.approx(r["ratio"])
    assert (out / "ratio-vs-n.png").stat().st_size > 1000
    assert main(["worst-case", "--n", "8..4"]) == 2
    assert "--n" in capsys.readouterr().err


def test_the_blocking_family_grows_towards_the_number_of_gpus_under_the_list_guide():
    # One 1-GPU job of length P and k 8-GPU unit jobs released just after P / 8, when the long
    # job has finished on the virtual machine: A-SRPT's list guide runs the long job first.
    # SRTF's value bounds OPT from above, so ALG / SRTF bounds A-SRPT's ratio from below. The
    # fill guide serves each wide job in turn, as SRTF does.
    def lower_bound_on_ratio(p, k):
        inst = to_instance([(0.0, 1, float(p), 1.0)] + [(p / 8 + 1, 8, 1.0, 1.0)] * k, SPACE)
        speed = PooledSpeed()
        alg = simulate(inst, "a-srpt", speed=speed).metrics
        srtf = simulate(inst, "srtf", speed=speed).metrics.total_weighted_completion_s
        fill = simulate(inst, "a-srpt", speed=speed, guide="fill").metrics
        fill = fill.total_weighted_completion_s
        assert alg.total_weighted_completion_s == pytest.approx((k + 1) * p + k * (k + 1) / 2)
        assert fill == pytest.approx(srtf)
        return alg.total_weighted_completion_s / srtf

    ratios = [lower_bound_on_ratio(p, k) for p, k in ((20, 6), (200, 10), (2000, 20))]
    assert ratios == sorted(ratios)
    assert ratios[-1] > 5.8


WORST = sorted((Path(__file__).resolve().parents[2] / "instances" / "worst").glob("*.json"))


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=pytest.mark.slow) if int(p.stem.split("-n")[-1][:1]) > 5 else p
        for p in WORST
    ],
    ids=[p.stem for p in WORST],
)
def test_kept_worst_instances_reproduce_their_ratio(path):
    inst = load_instance(path)
    policy = inst.provenance["policy"]
    off = solve(
        inst, preemption="continuous", cluster_model="pooled", params=SolverParams(time_limit_s=60)
    )
    assert off.status == "optimal"
    # A-SRPT's were found under guide="list" (asrpt-opt 0.1's rule), which they record.
    params = {"guide": inst.provenance["guide"]} if "guide" in inst.provenance else {}
    result = simulate(inst, policy, speed=PooledSpeed(), **params)
    alg = result.metrics.total_weighted_completion_s
    assert alg / off.objective_s == pytest.approx(inst.provenance["ratio"], rel=1e-9)


def test_an_evaluation_budget_makes_the_search_reproducible():
    from asrpt_opt.analysis.worst_case import worst_case

    def rows(case):
        return [(j.release_s, j.gpus, j.duration_s) for j in case.instance.jobs]

    first = worst_case("a-srpt", 4, seed=3, evaluations=25)
    again = worst_case("a-srpt", 4, seed=3, evaluations=25)
    assert first.evaluations == again.evaluations == 25
    assert (first.ratio, rows(first)) == (again.ratio, rows(again))
    with pytest.raises(UsageError, match="evaluations"):
        worst_case("a-srpt", 4, seed=3, evaluations=0)


def test_an_evaluation_budget_with_work_limits_ignores_the_machines_load():
    # Rounds counted in evaluations have no clock, and the optima stop at the work limit:
    # two spinning processes beside the search change nothing.
    import subprocess
    import sys

    from asrpt_opt.analysis.worst_case import worst_case

    quiet = worst_case("a-srpt", 5, seed=1, evaluations=30, work_limit=1.0)
    code = "import time\nend = time.time() + 60\nwhile time.time() < end: pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    try:
        loaded = worst_case("a-srpt", 5, seed=1, evaluations=30, work_limit=1.0)
    finally:
        for p in burners:
            p.kill()
            p.wait()
    assert loaded.ratio == quiet.ratio
    assert loaded.instance == quiet.instance
    assert quiet.instance.provenance["guide"] == "list"  # the rule it ran, recorded
