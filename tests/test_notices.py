"""compile_once says 'compiling' only when numba really compiles, never for a slow load
from a warm cache."""

from __future__ import annotations

import logging
import time

import numba
import numpy as np

from asrpt_opt.notices import NOTICE, compile_once

LOG = logging.getLogger("tests.notices")


def test_a_slow_load_without_compiling_says_nothing(caplog):
    caplog.set_level(NOTICE)
    took = compile_once("slow loading", "1 s", lambda: time.sleep(1.3), LOG)
    assert took > 1.0
    assert caplog.records == []


def test_a_real_compile_that_takes_long_says_so(caplog):
    caplog.set_level(NOTICE)

    @numba.njit
    def plus_one(x):
        return x + 1

    def work():
        plus_one(np.arange(3))  # compiled now: no cache for a function defined here
        time.sleep(1.3)

    compile_once("test kernels", "1 s", work, LOG)
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("compiling test kernels with numba") for m in messages)
    assert any(m.startswith("test kernels compiled in") for m in messages)


def test_each_thing_compiles_once_per_process(caplog):
    calls = []
    compile_once("counted", "1 s", lambda: calls.append(1), LOG)
    assert compile_once("counted", "1 s", lambda: calls.append(1), LOG) == 0.0
    assert calls == [1]
