"""The fragmentation-aware choice table of docs/placement.md: A-SRPT's mean JCT with
``Placement(choice="fragmentation", tolerance=t)`` over its myopic default, on dnn-mix-400
and fresh DNN mixes (run: ``python docs/_scripts/fragmentation_choice.py``)."""

from __future__ import annotations

from asrpt_opt import simulate
from asrpt_opt.datasets import load_example
from asrpt_opt.model import Cluster
from asrpt_opt.sim import Placement
from asrpt_opt.traces.synthetic import dnn_mix

TOLERANCES = (0.02, 0.05, 0.1)


def main() -> None:
    cases = [("dnn-mix-400", load_example("dnn-mix-400"))]
    cluster = Cluster(servers=(8,) * 8, intra_server_gbps=300.0, inter_server_gbps=12.5)
    for load in (0.7, 0.9):
        for seed in range(3):
            cases.append(
                (f"dnn_mix load {load} seed {seed}", dnn_mix(300, cluster, load=load, seed=seed))
            )
    print(
        "| workload | myopic mean JCT (s) | " + " | ".join(f"tol {t:g}" for t in TOLERANCES) + " |"
    )
    print("|---|---:|" + "---:|" * len(TOLERANCES))
    for name, inst in cases:
        base = simulate(inst, "a-srpt").metrics.mean_jct_s
        cells = []
        for tol in TOLERANCES:
            rule = Placement(choice="fragmentation", tolerance=tol)
            cells.append(
                f"{simulate(inst, 'a-srpt', placement=rule).metrics.mean_jct_s / base:.3f}"
            )
        print(f"| {name} | {base:,.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
