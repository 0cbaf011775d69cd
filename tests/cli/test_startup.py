"""The command line starts at once: a command's module loads only when that command runs."""

from __future__ import annotations

import json
import subprocess
import sys

from asrpt_opt.cli.main import COMMANDS, build_parser


def _subcommands(parser):
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return [(c.dest, c.help) for c in action._choices_actions], action.choices


def test_the_command_table_matches_the_modules_parsers():
    # Names, order and help lines of the static table are those the modules build.
    full, _ = _subcommands(build_parser())
    assert full == [(name, line) for name, (_, line) in COMMANDS.items()]


def test_each_command_builds_only_its_group_and_lists_the_rest():
    for name, (group, _) in COMMANDS.items():
        listed, parsers = _subcommands(build_parser(name))
        assert [n for n, _ in listed] == list(COMMANDS)
        for other, (other_group, _) in COMMANDS.items():
            full = len(parsers[other]._actions) > 3  # -v, -q and the command's own options
            assert full == (other_group == group), (name, other)


def _modules_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd="/"
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_help_and_validate_load_neither_numpy_nor_the_simulator():
    for argv in (["--help"], ["validate", "tiny-abstract"], ["--version"]):
        code = (
            "import contextlib, io\n"
            "from asrpt_opt.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main({argv!r})"
        )
        loaded = _modules_after(code)
        assert "numpy" not in loaded, argv
        assert "asrpt_opt.sim.engine" not in loaded, argv
        assert "asrpt_opt.policies" not in loaded, argv


def test_the_package_loads_its_names_on_first_use():
    code = (
        "import asrpt_opt, sys\n"
        "assert 'asrpt_opt.sim' not in sys.modules\n"
        "assert 'simulate' in dir(asrpt_opt)\n"
        "from asrpt_opt import simulate, load_instance\n"
        "from asrpt_opt.datasets import example_path\n"
        "r = simulate(load_instance(example_path('tiny-abstract')), 'fifo')\n"
        "assert r.metrics.n_jobs == 5"
    )
    assert "asrpt_opt.sim.engine" in _modules_after(code)


def test_simulating_by_name_from_the_package_root_loads_the_policies():
    # Names are resolved above the simulator, by asrpt_opt.simulate (the policies' registry).
    code = (
        "import asrpt_opt\n"
        "from asrpt_opt.datasets import load_example\n"
        "assert asrpt_opt.simulate(load_example('tiny-abstract'), 'a-srpt').metrics.n_jobs == 5"
    )
    assert "asrpt_opt.policies.asrpt" in _modules_after(code)


def test_a_schedule_of_ours_failing_the_validator_is_reported_as_a_bug(monkeypatch, capsys):
    from asrpt_opt.cli.main import EXIT_BUG, main
    from asrpt_opt.errors import ScheduleError
    from asrpt_opt.sim import simulation

    def broken(*args, **kwargs):
        raise ScheduleError("job 'j0': completion 3 differs from its last segment's end 2")

    monkeypatch.setattr(simulation, "validate_schedule", broken)
    assert main(["simulate", "tiny-abstract", "--policy", "fifo"]) == EXIT_BUG
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "internal error" in err


def test_only_the_console_command_freezes_what_is_left_for_the_exit():
    # The interpreter's last collections skip frozen objects (0.1-0.2 s after a compiled
    # run); a caller of main(argv) keeps its own collector as it was.
    code = (
        "import contextlib, gc, io, sys\n"
        "from asrpt_opt.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    called = main(['--version'])\n"
        "    frozen_after_call = gc.get_freeze_count()\n"
        "    sys.argv = ['asrpt-opt', '--version']\n"
        "    console = main()\n"
        "print(called, frozen_after_call, console, gc.get_freeze_count() > 0)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    )
    assert out.stdout.split() == ["0", "0", "0", "True"]
