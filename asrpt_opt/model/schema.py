"""The JSON Schema of ``asrpt-instance/1``, built from the loader's own limits and names.

Editors and other tools validate instance files with it (the package ships it as
``asrpt_opt/data/schema/asrpt-instance-1.schema.json``; a test keeps that file equal to
:func:`instance_schema`). The loader remains the authority: a few rules no JSON Schema can
state (listed in the schema's ``description``) are checked by it alone, and a test checks
that everything the loader accepts the schema accepts, and everything the schema refuses the
loader refuses.
"""

from __future__ import annotations

from typing import Any

from asrpt_opt.model import _checks
from asrpt_opt.model.dnn import MODELS

__all__ = ["LOADER_ONLY_RULES", "SCHEMA_FILE", "instance_schema"]

#: Where the package ships the schema (relative to ``asrpt_opt/``).
SCHEMA_FILE = "data/schema/asrpt-instance-1.schema.json"

#: What the loader checks and a JSON Schema cannot.
LOADER_ONLY_RULES = (
    "job ids are unique",
    "a job's gpus are at most the cluster's GPUs",
    "a DNN job's dp * pp * tp equals its gpus",
    "the cluster's GPUs total at most 100,000,000",
    "DNN jobs need both bandwidths in the cluster",
    "a topology level's grouping key is the plural of the level below's name, and it groups "
    "every domain of that level; bandwidths do not grow outwards",
    "no duplicate keys, NaN or Infinity (JSON parsers differ on these)",
)

_SCALAR = {"type": ["string", "number", "boolean"]}
_FREE_FORM = {"type": "object", "additionalProperties": _SCALAR}
_TIME = {"type": "number", "minimum": 0, "maximum": _checks.MAX_TIME_S}
_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
_DNN_KEYS = ("model", "parallelism", "iterations")
_ABSTRACT_ONLY = ("duration_s", "spread_slowdown")


def _cluster() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["servers"],
        "additionalProperties": False,
        "properties": {
            "servers": {
                "description": "GPUs per server",
                "type": "array",
                "minItems": 1,
                "maxItems": _checks.MAX_SERVERS,
                "items": {"type": "integer", "minimum": 1, "maximum": _checks.MAX_TOTAL_GPUS},
            },
            "intra_server_gbps": {**_POSITIVE, "description": "GB/s between GPUs of a server"},
            "inter_server_gbps": {
                **_POSITIVE,
                "description": "GB/s between servers (between outermost domains with a topology)",
            },
            "topology": _topology(),
        },
    }


def _topology() -> dict[str, Any]:
    grouping = {
        "description": "children per domain (consecutive), or the domain of each child",
        "oneOf": [
            {"type": "integer", "minimum": 1},
            {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
        ],
    }
    return {
        "description": "network tiers above the servers, innermost first",
        "type": "object",
        "required": ["levels"],
        "additionalProperties": False,
        "properties": {
            "levels": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["name", "gbps"],
                    "properties": {"name": {"type": "string", "minLength": 1}, "gbps": _POSITIVE},
                    # The grouping key is the plural of the level below's name: "servers",
                    # "racks", ...; the loader checks which one is allowed.
                    "additionalProperties": grouping,
                },
            }
        },
    }


def _job() -> dict[str, Any]:
    degree = {"type": "integer", "minimum": 1}
    return {
        "type": "object",
        "required": ["id", "release_s", "gpus"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "minLength": 1},
            "release_s": _TIME,
            "gpus": {"type": "integer", "minimum": 1},
            "weight": _POSITIVE,
            "duration_s": {**_TIME, "exclusiveMinimum": 0},
            "spread_slowdown": {"type": "number", "minimum": 1},
            "model": {"enum": list(MODELS)},
            "parallelism": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"dp": degree, "pp": degree, "tp": degree},
            },
            "iterations": {"type": "integer", "minimum": 1, "maximum": 10**12},
            "features": _FREE_FORM,
        },
        "oneOf": [
            {
                "title": "abstract job",
                "required": ["duration_s"],
                "not": {"anyOf": [{"required": [k]} for k in _DNN_KEYS]},
            },
            {
                "title": "DNN job",
                "required": list(_DNN_KEYS),
                "not": {"anyOf": [{"required": [k]} for k in _ABSTRACT_ONLY]},
            },
        ],
    }


def instance_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of an ``asrpt-instance/1`` file.

    Returns
    -------
    dict
        The schema, ready for ``json.dumps``.

    Examples
    --------
    >>> instance_schema()["properties"]["format"]
    {'const': 'asrpt-instance/1'}
    """
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:asrpt-opt:asrpt-instance:1",
        "title": "asrpt-instance/1",
        "description": (
            "An asrpt-opt instance: a cluster and the jobs released to it "
            "(docs/instance-format.md). The loader also checks: "
            + "; ".join(LOADER_ONLY_RULES)
            + "."
        ),
        "type": "object",
        "required": ["format", "cluster", "jobs"],
        "additionalProperties": False,
        "properties": {
            "format": {"const": "asrpt-instance/1"},
            "name": {"type": "string", "minLength": 1},
            "cluster": _cluster(),
            "speed_model": {"type": "string", "description": "e.g. measured-pollux"},
            "provenance": _FREE_FORM,
            "jobs": {"type": "array", "minItems": 1, "items": _job()},
        },
    }
