"""Per-job tables: one row per job, numbers equal to the schedule's, CSV and Parquet."""

from __future__ import annotations

import csv
import json

import pytest

from asrpt_opt.cli import main
from asrpt_opt.datasets import list_examples, load_example
from asrpt_opt.policies import PRIMARY, simulate
from asrpt_opt.sim.tables import PER_JOB_COLUMNS, Table, concat, to_frame, write_table

FAST = ["tiny-abstract", "tiny-example", "p07-two-servers"]
# Placement instances hold DNN jobs for `place`, with clusters sized for one job at a time.
SLOW = [n for n in list_examples() if n not in FAST]


def _check_cli_table(tmp_path, capsys, name: str, policy: str) -> None:
    path = tmp_path / f"{name}-{policy}.csv"
    argv = ["simulate", name, "--policy", policy, "--json", "--per-job", str(path)]
    assert main(argv) == 0
    schedule = json.loads(capsys.readouterr().out)["jobs"]
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == PER_JOB_COLUMNS
    assert [r["id"] for r in rows] == [j["id"] for j in schedule]
    for row, job in zip(rows, schedule, strict=True):
        assert row["policy"] == policy
        assert float(row["completion_s"]) == job["completion_s"]
        assert float(row["first_start_s"]) == job["segments"][0]["start_s"]
        assert float(row["jct_s"]) == pytest.approx(job["completion_s"] - job["release_s"])
        assert int(row["preemptions"]) == len(job["segments"]) - 1
        used = {s for seg in job["segments"] for s in seg["gpus"]}
        assert int(row["servers_used"]) == len(used)
        assert float(row["placement_slowdown"]) >= 1.0 - 1e-9


@pytest.mark.parametrize("policy", PRIMARY)
@pytest.mark.parametrize("name", FAST)
def test_per_job_csv_matches_the_json_schedule(tmp_path, capsys, name, policy):
    _check_cli_table(tmp_path, capsys, name, policy)


@pytest.mark.slow
@pytest.mark.parametrize("policy", PRIMARY)
@pytest.mark.parametrize("name", SLOW)
def test_per_job_csv_matches_on_every_bundled_instance(tmp_path, capsys, name, policy):
    _check_cli_table(tmp_path, capsys, name, policy)


def test_hand_computed_rows():
    inst = load_example("tiny-abstract")
    result = simulate(inst, "fifo")
    table = result.per_job()
    assert len(table) == inst.n_jobs
    first = dict(zip(table.columns, table.rows[0], strict=True))
    run = result.schedule.runs[0]
    assert first["id"] == inst.jobs[0].id
    assert first["completion_s"] == run.completion_s
    assert first["work"] == inst.jobs[0].duration_s
    assert first["predicted_work"] == inst.jobs[0].duration_s  # the oracle's prediction
    assert first["cross_server_bytes"] is None  # abstract jobs have no worker graph


def test_dnn_jobs_report_cross_server_bytes():
    inst = load_example("tiny-example")
    table = simulate(inst, "a-srpt").per_job()
    dnn = [j for j, job in enumerate(inst.jobs) if not job.is_abstract]
    assert dnn
    for j in dnn:
        assert table.column("cross_server_bytes")[j] is not None


def test_parquet_and_frames_keep_types(tmp_path):
    pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    inst = load_example("tiny-abstract")
    tables = [simulate(inst, p).per_job() for p in ("a-srpt", "fifo")]
    both = concat(tables)
    write_table(both, tmp_path / "t.parquet")
    frame = pd.read_parquet(tmp_path / "t.parquet")
    assert list(frame.columns) == list(PER_JOB_COLUMNS)
    assert len(frame) == 2 * inst.n_jobs
    assert frame["gpus"].dtype.kind == "i"
    assert frame["completion_s"].dtype.kind == "f"
    assert to_frame(both).equals(frame)


def test_a_table_written_elsewhere_is_refused():
    from asrpt_opt.errors import UsageError

    with pytest.raises(UsageError, match=r"\.csv or \.parquet"):
        write_table(Table(columns=("a",), rows=((1,),)), "t.xlsx")
    with pytest.raises(ValueError, match="row 0"):
        Table(columns=("a", "b"), rows=((1,),))


def test_cli_refuses_a_bad_per_job_path_before_simulating(capsys):
    assert main(["simulate", "tiny-abstract", "--per-job", "jobs.txt"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--per-job" in err


def test_export_a_ratio_store(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    argv = ["ratio", "--family", "single", "--n", "3", "--seeds", "2", "--store", str(store)]
    assert main([*argv, "--policies", "a-srpt,fifo", "--executor", "serial"]) == 0
    capsys.readouterr()
    out = tmp_path / "rows.csv"
    assert main(["export", str(store), "-o", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 4
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["policy"] for r in rows} == {"a-srpt", "fifo"}
    for r in rows:
        assert float(r["ratio_lo"]) <= float(r["ratio_hi"])
        if r["exact"] == "True":
            assert float(r["opt_s"]) == float(r["lower_bound_s"])
            assert float(r["ratio_lo"]) == pytest.approx(float(r["value_s"]) / float(r["opt_s"]))
