"""Hostile input: every case ends with exit status 2, no traceback, and one line naming the
file or the option and the place."""

from __future__ import annotations

import copy
import json

import pytest

from asrpt_opt.cli import main
from tests.conftest import TINY

BASE = {
    "format": "asrpt-instance/1",
    "name": "h",
    "cluster": {"servers": [4, 4], "intra_server_gbps": 300, "inter_server_gbps": 12.5},
    "jobs": [
        {"id": "a", "release_s": 0, "gpus": 2, "duration_s": 6},
        {
            "id": "c",
            "release_s": 1,
            "gpus": 4,
            "model": "resnet50",
            "parallelism": {"dp": 4, "pp": 1, "tp": 1},
            "iterations": 50,
        },
    ],
}


def _set(path: str, value):
    def apply(doc):
        node = doc
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = keys[-1]
        if isinstance(node, list):
            node[int(last)] = value
        elif value is _DELETE:
            del node[last]
        else:
            node[last] = value
        return json.dumps(doc)

    return apply


_DELETE = object()

# (case id, how to make the file text, words the error must contain)
DOCS = [
    (
        "release-bigint",
        lambda d: json.dumps(d).replace('"release_s": 0', '"release_s": 1' + "0" * 400),
        "beyond floating point",
    ),
    (
        "duration-bigint",
        lambda d: json.dumps(d).replace('"duration_s": 6', '"duration_s": 1' + "0" * 400),
        "beyond floating point",
    ),
    ("weight-bigint", _set("jobs.0.weight", 10**400), "beyond floating point"),
    (
        "bandwidth-bigint",
        lambda d: json.dumps(d).replace(
            '"inter_server_gbps": 12.5', '"inter_server_gbps": 1' + "0" * 500
        ),
        "beyond floating point",
    ),
    (
        "digits-5000",
        lambda d: json.dumps(d).replace('"duration_s": 6', '"duration_s": 1' + "0" * 5000),
        "digits",
    ),
    ("deep-list", lambda d: "[" * 10000 + "]" * 10000, "nested too deeply"),
    ("deep-object", lambda d: '{"a":' * 10000 + "1" + "}" * 10000, "nested too deeply"),
    (
        "duplicate-top-key",
        lambda d: json.dumps(d)[:-1] + ', "name": "again"}',
        "duplicate key 'name'",
    ),
    (
        "duplicate-job-key",
        lambda d: json.dumps(d).replace('"gpus": 2,', '"gpus": 2, "gpus": 3,'),
        "duplicate key 'gpus'",
    ),
    (
        "nan-release",
        lambda d: json.dumps(d).replace('"release_s": 0', '"release_s": NaN'),
        "line 1 column",
    ),
    (
        "infinity-duration",
        lambda d: json.dumps(d).replace('"duration_s": 6', '"duration_s": Infinity'),
        "Infinity",
    ),
    (
        "minus-infinity",
        lambda d: json.dumps(d).replace('"release_s": 0', '"release_s": -Infinity'),
        "Infinity",
    ),
    (
        "float-overflow",
        lambda d: json.dumps(d).replace('"duration_s": 6', '"duration_s": 1e999'),
        "beyond floating point",
    ),
    ("feature-overflow", _set("jobs.0.features", {"x": 1e308 * 10}), "Infinity"),
    (
        "provenance-overflow",
        lambda d: json.dumps({**d, "provenance": {"x": 1}}).replace('"x": 1', '"x": 1e999'),
        "beyond floating point",
    ),
    ("no-cluster", _set("cluster", _DELETE), "cluster: is required"),
    ("no-jobs", _set("jobs", _DELETE), "jobs: is required"),
    ("no-format", _set("format", _DELETE), "format: is required"),
    ("wrong-format", _set("format", "asrpt-instance/2"), "format: must be"),
    ("empty-jobs", _set("jobs", []), "jobs: must list at least one job"),
    ("jobs-not-list", _set("jobs", {"a": 1}), "jobs"),
    ("cluster-not-object", _set("cluster", [4, 4]), "cluster"),
    ("servers-empty", _set("cluster.servers", []), "cluster.servers"),
    ("servers-zero", _set("cluster.servers", [4, 0]), "cluster.servers[1]"),
    ("servers-negative", _set("cluster.servers", [-4]), "cluster.servers[0]"),
    ("servers-float", _set("cluster.servers", [4.5]), "cluster.servers[0]"),
    ("servers-string", _set("cluster.servers", ["4"]), "cluster.servers[0]"),
    ("servers-huge", _set("cluster.servers", [10**9]), "at most 100,000,000"),
    ("servers-many", _set("cluster.servers", [1] * 1_000_001), "at most 1,000,000"),
    ("bandwidth-zero", _set("cluster.intra_server_gbps", 0), "cluster.intra_server_gbps"),
    ("bandwidth-negative", _set("cluster.inter_server_gbps", -1), "cluster.inter_server_gbps"),
    ("bandwidth-string", _set("cluster.inter_server_gbps", "fast"), "cluster.inter_server_gbps"),
    (
        "dnn-no-bandwidth",
        _set("cluster", {"servers": [4, 4]}),
        "is a DNN job, so the cluster needs",
    ),
    ("cluster-unknown-key", _set("cluster.racks", 2), "unknown key 'racks'"),
    ("top-unknown-key", _set("deadline", 3), "unknown key 'deadline'"),
    ("job-unknown-key", _set("jobs.0.priority", 1), "jobs[0]"),
    ("id-missing", _set("jobs.0.id", _DELETE), "jobs[0].id"),
    ("id-empty", _set("jobs.0.id", ""), "jobs[0].id"),
    ("id-number", _set("jobs.0.id", 7), "jobs[0].id"),
    ("id-duplicate", _set("jobs.1.id", "a"), "duplicate id"),
    ("release-negative", _set("jobs.0.release_s", -1), "jobs[0].release_s"),
    ("release-huge", _set("jobs.0.release_s", 1e308), "jobs[0].release_s: must be at most"),
    ("release-string", _set("jobs.0.release_s", "0"), "jobs[0].release_s"),
    ("release-bool", _set("jobs.0.release_s", True), "jobs[0].release_s"),
    ("release-null", _set("jobs.0.release_s", None), "jobs[0].release_s"),
    ("gpus-zero", _set("jobs.0.gpus", 0), "jobs[0].gpus"),
    ("gpus-float", _set("jobs.0.gpus", 1.5), "jobs[0].gpus"),
    ("gpus-too-many", _set("jobs.0.gpus", 9), "exceeds the cluster's 8 GPUs"),
    ("gpus-huge", _set("jobs.0.gpus", 10**12), "jobs[0].gpus"),
    ("weight-zero", _set("jobs.0.weight", 0), "jobs[0].weight"),
    ("weight-negative", _set("jobs.0.weight", -2), "jobs[0].weight"),
    ("duration-zero", _set("jobs.0.duration_s", 0), "jobs[0].duration_s"),
    ("duration-negative", _set("jobs.0.duration_s", -6), "jobs[0].duration_s"),
    ("duration-huge", _set("jobs.0.duration_s", 1e300), "jobs[0].duration_s: must be at most"),
    ("slowdown-below-1", _set("jobs.0.spread_slowdown", 0.5), "jobs[0].spread_slowdown"),
    ("abstract-and-dnn", _set("jobs.0.model", "resnet50"), "jobs[0]"),
    ("neither-kind", _set("jobs.0.duration_s", _DELETE), "jobs[0]"),
    ("unknown-model", _set("jobs.1.model", "resnet5000"), "jobs[1].model: unknown model"),
    ("parallelism-mismatch", _set("jobs.1.parallelism", {"dp": 2, "pp": 1, "tp": 1}), "jobs[1]"),
    (
        "parallelism-zero",
        _set("jobs.1.parallelism", {"dp": 0, "pp": 1, "tp": 4}),
        "jobs[1].parallelism",
    ),
    (
        "parallelism-unknown-key",
        _set("jobs.1.parallelism", {"dp": 4, "ep": 1}),
        "jobs[1].parallelism",
    ),
    ("iterations-zero", _set("jobs.1.iterations", 0), "jobs[1].iterations"),
    ("iterations-huge", _set("jobs.1.iterations", 10**15), "jobs[1].iterations"),
    ("features-list", _set("jobs.0.features", [1, 2]), "jobs[0].features"),
    ("feature-object", _set("jobs.0.features", {"x": {"y": 1}}), "jobs[0].features.x"),
    ("provenance-list", _set("provenance", ["x"]), "provenance"),
    ("provenance-nested", _set("provenance", {"x": [1]}), "provenance.x"),
    ("speed-model-unknown", _set("speed_model", "warp"), "speed_model: unknown speed model"),
    ("speed-model-number", _set("speed_model", 3), "speed_model"),
    ("name-empty", _set("name", ""), "name"),
    ("top-list", lambda d: "[1, 2]", "(document)"),
    ("top-string", lambda d: '"hello"', "(document)"),
    ("empty-file", lambda d: "", "invalid JSON"),
    ("truncated", lambda d: json.dumps(d)[:40], "invalid JSON"),
    ("trailing-garbage", lambda d: json.dumps(d) + " xyz", "invalid JSON"),
    ("single-quotes", lambda d: json.dumps(d).replace('"', "'"), "invalid JSON"),
    ("comment", lambda d: "// hi\n" + json.dumps(d), "invalid JSON"),
    ("bom-latin1", None, "is not UTF-8 text"),
]


@pytest.mark.parametrize(("case", "make", "words"), DOCS, ids=[c[0] for c in DOCS])
@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_bad_instance_file(tmp_path, capsys, case, make, words, command):
    path = tmp_path / f"{case}.json"
    if make is None:
        path.write_bytes(json.dumps(BASE).replace('"h"', '"h\xe9"').encode("latin-1"))
    else:
        path.write_text(make(copy.deepcopy(BASE)))
    status = main([command, str(path)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert err.startswith(f"asrpt-opt: error: {path}"), err
    assert words in err, err


ARGS = [
    (["simulate", TINY, "--seed", "-1"], "--seed"),
    (["simulate", TINY, "--seed", "x"], "--seed"),
    (["simulate", TINY, "--seed", "1.5"], "--seed"),
    (["simulate", TINY, "--restore-overhead", "nan"], "--restore-overhead"),
    (["simulate", TINY, "--restore-overhead", "inf"], "--restore-overhead"),
    (["simulate", TINY, "--restore-overhead", "-0.5"], "--restore-overhead"),
    (["simulate", TINY, "--policy", "lifo"], "--policy"),
    (["simulate", TINY, "--predictor", "crystal-ball"], "--predictor"),
    (["simulate", TINY, "--placement", "teleport"], "--placement"),
    (["simulate", TINY, "--predictor", "noisy", "--mu", "0.5"], "--mu"),
    (["simulate", TINY, "--predictor", "noisy", "--mu", "inf"], "--mu"),
    (["simulate", TINY, "--predictor", "noisy", "--bias", "0"], "--bias"),
    (["simulate", TINY, "--param", "backfill"], "--param"),
    (["simulate", TINY, "--param", "=1"], "--param"),
    (["simulate", TINY, "--policy", "fifo", "--param", "nope=1"], "--param"),
    (["simulate", TINY, "--policy", "fifo", "--param", "backfill=maybe"], "backfill"),
    (["simulate", TINY, "--policy", "a-srpt", "--param", "adaptive=triple"], "adaptive"),
    (["simulate", TINY, "--policy", "2d-las", "--param", "thresholds_gpu_s=5,1"], "thresholds"),
    (
        ["simulate", TINY, "--policy", "fifo", "--param", "max_placement_slowdown=0.5"],
        "max_placement_slowdown",
    ),
    (["simulate", "missing.json"], "missing.json"),
    (["validate", "/"], "/"),
    (["place", TINY, "--time-limit", "-1"], "--time-limit"),
    (["place", TINY, "--time-limit", "nan"], "--time-limit"),
    (["place", TINY, "--methods", "ilp,teleport"], "placement method"),
    (["place", TINY, "--free-gpus", "1,x"], "--free-gpus"),
    (["place", TINY, "--free-gpus", "1,2,3"], "--free-gpus"),
    (["place", TINY, "--free-gpus", "9,9"], "--free-gpus"),
    (["place", TINY, "--seed", "-3"], "--seed"),
    (["graph", "resnet5000"], "resnet5000"),
    (["graph", "resnet50", "--parallelism", "1,1"], "--parallelism"),
    (["graph", "resnet50", "--parallelism", "0,1,1"], "--parallelism"),
    (["graph", "resnet50", "--inter-gbps", "0"], "--inter-gbps"),
    (["graph", "resnet50", "--method", "teleport"], "--method"),
    (["solve", TINY, "--time-limit", "0"], "--time-limit"),
    (["solve", TINY, "--time-limit", "inf"], "--time-limit"),
    (["solve", TINY, "--solver", "gurobi"], "--solver"),
    (["solve", TINY, "--cluster-model", "mesh"], "--cluster-model"),
    (["solve", TINY, "--preset", "missing.toml"], "missing.toml"),
    (["worst-case", "--budget", "inf"], "--budget"),
    (["worst-case", "--budget", "0"], "--budget"),
    (["worst-case", "--budget", "-1"], "--budget"),
    (["worst-case", "--budget", "nan"], "--budget"),
    (["worst-case", "--budget", "soon"], "--budget"),
    (["worst-case", "--n", "0"], "--n"),
    (["worst-case", "--policy", "lifo"], "--policy"),
    (["worst-case", "--family", "weird"], "--family"),
    (["ratio", "--n", "0"], "--n"),
    (["ratio", "--seeds", "-2"], "--seeds"),
    (["ratio", "--workers", "0"], "--workers"),
    (["ratio", "--family", "weird"], "--family"),
    (["ratio", "--policies", ",,"], "policy"),
    (["ratio", "--policies", "fifo,lifo"], "lifo"),
    (["ratio", "--executor", "mpi"], "--executor"),
    (["ratio", "--time-limit", "-5"], "--time-limit"),
    (["sensitivity", TINY, "--mu", "inf"], "--mu"),
    (["sensitivity", TINY, "--mu", "0.5"], "--mu"),
    (["sensitivity", TINY, "--mu", "x"], "--mu"),
    (["sensitivity", TINY, "--policies", "lifo"], "lifo"),
    (["predict", "recurring:x"], "recurring:x"),
    (["predict", "recurring", "--windows", "1"], "--windows"),
    (["predict", "recurring", "--predictors", "crystal"], "crystal"),
    (["replay", TINY, "--policies", "lifo"], "lifo"),
    (["replay", TINY, "--refit-every", "0"], "--refit-every"),
    (["replay", TINY, "--predictor", "crystal"], "--predictor"),
    (["demo", "--n-jobs", "0"], "--n-jobs"),
    (["demo", "--n-jobs", "-1"], "--n-jobs"),
    (["demo", "--cluster", "8y8"], "--cluster"),
    (["demo", "--cluster", "1000000000x8"], "--cluster"),
    (["demo", "--cluster", "0x8"], "--cluster"),
    (["demo", "--cluster", "8,0"], "--cluster"),
    (["import", "gavel", TINY, "-o", "/tmp/x.json", "--n-jobs", "0"], "--n-jobs"),
    (["import", "slurm", TINY, "-o", "/tmp/x.json"], "slurm"),
    (["import", "gavel", "missing.trace", "-o", "/tmp/x.json"], "missing.trace"),
    (["import", "gavel", TINY, "-o", "/tmp/x.json", "--map-models", "x"], "--map-models"),
    (["import", "gavel", TINY, "-o", "/tmp/x.json", "--inter-gbps", "-1"], "--inter-gbps"),
]


@pytest.mark.parametrize(("argv", "words"), ARGS, ids=[" ".join(a[:4]) for a, _ in ARGS])
def test_bad_argument(capsys, argv, words):
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert err.startswith("asrpt-opt: error: "), err
    assert words in err, err


PRESETS = [
    ("threads = 1.5", "threads"),
    ("threads = 0", "threads"),
    ('threads = "two"', "threads"),
    ("time_limit_s = -1", "time_limit_s"),
    ("time_limit_s = inf", "time_limit_s"),
    ("time_limit_s = nan", "time_limit_s"),
    ('time_limit_s = "fast"', "time_limit_s"),
    ("relative_gap = 1.5", "relative_gap"),
    ("seed = -1", "seed"),
    ("seed = 1.5", "seed"),
    ("colour = 1", "unknown key 'colour'"),
    ("threads = ", "invalid TOML"),
    ("[section\n", "invalid TOML"),
]


@pytest.mark.parametrize(("text", "words"), PRESETS, ids=[p[0] for p in PRESETS])
def test_bad_preset(tmp_path, capsys, text, words):
    preset = tmp_path / "p.toml"
    preset.write_text(text + "\n")
    status = main(["solve", TINY, "--preset", str(preset)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert err.startswith(f"asrpt-opt: error: {preset}"), err
    assert words in err, err
