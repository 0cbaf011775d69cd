"""Learned predictors: the scikit-learn contract, no leakage, determinism, bad inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from asrpt_opt.errors import UnknownNameError
from asrpt_opt.model import Job
from asrpt_opt.policies import simulate
from asrpt_opt.prediction import PREDICTORS, RandomForestIterations, make_predictor
from asrpt_opt.prediction.evaluate import rolling_origin
from asrpt_opt.prediction.features import job_key
from asrpt_opt.traces import recurring_jobs
from tests.conftest import TINY

INST = recurring_jobs(600, servers=(8, 8), n_groups=20, seed=3)
LEARNED = ["rf", "history", "median", "last", "global"]


@pytest.mark.parametrize("name", LEARNED)
def test_estimator_contract(name):
    est = make_predictor(name)
    params = est.get_params()
    again = clone(est)
    assert again.get_params() == params
    assert not any(k.endswith("_") for k in vars(again))
    with pytest.raises(NotFittedError):
        again.predict(INST.jobs[:3])
    assert again.fit(INST.jobs[:100]) is again
    out = again.predict(INST.jobs[100:110])
    assert out.shape == (10,)
    assert np.all(out > 0)


@pytest.mark.parametrize("name", LEARNED)
def test_empty_history_falls_back(name):
    est = make_predictor(name, fallback=123.0).fit([])
    assert est.predict(INST.jobs[:4]).tolist() == [123.0] * 4
    with pytest.raises(ValueError, match="fallback"):
        make_predictor(name, fallback=-1).fit([])


def test_negative_or_zero_lengths_are_refused():
    bad = [Job(id="a", release_s=0, gpus=1, duration_s=1.0)]
    object.__setattr__(bad[0], "duration_s", -5.0)  # bypass validation on purpose
    for name in LEARNED:
        with pytest.raises(ValueError, match="non-positive length"):
            make_predictor(name).fit(bad)


def test_unseen_values_at_predict_time():
    rf = RandomForestIterations(n_estimators=10, random_state=0).fit(INST.jobs[:200])
    stranger = Job(
        id="new",
        release_s=1e6,
        gpus=3,
        duration_s=5.0,
        features={"model": "never-seen", "recurrence_key": "nope", "user": "x"},
    )
    assert np.isfinite(rf.predict([stranger])).all()
    hist = make_predictor("history").fit(INST.jobs[:200])
    assert hist.predict([stranger])[0] == pytest.approx(hist.global_)


def test_random_forest_is_deterministic_with_a_seed():
    a = RandomForestIterations(n_estimators=20, random_state=7).fit(INST.jobs[:300])
    b = RandomForestIterations(n_estimators=20, random_state=7).fit(INST.jobs[:300])
    assert np.array_equal(a.predict(INST.jobs[300:]), b.predict(INST.jobs[300:]))


def test_history_features_are_causal():
    from asrpt_opt.prediction.features import FEATURE_NAMES, learn_codes, training_matrix

    jobs = list(INST.jobs[:80])
    y = np.array([j.duration_s for j in jobs])
    x, stats = training_matrix(jobs, y, learn_codes(jobs))
    count = x[:, FEATURE_NAMES.index("key_count")]
    last = x[:, FEATURE_NAMES.index("key_last_log")]
    seen: dict[str, list[int]] = {}
    for i in sorted(range(len(jobs)), key=lambda i: jobs[i].release_s):
        earlier = seen.setdefault(job_key(jobs[i]), [])
        assert count[i] == len(earlier)  # only earlier releases of the key
        if earlier:
            assert last[i] == pytest.approx(np.log1p(y[earlier[-1]]))
        else:
            assert last[i] == -1
        earlier.append(i)
    assert sum(stats.count.values()) == len(jobs)


class Spy:
    """Records what it is fitted on, and refuses to predict a job it has seen."""

    def __init__(self):
        self.fits: list[list[str]] = []
        self.known: set[str] = set()

    def fit(self, history):
        self.fits.append([j.id for j in history])
        self.known = {j.id for j in history}
        return self

    def predict(self, jobs):
        for j in jobs:
            assert j.id not in self.known, f"{j.id} was in the training set"
        return np.array([3600.0] * len(jobs))


def test_simulator_trains_only_on_completed_jobs():
    inst = recurring_jobs(120, servers=(4, 4), n_groups=10, seed=1)
    spy = Spy()
    res = simulate(inst, "a-srpt", predictor=spy, refit_every=5)
    order = sorted(range(inst.n_jobs), key=lambda i: (res.schedule.runs[i].completion_s, i))
    done = [inst.jobs[i].id for i in order]
    assert spy.fits[0] == []  # fitted on nothing before the first completion
    for k, ids in enumerate(spy.fits[1:], start=1):
        assert sorted(ids) == sorted(done[: 5 * k])


def test_simulation_with_refits_is_deterministic():
    inst = recurring_jobs(150, servers=(8,), n_groups=8, seed=2)

    def run():
        rf = RandomForestIterations(n_estimators=10, random_state=0)
        res = simulate(inst, "a-srpt", predictor=rf, refit_every=20, history=inst.jobs[:0], seed=1)
        return json.dumps(res.to_json())

    assert run() == run()


def test_rolling_origin_scores():
    scores = {
        s.name: s
        for s in rolling_origin(
            INST.jobs,
            {
                "oracle": make_predictor("oracle"),
                "global": make_predictor("global"),
                "history": make_predictor("history"),
            },
            windows=5,
        )
    }
    assert scores["oracle"].mae == 0
    assert scores["oracle"].r2_log == pytest.approx(1.0)
    assert scores["history"].r2_log > scores["global"].r2_log
    with pytest.raises(ValueError, match="windows"):
        rolling_origin(INST.jobs, {}, windows=1)


def test_registry():
    assert set(PREDICTORS) >= {"rf", "history", "last", "oracle", "noisy"}
    with pytest.raises(UnknownNameError, match="known"):
        make_predictor("crystal-ball")


def test_cli_predict_and_sensitivity(capsys, tmp_path):
    from asrpt_opt.cli import main

    assert (
        main(
            [
                "predict",
                "recurring:400",
                "--predictors",
                "rf,history,oracle",
                "--windows",
                "4",
                "--out",
                str(tmp_path),
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert [s["predictor"] for s in data["scores"]] == ["rf", "history", "oracle"]
    assert (tmp_path / "calibration.png").stat().st_size > 1000
    assert (
        main(
            [
                "sensitivity",
                TINY,
                "--policies",
                "a-srpt,srpt",
                "--mu",
                "1,4",
                "--out",
                str(tmp_path),
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert [r["mu"] for r in data["policies"]["srpt"]] == [1.0, 4.0]
    assert all(r["ratio_to_lower_bound"] >= 1 for rows in data["policies"].values() for r in rows)
    assert main(["sensitivity", TINY, "--mu", "0.5"]) == 2
    assert main(["predict", "recurring:40", "--predictors", "tea-leaves"]) == 2
