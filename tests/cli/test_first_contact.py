"""A newcomer's first contact with the command line: no command, a misspelt name, two
outputs asked at once."""

from __future__ import annotations

import pytest

from asrpt_opt.cli import main
from asrpt_opt.cli.main import COMMANDS


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_no_command_exits_2_and_lists_every_command(capsys):
    status, out, err = run(capsys)
    assert status == 2
    assert out == ""
    assert err.startswith("asrpt-opt: error: no command given\n")
    for name, (_, line) in COMMANDS.items():
        assert f"  {name} " in err
        assert line in err


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["simulat", "tiny-abstract"], "did you mean 'simulate'?"),
        (["simulate", "tiny-abstract", "--policy", "a-srp"], "did you mean 'a-srpt'?"),
        (["simulate", "tiny-abstract", "--policy", "serverfiling-srpt"], "'serverfilling-srpt'"),
    ],
)
def test_a_misspelt_name_gets_the_closest_one(capsys, argv, suggestion):
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert suggestion in err
    assert len(err.strip().splitlines()) == 1


def test_a_name_far_from_every_choice_gets_no_guess(capsys):
    status, _, err = run(capsys, "simulate", "tiny-abstract", "--policy", "zzzzzz")
    assert status == 2
    assert "did you mean" not in err


@pytest.mark.parametrize("style", ["csv", "markdown", "latex", "table"])
def test_json_and_another_format_are_refused(capsys, style):
    status, out, err = run(capsys, "simulate", "tiny-abstract", "--json", "--format", style)
    assert status == 2
    assert out == ""
    assert f"--json and --format {style}" in err


@pytest.mark.parametrize(
    "argv", [["--json"], ["--format", "json"], ["--json", "--format", "json"]]
)
def test_json_spelt_either_way_prints_json(capsys, argv):
    status, out, _ = run(capsys, "simulate", "tiny-abstract", *argv)
    assert status == 0
    assert out.startswith('{"policy":"a-srpt"')


def test_format_csv_prints_the_table_alone(capsys):
    status, out, _ = run(capsys, "simulate", "tiny-abstract", "--format", "csv")
    assert status == 0
    assert out.splitlines()[0] == "metric,value"


def test_ratio_says_where_it_keeps_its_results(capsys, tmp_path):
    store = tmp_path / "r.sqlite"
    argv = ["ratio", "--family", "poisson", "--n", "3", "--seeds", "1", "--policies", "fifo"]
    assert main([*argv, "--store", str(store)]) == 0
    err = capsys.readouterr().err
    assert f"results are kept in {store}" in err
    assert "resuming" not in err
    assert main([*argv, "--store", str(store)]) == 0
    assert "resuming" in capsys.readouterr().err
