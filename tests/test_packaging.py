"""The wheel holds every subpackage and the bundled instances and presets."""

from __future__ import annotations

import tomllib

from asrpt_opt.datasets import list_examples, list_presets
from tests.conftest import ROOT


def test_every_subpackage_is_listed_for_the_wheel():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "asrpt_opt").rglob("__init__.py")
    }
    assert found <= listed, sorted(found - listed)
    assert config["package-dir"] == {
        "asrpt_opt.datasets.instances": "instances",
        "asrpt_opt.datasets.presets": "solvers",
    }


def test_bundled_names_cover_the_instance_folders():
    names = set(list_examples())
    files = [
        path
        for folder in ("examples", "demo", "replay", "baselines", "placement", "worst")
        for path in (ROOT / "instances" / folder).glob("*.json")
        if path.name != "optima.json"
    ]
    assert {path.stem for path in files} == names
    assert len(files) == len(names)  # no two folders share a name
    assert "default" in list_presets()
