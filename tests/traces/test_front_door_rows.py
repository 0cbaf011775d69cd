"""What a newcomer meets importing traces: an import where every row is bad says why, a
byte-order mark costs nothing, and Helios jobs cancelled while queued are counted as never
started, not as bad rows."""

from __future__ import annotations

import json

from asrpt_opt.cli import main

TIRESIAS_HEADER = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
HELIOS_HEADER = (
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
    "duration,queue\n"
)


def test_an_import_with_no_good_row_quotes_the_first_bad_rows(tmp_path, capsys):
    trace = tmp_path / "bad.csv"
    rows = ["j1,x,0,1,m,5,0", "j2,1,0,1,m,-1,0", "j3,1,0,1,m,abc,0", "j4,1,0,1,m,0,0"]
    trace.write_text(TIRESIAS_HEADER + "\n".join(rows) + "\n")
    assert main(["import", "tiresias", str(trace), "-o", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "no GPU job left to import (4 bad rows, the first:" in err
    assert "line 2: num_gpu 'x' is not a number" in err
    assert "line 4: duration 'abc'" in err
    assert "(and 1 more)" in err
    assert not (tmp_path / "o.json").exists()


def test_a_byte_order_mark_loses_no_job(tmp_path, capsys):
    trace = tmp_path / "bom.csv"
    body = TIRESIAS_HEADER + "j1,1,0,1,m,5,0\nj2,1,1,1,m,1,0\nj3,1,2,1,m,2,0\n"
    trace.write_bytes(b"\xef\xbb\xbf" + body.encode())
    out = tmp_path / "bom.json"
    assert main(["import", "tiresias", str(trace), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["jobs"] == 3
    assert report["bad_rows"] == 0
    assert [j["id"] for j in json.loads(out.read_text())["jobs"]] == ["j1", "j2", "j3"]


def test_helios_jobs_cancelled_while_queued_are_never_started(tmp_path, capsys):
    trace = tmp_path / "cluster_log.csv"
    trace.write_text(
        HELIOS_HEADER
        + "h1,u,v,1,1,1,CANCELLED,2020-01-01 00:00:00,,,0,10\n"
        + "h2,u,v,2,1,1,COMPLETED,2020-01-01 00:00:10,2020-01-01 00:00:20,"
        + "2020-01-01 00:01:20,60,10\n"
        + "h3,u,v,4,1,1,CANCELLED,2020-01-01 00:00:30,2020-01-01 00:00:30,"
        + "2020-01-01 00:00:30,0,0\n"
    )
    out = tmp_path / "h.json"
    assert main(["import", "helios", str(trace), "-o", str(out), "--strict"]) == 0
    doc = json.loads(out.read_text())
    assert [j["id"] for j in doc["jobs"]] == ["h2"]
    assert doc["provenance"]["rows_skipped_never_started"] == 2
    assert doc["provenance"]["rows_skipped_bad"] == 0
