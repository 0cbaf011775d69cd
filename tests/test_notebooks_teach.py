"""Every notebook teaches: it says what you will learn, explains in at least 250 words of
markdown, ends with something to try, and only imports the package (nothing defined)."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _text(cell) -> str:
    return "".join(cell["source"])


def test_there_are_eight_notebooks():
    assert len(NOTEBOOKS) == 8


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_explains_itself(path):
    cells = _cells(path)
    markdown = [_text(c) for c in cells if c["cell_type"] == "markdown"]
    words = sum(len(re.findall(r"\w[\w'-]*", m)) for m in markdown)
    assert words >= 250, f"{path.name}: {words} words of markdown"
    assert cells[0]["cell_type"] == "markdown"
    assert "What you will learn" in _text(cells[0])
    assert "## Try next" in markdown[-1]
    assert all("id" in c for c in cells)  # nbformat 5 cell ids: no validator warning


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_only_imports_the_package(path):
    for cell in _cells(path):
        if cell["cell_type"] == "code":
            code = _text(cell)
            assert not re.search(r"^(def|class) ", code, re.M), path.name
            assert not cell.get("outputs"), f"{path.name}: outputs are stored"
