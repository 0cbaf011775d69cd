"""README and docs name only files that the repository contains."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "instances" / "README.md",
]
TOP = ("asrpt_opt/", "instances/", "docs/", "solvers/", "notebooks/", "benchmarks/", "tests/")
# Files the commands write, named as examples of output, not as repository files.
OUTPUTS = ("asrpt-demo/", "asrpt-replay/")
# Files the site build copies into the site (docs/_scripts/gen_files.py), and their sources.
SITE_COPIES = {
    "schema/asrpt-instance-1.schema.json": "asrpt_opt/data/schema/asrpt-instance-1.schema.json"
}


def _named_paths(text: str) -> set[str]:
    names = set(re.findall(r"\]\(([^)#\s]+)", text))  # markdown links
    for token in re.findall(r"`([^`\s]+)`", text):  # code spans that are repository paths
        if token.startswith(TOP):
            names.add(token)
    return {n for n in names if "://" not in n and not n.startswith(OUTPUTS)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_named_file_exists(doc):
    missing = []
    for name in _named_paths(doc.read_text(encoding="utf-8")):
        clean = name.rstrip(".,:;)").split("::")[0]
        if any(ch in clean for ch in "*<>{}|"):
            continue
        candidates = [doc.parent / clean, ROOT / clean, ROOT / SITE_COPIES.get(clean, clean)]
        if not any(p.exists() for p in candidates):
            missing.append(name)
    assert not missing, f"{doc.name} names files that do not exist: {sorted(missing)}"


def test_the_check_sees_paths_in_code_spans_and_links():
    text = "see `instances/nope.json`, [x](docs/missing.md) and `asrpt-demo/out.png`"
    assert _named_paths(text) == {"instances/nope.json", "docs/missing.md"}


def test_citation_file_names_the_paper_and_the_package_version():
    import asrpt_opt

    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert "cff-version: 1.2.0" in text
    assert f"version: {asrpt_opt.__version__}" in text
    assert "arXiv:2501.05563" in text
    assert "CITATION.cff" in (ROOT / "README.md").read_text(encoding="utf-8")
