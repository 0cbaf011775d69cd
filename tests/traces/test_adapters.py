"""Trace adapters on small fixtures in each trace's real layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asrpt_opt.errors import InstanceError, UnknownNameError
from asrpt_opt.model import load_instance
from asrpt_opt.traces.importers import TRACE_FORMATS, import_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
CASES = {
    # format: (source, kept jobs as (id, release, gpus, duration), bad-row words, skipped key)
    "tiresias": (
        DATA / "tiresias_job.csv",
        [("1", 0.0, 1, 3600.0), ("2", 120.0, 4, 7200.0), ("6", 400.0, 2, 1800.0)],
        ["line 4: num_gpu 'two' is not a number", "line 6: run time -5.0 s"],
        "rows_skipped_no_gpus",
    ),
    "philly": (
        DATA / "philly_cluster_job_log.json",
        [
            ("application_1506638472019_10238", 0.0, 4, 3600.0),
            ("application_1506638472019_10241", 2040.0, 1, 900.0),
        ],
        ["line 3: end_time is missing"],
        "rows_skipped_never_started",
    ),
    "helios": (
        DATA / "helios_cluster_log.csv",
        [("1", 0.0, 8, 7200.0), ("3", 110.0, 2, 600.0)],
        # Line 6 was cancelled with 0 s of run time: never started, not a bad row.
        ["line 5: submit_time 'yesterday'"],
        "rows_skipped_cpu_only",
    ),
    "pai": (
        DATA / "pai",
        [("job_a", 0.0, 2, 3600.0), ("job_b", 1000.0, 1, 600.0), ("job_e", 3000.0, 8, 7200.0)],
        ["line 4: start_time and end_time are required"],
        "rows_skipped_no_gpus",
    ),
}


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_adapter_reads_fixture_and_reports_bad_rows(fmt):
    source, expected, words, skip_key = CASES[fmt]
    errors: list[str] = []
    inst = import_trace(fmt, source, servers=(8, 8), errors=errors)
    assert [(j.id, j.release_s, j.gpus, j.duration_s) for j in inst.jobs] == expected
    assert len(errors) == len(words)
    for message, w in zip(errors, words, strict=True):
        assert w in message
        assert message.count(":") >= 2  # file: line N: reason
    assert inst.provenance["rows_skipped_bad"] == len(words)
    assert inst.provenance[skip_key] == 1
    assert "duration_s = run time" in inst.provenance["imputation"]


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_strict_mode_stops_at_the_first_bad_row(fmt):
    source, _, words, _ = CASES[fmt]
    with pytest.raises(InstanceError, match=words[0].split(":")[0]):
        import_trace(fmt, source, servers=(8, 8))


def test_too_wide_jobs_are_reported_not_dropped():
    errors: list[str] = []
    inst = import_trace("helios", DATA / "helios_cluster_log.csv", servers=(4,), errors=errors)
    assert [j.id for j in inst.jobs] == ["3"]
    assert any("needs 8 GPUs, the cluster has 4" in e for e in errors)


def test_bad_files():
    with pytest.raises(UnknownNameError, match="unknown trace format"):
        import_trace("slurm", DATA)
    with pytest.raises(InstanceError, match="cannot read file"):
        import_trace("helios", DATA / "missing.csv")
    assert set(TRACE_FORMATS) == {"gavel", "pollux", "tiresias", "philly", "helios", "pai"}


def test_cli_import_every_format(tmp_path, capsys):
    from asrpt_opt.cli import main

    for fmt, (source, expected, words, _) in CASES.items():
        out = tmp_path / f"{fmt}.json"
        assert (
            main(["import", fmt, str(source), "-o", str(out), "--cluster", "2x8", "--json"]) == 0
        )
        data = json.loads(capsys.readouterr().out)
        assert data["jobs"] == len(expected)
        assert data["bad_rows"] == len(words)
        assert load_instance(out).n_jobs == len(expected)
        assert main(["import", fmt, str(source), "-o", str(out), "--strict"]) == 2
        assert "line" in capsys.readouterr().err


def test_map_models_makes_dnn_jobs_with_imputed_iterations(tmp_path, capsys):
    from asrpt_opt.cli import main
    from asrpt_opt.model.dnn import load_model
    from asrpt_opt.model.workers import worker_graph

    out = tmp_path / "m.json"
    assert (
        main(
            [
                "import",
                "tiresias",
                str(CASES["tiresias"][0]),
                "-o",
                str(out),
                "--cluster",
                "2x8",
                "--map-models",
                "resnet50=resnet50,vgg16=vgg16",
                "--json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    inst = load_instance(out)
    first, second, third = inst.jobs
    assert (first.model, second.model, third.model) == ("resnet50", "vgg16", None)
    import numpy as np

    tau = worker_graph(load_model("vgg16"), second.parallelism).iteration_time(
        np.zeros(4, dtype=np.int64), intra_gbps=300.0, inter_gbps=12.5
    )
    assert second.iterations == round(7200.0 / tau)
    assert inst.provenance["mapped_jobs"] == 2
    assert (
        main(
            [
                "import",
                "tiresias",
                str(CASES["tiresias"][0]),
                "-o",
                str(out),
                "--map-models",
                "resnet50=resnet5000",
            ]
        )
        == 2
    )
    assert "unknown model 'resnet5000'" in capsys.readouterr().err
    assert (
        main(
            [
                "import",
                "tiresias",
                str(CASES["tiresias"][0]),
                "-o",
                str(out),
                "--map-models",
                "resnet50",
            ]
        )
        == 2
    )


def test_a_bad_byte_a_form_feed_and_a_huge_field_spoil_only_their_rows(tmp_path):

    rows = [
        b"job_id,num_gpu,submit_time,iterations,model_name,duration,interval",
        b"1,1,0,1000,resnet50,3600,0",
        b"2,1,10,1000,res\xffnet,3600,0",  # not UTF-8
        b'3,1,20,1000,"res\x0cnet\xe2\x80\xa8x",3600,0',  # form feed and U+2028 inside a field
        b"4,1,30,1000," + b"m" * 2_000_000 + b",3600,0",  # a field over the limit
        b"5,2,40,1000,vgg16,60,0",
    ]
    path = tmp_path / "jobs.csv"
    path.write_bytes(b"\n".join(rows) + b"\n")
    errors: list[str] = []
    inst = import_trace("tiresias", path, servers=(4,), errors=errors)
    assert [j.id for j in inst.jobs] == ["1", "3", "5"]
    assert len(errors) == 2
    assert f"{path}: line 3: is not UTF-8 text" in errors[0]
    assert f"{path}: line 5: unreadable CSV record" in errors[1]


def test_gavel_and_pollux_rows_with_bad_bytes_are_bad_rows(tmp_path):
    from asrpt_opt.traces.gavel import read_gavel_trace
    from asrpt_opt.traces.pollux import read_pollux_workload

    gavel = tmp_path / "t.trace"
    good = b"ResNet-50 (batch size 64)\tcmd\t1\t0\t100\t0\t1"
    gavel.write_bytes(good + b"\n" + good.replace(b"cmd", b"c\xffmd") + b"\n" + good + b"\n")
    errors: list[str] = []
    assert len(read_gavel_trace(gavel, errors=errors)) == 2
    assert errors == [f"{gavel}: line 2: is not UTF-8 text"]
    pollux = tmp_path / "w.csv"
    pollux.write_bytes(
        b"name,time,application,num_replicas,batch_size\n"
        b"a,0,cifar10,1,128\nb\xfe,1,cifar10,1,128\nc,2,bert,2,64\n"
    )
    errors = []
    assert [r.name for r in read_pollux_workload(pollux, errors=errors)] == ["a", "c"]
    assert errors == [f"{pollux}: line 3: is not UTF-8 text"]
