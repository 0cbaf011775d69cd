"""Worker graphs, the iteration-time model and the placement methods."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.errors import InstanceError, ModelError, UnknownNameError
from asrpt_opt.model import Job, Parallelism, load_instance
from asrpt_opt.model.dnn import MODELS, load_model, parse_pipedream, transformer
from asrpt_opt.model.workers import balanced_stages, worker_graph
from asrpt_opt.placement import METHODS, place

ROOT = Path(__file__).resolve().parents[2]
_T = "forward_compute_time={}, backward_compute_time={}, activation_size={}, parameter_size={}"
TINY = (
    f"node1 -- Input() -- {_T.format('500.000', '0.000', '100.0', '0.000')}\n"
    f"node2 -- Linear() -- {_T.format('10.000', '20.000', '[30.0; 10.0]', '1000.000')}\n"
    f"node3 -- Linear() -- {_T.format('10.000', '20.000', '50.0', '3000.000')}\n"
    "\tnode1 -- node2\n"
    "\tnode2 -- node3\n"
)


def tiny_model():
    return parse_pipedream(TINY, name="tiny")


def test_parser_zeroes_input_and_sums_lists():
    m = tiny_model()
    assert m.order == ("node1", "node2", "node3")
    assert m.compute_s.tolist() == [0.0, 0.03, 0.03]
    assert m.activation_bytes.tolist() == [100.0, 40.0, 50.0]
    assert m.total_parameter_bytes == 4000.0
    assert m.boundary_bytes(2) == 40.0


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("garbage line\n", "line 1: malformed node"),
        (TINY + "\tnode3 -- node9\n", "unknown node"),
        ("", "no layers"),
    ],
)
def test_parser_errors_name_the_line(text, words):
    with pytest.raises(ModelError, match=words):
        parse_pipedream(text, source="x.txt")


@pytest.mark.parametrize("name", MODELS)
def test_every_bundled_model_loads(name):
    m = load_model(name)
    assert m.total_compute_s > 0
    assert m.total_parameter_bytes > 0
    assert len(m.order) == m.graph.number_of_nodes()


def test_transformer_counts():
    m = transformer(
        "t",
        layers=2,
        hidden=64,
        heads=4,
        seq_len=8,
        vocab=100,
        batch=1,
        effective_tflops=1e-6,
        bytes_per_value=2,
    )
    block = (12 * 64 * 64 + 13 * 64) * 2
    assert m.parameter_bytes.tolist()[1:3] == [block, block]
    fwd = (24 * 8 * 64 * 64 + 4 * 8 * 8 * 64) / 1e6
    assert m.compute_s[1] == pytest.approx(3 * fwd)
    with pytest.raises(ModelError, match="heads"):
        transformer("bad", layers=1, hidden=10, heads=3, seq_len=2, vocab=2)


def test_balanced_stages():
    assert balanced_stages(np.array([1.0, 1, 1, 3]), 2) == [0, 3]
    assert balanced_stages(np.array([2.0, 2, 2, 2]), 4) == [0, 1, 2, 3]
    with pytest.raises(ModelError, match="stages"):
        balanced_stages(np.array([1.0]), 2)


def test_worker_graph_volumes_hand_computed():
    m = tiny_model()
    wg = worker_graph(m, Parallelism(dp=2, pp=2, tp=1))
    # Stages: [node1, node2] and [node3] (compute 0.03 each); boundary = node2's 40 bytes.
    assert wg.stage_compute_s.tolist() == [0.03, 0.03]
    assert wg.boundary_bytes.tolist() == [40.0]
    g = wg.graph
    assert g[0][1]["bytes"] == 80.0  # 2 * boundary / tp
    assert g[0][2]["bytes"] == pytest.approx(2 * 1 / 2 * 1000.0)  # ring of 2 replicas, stage 0
    assert g[1][3]["bytes"] == pytest.approx(3000.0)
    one = np.zeros(4, dtype=np.int64)
    assert wg.cross_server_bytes(one) == 0.0
    split = np.array([0, 0, 1, 1])  # the replicas on different servers: both DP rings cut
    assert wg.cross_server_bytes(split) == pytest.approx(4000.0)
    tau = wg.iteration_time(split, intra_gbps=1.0, inter_gbps=1e-6)
    m_b = 8  # microbatches = 4 * pp
    pipeline = (m_b + 1) * (0.03 + 80.0 / 1e9) / m_b
    assert tau == pytest.approx(pipeline + 3000.0 / 1e3)


def test_tensor_ring_edges():
    wg = worker_graph(tiny_model(), Parallelism(tp=4))
    assert wg.graph.number_of_edges() == 4  # a ring of four
    volume = 2 * (40.0 + 50.0 + 100.0) * 2 * 3 / 4
    assert all(d["bytes"] == pytest.approx(volume) for _, _, d in wg.graph.edges(data=True))


@pytest.mark.parametrize("method", list(METHODS))
def test_one_server_fits_gives_zero_cut_for_exact_and_consolidating(method):
    wg = worker_graph(load_model("vgg16"), Parallelism(dp=2, pp=2))
    res = place(wg, [2, 4, 3], method=method, intra_gbps=300, inter_gbps=10)
    assert sum(c for _, c in res.allocation) == 4
    if method in ("ilp", "mincut", "consolidate", "greedy"):
        assert res.cross_server_bytes == 0.0
        assert res.allocation == ((1, 4),)
    if method == "ilp":
        assert res.optimal


@settings(max_examples=25, deadline=None)
@given(
    model=st.sampled_from(["resnet18", "vgg16", "gpt2-1.5b", "gnmt"]),
    dims=st.tuples(st.integers(1, 4), st.sampled_from([1, 2]), st.sampled_from([1, 2])),
    free=st.lists(st.integers(0, 6), min_size=2, max_size=5),
)
def test_methods_respect_capacity_and_ilp_is_best(model, dims, free):
    par = Parallelism(dp=dims[0], pp=dims[1], tp=dims[2])
    wg = worker_graph(load_model(model), par)
    if par.workers > sum(free):
        with pytest.raises(ModelError, match="do not fit"):
            place(wg, free, method="mincut", intra_gbps=100, inter_gbps=10)
        return
    results = {
        m: place(wg, free, method=m, intra_gbps=100, inter_gbps=10, seed=1) for m in METHODS
    }
    for res in results.values():
        used = np.bincount(np.array(res.assignment), minlength=len(free))
        assert np.all(used <= np.array(free))
        assert len(res.assignment) == par.workers
    ilp = results["ilp"]
    assert ilp.optimal
    for res in results.values():
        assert ilp.cross_server_bytes <= res.cross_server_bytes + 1e-6


def test_custom_method_is_validated():
    wg = worker_graph(load_model("resnet18"), Parallelism(dp=4))

    def everything_on_zero(job, free, **_):
        return np.zeros(job.n_workers, dtype=np.int64)

    with pytest.raises(ModelError, match="which has 2 free"):
        place(wg, [2, 2], method=everything_on_zero, intra_gbps=1, inter_gbps=1)
    with pytest.raises(UnknownNameError, match="unknown placement method"):
        place(wg, [4], method="magic", intra_gbps=1, inter_gbps=1)


def test_bad_jobs_are_instance_errors():
    with pytest.raises(InstanceError, match="unknown model 'resnet5'"):
        Job(
            id="x",
            release_s=0,
            gpus=2,
            model="resnet5",
            parallelism=Parallelism(dp=2),
            iterations=1,
        )
    with pytest.raises(InstanceError, match="differs from gpus"):
        Job(
            id="x",
            release_s=0,
            gpus=3,
            model="resnet50",
            parallelism=Parallelism(dp=2),
            iterations=1,
        )


RECORDS = json.loads((ROOT / "instances" / "placement" / "optima.json").read_text())


@pytest.mark.parametrize("record", RECORDS, ids=[f"{r['instance']}:{r['job']}" for r in RECORDS])
def test_recorded_placement_optima(record):
    inst = load_instance(ROOT / "instances" / "placement" / record["instance"])
    assert inst.provenance["free_gpus"] == ",".join(str(f) for f in record["free_gpus"])
    job = next(j for j in inst.jobs if j.id == record["job"])
    wg = worker_graph(load_model(job.model), job.parallelism)
    c = inst.cluster
    res = place(
        wg,
        record["free_gpus"],
        method="ilp",
        intra_gbps=c.intra_server_gbps,
        inter_gbps=c.inter_server_gbps,
        time_limit_s=60,
    )
    assert res.optimal
    assert res.cross_server_bytes == pytest.approx(record["cross_server_bytes"])


def test_cli_place_and_graph(tmp_path, capsys):
    from asrpt_opt.cli import main

    path = str(ROOT / "instances" / "placement" / "p02-vgg16-pipeline.json")
    assert main(["place", path, "--free-gpus", "3,2,4,1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [j["id"] for j in data["jobs"]] == ["vgg16-2x2x1", "vgg16-1x4x2", "alexnet-4x2x1"]
    for job in data["jobs"]:
        methods = {r["method"]: r for r in job["results"]}
        assert set(methods) == set(METHODS)
        assert methods["ilp"]["optimal"] is True
        assert all(
            r["cross_server_bytes"] >= methods["ilp"]["cross_server_bytes"] - 1e-6
            for r in methods.values()
        )
        assert {
            "method",
            "servers",
            "cross_server_bytes",
            "iteration_time_s",
            "optimal",
            "wall_s",
            "lower_bound_bytes",  # an extension of DESIGN.md's keys
        } == set(methods["ilp"])
        assert methods["ilp"]["lower_bound_bytes"] == methods["ilp"]["cross_server_bytes"]
        assert methods["mincut"]["lower_bound_bytes"] is None
    assert main(["place", path, "--free-gpus", "1,1,1,1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["jobs"][1]["error"].startswith("8 workers do not fit")
    assert main(["place", path, "--free-gpus", "9,0,0,0"]) == 2
    assert "server 0 has 4 GPUs" in capsys.readouterr().err
    assert main(["place", path, "--methods", "magic"]) == 2
    png = tmp_path / "g.png"
    assert (
        main(
            [
                "graph",
                "gpt2-1.5b",
                "--parallelism",
                "2,2,2",
                "--free-gpus",
                "4,4",
                "--out",
                str(png),
            ]
        )
        == 0
    )
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["graph", "nope", "--out", str(png)]) == 2


@settings(max_examples=200, deadline=None)
@given(
    free=st.lists(st.integers(0, 8), min_size=1, max_size=150),
    gpus=st.integers(1, 40),
)
def test_consolidate_numpy_path_equals_the_loop(free, gpus):
    import sys

    import asrpt_opt.placement.consolidate  # noqa: F401

    module = sys.modules["asrpt_opt.placement.consolidate"]
    arr = np.array(free, dtype=np.int64)
    old = module.VECTOR_FROM
    try:
        module.VECTOR_FROM = 10**9
        loop = module.consolidate(arr, gpus)
        module.VECTOR_FROM = 0
        vector = module.consolidate(arr, gpus)
    finally:
        module.VECTOR_FROM = old
    assert loop == vector


def test_place_uses_the_instance_free_gpu_pattern_and_prints_one_table(capsys):
    import csv
    import io

    from asrpt_opt.cli import main
    from asrpt_opt.datasets import load_example
    from asrpt_opt.placement.compare import instance_free_gpus

    assert instance_free_gpus(load_example("p04-gnmt-fragmented")) == (1, 2, 3, 2, 1, 3)
    assert instance_free_gpus(load_example("tiny-example")) is None
    assert main(["place", "p04-gnmt-fragmented", "--methods", "ilp,greedy", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["free_gpus"] == [1, 2, 3, 2, 1, 3]
    for job in data["jobs"]:
        for result in job["results"]:
            for server, count in result["servers"].items():
                assert count <= data["free_gpus"][int(server)]
    assert (
        main(["place", "p04-gnmt-fragmented", "--methods", "ilp,greedy", "--format", "csv"]) == 0
    )
    out, err = capsys.readouterr()
    assert "provenance.free_gpus" in err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert out.count("method") == 1  # one header for every job
    assert {r["job"] for r in rows} == {j["id"] for j in data["jobs"]}
    for row in rows:
        low, high = float(row["gap min %"]), float(row["gap max %"])  # numbers, not "1.1%"
        assert 0.0 <= low <= high
        assert row["proven optimal"] in {"yes", "no"}
    assert {r["proven optimal"] for r in rows if r["method"] == "ilp"} == {"yes"}


def test_a_bad_free_gpu_pattern_names_the_field(tmp_path, capsys):
    from asrpt_opt.cli import main
    from asrpt_opt.datasets import load_example
    from asrpt_opt.model import dump_instance
    from asrpt_opt.model.instance import Instance

    inst = load_example("p04-gnmt-fragmented")
    for bad, words in (
        ("1,2", "lists 2 servers"),
        ("a,b", "not a comma-separated"),
        ("9,0,0,0,0,0", "server 0 has 4"),
    ):
        broken = Instance(
            name="bad", cluster=inst.cluster, jobs=inst.jobs, provenance={"free_gpus": bad}
        )
        path = tmp_path / "bad.json"
        dump_instance(broken, path)
        assert main(["place", str(path), "--methods", "greedy"]) == 2
        err = capsys.readouterr().err
        assert "provenance.free_gpus" in err
        assert words in err
