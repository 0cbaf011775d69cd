"""The iteration-time model against Pollux and Gavel measurements (figures in README)."""

from __future__ import annotations

import pytest

from asrpt_opt.analysis.calibration import POLLUX_MODELS, fit_gavel, fit_pollux, load_pollux
from asrpt_opt.errors import UnknownNameError


@pytest.mark.parametrize("model", POLLUX_MODELS)
def test_pollux_fit_quality(model):
    report = fit_pollux(model)
    assert report.n_rows == len(load_pollux(model)) > 500
    assert report.median_error < 0.12
    assert report.worst_error < 0.7
    # Physical constants: nothing negative, and a ring across nodes is no faster than within.
    assert min(report.params.values()) >= 0
    assert report.params["inter_allreduce_s"] >= report.params["intra_allreduce_s"]


def test_pollux_rows_parse():
    placement, bsz, step, sync = load_pollux("imagenet")[0]
    assert (placement, bsz) == ("1", 20)
    assert step > sync > 0
    with pytest.raises(UnknownNameError, match="known"):
        load_pollux("mnist")


def test_gavel_fit_quality():
    reports = fit_gavel()
    assert [r.n_rows for r in reports] == [6, 6]
    assert all(r.median_error < 0.2 for r in reports)
    bw = reports[0].params
    assert bw["intra_gbps"] > bw["inter_gbps"] > 0
