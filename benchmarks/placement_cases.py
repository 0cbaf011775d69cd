"""Random placement cases for the placement benchmark (seeded)."""

from __future__ import annotations

import numpy as np

from asrpt_opt.model.dnn import MODELS, load_model
from asrpt_opt.model.job import Parallelism
from asrpt_opt.model.workers import WorkerGraph, worker_graph


def random_case(seed: int, max_workers: int = 32) -> tuple[WorkerGraph, np.ndarray]:
    """A random model and 3D parallelism (4..max_workers GPUs) on a fragmented cluster.

    Servers hold 4 or 8 GPUs; each server's free count is uniform on 0..size, redrawn until
    the job fits.
    """
    rng = np.random.default_rng(seed)
    while True:
        model = load_model(str(rng.choice(MODELS)))
        tp = int(rng.choice([1, 2, 4]))
        pp = int(rng.choice([1, 2, 4]))
        dp = int(rng.integers(1, 9))
        workers = dp * pp * tp
        if 4 <= workers <= max_workers and pp <= len(model.order):
            break
    wg = worker_graph(model, Parallelism(dp=dp, pp=pp, tp=tp))
    size = int(rng.choice([4, 8]))
    n_servers = int(rng.integers(2, 9))
    while True:
        free = rng.integers(0, size + 1, size=n_servers)
        if free.sum() >= workers:
            return wg, free
        n_servers += 1


def random_case_64(seed: int) -> tuple[WorkerGraph, np.ndarray]:
    """A random model as 64 workers (tp and pp in {1, 2, 4}) on 16 servers of 4 or 8 GPUs,
    each with between half and all of its GPUs free, redrawn until the job fits."""
    rng = np.random.default_rng(seed)
    while True:
        model = load_model(str(rng.choice(MODELS)))
        tp = int(rng.choice([1, 2, 4]))
        pp = int(rng.choice([1, 2, 4]))
        if pp <= len(model.order):
            break
    wg = worker_graph(model, Parallelism(dp=64 // (pp * tp), pp=pp, tp=tp))
    sizes = rng.choice([4, 8], size=16)
    while True:
        free = rng.integers(sizes // 2, sizes + 1)
        if free.sum() >= 64:
            return wg, free
