"""Instance file contract (DESIGN.md section 4): round trips and every class of bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from asrpt_opt.errors import InstanceError
from asrpt_opt.model import (
    Cluster,
    Instance,
    Job,
    Parallelism,
    dump_instance,
    dumps_instance,
    instance_from_dict,
    load_instance,
    loads_instance,
)
from tests.conftest import instances

DESIGN_EXAMPLE = {
    "format": "asrpt-instance/1",
    "name": "tiny-example",
    "cluster": {"servers": [4, 4], "intra_server_gbps": 300.0, "inter_server_gbps": 12.5},
    "jobs": [
        {"id": "a", "release_s": 0, "gpus": 2, "duration_s": 6},
        {
            "id": "b",
            "release_s": 1,
            "gpus": 8,
            "duration_s": 3,
            "weight": 2,
            "spread_slowdown": 1.5,
        },
        {
            "id": "c",
            "release_s": 2,
            "gpus": 4,
            "model": "resnet50",
            "parallelism": {"dp": 4, "pp": 1, "tp": 1},
            "iterations": 5000,
            "features": {"user": "u1", "dataset": "imagenet", "batch_size": 128},
        },
    ],
}


def test_design_example_loads():
    inst = instance_from_dict(DESIGN_EXAMPLE)
    assert inst.name == "tiny-example"
    assert inst.cluster.servers == (4, 4)
    assert inst.cluster.inter_server_gbps == 12.5
    a, b, c = inst.jobs
    assert a.is_abstract
    assert a.weight == 1.0
    assert a.spread_slowdown == 1.0
    assert b.weight == 2.0
    assert b.spread_slowdown == 1.5
    assert not c.is_abstract
    assert c.parallelism == Parallelism(dp=4, pp=1, tp=1)
    assert c.iterations == 5000
    assert c.features["batch_size"] == 128


def test_round_trip_is_byte_identical(tmp_path: Path):
    inst = instance_from_dict(DESIGN_EXAMPLE)
    path = tmp_path / "x.json"
    dump_instance(inst, path)
    again = load_instance(path)
    assert again == inst
    assert dumps_instance(again) == path.read_text()
    assert json.loads(path.read_text()) == DESIGN_EXAMPLE


@settings(max_examples=40, deadline=None)
@given(instances(weighted=True))
def test_round_trip_random(inst: Instance):
    assert loads_instance(dumps_instance(inst)) == inst


def _broken(mutate) -> dict:
    doc = copy.deepcopy(DESIGN_EXAMPLE)
    mutate(doc)
    return doc


def _set(path: list, value):
    def mutate(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def _delete(path: list):
    def mutate(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return mutate


BAD = [
    # (mutation, expected JSON path, words in the reason)
    (_set(["format"], "asrpt-instance/2"), "format", "must be"),
    (_delete(["format"]), "format", "required"),
    (_set(["extra"], 1), "extra", "unknown key"),
    (_set(["cluster", "servers"], []), "cluster.servers", "at least one"),
    (_set(["cluster", "servers"], [4, 0]), "cluster.servers[1]", ">= 1"),
    (_set(["cluster", "servers"], [4, 2.5]), "cluster.servers[1]", "integer"),
    (_set(["cluster", "servers"], "4,4"), "cluster.servers", "list"),
    (_delete(["cluster", "servers"]), "cluster.servers", "required"),
    (_set(["cluster", "inter_server_gbps"], 0), "cluster.inter_server_gbps", "> 0"),
    (_set(["cluster", "gpus"], 8), "cluster.gpus", "unknown key"),
    (_set(["jobs"], []), "jobs", "at least one"),
    (_set(["jobs"], {"a": 1}), "jobs", "list"),
    (_set(["jobs", 0], 5), "jobs[0]", "object"),
    (_delete(["jobs", 0, "id"]), "jobs[0].id", "required"),
    (_set(["jobs", 1, "id"], "a"), "jobs[1].id", "duplicate"),
    (_set(["jobs", 0, "id"], 7), "jobs[0].id", "string"),
    (_set(["jobs", 0, "release_s"], -1), "jobs[0].release_s", ">= 0"),
    (_set(["jobs", 0, "release_s"], "0"), "jobs[0].release_s", "number"),
    (_set(["jobs", 0, "release_s"], True), "jobs[0].release_s", "boolean"),
    (_set(["jobs", 0, "gpus"], 0), "jobs[0].gpus", ">= 1"),
    (_set(["jobs", 0, "gpus"], 1.5), "jobs[0].gpus", "integer"),
    (_set(["jobs", 0, "gpus"], 12), "jobs[0].gpus", "exceeds the cluster's 8 GPUs"),
    (_set(["jobs", 0, "weight"], 0), "jobs[0].weight", "> 0"),
    (_set(["jobs", 0, "duration_s"], 0), "jobs[0].duration_s", "> 0"),
    (_delete(["jobs", 0, "duration_s"]), "jobs[0].duration_s", "required"),
    (_set(["jobs", 1, "spread_slowdown"], 0.5), "jobs[1].spread_slowdown", ">= 1"),
    (_set(["jobs", 0, "model"], "resnet50"), "jobs[0].model", "not both"),
    (_set(["jobs", 0, "colour"], "red"), "jobs[0].colour", "unknown key"),
    (_delete(["jobs", 2, "iterations"]), "jobs[2].iterations", "required"),
    (_set(["jobs", 2, "iterations"], 0), "jobs[2].iterations", ">= 1"),
    (
        _set(["jobs", 2, "parallelism"], {"dp": 2, "pp": 1, "tp": 1}),
        "jobs[2].parallelism",
        "differs from gpus",
    ),
    (
        _set(["jobs", 2, "parallelism"], {"dp": 4, "ep": 1}),
        "jobs[2].parallelism.ep",
        "unknown key",
    ),
    (_set(["jobs", 2, "parallelism"], {"dp": 0}), "jobs[2].parallelism.dp", ">= 1"),
    (_set(["jobs", 2, "model"], ""), "jobs[2].model", "non-empty"),
    (_set(["jobs", 2, "spread_slowdown"], 2), "jobs[2].spread_slowdown", "abstract jobs only"),
    (_set(["jobs", 2, "features"], {"user": ["u1"]}), "jobs[2].features.user", "string, number"),
    (_set(["provenance"], {"x": {"y": 1}}), "provenance.x", "string, number"),
]


@pytest.mark.parametrize(("mutate", "path", "words"), BAD)
def test_bad_input_names_file_path_and_reason(tmp_path: Path, mutate, path: str, words: str):
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(_broken(mutate)))
    with pytest.raises(InstanceError) as info:
        load_instance(file)
    message = str(info.value)
    assert message.startswith(f"{file}: {path}: "), message
    assert words in message
    assert "\n" not in message
    assert info.value.path == path


def test_invalid_json_names_line(tmp_path: Path):
    file = tmp_path / "broken.json"
    file.write_text('{\n  "format": "asrpt-instance/1",\n  "jobs": [,]\n}')
    with pytest.raises(InstanceError, match=r"broken\.json: line 3 column 12: invalid JSON"):
        load_instance(file)


def test_nan_is_refused(tmp_path: Path):
    file = tmp_path / "nan.json"
    file.write_text(json.dumps(DESIGN_EXAMPLE).replace('"release_s": 0', '"release_s": NaN', 1))
    with pytest.raises(InstanceError, match="NaN is not a number"):
        load_instance(file)


def test_missing_file():
    with pytest.raises(InstanceError, match=r"nope\.json: cannot read file"):
        load_instance("nope.json")


def test_top_level_must_be_object():
    with pytest.raises(InstanceError, match="must be an object"):
        loads_instance("[1, 2]")


def test_dataclasses_validate_when_built_in_python():
    with pytest.raises(InstanceError, match="gpus: must be >= 1"):
        Job(id="x", release_s=0, gpus=0, duration_s=1)
    with pytest.raises(InstanceError, match="exceeds the cluster's 2 GPUs"):
        Instance(
            name="t",
            cluster=Cluster(servers=(2,)),
            jobs=(Job(id="x", release_s=0, gpus=3, duration_s=1),),
        )
    assert Cluster.uniform(2, 4).servers == (4, 4)


def test_speed_model_is_a_validated_top_level_field(tmp_path: Path):
    doc = json.loads(json.dumps(DESIGN_EXAMPLE))
    doc["jobs"] = doc["jobs"][:2]
    doc["speed_model"] = "measured-pollux"
    inst = instance_from_dict(doc)
    assert inst.speed_model == "measured-pollux"
    assert json.loads(dumps_instance(inst))["speed_model"] == "measured-pollux"
    doc["speed_model"] = "fast"
    with pytest.raises(InstanceError, match=r"speed_model: unknown speed model 'fast'"):
        instance_from_dict(doc, source="x.json")
    del doc["speed_model"]
    assert "speed_model" not in json.loads(dumps_instance(instance_from_dict(doc)))


def test_legacy_provenance_speed_model_is_read_with_a_warning(caplog):
    doc = json.loads(json.dumps(DESIGN_EXAMPLE))
    doc["jobs"] = doc["jobs"][:2]
    doc["provenance"] = {"speed_model": "pollux-measured", "source": "old"}
    with caplog.at_level("WARNING"):
        inst = instance_from_dict(doc)
    assert inst.speed_model == "measured-pollux"
    assert dict(inst.provenance) == {"source": "old"}
    assert "deprecated" in caplog.text


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("gpus", True, "boolean"),
        ("release_s", float("nan"), "finite"),
        ("release_s", 10**400, "too large"),
        ("release_s", 2e12, "at most"),
        ("weight", float("inf"), "finite"),
        ("duration_s", -1.0, "> 0"),
        ("spread_slowdown", 0.5, ">= 1"),
        ("id", "", "non-empty"),
    ],
)
def test_plain_jobs_are_checked_like_any_other(field, value, words):
    # Abstract jobs of plain numbers take a shorter path through the checks; it refuses
    # what the general checks refuse, naming the field.
    fields = {"id": "a", "release_s": 0, "gpus": 1, "duration_s": 2.0, field: value}
    with pytest.raises(InstanceError, match=words) as info:
        Job(**fields)
    assert info.value.path == field


def test_plain_jobs_are_normalised_like_any_other():
    job = Job(id="a", release_s=3, gpus=2.0, duration_s=5, weight=2, spread_slowdown=1)
    assert (job.release_s, job.gpus, job.duration_s, job.weight) == (3.0, 2, 5.0, 2.0)
    assert all(type(v) is float for v in (job.release_s, job.duration_s, job.weight))
    assert type(job.gpus) is int
    assert dict(job.features) == {}
    with pytest.raises(TypeError):
        job.features["x"] = 1  # type: ignore[index]


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (_set(["jobs", 0, "id"], "a\ud800"), "jobs[0].id"),
        (_set(["name"], "\udc80x"), "name"),
        (_set(["jobs", 2, "features"], {"user": "u\ud83d"}), "jobs[2].features.user"),
        (_set(["provenance"], {"note": "\udfff"}), "provenance.note"),
    ],
)
def test_lone_surrogates_are_refused_where_text_is_checked(tmp_path: Path, mutate, path):
    # A lone surrogate ("\ud800" in JSON) parses, but no writer can encode it later.
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(_broken(mutate)))  # ensure_ascii: the escape survives
    with pytest.raises(InstanceError, match="lone surrogate") as info:
        load_instance(file)
    assert info.value.path == path


def test_non_ascii_text_is_fine():
    doc = _broken(_set(["jobs", 0, "id"], "jöb-é-模型"))
    assert instance_from_dict(doc).jobs[0].id == "jöb-é-模型"
