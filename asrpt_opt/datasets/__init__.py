"""The instances and solver presets that come with the package, in the scikit-learn manner.

>>> from asrpt_opt.datasets import list_examples, load_example
>>> "tiny-abstract" in list_examples()
True
>>> load_example("tiny-abstract").n_jobs
5

The files are the repository's ``instances/`` and ``solvers/`` folders, shipped inside the
package (so they are there after ``pip install .``, not only in a checkout). Every command
that takes an instance file also takes a bundled name: ``asrpt-opt simulate tiny-abstract``.
"""

from __future__ import annotations

import os
from functools import cache
from importlib import resources
from os import PathLike
from pathlib import Path

from asrpt_opt.errors import InstanceError, lookup
from asrpt_opt.model.instance import Instance

__all__ = [
    "example_path",
    "list_examples",
    "list_presets",
    "load_example",
    "preset_path",
    "resolve_instance",
    "resolve_preset",
]

# Folders of instances users run (recorded optima and placement optima tables are data about
# instances, not instances).
_FOLDERS = ("examples", "demo", "replay", "baselines", "placement", "worst")


def _root(name: str) -> Path:
    """The folder ``name`` ("instances" or "presets"): inside the installed package, or in
    the source checkout next to it (an editable install)."""
    shipped = Path(str(resources.files("asrpt_opt.datasets"))) / name
    if shipped.is_dir():
        return shipped
    checkout = Path(__file__).resolve().parents[2] / ("solvers" if name == "presets" else name)
    return checkout


@cache
def _examples() -> dict[str, Path]:
    root = _root("instances")
    out: dict[str, Path] = {}
    for folder in _FOLDERS:
        for path in sorted((root / folder).glob("*.json")):
            if path.name != "optima.json":
                out[path.stem] = path
    return out


@cache
def _presets() -> dict[str, Path]:
    return {path.stem: path for path in sorted(_root("presets").glob("*.toml"))}


def list_examples() -> list[str]:
    """Names of the bundled instances.

    Returns
    -------
    list of str
        Sorted; each works with :func:`load_example` and wherever the CLI takes a file.
    """
    return sorted(_examples())


def example_path(name: str) -> Path:
    """The file of bundled instance ``name``.

    Parameters
    ----------
    name : str
        One of :func:`list_examples`.

    Returns
    -------
    pathlib.Path
    """
    return lookup(_examples(), name, what="bundled instance")


def load_example(name: str) -> Instance:
    """Load bundled instance ``name``.

    Parameters
    ----------
    name : str
        One of :func:`list_examples`.

    Returns
    -------
    Instance
    """
    from asrpt_opt.model.io import load_instance

    return load_instance(example_path(name))


def list_presets() -> list[str]:
    """Names of the bundled solver presets.

    Returns
    -------
    list of str
        Sorted (``default``, ...); each works with :func:`preset_path` and ``--preset``.
    """
    return sorted(_presets())


def preset_path(name: str) -> Path:
    """The TOML file of bundled solver preset ``name``.

    Parameters
    ----------
    name : str
        One of :func:`list_presets`.

    Returns
    -------
    pathlib.Path
    """
    return lookup(_presets(), name, what="bundled solver preset")


def resolve_instance(spec: str | PathLike[str]) -> Path:
    """An instance file named by a path or by a bundled name.

    An existing file wins; otherwise a bundled name (:func:`list_examples`) gives its file;
    otherwise the path is returned as it is (reading it then reports the missing file).

    Parameters
    ----------
    spec : path-like or str

    Returns
    -------
    pathlib.Path
    """
    text = os.fspath(spec)
    if text.endswith(("/", os.sep)) and Path(text).is_file():
        # pathlib drops a trailing "/": "x.json/" must not quietly read x.json.
        raise InstanceError("names a folder (trailing /), but is a file", source=text)
    path = Path(spec)
    if path.exists():
        return path
    found = _examples().get(str(spec))
    if found is not None:
        return found
    if path.suffix == "" and path.parent == Path("."):
        raise InstanceError(
            f"no such file, and not a bundled instance (bundled: {', '.join(list_examples())})",
            source=str(spec),
        )
    return path


def resolve_preset(spec: str | PathLike[str]) -> Path:
    """A solver preset named by a path or by a bundled name (:func:`list_presets`).

    Parameters
    ----------
    spec : path-like or str

    Returns
    -------
    pathlib.Path
    """
    path = Path(spec)
    return path if path.exists() else _presets().get(str(spec), path)
