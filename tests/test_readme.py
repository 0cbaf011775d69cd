"""README's promises, kept by a user who installs the package (not editable) into a fresh
virtual environment and works in a folder of their own: its Python snippets run, and so does
every command in it that names a bundled file.

The environment borrows the dependencies of the one running the tests (a ``.pth`` file) but
gets asrpt-opt itself from a wheel built from this checkout, so a file the wheel forgets to
ship fails here exactly as it would for a user.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from asrpt_opt.datasets import list_examples, list_presets
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def python_snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.S)


def bundled_commands() -> list[list[str]]:
    """Every ``asrpt-opt ...`` in README (code spans or code blocks) naming a bundled file."""
    texts = re.findall(r"`(asrpt-opt [^`]+)`", README)
    for block in re.findall(r"```(?:bash|text)?\n(.*?)```", README, flags=re.S):
        texts += [
            line.removeprefix("$ ").split("#")[0]
            for line in block.splitlines()
            if line.removeprefix("$ ").startswith("asrpt-opt ")
        ]
    names = set(list_examples()) | set(list_presets())
    out = []
    for text in texts:
        words = shlex.split(" ".join(text.split()))
        if names & set(words) and not any(w.isupper() for w in words):
            out.append(words)
    return out


def test_readme_names_bundled_files_by_name_only():
    # A README command naming instances/... works only inside a checkout.
    for line in re.findall(r"`(asrpt-opt [^`]+)`", README):
        assert "instances/" not in line, line
        assert "solvers/" not in line, line
    assert python_snippets()
    assert any(cmd[1] == "simulate" for cmd in bundled_commands()) or bundled_commands()


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fresh")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "_borrowed_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    wheels = base / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(ROOT)], check=True)
    (wheel,) = wheels.glob("asrpt_opt-*.whl")
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", str(wheel)], check=True)
    found = subprocess.run(
        [str(python), "-c", "import asrpt_opt; print(asrpt_opt.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=base,
    ).stdout
    assert str(venv) in found, found  # the wheel, not the checkout
    return venv


@pytest.mark.slow
def test_readme_python_snippets_run_in_a_fresh_install(fresh_env, tmp_path):
    for code in python_snippets():
        out = subprocess.run(
            [str(fresh_env / "bin" / "python"), "-c", code],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )
        assert out.returncode == 0, code + out.stdout + out.stderr


@pytest.mark.slow
def test_readme_commands_naming_bundled_files_run_in_a_fresh_install(fresh_env, tmp_path):
    commands = bundled_commands()
    assert len(commands) >= 3, commands
    for words in commands:
        out = subprocess.run(
            [str(fresh_env / "bin" / words[0]), *words[1:]],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=600,
        )
        assert out.returncode == 0, " ".join(words) + "\n" + out.stdout + out.stderr
