"""Consistency and robustness curves: error levels, ratios to proven optima, the CLI."""

from __future__ import annotations

import json

import matplotlib
import pytest

from asrpt_opt.analysis.robustness import parse_errors, plot_robustness, robustness
from asrpt_opt.cli.main import main
from asrpt_opt.errors import UsageError
from asrpt_opt.prediction.oracle import AdversarialPredictor
from tests.conftest import make_instance

matplotlib.use("Agg")


def test_error_levels_parse_and_bad_ones_are_named():
    assert parse_errors("1, 1.50,adversarial") == ("1", "1.5", "adversarial")
    for bad in ("0.5", "x", "", "inf"):
        with pytest.raises(UsageError, match=r"error level|at least one"):
            parse_errors(bad)


def test_adversarial_predictions_reverse_the_order():
    inst = make_instance([(0, 1, 1), (0, 1, 4), (0, 1, 16)], (1,))
    pred = AdversarialPredictor(pivot=4.0).fit().predict(inst.jobs)
    assert pred.tolist() == [16.0, 4.0, 1.0]
    with pytest.raises(UsageError, match="pivot"):
        AdversarialPredictor(pivot=0.0).fit()


@pytest.fixture(scope="module")
def report():
    return robustness("single", 5, ["srpt", "prr", "fifo"], ("1", "4", "adversarial"), seeds=4)


def test_exact_srpt_is_optimal_on_one_gpu(report):
    # 1|r_j,pmtn|sum C_j: SRPT with exact predictions is optimal, so its ratio is 1.
    exact = report.points["srpt"][0]
    assert exact.error == "1"
    assert exact.ratios == pytest.approx([1.0] * 4)
    assert exact.ci95 == pytest.approx(0.0, abs=1e-12)


def test_ratios_are_at_least_one_and_fifo_ignores_predictions(report):
    assert report.seeds == (0, 1, 2, 3)
    assert not report.unproven
    for rows in report.points.values():
        for point in rows:
            assert min(point.ratios) >= 1 - 1e-9
            assert point.worst_ratio == max(point.ratios)
    fifo = [p.ratios for p in report.points["fifo"]]
    assert fifo[0] == fifo[1] == fifo[2]
    # Reversed predictions hurt SRPT on some instance; PRR's round-robin half bounds it.
    srpt_adv = report.points["srpt"][2].worst_ratio
    assert srpt_adv > 1.0
    assert report.points["prr"][2].worst_ratio <= max(srpt_adv, 2.0)


def test_plot_draws_into_the_axes_it_is_given(report):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    assert plot_robustness(report, ax=ax) is fig
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "4", "adv."]
    plt.close(fig)


def test_cli_robustness_json_and_bad_levels(capsys, tmp_path):
    argv = ["robustness", "--family", "single", "--n", "3", "--seeds", "2"]
    assert main([*argv, "--policies", "srpt,prr", "--json", "--out", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == ["1", "1.5", "2", "4", "8", "adversarial"]
    assert set(data["policies"]) == {"srpt", "prr"}
    assert (tmp_path / "robustness.png").stat().st_size > 0
    assert main([*argv, "--error", "1,0.5"]) == 2
    assert "invalid error level '0.5'" in capsys.readouterr().err
