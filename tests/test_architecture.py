"""The package's shape: cheap imports, one registry convention, small modules, downward layers."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import asrpt_opt
from asrpt_opt.errors import AsrptError, UnknownNameError
from tests.conftest import ROOT, TINY

PACKAGE = Path(asrpt_opt.__file__).parent
HEAVY = ("sklearn", "matplotlib", "ortools", "pulp", "numba", "networkx")


def _loaded_after(code: str) -> list[str]:
    """Heavy libraries in ``sys.modules`` after ``code`` runs in a fresh interpreter."""
    probe = (
        f"{code}\nimport sys, json\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd="/"
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_asrpt_opt_loads_no_heavy_library():
    assert _loaded_after("import asrpt_opt") == []


def test_simulating_an_abstract_instance_loads_no_heavy_library():
    code = (
        "import contextlib, io\n"
        "from asrpt_opt.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['simulate', {TINY!r}, '--json']) == 0"
    )
    assert _loaded_after(code) == []


def test_no_module_over_500_lines():
    long = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.read_text(encoding="utf-8").count("\n") > 500
    ]
    assert not long, f"over 500 lines: {long}"


def test_no_lazy_import_reaches_another_layer():
    # importlib.import_module("asrpt_opt.X...") inside subpackage Y would hide an upward
    # import from import-linter: only the package root (its lazy public names) and the
    # command line (the top layer) may load other subpackages by name.
    found = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if len(rel.parts) == 1 or rel.parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).split(".")[1:2] != [rel.parts[0]]
            ):
                found.append(f"{rel}: {node.args[0].value}")
    assert not found


def test_cli_main_is_a_thin_parser():
    assert (PACKAGE / "cli" / "main.py").read_text().count("\n") < 300


def _registries():
    from asrpt_opt.analysis.families import make_family_instance
    from asrpt_opt.analysis.sweep import RatioConfig, ResultStore, run_sweep
    from asrpt_opt.model import load_instance
    from asrpt_opt.placement import make_method
    from asrpt_opt.policies import make_policy
    from asrpt_opt.prediction import make_predictor
    from asrpt_opt.solvers import solve
    from asrpt_opt.speed import make_speed, offline_speed
    from asrpt_opt.traces.importers import make_importer

    inst = load_instance(TINY)
    config = RatioConfig(family="single", n=2, policies=("fifo",))
    return {
        "policy": lambda: make_policy("nope"),
        "placement method": lambda: make_method("nope"),
        "predictor": lambda: make_predictor("nope"),
        "solver": lambda: solve(inst, solver="nope"),
        "cluster model": lambda: offline_speed("nope"),
        "trace format": lambda: make_importer("nope"),
        "family": lambda: make_family_instance("nope", 3, 0),
        "speed model": lambda: make_speed("nope", inst),
        "executor": lambda: run_sweep(config, [0], store=ResultStore(), executor="nope"),
    }


@pytest.mark.parametrize("what", list(_registries()))
def test_every_registry_refuses_an_unknown_name_the_same_way(what):
    with pytest.raises(UnknownNameError) as info:
        _registries()[what]()
    assert isinstance(info.value, AsrptError)
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(f"unknown {what} 'nope' (known: ")
    assert info.value.known  # the valid names are listed


def test_speed_model_names_agree_between_the_file_format_and_the_registry():
    from asrpt_opt.model.instance import SPEED_MODELS as IN_FILES
    from asrpt_opt.speed import SPEED_MODELS

    assert set(SPEED_MODELS) == {"default", *IN_FILES}


def test_import_layers_contract_holds():
    lint = Path(sys.executable).parent / "lint-imports"
    if not lint.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    out = subprocess.run([str(lint)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 kept, 0 broken" in out.stdout


def test_no_module_selects_a_matplotlib_backend():
    offenders = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "matplotlib.use(" in p.read_text(encoding="utf-8") and p.parent.name != "cli"
    ]
    assert offenders == []


def test_the_installed_package_is_the_one_under_test_when_ci_says_so():
    import os

    if not os.environ.get("ASRPT_EXPECT_INSTALLED"):
        pytest.skip("only in CI's run from / against the non-editable install")
    assert "site-packages" in asrpt_opt.__file__, asrpt_opt.__file__
