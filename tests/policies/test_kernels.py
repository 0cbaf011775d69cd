"""Each policy's compiled kernel sits beside its rule; the names and codes the two forms
share cannot drift apart."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.policies import POLICIES, ListScheduler, make_policy
from asrpt_opt.sim.compiled import COMPILED_FROM, Kernel, compile_threshold
from tests.sim.test_compiled import RULE_PARAMS


def test_every_registered_policy_has_a_kernel_and_a_differential_test():
    kernels = {name: make_policy(name).kernel() for name in POLICIES}
    assert all(isinstance(k, Kernel) for k in kernels.values()), kernels
    assert {name for name, _ in RULE_PARAMS} == set(POLICIES)


def test_the_preemptive_policies_compile_from_fewer_jobs():
    from asrpt_opt.sim.compiled import PREEMPTIVE_FROM

    threshold = {name: compile_threshold(make_policy(name)) for name in POLICIES}
    assert {name for name, n in threshold.items() if n < PREEMPTIVE_FROM} == {
        "tiresias-gittins",
        "gittins",
    }
    # Measured (docs/performance.md): the size-blind list policies run as fast in Python;
    # the others' decisions re-rank every running and waiting job (EASY's read the queue
    # behind its head).
    assert {name for name, n in threshold.items() if n == COMPILED_FROM} == {
        "fifo", "sjf", "qssf",
    }  # fmt: skip
    assert {n for n in threshold.values()} == {3_000, PREEMPTIVE_FROM, COMPILED_FROM}


def test_list_rules_are_the_kernels_keys():
    from asrpt_opt.policies import list_scheduler_kernel as lk
    from asrpt_opt.policies import registry

    rules = set()
    for cls in vars(registry).values():
        if inspect.isclass(cls) and issubclass(cls, ListScheduler):
            rule = cls.__dict__.get("_core")
            if rule is not None and rule != "a-srpt":
                rules.add(rule)
    rules.add(make_policy("msf", preemptive=False).kernel().name)  # a knob selects the rule
    assert rules == set(lk.KEYS)


def test_selection_rules_are_the_policies_names():
    from asrpt_opt.policies import _selection_kernel

    names = (
        "serverfilling-srpt",
        "serverfilling",
        "firstfit-srpt",
        "greedy-srpt",
        "prr",
        "maxweight",
    )
    assert set(_selection_kernel.RULES) == {make_policy(name).name for name in names}


def test_a_subclass_inherits_no_kernel():
    for name in POLICIES:
        cls = type(make_policy(name))
        sub = type(f"My{cls.__name__}", (cls,), {})
        assert sub().kernel() is None, name


@pytest.mark.parametrize("name", ["a-srpt", "2d-las", "tiresias-gittins", "prr"])
def test_knob_errors_come_from_the_policy_alone(name):
    # The kernel reads knobs the policy validated (at reset); it has no second check.
    from asrpt_opt.errors import UsageError
    from asrpt_opt.model import Cluster, Instance, Job
    from asrpt_opt.policies import simulate

    bad = {
        "a-srpt": {"adaptive": "triple"},
        "2d-las": {"thresholds_gpu_s": (5.0, 1.0)},
        "tiresias-gittins": {"delta_s": -3},
        "prr": {"trust": 2.0},
    }[name]
    inst = Instance(
        name="one",
        cluster=Cluster(servers=(2,)),
        jobs=(Job(id="a", release_s=0, gpus=1, duration_s=1),),
    )
    for engine in ("python", "compiled"):
        with pytest.raises(UsageError):
            simulate(inst, name, engine=engine, **bad)


@pytest.mark.parametrize(("cap", "expected"), [(4, [1, 3, 4, 2, 0]), (8, [4, 1, 3, 2, 0])])
def test_widest_first_is_a_stable_sort_by_capped_width(cap, expected):
    from asrpt_opt.policies._selection_kernel import widest_first

    gpus = np.array([1, 4, 2, 4, 8])
    assert widest_first(np.arange(5), gpus, cap).tolist() == expected
    # The same order as the stable sort the Python rule uses.
    ranked = np.array([3, 0, 4, 1, 2])
    key = -np.minimum(gpus[ranked], cap)
    assert (
        widest_first(ranked, gpus, cap).tolist() == ranked[np.argsort(key, kind="stable")].tolist()
    )


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 5_000), min_size=1, max_size=300),
    services=st.lists(
        st.tuples(st.integers(0, 40), st.sampled_from([1, 2, 4, 8]), st.integers(0, 5)),
        min_size=1,
        max_size=80,
    ),
    delta=st.integers(1, 500),
)
def test_gittins_order_reuses_an_index_only_for_equal_service(sizes, services, delta):
    # The kernel computes one index per run of equal attained GPU-seconds (jobs that never
    # ran sit together by the thousand in a burst): whatever the runs, the order must be
    # that of every job's own index, higher first, then the earlier release, then the queue.
    from asrpt_opt.policies._gittins_sample import SizeSample
    from asrpt_opt.policies._gittins_sample_kernel import new_sample, sample_add
    from asrpt_opt.policies.tiresias_kernel import _gittins_order

    sample = new_sample(len(sizes), delta)
    for size in sizes:
        sample_add(sample, size)
    executed = np.array([e for e, _, _ in services], dtype=np.int64)
    gpus = np.array([g for _, g, _ in services], dtype=np.int64)
    release = np.array([r for _, _, r in services], dtype=np.int64)
    m = len(services)
    queue = np.arange(m, dtype=np.int64)[::-1].copy()  # not in index order
    index = SizeSample(sizes, delta).indices(executed * gpus)
    expected = sorted(queue.tolist(), key=lambda j: (-index[j], release[j], m - j))
    _gittins_order(queue, m, sample, executed, gpus, release)
    assert queue.tolist() == expected
