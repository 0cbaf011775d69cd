"""Small field validators shared by the model dataclasses and the JSON loader.

Each raises :class:`~asrpt_opt.errors.InstanceError` whose ``path`` is the field name, so the
loader can prefix the JSON location (``jobs[3].gpus``) without re-checking anything.
"""

from __future__ import annotations

import math
from typing import Any

from asrpt_opt.errors import InstanceError

#: Limits that keep every computation representable and memory bounded (documented in
#: docs/instance-format.md): times in seconds, work, and the cluster's size.
MAX_TIME_S = 1e12
MAX_SERVERS = 1_000_000
MAX_TOTAL_GPUS = 100_000_000


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"{value!r}"


def number(
    value: Any,
    field: str,
    *,
    minimum: float | None = None,
    strict: bool = False,
    maximum: float | None = None,
) -> float:
    """Return ``value`` as a finite float, or raise naming ``field``.

    ``strict`` makes ``minimum`` exclusive; ``maximum`` is inclusive.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InstanceError(f"must be a number, got {_kind(value)}", path=field)
    try:
        out = float(value)
    except OverflowError:
        raise InstanceError("is too large (beyond floating point)", path=field) from None
    if not math.isfinite(out):
        raise InstanceError(f"must be finite, got {value!r}", path=field)
    if minimum is not None:
        if strict and not out > minimum:
            raise InstanceError(f"must be > {minimum:g}, got {value!r}", path=field)
        if not strict and not out >= minimum:
            raise InstanceError(f"must be >= {minimum:g}, got {value!r}", path=field)
    if maximum is not None and out > maximum:
        raise InstanceError(f"must be at most {maximum:g}, got {value!r}", path=field)
    return out


def integer(value: Any, field: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an int in [``minimum``, ``maximum``]; floats with a fraction are
    refused."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InstanceError(f"must be an integer, got {_kind(value)}", path=field)
    if isinstance(value, float) and not value.is_integer():
        raise InstanceError(f"must be an integer, got {value!r}", path=field)
    out = int(value)
    if out < minimum:
        raise InstanceError(f"must be >= {minimum}, got {value!r}", path=field)
    if maximum is not None and out > maximum:
        raise InstanceError(f"must be at most {maximum:,}, got {value!r}", path=field)
    return out


def plain_value(value: Any, field: str) -> Any:
    """Return ``value`` if it is a string, a boolean or a finite number (free-form notes)."""
    if not isinstance(value, str | int | float | bool):
        raise InstanceError("must be a string, number or boolean", path=field)
    if isinstance(value, float) and not math.isfinite(value):
        raise InstanceError(f"must be finite, got {value!r}", path=field)
    if isinstance(value, str):
        unicode_text(value, field)
    return value


def unicode_text(value: str, field: str) -> str:
    """Return ``value`` if it can be written as UTF-8: no lone surrogate (``"\\ud800"`` in
    JSON), which every writer of the instance (JSON, CSV, Parquet) would fail on later."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = value[exc.start]
            raise InstanceError(
                f"holds a lone surrogate {bad!r} at character {exc.start}: not Unicode text",
                path=field,
            ) from None
    return value


def string(value: Any, field: str) -> str:
    """Return ``value`` if it is a non-empty string."""
    if not isinstance(value, str):
        raise InstanceError(f"must be a string, got {_kind(value)}", path=field)
    if not value:
        raise InstanceError("must be a non-empty string", path=field)
    return unicode_text(value, field)


def mapping(value: Any, field: str) -> dict[str, Any]:
    """Return ``value`` if it is a JSON object."""
    if not isinstance(value, dict):
        raise InstanceError(f"must be an object, got {_kind(value)}", path=field)
    return value


def sequence(value: Any, field: str) -> list[Any]:
    """Return ``value`` if it is a JSON list."""
    if not isinstance(value, list | tuple):
        raise InstanceError(f"must be a list, got {_kind(value)}", path=field)
    return list(value)


def only_keys(obj: dict[str, Any], allowed: frozenset[str], where: str = "") -> None:
    """Refuse keys outside ``allowed``: unknown keys are errors, never silently ignored."""
    for key in obj:
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            raise InstanceError(f"unknown key {key!r} (allowed: {known})", path=where or key)


def required(obj: dict[str, Any], key: str) -> Any:
    """Return ``obj[key]`` or raise a 'missing' error naming the key."""
    if key not in obj:
        raise InstanceError("is required but missing", path=key)
    return obj[key]
