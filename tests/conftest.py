"""Shared fixtures and helpers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from asrpt_opt.model import Cluster, Instance, Job

# CI runs hypothesis derandomized, so that a red build is reproducible and never flaky; locally
# the default profile keeps exploring new examples. Select with HYPOTHESIS_PROFILE=ci.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
)

DATA = Path(__file__).parent / "data"
#: The repository root: tests find bundled files from here, never from the working directory.
ROOT = Path(__file__).resolve().parents[1]
TINY = str(ROOT / "instances" / "examples" / "tiny-abstract.json")


@pytest.fixture(scope="session")
def known_answers() -> dict:
    return json.loads((DATA / "known_answers.json").read_text())["classes"]


def make_instance(
    jobs: list[tuple], servers: tuple[int, ...] = (4, 4), name: str = "t"
) -> Instance:
    """Instance from (release, gpus, duration[, weight[, slowdown]]) tuples."""
    out = []
    for i, spec in enumerate(jobs):
        r, g, d, *rest = spec
        w = rest[0] if rest else 1.0
        s = rest[1] if len(rest) > 1 else 1.0
        out.append(Job(id=f"j{i}", release_s=r, gpus=g, duration_s=d, weight=w, spread_slowdown=s))
    return Instance(name=name, cluster=Cluster(servers=servers), jobs=tuple(out))


@st.composite
def instances(draw, max_jobs: int = 8, weighted: bool = False) -> Instance:
    """Random small instances: 1-3 servers of 1-4 GPUs, integer-ish data."""
    servers = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    total = sum(servers)
    n = draw(st.integers(1, max_jobs))
    jobs = []
    for _ in range(n):
        jobs.append(
            (
                draw(st.integers(0, 12)),
                draw(st.integers(1, total)),
                draw(st.integers(1, 9)) / draw(st.sampled_from([1, 2, 4])),
                float(draw(st.integers(1, 4))) if weighted else 1.0,
                draw(st.sampled_from([1.0, 1.25, 2.0])),
            )
        )
    return make_instance(jobs, servers)
