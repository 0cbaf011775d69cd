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


# ---------------------------------------------------------------- trace files, all six formats
_GAVEL_ROW = (
    "ResNet-18 (batch size 64)\tcd x && python3 main.py\t-n\t1\t{steps}\t{arrival}\t{gpus}"
)
_TRACE_BASE = {
    "tiresias": (
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
        "1,1,0,100,resnet,3600,0\n{row}\n"
    ),
    "helios": (
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
        "duration,queue\n"
        "1,u,v,2,8,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 01:00:00,"
        "3600,0\n{row}\n"
    ),
    "pai": "job_a,worker,1,Terminated,1000,4600,600,29.3,100,V100\n{row}\n",
    "gavel": _GAVEL_ROW.format(steps=1000, arrival=0.0, gpus=1) + "\n{row}\n",
    "pollux": (
        "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,2,128\n{row}\n"
    ),
}
_HELIOS_OK = "2,u,v,1,8,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 01:00:00"

# (format, bad second data row, words the one error line must contain besides file and line)
TRACE_ROWS = [
    ("tiresias", "2,1,0,100,resnet", "expected 7 columns"),
    ("tiresias", "2,two,0,100,resnet,3600,0", "num_gpu 'two'"),
    ("tiresias", "2,1.5,0,100,resnet,3600,0", "num_gpu '1.5'"),
    ("tiresias", "2,-1,0,100,resnet,3600,0", "num_gpu '-1'"),
    ("tiresias", "2,1,soon,100,resnet,3600,0", "submit_time 'soon'"),
    ("tiresias", "2,1,nan,100,resnet,3600,0", "submit_time 'nan'"),
    ("tiresias", "2,1,inf,100,resnet,3600,0", "submit_time 'inf'"),
    ("tiresias", "2,1,0,100,resnet,-5,0", "run time -5.0 s"),
    ("tiresias", "2,1,0,100,resnet,0,0", "run time 0.0 s"),
    ("tiresias", "2,1,0,100,resnet,1e999,0", "duration '1e999'"),
    ("tiresias", "2,1,0,100,resnet,\udcff,0", "not UTF-8"),
    ("tiresias", '2,1,0,100,"' + "x" * 1_100_000 + '",3600,0', "unreadable CSV record"),
    ("tiresias", "2,64,0,100,resnet,3600,0", "needs 64 GPUs"),
    ("helios", _HELIOS_OK, "expected 12 columns"),
    ("helios", _HELIOS_OK + ",3600,0,extra", "expected 12 columns"),
    ("helios", _HELIOS_OK.replace(",1,8,", ",x,8,") + ",3600,0", "gpu_num 'x'"),
    ("helios", _HELIOS_OK.replace("2020-04-01 00:00:00", "yesterday", 1) + ",3600,0", "yesterday"),
    (
        "helios",
        _HELIOS_OK.replace("2020-04-01 00:00:00", "2020-13-01 00:00:00", 1) + ",3600,0",
        "2020-13-01",
    ),
    (
        "helios",
        _HELIOS_OK.replace("2020-04-01 00:00:00", "2020-4-1 0:0:0", 1) + ",3600,0",
        "2020-4-1",
    ),
    ("helios", _HELIOS_OK.replace("2020-04-01 00:00:00", "", 1) + ",3600,0", "is missing"),
    ("helios", _HELIOS_OK + ",-1,0", "run time -1.0 s"),
    ("helios", _HELIOS_OK + ",NaN,0", "duration 'NaN'"),
    ("helios", _HELIOS_OK.replace(",1,8,", ",99,8,") + ",3600,0", "needs 99 GPUs"),
    ("helios", _HELIOS_OK.replace("u,v", "u\udcfe,v") + ",3600,0", "not UTF-8"),
    ("pai", "job_b,worker,1,Terminated,2000,,600,29.3,100,V100", "start_time and end_time"),
    ("pai", "job_b,worker,1,Terminated,2000", "expected 10 columns"),
    ("pai", "job_b,worker,x,Terminated,2000,2600,600,29.3,100,V100", "inst_num 'x'"),
    ("pai", "job_b,worker,-1,Terminated,2000,2600,600,29.3,100,V100", "must be >= 0"),
    ("pai", "job_b,worker,1,Terminated,2000,2600,600,29.3,-50,V100", "must be >= 0"),
    ("pai", "job_b,worker,1,Terminated,2000,2600,600,29.3,lots,V100", "plan_gpu 'lots'"),
    ("pai", "job_b,worker,1,Terminated,later,2600,600,29.3,100,V100", "start_time 'later'"),
    ("pai", "job_b,worker,1,Terminated,2600,2000,600,29.3,100,V100", "runs -600"),
    ("pai", "job_b,worker,1,Terminated,2000,2600,600,29.3,100000,V100", "needs 1000 GPUs"),
    ("gavel", "ResNet-18 (batch size 64)\tcmd\t-n\t1\t1000\t5", "expected 7 tab-separated"),
    ("gavel", _GAVEL_ROW.format(steps="many", arrival=5, gpus=1), "bad number"),
    ("gavel", _GAVEL_ROW.format(steps=0, arrival=5, gpus=1), "must be >= 1"),
    ("gavel", _GAVEL_ROW.format(steps=10, arrival=-5, gpus=1), "arrival >= 0"),
    ("gavel", _GAVEL_ROW.format(steps=10, arrival="nan", gpus=1), "arrival >= 0"),
    ("gavel", _GAVEL_ROW.format(steps=10, arrival=5, gpus=0), "must be >= 1"),
    ("gavel", _GAVEL_ROW.format(steps=10, arrival=5, gpus=1.5), "bad number"),
    ("gavel", _GAVEL_ROW.format(steps=10, arrival=5, gpus=64), "64"),
    ("gavel", "Unknown model (batch size 1)\tcmd\t-n\t1\t10\t5\t1", "no throughput"),
    ("gavel", _GAVEL_ROW.format(steps=10, arrival=5, gpus=1).replace("-n", "\udcff"), "UTF-8"),
    ("pollux", "cifar10-1,107,cifar10,2", "expected 5 columns"),
    ("pollux", "cifar10-1,soon,cifar10,2,128", "bad number"),
    ("pollux", "cifar10-1,-5,cifar10,2,128", "time must be >= 0"),
    ("pollux", "cifar10-1,inf,cifar10,2,128", "time must be >= 0"),
    ("pollux", "cifar10-1,107,alexnet,2,128", "unknown application 'alexnet'"),
    ("pollux", "cifar10-1,107,cifar10,0,128", "replicas and batch size >= 1"),
    ("pollux", "cifar10-1,107,cifar10,2,0", "replicas and batch size >= 1"),
    ("pollux", "cifar10-1,107,cifar10,2.5,128", "bad number"),
    ("pollux", "cifar10-1,107,cifar10,999,128", "999"),
    ("pollux", "cifar10-0,108,cifar10,2,128", "cifar10-0"),
    ("pollux", "cifar10-1,107,cifar\udcff,2,128", "UTF-8"),
]

_PHILLY_OK = {
    "jobid": "a",
    "submitted_time": "2017-10-01 00:00:00",
    "user": "u",
    "vc": "v",
    "status": "Pass",
    "attempts": [
        {
            "start_time": "2017-10-01 00:01:00",
            "end_time": "2017-10-01 01:01:00",
            "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}],
        }
    ],
}


def _philly(change):
    def make():
        job = copy.deepcopy(_PHILLY_OK)
        job["jobid"] = "b"
        change(job)
        return json.dumps([_PHILLY_OK, job])

    return make


def _attempt(key, value):
    def change(job):
        job["attempts"][0][key] = value

    return change


PHILLY_JOBS = [
    ("not-an-object", lambda: json.dumps([_PHILLY_OK, 5]), "object with a jobid"),
    ("no-jobid", _philly(lambda j: j.pop("jobid")), "object with a jobid"),
    ("attempts-not-list", _philly(lambda j: j.__setitem__("attempts", 3)), "attempts must be"),
    ("attempt-not-object", _philly(lambda j: j.__setitem__("attempts", [1])), "an attempt"),
    ("detail-int", _philly(_attempt("detail", 5)), "detail must be a list"),
    ("detail-string", _philly(_attempt("detail", "gpu0")), "detail must be a list"),
    ("detail-gpus-int", _philly(_attempt("detail", [{"gpus": 3}])), "a detail entry"),
    ("detail-entry-str", _philly(_attempt("detail", ["m1"])), "a detail entry"),
    ("end-missing", _philly(_attempt("end_time", None)), "end_time is missing"),
    ("start-bad", _philly(_attempt("start_time", "noon")), "start_time 'noon'"),
    ("end-before-start", _philly(_attempt("end_time", "2017-09-01 00:00:00")), "run time"),
    ("submit-bad", _philly(lambda j: j.__setitem__("submitted_time", 17)), "submitted_time"),
    (
        "too-wide",
        _philly(_attempt("detail", [{"gpus": [f"gpu{i}" for i in range(200)]}])),
        "needs 200 GPUs",
    ),
]

# (format, whole-file text, words): refused as a file, with or without --strict.
TRACE_FILES = [
    ("tiresias", "id,gpus\n1,1\n", "expected header"),
    ("tiresias", "", "expected header"),
    ("helios", "job_id,user\n", "expected header"),
    ("helios", "\udcff\udcfe\n", "expected header"),
    ("pollux", "name;time\n", "expected header"),
    ("philly", "{not json", "invalid JSON"),
    ("philly", '{"jobs": []}', "must be a JSON list"),
    ("philly", "[]", "no GPU job left"),
    ("philly", "[NaN]", "line 1 column 2: invalid JSON: NaN"),
    ("philly", '[{"jobid": "a", "jobid": "b"}]', "duplicate"),
    ("philly", "[" * 5000 + "]" * 5000, "nested too deeply"),
    ("helios", _TRACE_BASE["helios"].split("\n")[0] + "\n", "no GPU job left"),
    (
        "tiresias",
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
        "1,0,0,100,resnet,3600,0\n",
        "no GPU job left",
    ),
    ("gavel", "\n\n", "job left to import"),
    ("pollux", "name,time,application,num_replicas,batch_size\n", "job left to import"),
    ("pai", "", "no GPU job left"),
]


def _trace_file(tmp_path, fmt: str, text: str):
    name = {"philly": "log.json", "gavel": "t.trace", "pai": "pai_task_table.csv"}
    path = tmp_path / name.get(fmt, "trace.csv")
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    return path


def _assert_one_line(err: str, path, *words: str) -> None:
    assert "Traceback" not in err, err
    assert err.count("\n") == 1, err
    assert err.startswith(f"asrpt-opt: error: {path}"), err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize(
    ("fmt", "row", "words"), TRACE_ROWS, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(TRACE_ROWS)]
)
def test_bad_trace_row(tmp_path, capsys, fmt, row, words):
    path = _trace_file(tmp_path, fmt, _TRACE_BASE[fmt].format(row=row))
    out = tmp_path / "out.json"
    argv = ["import", fmt, str(path), "-o", str(out), "--cluster", "4x8"]
    status = main([*argv, "--strict"])
    err = capsys.readouterr().err
    assert status == 2, err
    # The bad row is the file's third line (tiresias, helios, pollux: after the header).
    line = 2 if fmt in ("pai", "gavel") else 3
    _assert_one_line(err, path, f"line {line}", words)
    assert not out.exists()
    # Without --strict the row is counted, named and skipped; the good row is kept.
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bad_rows"] == 1
    assert f"line {line}" in report["errors"][0]
    assert report["jobs"] >= 1


@pytest.mark.parametrize(("case", "make", "words"), PHILLY_JOBS, ids=[c[0] for c in PHILLY_JOBS])
def test_bad_philly_job(tmp_path, capsys, case, make, words):
    path = _trace_file(tmp_path, "philly", make())
    status = main(["import", "philly", str(path), "-o", str(tmp_path / "o.json"), "--strict"])
    err = capsys.readouterr().err
    assert status == 2, err
    _assert_one_line(err, path, "line 2", words)


@pytest.mark.parametrize(
    ("fmt", "text", "words"),
    TRACE_FILES,
    ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(TRACE_FILES)],
)
@pytest.mark.parametrize("strict", [False, True])
def test_bad_trace_file(tmp_path, capsys, fmt, text, words, strict):
    path = _trace_file(tmp_path, fmt, text)
    argv = ["import", fmt, str(path), "-o", str(tmp_path / "o.json")]
    status = main(argv + (["--strict"] if strict else []))
    err = capsys.readouterr().err
    assert status == 2, err
    _assert_one_line(err, path, words)


# ---------------------------------------------------------------- result stores
STORES = ["text", "foreign", "newer", "folder", "slash"]


@pytest.mark.parametrize("kind", STORES)
def test_bad_store(tmp_path, capsys, kind):
    import sqlite3

    from asrpt_opt.analysis.sweep import STORE_SCHEMA

    path = tmp_path / "s.sqlite"
    if kind == "text":
        path.write_text("hello\n" * 100)
    elif kind == "foreign":
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE people (name TEXT)")
    elif kind == "newer":
        with sqlite3.connect(path) as db:
            db.execute(f"PRAGMA user_version={STORE_SCHEMA + 1}")
    elif kind == "folder":
        path.mkdir()
    else:
        path = tmp_path / "dir.sqlite"
        path.mkdir()
        path = path / ""
    argv = ["ratio", "--family", "single", "--n", "2", "--seeds", "1", "--store", str(path)]
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    _assert_one_line(err, "", "store")
    assert str(path).rstrip("/") in err
