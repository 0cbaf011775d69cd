"""--format for every table, one number format per column, progress lines and -q."""

from __future__ import annotations

import csv
import io

import pytest

from asrpt_opt.cli import main
from asrpt_opt.cli._output import Progress, Ticker, set_quiet, table


@pytest.fixture(autouse=True)
def _loud():
    set_quiet(False)
    yield
    set_quiet(False)


def test_csv_puts_only_the_table_on_stdout(capsys, tmp_path):
    argv = ["replay", "tiny-abstract", "--policies", "a-srpt,fifo", "--out", str(tmp_path)]
    assert main([*argv, "--format", "csv"]) == 0
    out = capsys.readouterr()
    rows = list(csv.reader(io.StringIO(out.out)))
    assert rows[0][:3] == ["policy", "mean JCT h", "p95 JCT h"]
    assert [r[0] for r in rows[1:]] == ["a-srpt", "fifo"]
    assert float(rows[1][1]) > 0  # full precision, no thousands separators
    assert "tiny-abstract" in out.err  # the other lines went to stderr


@pytest.mark.parametrize(
    ("style", "start"),
    [("markdown", "| policy |"), ("latex", "\\begin{tabular}"), ("table", "policy")],
)
def test_every_style_prints_the_table(capsys, tmp_path, style, start):
    argv = ["replay", "tiny-abstract", "--policies", "fifo", "--out", str(tmp_path)]
    assert main([*argv, "--format", style]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0] if style != "table" else out.splitlines()[1]
    assert first.startswith(start), out


def test_json_format_is_json(capsys):
    import json

    assert main(["relax", "tiny-abstract", "--format", "json"]) == 0
    assert "lower_bound_s" in json.loads(capsys.readouterr().out)


def test_one_number_format_per_column():
    text = table(("policy", "mean"), [("a", 62.059), ("b", 104.8), ("c", 7.0)])
    cells = [line.split()[1] for line in text.splitlines()[2:]]
    assert cells == ["62.1", "104.8", "7.0"]
    # key-value tables keep a format per cell
    text = table(("k", "v"), [("a", 0.5), ("b", 123456.0)], per_column=False)
    assert "0.500" in text
    assert "123,456" in text


def test_latex_escapes_and_markdown_aligns():
    from asrpt_opt.cli._output import reset_table_style, set_table_style

    set_table_style("latex")
    try:
        text = table(("policy_name", "x"), [("a_b", 1.5)])
    finally:
        reset_table_style()
    assert "policy\\_name" in text
    assert "a\\_b & 1.500 \\\\" in text
    set_table_style("markdown")
    try:
        text = table(("p", "x"), [("a", 1.5)])
    finally:
        reset_table_style()
    assert text.splitlines()[1] == "|---|---:|"


def test_progress_lines_when_not_a_terminal_and_silence_with_q(capsys):
    progress = Progress("work", every_s=0.0)
    progress(1, 3, "best 1.2")
    err = capsys.readouterr().err
    assert err.startswith("work: 1/3 done")
    assert "best 1.2" in err
    set_quiet(True)
    Progress("work", every_s=0.0)(1, 3)
    with Ticker(lambda t: "tick", every_s=0.01):
        pass
    assert capsys.readouterr().err == ""


def test_ticker_says_something_while_it_runs(capsys):
    import time

    with Ticker(lambda t: f"still here {t:.0f}", every_s=0.02):
        time.sleep(0.1)
    assert "still here" in capsys.readouterr().err


def test_quiet_flag_before_or_after_the_command(capsys):
    assert main(["-q", "relax", "tiny-abstract"]) == 0
    assert main(["relax", "tiny-abstract", "-q"]) == 0
    assert main(["relax", "tiny-abstract", "-v"]) == 0
    capsys.readouterr()
