"""Chunked simulations give the whole run's schedule, metrics and completions, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.errors import PolicyError, UsageError
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.columns import JobColumns
from asrpt_opt.policies import make_policy
from asrpt_opt.policies.prr import PreferentialRoundRobin
from asrpt_opt.policies.registry import POLICIES
from asrpt_opt.sim import simulate
from asrpt_opt.sim.stream import simulate_stream
from asrpt_opt.traces.synthetic import msj_columns

REGENERATIVE = sorted(n for n in POLICIES if getattr(POLICIES[n], "regenerative", False))


def whole_and_chunked(columns, name, chunk_jobs, overhead=0.0):
    whole = simulate(
        columns.to_instance(), make_policy(name), engine="compiled", restore_overhead_s=overhead
    )
    chunked = simulate_stream(
        columns, make_policy(name), chunk_jobs=chunk_jobs, restore_overhead_s=overhead
    )
    return whole, chunked


def completions(result):
    return np.array([run.completion_s for run in result.schedule.runs])


def test_the_built_in_policies_that_forget_are_regenerative():
    assert {"fifo", "srtf", "a-srpt", "serverfilling-srpt", "maxweight", "easy-backfill"} <= set(
        REGENERATIVE
    )
    assert not {"prr", "tiresias-gittins", "gittins"} & set(REGENERATIVE)


@pytest.mark.parametrize("name", REGENERATIVE)
@pytest.mark.parametrize("load", [0.5, 0.85])
def test_chunks_give_the_whole_runs_schedule(name, load):
    columns = msj_columns(3_000, load=load, seed=7)
    whole, chunked = whole_and_chunked(columns, name, chunk_jobs=400)
    assert np.array_equal(completions(whole), chunked.completion_s)
    assert chunked.metrics == whole.metrics
    assert chunked.chunks > 1 or load > 0.8  # a stable run is cut
    if chunked.chunks > 1:  # and each cut is checked on the jobs after it
        assert chunked.checked_jobs >= chunked.chunks - 1


@pytest.mark.parametrize("name", ["srtf", "a-srpt", "serverfilling-srpt", "2d-las"])
def test_chunks_on_several_servers_with_spread_slowdowns_and_overheads(name):
    rng = np.random.default_rng(3)
    n = 2_000
    columns = JobColumns(
        name="spread",
        cluster=Cluster(servers=(4, 4, 8)),
        release_s=np.cumsum(rng.exponential(60.0, n)),
        gpus=rng.choice([1, 2, 4, 8, 12], n),
        duration_s=rng.lognormal(5.0, 1.5, n),
        weight=rng.uniform(0.5, 2.0, n),
        spread_slowdown=rng.uniform(1.0, 1.5, n),
    )
    whole, chunked = whole_and_chunked(columns, name, chunk_jobs=300, overhead=20.0)
    assert np.array_equal(completions(whole), chunked.completion_s)
    assert chunked.metrics == whole.metrics


def test_an_unstable_run_grows_its_chunk_to_the_whole_run():
    columns = msj_columns(2_000, load=1.3, seed=1)
    whole, chunked = whole_and_chunked(columns, "fifo", chunk_jobs=200)
    assert chunked.chunks == 1
    assert chunked.resimulated_jobs >= 200
    assert chunked.metrics == whole.metrics
    assert chunked.metrics.stability.verdict.value == "unstable"


def test_policies_that_remember_are_refused():
    with pytest.raises(UsageError, match="cannot be simulated in chunks"):
        simulate_stream(msj_columns(100, seed=0), make_policy("prr"))


def test_a_policy_that_remembers_is_caught_at_the_cut(monkeypatch):
    # PRR's quanta depend on jobs that left: declared regenerative, a cut's check fails.
    monkeypatch.setattr(PreferentialRoundRobin, "regenerative", True)
    with pytest.raises(PolicyError, match="'prr' is not regenerative: job"):
        simulate_stream(msj_columns(3_000, load=0.5, seed=3), make_policy("prr"), chunk_jobs=700)


def test_chunk_size_must_leave_room_for_a_cut():
    with pytest.raises(UsageError, match="chunk_jobs must be >= 2"):
        simulate_stream(msj_columns(10, seed=0), make_policy("fifo"), chunk_jobs=1)


@st.composite
def sparse_columns(draw):
    """Small clusters and jobs whose arrivals leave the cluster empty now and then."""
    servers = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    n = draw(st.integers(1, 40))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 20.0]), min_size=n, max_size=n))
    return JobColumns(
        name="sparse",
        cluster=Cluster(servers=servers),
        release_s=np.cumsum(gaps),
        gpus=draw(st.lists(st.integers(1, sum(servers)), min_size=n, max_size=n)),
        duration_s=draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 7.0]), min_size=n, max_size=n)),
        spread_slowdown=draw(st.lists(st.sampled_from([1.0, 1.5]), min_size=n, max_size=n)),
    )


@settings(max_examples=60, deadline=None)
@given(sparse_columns(), st.sampled_from(REGENERATIVE), st.integers(2, 6))
def test_chunks_equal_the_whole_run_on_random_sparse_jobs(columns, name, chunk_jobs):
    whole, chunked = whole_and_chunked(columns, name, chunk_jobs=chunk_jobs)
    assert np.array_equal(completions(whole), chunked.completion_s)
    assert chunked.metrics == whole.metrics
