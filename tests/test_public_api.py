"""The names README's Python example uses are importable from the package root."""

from __future__ import annotations

import pytest

import asrpt_opt


@pytest.fixture
def names():
    return asrpt_opt.__all__


def test_front_door_names_resolve(names):
    for name in ("simulate", "solve", "place", "replay", "ratio_sweep", "load_example"):
        assert name in names
        assert callable(getattr(asrpt_opt, name))
    for name in names:
        getattr(asrpt_opt, name)


def test_ratio_sweep_summarises_every_policy():
    sweep = asrpt_opt.ratio_sweep("poisson", n=4, policies=["srpt", "fifo"], seeds=[0, 1])
    assert [o.seed for o in sweep.outcomes] == [0, 1]
    assert set(sweep.summary) == {"srpt", "fifo"}
    for summary in sweep.summary.values():
        assert summary.instances == 2
        if summary.ratio_mean is not None:
            assert summary.ratio_mean >= 1.0 - 1e-9
