"""Every public function documents its parameters and return value (numpydoc)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import asrpt_opt


def _public_functions():
    for info in pkgutil.walk_packages(asrpt_opt.__path__, "asrpt_opt."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if inspect.isfunction(obj) and obj.__module__ == module.__name__:
                yield f"{info.name}.{name}", obj


def test_public_functions_have_parameters_and_returns():
    missing = []
    for qualname, fn in _public_functions():
        doc = inspect.getdoc(fn) or ""
        sig = inspect.signature(fn)
        if any(p not in ("self", "cls") for p in sig.parameters) and "Parameters" not in doc:
            missing.append(f"{qualname}: Parameters")
        if (
            sig.return_annotation not in (None, "None", inspect.Signature.empty)
            and "Returns" not in doc
        ):
            missing.append(f"{qualname}: Returns")
    assert not missing, missing
    assert len(list(_public_functions())) > 40
