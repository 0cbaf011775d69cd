"""Bundled workloads: the Gavel/Philly trace and the synthetic generator."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from asrpt_opt.errors import InstanceError
from asrpt_opt.model import dumps_instance, load_instance
from asrpt_opt.traces import gavel_instance, philly_like, read_gavel_trace

ROOT = Path(__file__).resolve().parents[2]


def test_bundled_trace_reads_completely():
    rows = read_gavel_trace()
    assert len(rows) == 2000
    assert rows[0].job_type == "Transformer (batch size 128)"
    assert rows[0].total_steps == 15486530
    assert rows[0].gpus == 1


def test_demo_instance_file_matches_the_generator():
    path = ROOT / "instances" / "demo" / "gavel-philly-400.json"
    assert dumps_instance(gavel_instance()) == path.read_text()
    inst = load_instance(path)
    assert inst.n_jobs == 400
    assert inst.cluster.total_gpus == 64
    assert inst.provenance["imputed_throughputs"] == 71


def test_gavel_durations_come_from_measured_throughput():
    inst = gavel_instance(n_jobs=1)
    # Transformer bs128 on 1 V100: 15,486,530 steps at the table's steps/s.
    from asrpt_opt.traces.gavel import gavel_throughputs

    tput = gavel_throughputs()["v100"][str(("Transformer (batch size 128)", 1))]["null"]
    assert inst.jobs[0].duration_s == pytest.approx(15486530 / tput, abs=1e-3)
    assert inst.jobs[0].features["batch_size"] == 128


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("a\tb\tc\n", "expected 7 tab-separated columns, got 3"),
        ("LM\tcmd\t-n\t1\tmany\t0.0\t1\n", "bad number"),
        ("LM\tcmd\t-n\t1\t100\t0.0\t0\n", ">= 1"),
    ],
)
def test_bad_trace_rows_name_file_and_line(tmp_path, line, words):
    file = tmp_path / "t.trace"
    file.write_text("LM (batch size 5)\tcmd\t-n\t1\t100\t0.0\t1\n" + line)
    with pytest.raises(InstanceError, match=rf"t\.trace: line 2: .*{words}"):
        read_gavel_trace(file)


def test_philly_like_is_seeded_and_hits_the_load():
    a = philly_like(2000, seed=5, load=0.8)
    b = philly_like(2000, seed=np.random.default_rng(5), load=0.8)
    assert dumps_instance(a) == dumps_instance(b)
    assert dumps_instance(a) != dumps_instance(philly_like(2000, seed=6, load=0.8))
    area = sum(j.gpus * j.duration_s for j in a.jobs)
    horizon = a.jobs[-1].release_s
    assert area / (a.cluster.total_gpus * horizon) == pytest.approx(0.8, rel=0.1)
    with pytest.raises(ValueError, match="load"):
        philly_like(5, load=0)


def test_pollux_workloads_load_and_impute():
    from asrpt_opt.traces import GPU_HOUR_BUCKETS, pollux_instance, read_pollux_workload

    rows = read_pollux_workload(1)
    assert len(rows) == 160
    assert rows[0].name == "cifar10-0"
    inst = pollux_instance(1, seed=0)
    assert inst.n_jobs == 160
    for row, job in zip(rows, inst.jobs, strict=True):
        lo, hi = GPU_HOUR_BUCKETS[row.application]
        assert lo * 3600 - 1 <= job.duration_s * job.gpus <= hi * 3600 + 1
    assert dumps_instance(pollux_instance(1, seed=0)) == dumps_instance(inst)
    with pytest.raises(InstanceError, match=r"1\.\.8"):
        read_pollux_workload(9)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("a,1,cifar10,2\n", "expected 5 columns, got 4"),
        ("a,soon,cifar10,2,64\n", "bad number"),
        ("a,1,mnist,2,64\n", "unknown application 'mnist'"),
        ("a,1,cifar10,0,64\n", "replicas and batch size >= 1"),
    ],
)
def test_pollux_bad_rows_name_the_line(tmp_path, line, words):
    from asrpt_opt.traces import read_pollux_workload

    f = tmp_path / "w.csv"
    f.write_text("name,time,application,num_replicas,batch_size\nok,0,bert,1,8\n" + line)
    with pytest.raises(InstanceError, match=rf"w\.csv: line 3: .*{words}"):
        read_pollux_workload(f)
    f.write_text("id,t\n")
    with pytest.raises(InstanceError, match="expected header"):
        read_pollux_workload(f)


def test_import_reports_every_bad_row_and_strict_stops(tmp_path, capsys):
    from asrpt_opt.cli import main

    trace = tmp_path / "t.trace"
    trace.write_text(
        "ResNet-50 (batch size 64)\tcmd\t-n\t1\t1000\t0.0\t4\n"
        "bad row\n"
        "Mystery model\tcmd\t-n\t1\t100\t5.0\t1\n"
        "ResNet-18 (batch size 32)\tcmd\t-n\t1\tlots\t9.0\t2\n"
        "ResNet-18 (batch size 32)\tcmd\t-n\t1\t500\t10.0\t2\n"
    )
    out = tmp_path / "t.json"
    assert main(["import", "gavel", str(trace), "-o", str(out), "--cluster", "2x8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["jobs"] == 2
    assert data["bad_rows"] == 3
    assert any("line 2: expected 7 tab-separated columns" in e for e in data["errors"])
    assert any("line 3: job type 'Mystery model'" in e for e in data["errors"])
    assert any("line 4: bad number" in e for e in data["errors"])
    inst = load_instance(out)
    assert inst.provenance["rows_skipped"] == 3
    assert [j.id for j in inst.jobs] == ["gavel-1", "gavel-5"]
    assert main(["import", "gavel", str(trace), "-o", str(out), "--strict"]) == 2
    assert "line 2: expected 7" in capsys.readouterr().err
    assert main(["import", "pollux", "1", "-o", str(out), "--cluster", "16x4", "--json"]) == 2
    workload = tmp_path / "w.csv"
    workload.write_text(
        "name,time,application,num_replicas,batch_size\na,0,bert,2,8\nb,x,bert,1,8\n"
    )
    assert (
        main(["import", "pollux", str(workload), "-o", str(out), "--cluster", "4x4", "--json"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert (data["jobs"], data["bad_rows"]) == (1, 1)


def test_pollux_speed_uses_measured_step_times():
    from asrpt_opt.analysis.calibration import load_pollux
    from asrpt_opt.model import Job
    from asrpt_opt.speed.default import default_speed
    from asrpt_opt.speed.measured import PolluxSpeed
    from asrpt_opt.traces import pollux_instance

    speed = PolluxSpeed()
    job = Job(
        id="x",
        release_s=0,
        gpus=4,
        duration_s=100.0,
        features={"model": "imagenet", "batch_size": 80},
    )
    steps = {(p, b): t for p, b, t, _ in load_pollux("imagenet")}
    assert speed.rate(job, ((0, 4),)) == 1.0
    spread = speed.rate(job, ((0, 1), (1, 1), (2, 1), (3, 1)))
    assert spread == pytest.approx(steps[("4", 20)] / steps[("1111", 20)])
    assert spread < 1.0
    wide = Job(
        id="w",
        release_s=0,
        gpus=32,
        duration_s=1.0,
        features={"model": "imagenet", "batch_size": 6400},
    )
    # Beyond 4 nodes the fitted model applies; it only tells one node from several.
    assert speed.rate(wide, tuple((s, 2) for s in range(16))) == pytest.approx(1.0)
    with pytest.raises(InstanceError, match="no Pollux measurements"):
        speed.rate(Job(id="m", release_s=0, gpus=1, duration_s=1.0), ((0, 1),))
    assert isinstance(default_speed(pollux_instance(1)), PolluxSpeed)


def test_bundled_pollux_replay_instance_matches_the_generator():
    from asrpt_opt.traces import pollux_instance

    path = ROOT / "instances" / "replay" / "pollux-workload-1.json"
    assert dumps_instance(pollux_instance(1, servers=(4,) * 16, seed=0)) == path.read_text()


def test_dnn_mix_is_seeded_mixes_parallelisms_and_matches_the_bundled_instance():
    from asrpt_opt.model import Cluster
    from asrpt_opt.traces.synthetic import dnn_mix

    cluster = Cluster(servers=(8,) * 16, intra_server_gbps=300.0, inter_server_gbps=12.5)
    inst = dnn_mix(400, cluster, load=0.8, seed=0, name="dnn-mix-400")
    assert dumps_instance(inst) == (ROOT / "instances" / "replay" / "dnn-mix-400.json").read_text()
    kinds = {(j.parallelism.pp > 1, j.parallelism.tp > 1) for j in inst.jobs}
    assert kinds == {(False, False), (True, False), (False, True), (True, True)}
    assert max(j.gpus for j in inst.jobs) <= 64
    assert dumps_instance(dnn_mix(50, cluster, seed=3)) != dumps_instance(
        dnn_mix(50, cluster, seed=4)
    )


def test_map_models_can_give_pipeline_and_tensor_parallelism():
    from asrpt_opt.model import Cluster, Instance, Job
    from asrpt_opt.traces.importers import map_models

    jobs = (
        Job(id="a", release_s=0, gpus=8, duration_s=100, features={"model": "LM"}),
        Job(id="b", release_s=0, gpus=4, duration_s=100, features={"model": "LM"}),
        Job(id="c", release_s=0, gpus=2, duration_s=100, features={"model": "other"}),
    )
    inst = Instance(name="m", cluster=Cluster(servers=(8, 8)), jobs=jobs)
    out = map_models(inst, {"LM": "gpt2-1.5b/pp2tp4"})
    a, b, c = out.jobs
    assert (a.parallelism.dp, a.parallelism.pp, a.parallelism.tp) == (1, 2, 4)
    assert (b.parallelism.dp, b.parallelism.pp, b.parallelism.tp) == (4, 1, 1)  # 4 % 8 != 0
    assert c.is_abstract
    with pytest.raises(InstanceError, match="unknown model 'gpt9'"):
        map_models(inst, {"LM": "gpt9/tp2"})


def test_the_bundled_tiered_instances_are_what_their_script_writes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tiered", ROOT / "tools" / "tiered_examples.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    made = module.tiered_examples()
    assert sorted(made) == [
        "tiers-2level-1to1", "tiers-2level-3to1", "tiers-3level-1to1", "tiers-3level-3to1"
    ]  # fmt: skip
    for name, inst in made.items():
        path = ROOT / "instances" / "examples" / f"{name}.json"
        assert dumps_instance(inst) == path.read_text()
        assert inst.cluster.topology is not None
        assert inst.provenance["types"] == "LLM_MIX_TYPES"
    spine = {n: i.cluster.level_gbps[-1] for n, i in made.items()}
    assert spine["tiers-2level-1to1"] == 50.0
    assert spine["tiers-3level-3to1"] == pytest.approx(50.0 / 9)
