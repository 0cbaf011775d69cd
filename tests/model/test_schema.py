"""The shipped JSON Schema and the loader agree: what the loader accepts the schema accepts,
and what the schema refuses the loader refuses (on the bundled instances, the contract's
example, random instances and every bad input of ``test_io``)."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
from hypothesis import given, settings

from asrpt_opt.datasets import list_examples, load_example
from asrpt_opt.model import Instance, dumps_instance
from asrpt_opt.model.schema import LOADER_ONLY_RULES, SCHEMA_FILE, instance_schema
from tests.conftest import ROOT, instances
from tests.model.test_io import BAD, DESIGN_EXAMPLE, _broken

# The bad inputs of test_io whose reason is a rule only the loader can check.
LOADER_ONLY_WORDS = ("duplicate", "exceeds the cluster's", "differs from gpus")


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(resources.files("asrpt_opt").joinpath(SCHEMA_FILE).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_shipped_schema_is_the_generated_one():
    shipped = json.loads((ROOT / "asrpt_opt" / SCHEMA_FILE).read_text(encoding="utf-8"))
    assert shipped == instance_schema()


def test_the_schema_names_what_only_the_loader_checks():
    for rule in LOADER_ONLY_RULES:
        assert rule in instance_schema()["description"]


@pytest.mark.parametrize("name", list_examples())
def test_every_bundled_instance_is_valid(validator, name):
    doc = json.loads(dumps_instance(load_example(name)))
    assert list(validator.iter_errors(doc)) == []


def test_the_contract_example_is_valid(validator):
    assert validator.is_valid(DESIGN_EXAMPLE)


@settings(max_examples=40, deadline=None)
@given(instances(weighted=True))
def test_random_instances_are_valid(inst: Instance):
    schema = jsonschema.Draft202012Validator(instance_schema())
    assert schema.is_valid(json.loads(dumps_instance(inst)))


@pytest.mark.parametrize(("mutate", "path", "words"), BAD)
def test_the_schema_refuses_every_bad_input_it_can_state(validator, mutate, path, words):
    doc = _broken(mutate)
    if any(w in words for w in LOADER_ONLY_WORDS):
        assert validator.is_valid(doc)  # a rule of LOADER_ONLY_RULES: the loader refuses it
    else:
        assert not validator.is_valid(doc), path
