"""README's and the docs' promises, kept by a user who installs the package (not editable)
into a fresh virtual environment and works in a folder of their own: every Python snippet
runs, so does every command that names a bundled file, and README's example outputs are what
the commands print.

The environment borrows the dependencies of the one running the tests (a ``.pth`` file) but
gets asrpt-opt itself from a wheel built from this checkout, so a file the wheel forgets to
ship fails here exactly as it would for a user.
"""

from __future__ import annotations

import importlib.util
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
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TEXT = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
# Snippets that need an optional extra run where the extra is installed.
EXTRAS = ("dask",)


def python_snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)


def console_examples() -> list[tuple[list[str], list[str]]]:
    """README's ``console`` blocks: each ``$ asrpt-opt ...`` line and the lines shown after it."""
    out: list[tuple[list[str], list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", README, flags=re.S):
        for chunk in re.split(r"(?m)^\$ ", block)[1:]:
            command, *shown = chunk.rstrip("\n").split("\n")
            out.append((shlex.split(command), shown))
    return out


def bundled_commands() -> list[list[str]]:
    """Every ``asrpt-opt ...`` in README and docs (code spans or blocks) naming a bundled file."""
    texts = re.findall(r"`(asrpt-opt [^`]+)`", TEXT)
    for block in re.findall(r"```(?:bash|text|console)?\n(.*?)```", TEXT, flags=re.S):
        texts += [
            line.removeprefix("$ ").split("#")[0]
            for line in block.splitlines()
            if line.removeprefix("$ ").startswith("asrpt-opt ")
        ]
    names = set(list_examples()) | set(list_presets())
    out = []
    for text in texts:
        words = shlex.split(" ".join(text.split()))
        if names & set(words) and not any(w.isupper() for w in words) and words not in out:
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
def test_python_snippets_run_in_a_fresh_install(fresh_env, tmp_path):
    snippets = python_snippets()
    assert len(snippets) >= 4
    for k, code in enumerate(snippets):
        needs = [m for m in EXTRAS if re.search(rf"^\s*(from|import) {m}\b", code, re.M)]
        if any(importlib.util.find_spec(m) is None for m in needs):
            continue  # the extra is not installed here
        # A file, not ``-c``: numba caches kernels defined in files only.
        script = tmp_path / f"snippet_{k}.py"
        script.write_text(code, encoding="utf-8")
        out = subprocess.run(
            [str(fresh_env / "bin" / "python"), str(script)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )
        assert out.returncode == 0, code + out.stdout + out.stderr


def _run_installed(venv: Path, words: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``asrpt-opt ...`` as installed in ``venv``, in the folder ``cwd``."""
    command = [str(venv / "bin" / words[0]), *words[1:]]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.mark.slow
def test_readme_example_outputs_are_what_the_commands_print(fresh_env, tmp_path):
    examples = console_examples()
    assert len(examples) >= 2
    for words, shown in examples:
        out = _run_installed(fresh_env, words, tmp_path)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[: len(shown)] == shown, " ".join(words)


@pytest.mark.slow
def test_commands_naming_bundled_files_run_in_a_fresh_install(fresh_env, tmp_path):
    commands = bundled_commands()
    assert len(commands) >= 3, commands
    for words in commands:
        out = _run_installed(fresh_env, words, tmp_path)
        assert out.returncode == 0, " ".join(words) + "\n" + out.stdout + out.stderr
