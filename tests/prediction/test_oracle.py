"""Oracle predictors follow the scikit-learn estimator contract."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from asrpt_opt.model import Job, Parallelism
from asrpt_opt.prediction import NoisyOraclePredictor, OraclePredictor, true_work

JOBS = [
    Job(id="a", release_s=0, gpus=1, duration_s=10.0),
    Job(
        id="b",
        release_s=0,
        gpus=2,
        model="resnet50",
        parallelism=Parallelism(dp=2),
        iterations=300,
    ),
]


def test_oracle_is_the_truth():
    assert OraclePredictor().fit(JOBS).predict(JOBS).tolist() == [10.0, 300.0]
    assert true_work(JOBS[1]) == 300.0


def test_noisy_oracle_stays_within_the_distortion():
    truth = np.array([true_work(j) for j in JOBS] * 200)
    pred = NoisyOraclePredictor(mu=2.0, bias=1.5, seed=0).fit().predict(JOBS * 200)
    ratio = pred / truth
    assert ratio.min() >= 1.5 / 2
    assert ratio.max() <= 1.5 * 2
    assert ratio.std() > 0.1


def test_noisy_oracle_is_seeded_and_clonable():
    est = NoisyOraclePredictor(mu=3.0, seed=11)
    again = clone(est)
    assert again.get_params() == {"mu": 3.0, "bias": 1.0, "seed": 11}
    assert np.array_equal(est.fit().predict(JOBS), again.fit().predict(JOBS))
    with pytest.raises(ValueError, match="mu must be >= 1"):
        NoisyOraclePredictor(mu=0.5).fit()
    with pytest.raises(ValueError, match="bias"):
        NoisyOraclePredictor(bias=0).fit()


@pytest.mark.parametrize(("mu", "bias"), [(1.0, 1e-300), (1.0, 1e300), (1e300, 1e-300)])
def test_extreme_noise_keeps_every_prediction_a_positive_finite_float(mu, bias):
    jobs = [Job(id=f"j{i}", release_s=0.0, gpus=1, duration_s=10.0**i) for i in range(-3, 4)]
    predicted = NoisyOraclePredictor(mu=mu, bias=bias, seed=0).predict(jobs)
    assert np.all(np.isfinite(predicted))
    assert np.all(predicted > 0)
    if mu == 1.0:  # no noise: exactly the bias times the truth, where that is a float
        assert predicted[3] == pytest.approx(bias)
