"""Write the four bundled tiered-cluster instances (instances/examples/tiers-*.json):
``python tools/tiered_examples.py``; a test checks the files equal what this writes."""

from __future__ import annotations

from pathlib import Path

from asrpt_opt.model import Cluster, Instance
from asrpt_opt.model.io import dump_instance
from asrpt_opt.traces.synthetic import LLM_MIX_TYPES, dnn_mix

ROOT = Path(__file__).resolve().parents[1]


def tiered_examples() -> dict[str, Instance]:
    """The four instances by name: 40 LLM-mix jobs at load 0.9 on 128 GPUs in 2 tiers (4 racks
    of 4 servers) or 3 tiers (4 pods of 2 racks of 2 servers), full bisection (1:1) or 3:1
    oversubscribed above the rack."""
    out = {}
    for levels in (2, 3):
        for over in (1, 3):
            if levels == 2:
                cluster = Cluster.tiered(servers_per_rack=4, racks=4, oversubscription=over)
            else:
                cluster = Cluster.tiered(
                    servers_per_rack=2, racks=8, racks_per_pod=2, oversubscription=over
                )
            name = f"tiers-{levels}level-{over}to1"
            out[name] = dnn_mix(40, cluster, load=0.9, types=LLM_MIX_TYPES, seed=0, name=name)
    return out


def main() -> None:
    for name, instance in tiered_examples().items():
        dump_instance(instance, ROOT / "instances" / "examples" / f"{name}.json")


if __name__ == "__main__":
    main()
