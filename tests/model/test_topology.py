"""Network tiers: grouping, link levels, canonical shapes, and the instance format's
``cluster.topology`` (accepted forms, round trip, one clear error per mistake)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.errors import InstanceError
from asrpt_opt.model import Cluster
from asrpt_opt.model.io import instance_from_dict, instance_to_dict
from asrpt_opt.model.topology import Tier, Topology

DOC = {
    "format": "asrpt-instance/1",
    "name": "tiers",
    "cluster": {
        "servers": [8] * 8,
        "intra_server_gbps": 300,
        "inter_server_gbps": 12.5,
        "topology": {
            "levels": [
                {"name": "rack", "servers": 2, "gbps": 50},
                {"name": "pod", "racks": 2, "gbps": 25},
            ]
        },
    },
    "jobs": [{"id": "a", "release_s": 0, "gpus": 2, "duration_s": 3}],
}


def test_levels_name_the_lowest_common_domain():
    t = Topology.regular(8, [("rack", 2, 50.0), ("pod", 2, 25.0)])
    a = np.zeros(5, dtype=np.int64)
    assert t.level_of(a, np.array([0, 1, 2, 3, 7])).tolist() == [0, 1, 2, 2, 3]
    assert t.names == ("server", "rack", "pod", "cluster")
    assert t.n_domains == (4, 2)


def test_an_irregular_map_groups_as_listed():
    t = Topology(tiers=(Tier(name="rack", gbps=50.0, parent=(0, 1, 1, 0)),))
    assert t.level_of(np.array([0, 1]), np.array([3, 2])).tolist() == [1, 1]
    assert t.level_of(np.array([0]), np.array([1])).tolist() == [2]


def test_a_subset_keeps_the_grouping_of_the_servers_it_keeps():
    t = Topology.regular(8, [("rack", 2, 50.0), ("pod", 2, 25.0)])
    sub = t.subset([7, 0, 1, 4])
    assert sub.domains.tolist() == [[2, 0, 0, 1], [1, 0, 0, 1]]
    assert sub.level_of(np.array([1, 0, 1]), np.array([2, 3, 3])).tolist() == [1, 2, 3]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=10),
    st.integers(1, 4),
    st.integers(1, 3),
    st.randoms(use_true_random=False),
)
def test_a_shape_key_rebuilds_an_allocation_with_the_same_key(counts, rack, pod, rnd):
    t = Topology.regular(12, [("rack", rack, 50.0), ("pod", pod, 25.0)])
    servers = rnd.sample(range(12), len(counts))
    key = t.shape_key(servers, counts)
    flat, sub = t.of_shape(key)
    assert sorted(flat) == sorted(counts)
    assert sub.shape_key(range(len(flat)), flat) == key
    # Renumbering the servers inside their domains changes nothing.
    assert t.shape_key(servers[::-1], counts[::-1]) == key


def test_the_file_form_round_trips_and_reads_the_issue_s_spelling():
    inst = instance_from_dict(copy.deepcopy(DOC))
    assert inst.cluster.level_gbps == (300.0, 50.0, 25.0, 12.5)
    assert instance_to_dict(inst)["cluster"] == DOC["cluster"]
    with_server = copy.deepcopy(DOC)
    del with_server["cluster"]["intra_server_gbps"]
    with_server["cluster"]["topology"]["levels"].insert(0, {"name": "server", "gbps": 300})
    assert instance_from_dict(with_server).cluster == inst.cluster


def test_without_a_spine_bandwidth_the_outermost_tier_s_is_used():
    doc = copy.deepcopy(DOC)
    del doc["cluster"]["inter_server_gbps"]
    doc["cluster"]["topology"]["levels"][1].pop("racks")  # one pod holds everything
    cluster = instance_from_dict(doc).cluster
    assert cluster.level_gbps == (300.0, 50.0, 25.0, 25.0)
    assert cluster.topology is not None
    assert cluster.topology.n_domains == (4, 1)


def _set(path, value):
    def mutate(doc):
        *head, last = path
        node = doc
        for key in head:
            node = node[key]
        node[last] = value

    return mutate


LEVELS = ("cluster", "topology", "levels")


@pytest.mark.parametrize(
    ("mutate", "where", "words"),
    [
        (_set((*LEVELS, 0, "servers"), [0, 0, 1]), "levels[0].servers", "lists the rack of 3"),
        (_set((*LEVELS, 0, "servers"), [0, 0, 2, 2, 3, 3, 4, 4]), "levels[0].servers", "gaps"),
        (_set((*LEVELS, 1, "gbps"), 60), "levels[1].gbps", "must not grow outwards"),
        (_set((*LEVELS, 1, "racks"), [0, 1, 0]), "levels[1].racks", "lists the pod of 3"),
        (_set((*LEVELS, 0, "servers"), 0), "levels[0].servers", ">= 1"),
        (_set((*LEVELS, 0, "gbps"), -1), "levels[0].gbps", "> 0"),
        (_set((*LEVELS, 0, "name"), "server"), "levels[0]", "server"),
        (_set((*LEVELS, 1, "servers"), 2), "levels[1]", "unknown key 'servers'"),
        (_set(("cluster", "inter_server_gbps"), 40), "inter_server_gbps", "grow outwards"),
        (_set(("cluster", "topology", "depth"), 2), "topology", "unknown key 'depth'"),
        (_set(("cluster", "topology", "levels"), []), "topology.levels", "a tier above"),
    ],
)
def test_a_bad_topology_is_one_clear_error(mutate, where, words):
    doc = copy.deepcopy(DOC)
    mutate(doc)
    with pytest.raises(InstanceError) as err:
        instance_from_dict(doc)
    message = str(err.value)
    assert "\n" not in message
    assert where in message
    assert words in message


def test_a_topology_must_group_exactly_the_cluster_s_servers():
    with pytest.raises(InstanceError, match="groups 4 servers, but the cluster lists 8"):
        Cluster(servers=(8,) * 8, topology=Topology.regular(4, [("rack", 2, 50.0)]))


def test_the_schema_accepts_a_tiered_cluster():
    import jsonschema

    from asrpt_opt.model.schema import instance_schema

    jsonschema.validate(json.loads(json.dumps(DOC)), instance_schema())
