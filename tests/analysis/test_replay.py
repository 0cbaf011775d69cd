"""Replay experiments: timelines, provenance, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asrpt_opt.analysis.replay import replay, timeline
from asrpt_opt.model.schedule import JobRun, Schedule, Segment
from tests.conftest import make_instance

ROOT = Path(__file__).resolve().parents[2]


def test_timeline_hand_computed():
    inst = make_instance([(0, 2, 4.0), (1, 2, 2.0)], servers=(2,))
    sched = Schedule(
        runs=(
            JobRun(
                id="j0",
                release_s=0,
                completion_s=6,
                segments=(
                    Segment(start_s=0, end_s=1, allocation=((0, 2),)),
                    Segment(start_s=3, end_s=6, allocation=((0, 2),)),
                ),
            ),
            JobRun(
                id="j1",
                release_s=1,
                completion_s=3,
                segments=(Segment(start_s=1, end_s=3, allocation=((0, 2),)),),
            ),
        )
    )
    t, waiting, busy = timeline(inst, sched)
    assert t.tolist() == [0, 1, 3, 6]
    assert waiting.tolist() == [0, 1, 0, 0]  # j0 waits during [1, 3)
    assert busy.tolist() == [2, 2, 2, 0]


def test_replay_is_deterministic_and_records_provenance():
    inst = make_instance([(i, 1 + i % 2, 2.0 + i % 3) for i in range(12)], servers=(2, 2))
    a = replay(inst, ["a-srpt", "fifo"], predictor="noisy", seed=3)
    b = replay(inst, ["a-srpt", "fifo"], predictor="noisy", seed=3)
    assert a.metrics == b.metrics
    prov = a.provenance
    assert len(prov["instance_sha256"]) == 64
    assert prov["seed"] == 3
    assert prov["predictor"] == "noisy"
    assert prov["asrpt_opt"]


@pytest.mark.parametrize(
    ("policies", "refit_every", "warmed"),
    [
        (["fifo", "srtf"], None, False),  # 12 jobs: below the general threshold
        (["fifo", "gittins"], None, True),  # Gittins compiles from its own, lower one
        (["fifo", "gittins"], 5, False),  # a refitted predictor never compiles
    ],
)
def test_replay_compiles_the_core_before_timing_only_when_a_policy_will_run_it(
    monkeypatch, policies, refit_every, warmed
):
    import asrpt_opt.policies.registry as registry
    import asrpt_opt.sim.compiled as compiled

    inst = make_instance([(i, 1 + i % 2, 2.0 + i % 3) for i in range(12)], servers=(2, 2))
    from asrpt_opt.policies import TiresiasGittins

    monkeypatch.setattr(TiresiasGittins, "compiles_from", inst.n_jobs)
    calls: list[str] = []
    warm_up, simulate = compiled.warm_up, registry.simulate
    monkeypatch.setattr(compiled, "warm_up", lambda *p: calls.append("warm") or warm_up(*p))
    monkeypatch.setattr(
        registry, "simulate", lambda *a, **k: calls.append("simulate") or simulate(*a, **k)
    )
    replay(inst, policies, refit_every=refit_every)
    # The policies' wall times start after the compilation (the run's own warm-up is then
    # immediate).
    assert calls[0] == ("warm" if warmed else "simulate")
    assert ("warm" in calls) == warmed


def test_cli_replay(tmp_path, capsys):
    from asrpt_opt.cli import main

    path = str(ROOT / "instances" / "examples" / "tiny-example.json")
    status = main(
        [
            "replay",
            path,
            "--policies",
            "a-srpt,fifo",
            "--placement",
            "mincut",
            "--out",
            str(tmp_path),
            "--json",
        ]
    )
    assert status == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["policies"]) == {"a-srpt", "fifo"}
    assert data["provenance"]["placement"] == {"a-srpt": "mincut", "fifo": "mincut"}
    for name in ("jct-cdf.png", "timeline.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["provenance"] == data["provenance"]
    assert main(["replay", path, "--placement", "teleport"]) == 2
    assert main(["replay"]) == 2
