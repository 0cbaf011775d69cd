"""Every figure the CLI writes is a function drawing into ``ax=`` and returning the Figure;
files of every type the extension names (PNG, SVG, PDF) are written by ``save_figure``."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # tests draw without a display; the library never selects a backend

import matplotlib.pyplot as plt
import numpy as np
import pytest

from asrpt_opt.analysis.gantt import GANTT_DETAIL_MAX_JOBS, job_classes, plot_gantt
from asrpt_opt.analysis.plots import (
    HIGHLIGHT,
    plot_calibration,
    plot_comparison,
    plot_ratio_cdf,
    plot_ratio_vs_load,
    plot_worker_graph,
    policy_colours,
    save_figure,
)
from asrpt_opt.analysis.ratio import InstanceOutcome, PolicyOutcome, RatioEstimate
from asrpt_opt.analysis.replay import plot_jct_cdf, plot_timeline, replay
from asrpt_opt.analysis.sensitivity import plot_sensitivity, sensitivity
from asrpt_opt.model import load_instance
from asrpt_opt.model.dnn import load_model
from asrpt_opt.model.job import Parallelism
from asrpt_opt.model.workers import worker_graph
from asrpt_opt.policies import simulate
from asrpt_opt.prediction import make_predictor
from asrpt_opt.prediction.evaluate import rolling_origin
from asrpt_opt.traces.synthetic import recurring_jobs
from tests.conftest import TINY


def _outcome(load: float, ratios: dict[str, float]) -> InstanceOutcome:
    policies = {
        name: PolicyOutcome(
            value_s=r,
            completion_s=(),
            estimate=RatioEstimate(ratio=r, ratio_lo=r, ratio_hi=r, proven=True),
        )
        for name, r in ratios.items()
    }
    return InstanceOutcome(
        family="single",
        n=2,
        seed=0,
        load=load,
        offline_status="optimal",
        offline_value_s=1.0,
        offline_bound_s=1.0,
        offline_wall_s=0.0,
        lengths_s=(),
        virtual_completion_s=(),
        policies=policies,
    )


PAYLOADS = [
    _outcome(0.5, {"a-srpt": 1.1, "fifo": 1.3}),
    _outcome(0.8, {"a-srpt": 1.0, "fifo": 1.2}),
]


@pytest.fixture(scope="module")
def tiny():
    return load_instance(TINY)


def _figures(tiny):
    """(name, draw(ax) -> Figure, axes it needs) for every figure function."""
    result = simulate(tiny, "a-srpt")
    report = replay(tiny, ["a-srpt", "fifo"])
    sens = sensitivity(tiny, ["a-srpt", "fifo"], [1.0, 2.0], seed=0)
    wg = worker_graph(load_model("resnet50"), Parallelism(dp=2, pp=2, tp=1))
    jobs = recurring_jobs(300, seed=0).jobs
    scores = rolling_origin(jobs, {"last": make_predictor("last")}, windows=3)
    metrics = {"a-srpt": result.metrics, "fifo": simulate(tiny, "fifo").metrics}
    return [
        ("comparison", lambda ax: plot_comparison(metrics, lower_bound_s=10.0, ax=ax), 3),
        ("gantt", lambda ax: plot_gantt(tiny, result.schedule, ax=ax), 1),
        ("gantt-summary", lambda ax: plot_gantt(tiny, result.schedule, summary=True, ax=ax), 1),
        ("worker-graph", lambda ax: plot_worker_graph(wg, assignment=[0, 0, 1, 1], ax=ax), 1),
        ("calibration", lambda ax: plot_calibration(scores, ax=ax), 1),
        ("ratio-cdf", lambda ax: plot_ratio_cdf(PAYLOADS, ["a-srpt", "fifo"], ax=ax), 1),
        ("ratio-vs-load", lambda ax: plot_ratio_vs_load(PAYLOADS, ["a-srpt", "fifo"], ax=ax), 1),
        ("jct-cdf", lambda ax: plot_jct_cdf(report, ax=ax), 1),
        ("timeline", lambda ax: plot_timeline(report, ax=ax), 2),
        ("sensitivity", lambda ax: plot_sensitivity(sens, ax=ax), 1),
    ]


def test_every_figure_draws_into_the_given_axes_and_saves_svg_and_pdf(tiny, tmp_path):
    for name, draw, count in _figures(tiny):
        fig, axes = plt.subplots(1, count, squeeze=False)
        target = axes[0][0] if count == 1 else list(axes[0])
        assert draw(target) is fig, name
        for ext, magic in (("svg", b"<?xml"), ("pdf", b"%PDF")):
            path = tmp_path / f"{name}.{ext}"
            save_figure(fig, path)
            assert path.read_bytes().startswith(magic), (name, ext)
        plt.close(fig)
        # Without ax= a new figure is made.
        fig = draw(None)
        assert fig.axes, name
        plt.close(fig)


def test_a_srpt_is_highlighted_and_colours_differ():
    colours = policy_colours(["fifo", "a-srpt", "sjf", "srtf"])
    assert colours[1] == HIGHLIGHT
    assert len({str(c) for c in colours}) == 4
    assert HIGHLIGHT not in colours[:1] + colours[2:]


def test_job_classes_group_the_rarest_into_other(tiny):
    names, of_job = job_classes(tiny, most=2)
    assert len(names) == 2
    assert names[-1] == "other"
    assert len(of_job) == tiny.n_jobs
    assert max(of_job) <= 1


def test_gantt_switches_to_the_summary_for_many_jobs():
    from asrpt_opt.traces.gavel import gavel_instance

    inst = gavel_instance(n_jobs=GANTT_DETAIL_MAX_JOBS + 1, servers=(8,) * 8)
    fig = plot_gantt(inst, simulate(inst, "fifo").schedule)
    assert "utilisation" in fig.axes[0].get_title()
    image = fig.axes[0].get_images()[0].get_array()
    assert image.shape[0] == 8
    assert float(np.min(image)) >= 0.0
    assert float(np.max(image)) <= 1.0 + 1e-9
    plt.close(fig)


def test_sensitivity_with_seeds_averages_and_draws_confidence_bands(tiny):
    from matplotlib.collections import PolyCollection

    report = sensitivity(tiny, ["a-srpt", "fifo"], [1.0, 4.0], seed=0, seeds=3)
    point = report.points["a-srpt"][1]
    assert len(point.mean_jct_per_seed_s) == 3
    assert point.mean_jct_s == pytest.approx(np.mean(point.mean_jct_per_seed_s))
    fig = plot_sensitivity(report)
    assert any(isinstance(c, PolyCollection) for c in fig.axes[0].collections)
    assert "95% CI over 3 seeds" in fig.axes[0].get_title()
    plt.close(fig)


def _fake_metrics(tiny, names):
    base = simulate(tiny, "fifo").metrics
    return {n: base for n in names}


def _overlap(boxes) -> bool:
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_comparison_labels_never_overlap_and_every_policy_has_its_own_colour(tiny):
    from asrpt_opt.policies import POLICIES

    names = ["a-srpt", *sorted(n for n in POLICIES if n != "a-srpt")]
    fig = plot_comparison(
        _fake_metrics(tiny, names), lower_bound_s=30.0, title="tiny: 5 jobs on 2 x 4 GPUs"
    )
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.get_yticklabels() + ax.get_xticklabels() if t.get_visible()]
        boxes = [t.get_window_extent(renderer) for t in labels if t.get_text()]
        assert not _overlap(boxes)
    bars = fig.axes[0].patches
    colours = [matplotlib.colors.to_hex(b.get_facecolor()) for b in bars]
    assert len(set(colours)) == len(names)
    assert colours[0] == matplotlib.colors.to_hex("tab:red")
    assert "tab:red" not in policy_colours(names)[1:]
    bold = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_fontweight() == "bold"]
    assert bold == ["a-srpt"]
    assert fig.axes[0].get_xlim()[0] == 0.0  # JCT axes start at zero
    assert fig.axes[2].get_xlim()[0] == 1.0  # ratio axis at 1, and says so
    assert "starts at 1" in fig.axes[2].get_xlabel()
    plt.close(fig)


def test_demo_titles_name_the_instance_cluster_and_job_count(tmp_path, monkeypatch):
    from asrpt_opt.cli import main

    titles = []
    original = plt.Figure.suptitle

    def spy(self, text, **kwargs):
        titles.append(text)
        return original(self, text, **kwargs)

    monkeypatch.setattr(plt.Figure, "suptitle", spy)
    argv = ["demo", "--n-jobs", "30", "--cluster", "2x16", "--out", str(tmp_path), "-q"]
    assert main(argv) == 0
    assert any("30 jobs on 2 x 16 GPUs" in t for t in titles), titles


def test_robustness_band_never_goes_below_one():
    from asrpt_opt.analysis.robustness import plot_robustness, robustness

    report = robustness("single", 4, ["a-srpt", "fifo"], ["1", "adversarial"], seeds=3)
    fig = plot_robustness(report)
    for collection in fig.axes[0].collections:
        for path in collection.get_paths():
            assert path.vertices[:, 1].min() >= 1.0 - 1e-12
    plt.close(fig)


def test_jct_cdf_has_a_ratio_to_best_panel_that_is_at_least_one(tiny):
    report = replay(tiny, ["a-srpt", "fifo", "srtf"])
    fig = plot_jct_cdf(report)
    assert len(fig.axes) == 2
    lines = fig.axes[1].get_lines()
    ratios = [line.get_ydata() for line in lines if line.get_label() in report.schedules]
    assert len(ratios) == 3
    assert min(float(np.min(r)) for r in ratios) >= 1.0 - 1e-12
    # At every quantile some policy is the best one.
    assert np.allclose(np.min(np.vstack(ratios), axis=0), 1.0)
    assert fig.axes[0].get_title().endswith(f"jobs on {tiny.cluster.label}")
    plt.close(fig)
