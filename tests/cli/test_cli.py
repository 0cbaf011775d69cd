"""The command line: JSON contracts, tables, exit status 2 on bad input, determinism."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from asrpt_opt.cli import main

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "instances" / "examples" / "tiny-abstract.json")
DNN = str(ROOT / "instances" / "examples" / "tiny-example.json")


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_validate(capsys):
    status, out, _ = run(capsys, "validate", DNN, "--json")
    assert status == 0
    info = json.loads(out)
    assert info == {
        "valid": True,
        "name": "tiny-example",
        "n_jobs": 3,
        "abstract_jobs": 2,
        "dnn_jobs": 1,
        "servers": [4, 4],
        "total_gpus": 8,
    }
    status, out, _ = run(capsys, "validate", TINY)
    assert "valid (5 jobs" in out


def test_relax_json_keys(capsys):
    status, out, _ = run(capsys, "relax", TINY, "--json")
    data = json.loads(out)
    assert status == 0
    for key in ("srpt_area_bound_s", "release_plus_length_bound_s", "lower_bound_s"):
        assert isinstance(data[key], float)
    assert data["weighted"] is True
    assert data["lower_bound_s"] == max(
        data["release_plus_length_bound_s"], data["mean_busy_time_bound_s"]
    )
    status, out, _ = run(capsys, "relax", TINY)
    assert "lower bound on sum w_j C_j" in out
    assert "weights differ" in out


@pytest.mark.parametrize("policy", ["a-srpt", "fifo", "sjf", "srtf", "srsf", "2d-las"])
def test_simulate_json_contract(capsys, policy):
    status, out, _ = run(capsys, "simulate", TINY, "--policy", policy, "--json")
    assert status == 0
    data = json.loads(out)
    assert data["policy"] == policy
    assert {
        "total_weighted_completion_s",
        "mean_jct_s",
        "jobs",
        "metrics",
        "lower_bound_s",
    } <= set(data)
    assert [j["id"] for j in data["jobs"]] == ["j0", "j1", "j2", "j3", "j4"]
    for job in data["jobs"]:
        assert set(job) == {"id", "release_s", "completion_s", "segments"}
        for seg in job["segments"]:
            assert set(seg) == {"start_s", "end_s", "gpus"}
            assert all(k.isdigit() and v >= 1 for k, v in seg["gpus"].items())
    weights = [1, 2, 1, 1, 3]
    total = sum(w * j["completion_s"] for w, j in zip(weights, data["jobs"], strict=True))
    assert data["total_weighted_completion_s"] == pytest.approx(total)
    assert data["total_weighted_completion_s"] >= data["lower_bound_s"]


def test_simulate_table_and_gantt(capsys, tmp_path):
    png = tmp_path / "g.png"
    status, out, _ = run(
        capsys,
        "simulate",
        TINY,
        "--policy",
        "srtf",
        "--gantt",
        str(png),
        "--predictor",
        "noisy",
        "--mu",
        "2",
        "--restore-overhead",
        "0.5",
    )
    assert status == 0
    assert "mean_jct_s" in out
    assert "ratio" in out
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["simulate", "missing.json"], "missing.json: cannot read file"),
        (["simulate", TINY, "--policy", "lifo"], "unknown policy 'lifo'"),
        (["simulate", TINY, "--restore-overhead", "-1"], "argument --restore-overhead: must be"),
        (["simulate", TINY, "--predictor", "noisy", "--mu", "0.5"], "argument --mu: must be"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, words):
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert out == ""
    assert err.startswith("asrpt-opt: error: ")
    assert words in err
    assert err.count("\n") == 1


def test_bad_instance_file_through_the_real_entry_point(tmp_path):
    bad = tmp_path / "bad.json"
    doc = json.loads(Path(TINY).read_text())
    doc["jobs"][3]["gpus"] = 12
    bad.write_text(json.dumps(doc))
    proc = subprocess.run(
        [sys.executable, "-m", "asrpt_opt", "simulate", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr == f"asrpt-opt: error: {bad}: jobs[3].gpus: 12 exceeds the cluster's 8 GPUs\n"
    )
    assert "Traceback" not in proc.stderr


def test_simulate_json_is_byte_identical_across_processes():
    inst = str(ROOT / "instances" / "demo" / "gavel-philly-400.json")
    cmd = [
        sys.executable,
        "-m",
        "asrpt_opt",
        "simulate",
        inst,
        "--policy",
        "a-srpt",
        "--predictor",
        "noisy",
        "--seed",
        "3",
        "--json",
    ]
    first = subprocess.run(cmd, capture_output=True, check=True).stdout
    second = subprocess.run(cmd, capture_output=True, check=True).stdout
    assert first == second
    assert len(first) > 10000


def test_demo_writes_table_and_plots(capsys, tmp_path):
    status, out, _err = run(
        capsys, "demo", "--out", str(tmp_path / "o"), "--n-jobs", "60", "--cluster", "4x8"
    )
    assert status == 0
    for name in ("a-srpt", "fifo", "sjf", "srtf", "srsf", "2d-las"):
        assert name in out
    assert "ratio" in out
    assert str(tmp_path / "o") in out
    for png in ("comparison.png", "gantt-a-srpt.png"):
        assert (tmp_path / "o" / png).read_bytes()[:4] == b"\x89PNG"
    status, out, _ = run(capsys, "demo", "--out", str(tmp_path / "o"), "--n-jobs", "60", "--json")
    data = json.loads(out)
    assert set(data["policies"]) == {
        "a-srpt",
        "fifo",
        "sjf",
        "srtf",
        "srsf",
        "2d-las",
        "tiresias-2d-las",
        "tiresias-gittins",
        "qssf",
        "serverfilling-srpt",
        "serverfilling",
        "firstfit-srpt",
        "greedy-srpt",
        "msf",
        "easy-backfill",
        "maxweight",
        "prr",
    }
    assert all(p["ratio_to_lower_bound"] >= 1 for p in data["policies"].values())


def test_bad_cluster_argument_is_a_usage_error(capsys):
    assert main(["demo", "--cluster", "8y8"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("asrpt-opt: error: ")
    assert "invalid cluster" in err


def test_dnn_instances_simulate_and_need_bandwidths(capsys, tmp_path):
    status, out, _ = run(capsys, "simulate", DNN, "--policy", "a-srpt", "--json")
    assert status == 0
    assert json.loads(out)["jobs"][2]["id"] == "c"
    doc = json.loads(Path(DNN).read_text())
    del doc["cluster"]["inter_server_gbps"]
    bad = tmp_path / "nobw.json"
    bad.write_text(json.dumps(doc))
    status, _, err = run(capsys, "simulate", str(bad))
    assert status == 2
    assert "needs intra_server_gbps and inter_server_gbps" in err
    doc = json.loads(Path(DNN).read_text())
    doc["jobs"][2]["model"] = "resnet5000"
    bad.write_text(json.dumps(doc))
    status, _, err = run(capsys, "validate", str(bad))
    assert status == 2
    assert "jobs[2].model: unknown model 'resnet5000'" in err


def test_tiered_instances_simulate_with_a_fragmentation_aware_choice(capsys):
    tiered = str(ROOT / "instances" / "examples" / "tiers-2level-3to1.json")
    argv = ["simulate", tiered, "--policy", "fifo", "--placement", "mincut", "--json"]
    status, out, _ = run(capsys, *argv, "--placement-choice", "fragmentation")
    assert status == 0
    assert json.loads(out)["placement"] == "mincut+fragmentation"
    status, _, err = run(capsys, *argv, "--placement-choice", "tidy")
    assert status == 2
    assert "fragmentation" in err
    status, _, err = run(capsys, *argv, "--placement-tolerance", "-1")
    assert status == 2
    assert "--placement-tolerance" in err


def test_cli_reference_is_current():
    import argparse
    import re
    import sys

    from asrpt_opt.cli import build_parser
    from asrpt_opt.cli.reference import cli_reference

    text = (ROOT / "docs" / "cli.md").read_text()
    if sys.version_info[:2] == (3, 11):  # argparse's layout differs between Python versions
        assert text == cli_reference(), (
            "regenerate: python -m asrpt_opt.cli.reference > docs/cli.md"
        )
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    documented = set(re.findall(r"^## `asrpt-opt ([\w-]+)`", text, flags=re.M))
    assert documented == set(sub.choices)
    for name, child in sub.choices.items():
        section = text.split(f"## `asrpt-opt {name}`", 1)[1].split("\n## ", 1)[0]
        for action in child._actions:
            if action.help == argparse.SUPPRESS:  # deprecated spellings, kept one release
                continue
            for option in action.option_strings:
                assert option in section, f"{name}: {option} missing from docs/cli.md"


def test_a_library_bug_is_not_reported_as_bad_input(capsys, monkeypatch):
    import asrpt_opt.cli.simulate as commands

    def broken(*args, **kwargs):
        raise RuntimeError("an internal inconsistency")

    monkeypatch.setattr(commands, "simulate", broken)
    status, out, err = run(capsys, "simulate", TINY)
    assert status == 1
    assert out == ""
    assert "Traceback" in err
    assert "RuntimeError: an internal inconsistency" in err
    assert "please report it" in err
    assert "asrpt-opt: error:" not in err


def test_usage_errors_are_one_line(capsys):
    status, out, err = run(capsys, "simulate", TINY, "--policy", "lifo")
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("asrpt-opt: error: asrpt-opt simulate: argument --policy: ")
    assert "unknown policy 'lifo' (known: 2d-las, a-srpt, easy-backfill, fifo" in err


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            ["solve", TINY, "--placement", "server-local"],
            ["solve", TINY, "--cluster-model", "server-local"],
        ),
        (["solve", TINY, "--backend", "cpsat"], ["solve", TINY, "--solver", "cpsat"]),
    ],
)
def test_old_flags_still_work_with_a_deprecation_warning(capsys, old, new):
    status, out_old, err = run(capsys, *old, "--json")
    assert status == 0
    assert "is deprecated here" in err
    assert ("--cluster-model" in err) or ("--solver" in err)
    status, out_new, err_new = run(capsys, *new, "--json")
    assert status == 0
    assert "deprecated" not in err_new
    drop = lambda text: {k: v for k, v in json.loads(text).items() if k != "wall_s"}  # noqa: E731
    assert drop(out_old) == drop(out_new)


def test_ratio_backend_flag_is_the_executor(capsys, tmp_path):
    args = ["ratio", "--family", "single", "--n", "3", "--seeds", "2", "--policies", "fifo"]
    status, out, err = run(
        capsys, *args, "--backend", "loky", "--store", str(tmp_path / "a"), "--json"
    )
    assert status == 0
    assert "use --executor" in err
    config = json.loads(out)["config"]
    assert config["solver"] == config["backend"] == "portfolio"


def test_help_shows_defaults_and_a_result_repr_is_short(capsys):
    from asrpt_opt.model import load_instance
    from asrpt_opt.policies import simulate

    assert main(["solve", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--time-limit S" in out
    assert "(default: portfolio" in out or "default portfolio" in out
    text = repr(simulate(load_instance(TINY), "fifo"))
    assert text.startswith("SimulationResult(policy='fifo'")
    assert len(text) < 200


@pytest.mark.slow  # simulates and draws 2,000 jobs for every policy (about 10 s)
def test_demo_says_when_the_trace_has_fewer_jobs_than_asked(capsys, tmp_path):
    status = main(
        ["demo", "--n-jobs", "2500", "--cluster", "16x8", "--out", str(tmp_path), "--json"]
    )
    assert status == 0
    assert "the bundled trace holds 2000 jobs" in capsys.readouterr().err
