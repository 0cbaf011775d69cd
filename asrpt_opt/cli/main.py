"""The ``asrpt-opt`` command line. Only this module prints.

Every command that computes something prints a human-readable table, or one JSON object with
``--json`` (DESIGN.md section 5). Bad input exits with status 2 and a one-line message naming
the file, the field and the reason, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from asrpt_opt import __version__
from asrpt_opt.analysis.metrics import Metrics
from asrpt_opt.errors import AsrptError
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.io import load_instance
from asrpt_opt.policies import POLICIES, PRIMARY
from asrpt_opt.prediction import NoisyOraclePredictor, OraclePredictor, Predictor
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.sim.engine import SimulationResult, simulate

__all__ = ["build_parser", "main"]

EXIT_USAGE = 2


class UsageError(Exception):
    """A command-line argument is invalid (exit status 2)."""


def _known(name: str, registry: Any, what: str) -> str:
    """Return ``name`` if ``registry`` has it, else a usage error listing the known names."""
    if name not in registry:
        raise UsageError(f"unknown {what} {name!r} (known: {', '.join(sorted(registry))})")
    return name


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=None, separators=(",", ":")) + "\n")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in header]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    for k, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.rjust(w) if k and i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value != 0 and abs(value) < 1e-3:
            return f"{value:.4g}"
        if abs(value) >= 1e5:
            return f"{value:,.0f}"
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
    return str(value)


def _predictor(args: argparse.Namespace) -> Predictor:
    if args.predictor == "oracle":
        return OraclePredictor()
    return NoisyOraclePredictor(mu=args.mu, bias=args.bias, seed=args.seed).fit([])


def _parse_servers(text: str) -> tuple[int, ...]:
    try:
        if "x" in text:
            count, size = (int(p) for p in text.split("x", 1))
            servers = (size,) * count
        else:
            servers = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid cluster {text!r}: use SERVERSxGPUS (16x8) or a list of GPUs (8,8,4)"
        ) from None
    if not servers or min(servers) < 1:
        raise argparse.ArgumentTypeError(f"invalid cluster {text!r}: GPU counts must be >= 1")
    return servers


# --------------------------------------------------------------------------- commands
def cmd_validate(args: argparse.Namespace) -> int:
    """Check an instance file against the contract."""
    inst = load_instance(args.instance)
    n_abstract = sum(j.is_abstract for j in inst.jobs)
    info = {
        "valid": True,
        "name": inst.name,
        "n_jobs": inst.n_jobs,
        "abstract_jobs": n_abstract,
        "dnn_jobs": inst.n_jobs - n_abstract,
        "servers": list(inst.cluster.servers),
        "total_gpus": inst.cluster.total_gpus,
    }
    if args.json:
        _emit_json(info)
    else:
        print(
            f"{args.instance}: valid ({inst.n_jobs} jobs: {n_abstract} abstract, "
            f"{inst.n_jobs - n_abstract} DNN; {inst.cluster.n_servers} servers, "
            f"{inst.cluster.total_gpus} GPUs)"
        )
    return 0


def _relax_json(inst: Instance) -> dict[str, Any]:
    lb = lower_bounds(inst)
    return {
        "srpt_area_bound_s": lb.srpt_area_bound_s,
        "release_plus_length_bound_s": lb.release_plus_length_bound_s,
        "mean_busy_time_bound_s": lb.mean_busy_time_bound_s,
        "lower_bound_s": lb.lower_bound_s,
        "lower_bound_kind": lb.lower_bound_kind,
        "weighted": lb.weighted,
    }


def cmd_relax(args: argparse.Namespace) -> int:
    """Print the single-machine relaxation's lower bounds."""
    inst = load_instance(args.instance)
    out = _relax_json(inst)
    if args.json:
        _emit_json(out)
        return 0
    rows = [
        ("SRPT on the area relaxation (sum C_j)", out["srpt_area_bound_s"]),
        ("sum w_j (r_j + p_j)", out["release_plus_length_bound_s"]),
        ("mean busy time (Goemans), weighted", out["mean_busy_time_bound_s"]),
        (f"lower bound on sum w_j C_j [{out['lower_bound_kind']}]", out["lower_bound_s"]),
    ]
    print(_table(("bound", "seconds"), rows))
    if out["weighted"]:
        print("weights differ: the SRPT value bounds sum C_j only, not sum w_j C_j")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Simulate one policy on an instance."""
    inst = load_instance(args.instance)
    _known(args.policy, POLICIES, "policy")
    res = simulate(
        inst,
        args.policy,
        predictor=_predictor(args),
        restore_overhead_s=args.restore_overhead,
        seed=args.seed,
    )
    lb = lower_bounds(inst).lower_bound_s
    if args.gantt:
        from asrpt_opt.analysis.plots import plot_gantt

        plot_gantt(inst, res.schedule, args.gantt, title=f"{inst.name}: {res.policy}")
    if args.json:
        out = res.to_json()
        out["lower_bound_s"] = lb
        out["seed"] = args.seed
        _emit_json(out)
        return 0
    m = res.metrics
    print(f"{inst.name}: {res.policy} on {inst.n_jobs} jobs, {inst.cluster.total_gpus} GPUs")
    print(_table(("metric", "value"), [(k, v) for k, v in m.to_json().items()]))
    print(
        f"lower bound on sum w_j C_j: {_fmt(lb)}  (ratio {m.total_weighted_completion_s / lb:.4f})"
    )
    if args.gantt:
        print(f"Gantt chart written to {args.gantt}")
    return 0


def _compare(
    inst: Instance, policies: Sequence[str], seed: int | None, progress: Callable[[str], None]
) -> tuple[dict[str, SimulationResult], dict[str, float]]:
    results: dict[str, SimulationResult] = {}
    walls: dict[str, float] = {}
    for name in policies:
        t0 = time.perf_counter()
        results[name] = simulate(inst, name, seed=seed)
        walls[name] = time.perf_counter() - t0
        progress(f"  {name}: {walls[name]:.2f} s")
    return results, walls


def _metrics_rows(metrics: dict[str, Metrics], lb: float) -> list[tuple[Any, ...]]:
    h = 3600.0
    return [
        (
            name,
            m.mean_jct_s / h,
            m.p95_jct_s / h,
            m.makespan_s / h,
            m.total_weighted_completion_s,
            lb,
            m.total_weighted_completion_s / lb,
        )
        for name, m in metrics.items()
    ]


def cmd_demo(args: argparse.Namespace) -> int:
    """Simulate A-SRPT and every baseline on the bundled Gavel/Philly workload."""
    from asrpt_opt.analysis.plots import plot_comparison, plot_gantt
    from asrpt_opt.traces.gavel import gavel_instance

    inst = gavel_instance(n_jobs=args.n_jobs, servers=args.cluster)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    say = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr))
    say(
        f"{inst.name}: {inst.n_jobs} jobs on {inst.cluster.n_servers} servers "
        f"({inst.cluster.total_gpus} GPUs); simulating {len(PRIMARY)} policies"
    )
    results, walls = _compare(inst, list(PRIMARY), args.seed, say)
    lb = lower_bounds(inst).lower_bound_s
    metrics = {k: r.metrics for k, r in results.items()}
    plot_comparison(metrics, out / "comparison.png", lower_bound_s=lb, title=inst.name)
    plot_gantt(
        inst, results["a-srpt"].schedule, out / "gantt-a-srpt.png", title=f"{inst.name}: A-SRPT"
    )
    if args.json:
        _emit_json(
            {
                "instance": inst.name,
                "lower_bound_s": lb,
                "output_dir": str(out),
                "policies": {
                    k: {
                        **m.to_json(),
                        "ratio_to_lower_bound": m.total_weighted_completion_s / lb,
                        "wall_s": walls[k],
                    }
                    for k, m in metrics.items()
                },
            }
        )
        return 0
    header = (
        "policy",
        "mean JCT h",
        "p95 JCT h",
        "makespan h",
        "sum wC s",
        "lower bound s",
        "ratio",
    )
    print(_table(header, _metrics_rows(metrics, lb)))
    print(f"\nplots written to {out}/: comparison.png, gantt-a-srpt.png")
    return 0


def _record_optimum(source: str, inst: Instance, res: Any, folder: str) -> Path:
    """Write a solve's result with its provenance (instance hash, solver, parameters)."""
    import datetime
    import hashlib

    from asrpt_opt.model.io import dumps_instance

    digest = hashlib.sha256(dumps_instance(inst).encode()).hexdigest()
    kind = "pmtn" if res.preemptive else "nonpmtn"
    out = Path(folder) / f"{inst.name}.{res.placement}.{kind}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "instance": Path(source).name,
        "instance_sha256": digest,
        "preemptive": res.preemptive,
        "placement": res.placement,
        "status": res.status,
        "objective_s": res.objective_s,
        "bound_s": res.bound_s,
        "backend": res.backend,
        "solver": res.solver,
        "params": res.params,
        "wall_s": round(res.wall_s, 3),
        "asrpt_opt": __version__,
        "date": datetime.date.today().isoformat(),
        "message": res.message,
    }
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return out


def cmd_solve(args: argparse.Namespace) -> int:
    """Compute the offline optimum (or a proven interval) of an instance."""
    from dataclasses import replace

    from asrpt_opt.solvers import SolverParams, load_preset, solve

    inst = load_instance(args.instance)
    params = load_preset(args.preset) if args.preset else SolverParams()
    if args.time_limit is not None:
        params = replace(params, time_limit_s=args.time_limit)
        SolverParams.__post_init__(params)
    res = solve(
        inst,
        preemptive=args.preemptive,
        placement=args.placement,
        backend=args.backend,
        params=params,
    )
    if args.record:
        path = _record_optimum(args.instance, inst, res, args.record)
        if not args.json:
            print(f"recorded in {path}")
    if args.plot and res.schedule is not None:
        from asrpt_opt.analysis.plots import plot_gantt

        kind = "preemptive" if args.preemptive else "non-preemptive"
        plot_gantt(
            inst, res.schedule, args.plot, title=f"{inst.name}: offline {kind} {res.status}"
        )
    if args.json:
        _emit_json(res.to_json())
        return 0
    rows = [
        ("status", res.status),
        ("objective sum w_j C_j (s)", res.objective_s if res.objective_s is not None else "-"),
        ("proven lower bound (s)", res.bound_s if res.bound_s is not None else "-"),
        ("backend", res.backend),
        ("placement", f"{res.placement}, {'preemptive' if res.preemptive else 'non-preemptive'}"),
        ("solver", res.solver),
        ("wall (s)", res.wall_s),
    ]
    print(_table(("field", "value"), rows))
    if res.message:
        print(res.message)
    if args.plot and res.schedule is not None:
        print(f"Gantt chart written to {args.plot}")
    return 0


class _Bar:
    """A one-line progress bar on stderr (only the CLI prints)."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label = label
        self.enabled = enabled and sys.stderr.isatty()
        self.start = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        filled = int(width * done / total) if total else width
        rate = time.perf_counter() - self.start
        sys.stderr.write(
            f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {rate:.0f}s"
        )
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _split_policies(text: str) -> tuple[str, ...]:
    names = tuple(p.strip() for p in text.split(",") if p.strip())
    for name in names:
        _known(name, POLICIES, "policy")
    if not names:
        raise UsageError("--policies needs at least one policy")
    return names


def cmd_ratio(args: argparse.Namespace) -> int:
    """Empirical competitive ratios of online policies against offline optima."""
    from asrpt_opt.analysis.families import FAMILIES
    from asrpt_opt.analysis.ratio import (
        RatioConfig,
        ResultStore,
        plot_ratios,
        run_sweep,
        summarise,
    )

    _known(args.family, FAMILIES, "family")
    if args.n < 1 or args.seeds < 1 or args.workers < 1:
        raise UsageError("--n, --seeds and --workers must be >= 1")
    config = RatioConfig(
        family=args.family,
        n=args.n,
        policies=_split_policies(args.policies),
        preemptive=not args.nonpreemptive_opt,
        backend=args.solver,
        time_limit_s=args.time_limit,
    )
    store = ResultStore(args.store)
    bar = _Bar(f"{args.family} n={args.n}", not args.json)
    try:
        payloads = run_sweep(
            config,
            range(args.seeds),
            store=store,
            workers=args.workers,
            backend=args.backend,
            scheduler=args.scheduler,
            progress=bar,
        )
    except KeyboardInterrupt:
        done = len(store.done(config))
        store.close()
        print(
            f"\ninterrupted: {done} of {args.seeds} instances are saved in {args.store}; "
            "run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    store.close()
    summary = summarise(payloads, config.policies)
    files = plot_ratios(payloads, config.policies, args.out) if args.out else []
    if args.json:
        _emit_json(
            {
                "config": {**config.__dict__, "policies": list(config.policies)},
                "store": args.store,
                "plots": files,
                "policies": summary,
            }
        )
        return 0
    opt = "preemptive (integer preemption)" if config.preemptive else "non-preemptive"
    print(
        f"{args.seeds} instances of family {args.family!r}, n={args.n}; OPT = offline {opt} "
        "optimum on the pooled cluster"
    )
    rows = []
    for name, s in summary.items():
        fit = s["fit"] or {}
        rows.append(
            (
                name,
                f"{s['proven']}/{s['instances']}",
                s["ratio_mean"] if s["ratio_mean"] is not None else "-",
                s["ratio_p95"] if s["ratio_p95"] is not None else "-",
                s["ratio_max"] if s["ratio_max"] is not None else "-",
                s["ratio_hi_max"],
                f"{fit.get('a', float('nan')):.3f}, {fit.get('b', float('nan')):.3f}",
            )
        )
    print(_table(("policy", "proven", "mean", "p95", "max", "max ALG/LB", "(a, b)"), rows))
    for name, s in summary.items():
        for lo, hi in s["unproven_intervals"]:
            print(f"  {name}: unproven instance, ratio in [{lo:.4f}, {hi:.4f}]")
    if files:
        print("plots: " + ", ".join(files))
    return 0


def cmd_worst_case(args: argparse.Namespace) -> int:
    """Local search for an instance where a policy's ratio is worst."""
    from asrpt_opt.analysis.ratio import worst_case
    from asrpt_opt.model.io import dump_instance

    _known(args.policy, POLICIES, "policy")
    budget = args.budget.rstrip("s")
    try:
        budget_s = float(budget)
    except ValueError:
        raise UsageError(f"invalid --budget {args.budget!r}: give seconds, e.g. 300s") from None
    found = worst_case(
        args.policy,
        args.n,
        family=args.family,
        budget_s=budget_s,
        time_limit_s=args.time_limit,
        seed=args.seed,
    )
    dump_instance(found.instance, args.out)
    out = {
        "policy": args.policy,
        "ratio": found.ratio,
        "policy_value_s": found.policy_value_s,
        "optimum_s": found.optimum_s,
        "evaluations": found.evaluations,
        "instance": args.out,
    }
    if args.json:
        _emit_json(out)
    else:
        print(
            f"worst ratio found for {args.policy}: {found.ratio:.4f} "
            f"({found.policy_value_s:g} vs proven optimum {found.optimum_s:g}) after "
            f"{found.evaluations} evaluations; instance written to {args.out}"
        )
    return 0


def _parse_counts(text: str, what: str) -> list[int]:
    try:
        values = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise UsageError(f"invalid {what} {text!r}: give comma-separated integers") from None
    if not values or min(values) < 0:
        raise UsageError(f"invalid {what} {text!r}: counts must be >= 0")
    return values


def cmd_place(args: argparse.Namespace) -> int:
    """Compare placement methods on every DNN job of an instance."""
    from asrpt_opt.model.dnn import load_model
    from asrpt_opt.model.workers import worker_graph
    from asrpt_opt.placement import METHODS, place

    inst = load_instance(args.instance)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        _known(m, METHODS, "placement method")
    cluster = inst.cluster
    free = (
        _parse_counts(args.free_gpus, "--free-gpus") if args.free_gpus else list(cluster.servers)
    )
    if len(free) != cluster.n_servers:
        raise UsageError(
            f"--free-gpus lists {len(free)} servers; the cluster has {cluster.n_servers}"
        )
    for s, (f, cap) in enumerate(zip(free, cluster.servers, strict=True)):
        if f > cap:
            raise UsageError(f"--free-gpus: server {s} has {cap} GPUs, not {f} free")
    if cluster.intra_server_gbps is None or cluster.inter_server_gbps is None:
        raise UsageError(f"{args.instance}: cluster needs intra_server_gbps and inter_server_gbps")
    jobs_out = []
    for job in inst.jobs:
        if job.is_abstract:
            continue
        assert job.model is not None
        assert job.parallelism is not None
        entry: dict[str, Any] = {"id": job.id, "gpus": job.gpus}
        if job.gpus > sum(free):
            entry["error"] = f"{job.gpus} workers do not fit in {sum(free)} free GPUs"
            jobs_out.append(entry)
            continue
        wg = worker_graph(load_model(job.model), job.parallelism)
        entry["results"] = [
            place(
                wg,
                free,
                method=m,
                intra_gbps=cluster.intra_server_gbps,
                inter_gbps=cluster.inter_server_gbps,
                seed=args.seed,
                time_limit_s=args.time_limit,
            ).to_json()
            for m in methods
        ]
        jobs_out.append(entry)
    if args.json:
        _emit_json({"free_gpus": free, "jobs": jobs_out})
        return 0
    if not jobs_out:
        print(f"{args.instance}: no DNN jobs")
        return 0
    for entry in jobs_out:
        if "error" in entry:
            print(f"job {entry['id']} ({entry['gpus']} GPUs): {entry['error']}")
            continue
        results = entry["results"]
        exact = [r for r in results if r["optimal"]]
        best = exact[0]["cross_server_bytes"] if exact else None
        # Unproven: the optimum lies between the best bound and the best cut found.
        known = min(r["cross_server_bytes"] for r in results)
        lower = max((r["lower_bound_bytes"] or 0.0 for r in results), default=0.0)
        rows = []
        for r in results:
            gap = "-"
            if best is not None:
                gap = (
                    f"{(r['cross_server_bytes'] - best) / best:.1%}"
                    if best
                    else ("0.0%" if r["cross_server_bytes"] == 0 else "inf")
                )
            elif lower > 0:
                lo = r["cross_server_bytes"] / known - 1
                gap = f"{lo:.1%}..{r['cross_server_bytes'] / lower - 1:.1%}"
            rows.append(
                (
                    r["method"],
                    r["cross_server_bytes"] / 1e6,
                    r["iteration_time_s"],
                    gap,
                    "yes" if r["optimal"] else "no",
                    r["wall_s"],
                    " ".join(f"{k}:{v}" for k, v in r["servers"].items()),
                )
            )
        print(f"job {entry['id']} ({entry['gpus']} GPUs), free GPUs {free}")
        print(
            _table(
                (
                    "method",
                    "cross MB/iter",
                    "iter s",
                    "gap to opt",
                    "optimal",
                    "wall s",
                    "servers",
                ),
                rows,
            )
        )
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    """Draw a job's worker graph (and a placement) to PNG."""
    from asrpt_opt.analysis.plots import plot_worker_graph
    from asrpt_opt.model.dnn import load_model
    from asrpt_opt.model.job import Parallelism
    from asrpt_opt.model.workers import worker_graph
    from asrpt_opt.placement import place

    dims = _parse_counts(args.parallelism, "--parallelism")
    if len(dims) != 3 or min(dims) < 1:
        raise UsageError("--parallelism needs three integers dp,pp,tp, each >= 1")
    wg = worker_graph(load_model(args.model), Parallelism(dp=dims[0], pp=dims[1], tp=dims[2]))
    free = _parse_counts(args.free_gpus, "--free-gpus") if args.free_gpus else None
    result = None
    if free is not None:
        result = place(
            wg,
            free,
            method=args.method,
            intra_gbps=args.intra_gbps,
            inter_gbps=args.inter_gbps,
            seed=args.seed,
        )
    plot_worker_graph(wg, args.out, assignment=None if result is None else result.assignment)
    if result is None:
        print(f"worker graph of {args.model} ({wg.n_workers} workers) written to {args.out}")
    else:
        print(
            f"{args.model} on free GPUs {free} by {result.method}: "
            f"{result.cross_server_bytes / 1e6:.1f} MB/iteration across servers, "
            f"{result.iteration_time_s:.4f} s/iteration; drawn to {args.out}"
        )
    return 0


def _jobs_source(spec: str) -> Instance:
    from asrpt_opt.traces import gavel_instance, recurring_jobs

    if spec == "gavel":
        return gavel_instance(n_jobs=2000, servers=(8,) * 8)
    if spec.startswith("pollux"):
        from asrpt_opt.traces import pollux_instance

        return pollux_instance(int(spec.split(":", 1)[1]) if ":" in spec else 1)
    if spec.startswith("recurring"):
        n = int(spec.split(":", 1)[1]) if ":" in spec else 5000
        return recurring_jobs(n, seed=0)
    if spec.endswith(".trace"):
        return gavel_instance(n_jobs=10**9, servers=(8,) * 8, trace=spec)
    return load_instance(spec)


def cmd_predict(args: argparse.Namespace) -> int:
    """Rolling-origin evaluation of length predictors."""
    from asrpt_opt.prediction import PREDICTORS, make_predictor
    from asrpt_opt.prediction.evaluate import plot_calibration, rolling_origin

    inst = _jobs_source(args.source)
    names = [p.strip() for p in args.predictors.split(",") if p.strip()]
    for name in names:
        _known(name, PREDICTORS, "predictor")
    params = {"rf": {"random_state": args.seed}, "noisy": {"seed": args.seed}}
    predictors = {n: make_predictor(n, **params.get(n, {})) for n in names}
    scores = rolling_origin(inst.jobs, predictors, windows=args.windows)
    plot = None
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        plot = str(Path(args.out) / "calibration.png")
        plot_calibration(scores, plot)
    if args.json:
        _emit_json(
            {
                "source": inst.name,
                "jobs": inst.n_jobs,
                "windows": args.windows,
                "plot": plot,
                "scores": [s.to_json() for s in scores],
            }
        )
        return 0
    print(f"{inst.name}: {inst.n_jobs} jobs, rolling origin over {args.windows} windows")
    print(
        _table(
            ("predictor", "MAE", "median APE", "R2 (log)"),
            [(s.name, s.mae, s.mdape, s.r2_log) for s in scores],
        )
    )
    if plot:
        print(f"calibration plot written to {plot}")
    return 0


def cmd_sensitivity(args: argparse.Namespace) -> int:
    """Mean JCT and ratio to the lower bound as prediction error grows."""
    from asrpt_opt.analysis.plots import plt

    inst = load_instance(args.instance)
    policies = _split_policies(args.policies)
    try:
        mus = [float(m) for m in args.mu.split(",") if m.strip()]
    except ValueError:
        raise UsageError(f"invalid --mu {args.mu!r}: give numbers >= 1") from None
    if not mus or min(mus) < 1:
        raise UsageError(f"invalid --mu {args.mu!r}: give numbers >= 1")
    lb = lower_bounds(inst).lower_bound_s
    table: dict[str, list[dict[str, float]]] = {}
    for name in policies:
        rows = []
        for mu in mus:
            pred = NoisyOraclePredictor(mu=mu, seed=args.seed).fit([])
            m = simulate(inst, name, predictor=pred, seed=args.seed).metrics
            rows.append(
                {
                    "mu": mu,
                    "mean_jct_s": m.mean_jct_s,
                    "ratio_to_lower_bound": m.total_weighted_completion_s / lb,
                }
            )
        table[name] = rows
    plot = None
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        plot = str(Path(args.out) / "sensitivity.png")
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, rows in table.items():
            ax.plot(
                [r["mu"] for r in rows],
                [r["mean_jct_s"] / 3600 for r in rows],
                marker="o",
                label=name,
            )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("prediction distortion mu (predictions within a factor mu)")
        ax.set_ylabel("mean JCT (h)")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(plot, dpi=120)
        plt.close(fig)
    if args.json:
        _emit_json(
            {
                "instance": inst.name,
                "lower_bound_s": lb,
                "seed": args.seed,
                "plot": plot,
                "policies": table,
            }
        )
        return 0
    header = ("policy", *(f"mu={m:g}" for m in mus))
    rows_out = [(name, *(r["mean_jct_s"] for r in rows)) for name, rows in table.items()]
    print(f"{inst.name}: mean JCT (s) with noisy predictions (seed {args.seed})")
    print(_table(header, rows_out))
    ratio_rows = [
        (name, *(r["ratio_to_lower_bound"] for r in rows)) for name, rows in table.items()
    ]
    print("\nsum w_j C_j / lower bound")
    print(_table(header, ratio_rows))
    if plot:
        print(f"plot written to {plot}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay an instance under several policies, with plots and a provenance file."""
    from asrpt_opt.analysis.replay import plot_replay, replay
    from asrpt_opt.placement import METHODS
    from asrpt_opt.prediction import PREDICTORS

    inst = load_instance(args.instance)
    policies = _split_policies(args.policies)
    _known(args.placement, METHODS, "placement method")
    _known(args.predictor, PREDICTORS, "predictor")
    report = replay(
        inst,
        policies,
        placement=args.placement,
        predictor=args.predictor,
        refit_every=args.refit_every,
        seed=args.seed,
        progress=_Bar(f"{inst.name}", not args.json),
    )
    files = plot_replay(report, args.out)
    if args.json:
        _emit_json({**report.to_json(), "files": files})
        return 0
    print(
        f"{inst.name}: {inst.n_jobs} jobs on {inst.cluster.total_gpus} GPUs "
        f"(predictor {args.predictor}, seed {args.seed})"
    )
    print(
        _table(
            (
                "policy",
                "mean JCT h",
                "p95 JCT h",
                "makespan h",
                "sum wC s",
                "lower bound s",
                "ratio",
            ),
            _metrics_rows(report.metrics, report.lower_bound_s),
        )
    )
    print(f"\nwritten: {', '.join(files)}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """Convert a trace into an instance file, reporting every bad row."""
    from asrpt_opt.model.io import dump_instance
    from asrpt_opt.traces import gavel_instance, pollux_instance

    errors: list[str] | None = None if args.strict else []
    if args.format == "gavel":
        inst = gavel_instance(
            n_jobs=args.n_jobs or 10**9,
            servers=args.cluster,
            gpu_kind=args.gpu_kind,
            trace=args.source,
            errors=errors,
            name=Path(args.source).stem,
        )
    elif args.format == "pollux":
        inst = pollux_instance(args.source, servers=args.cluster, seed=args.seed, errors=errors)
    else:
        from asrpt_opt.traces.adapters import trace_instance

        inst = trace_instance(
            args.format, args.source, servers=args.cluster, n_jobs=args.n_jobs, errors=errors
        )
    if args.map_models:
        from asrpt_opt.traces.adapters import map_models

        pairs = [p.split("=", 1) for p in args.map_models.split(",") if p.strip()]
        if any(len(p) != 2 or not p[0] or not p[1] for p in pairs):
            raise UsageError(f"invalid --map-models {args.map_models!r}: use NAME=MODEL,...")
        inst = map_models(
            inst, {a: b for a, b in pairs}, intra_gbps=args.intra_gbps, inter_gbps=args.inter_gbps
        )
    dump_instance(inst, args.output)
    bad = errors or []
    summary = {
        "format": args.format,
        "source": args.source,
        "output": args.output,
        "jobs": inst.n_jobs,
        "bad_rows": len(bad),
        "errors": bad[:20],
    }
    if args.json:
        _emit_json(summary)
        return 0
    print(
        f"{args.source}: {inst.n_jobs} jobs written to {args.output}; {len(bad)} bad rows skipped"
    )
    for line in bad[:10]:
        print(f"  {line}")
    if len(bad) > 10:
        print(f"  ... and {len(bad) - 10} more (use --json for 20, --strict to stop at the first)")
    return 0


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The argument parser (the CLI reference in docs is generated from it).

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog="asrpt-opt",
        description="Online scheduling of distributed DL training jobs: A-SRPT, baselines, "
        "bounds and a fast simulator.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check an instance file")
    p.add_argument("instance", help="instance file (asrpt-instance/1 JSON)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("relax", help="lower bounds from the single-machine relaxation")
    p.add_argument("instance")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_relax)

    p = sub.add_parser("simulate", help="simulate one policy on an instance")
    p.add_argument("instance")
    p.add_argument("--policy", default="a-srpt", help=f"one of: {', '.join(POLICIES)}")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--restore-overhead",
        type=float,
        default=0.0,
        metavar="S",
        help="seconds a resumed job needs before it progresses (default 0)",
    )
    p.add_argument(
        "--predictor",
        choices=("oracle", "noisy"),
        default="oracle",
        help="length predictions the policy sees (default: the truth)",
    )
    p.add_argument("--mu", type=float, default=2.0, help="noisy predictor's distortion")
    p.add_argument("--bias", type=float, default=1.0, help="noisy predictor's bias")
    p.add_argument("--gantt", metavar="PNG", help="also draw the schedule to this file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("solve", help="offline optimum of sum w_j C_j (exact models)")
    p.add_argument("instance")
    p.add_argument(
        "--preemptive",
        action="store_true",
        help="allow preemption at integer multiples of the instance's time unit",
    )
    p.add_argument(
        "--placement",
        choices=("pooled", "server-local", "spread"),
        default="pooled",
        help="pooled GPUs, one server per job, or spreading at the slowdown",
    )
    p.add_argument("--backend", choices=("portfolio", "milp", "cpsat"), default="portfolio")
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="seconds per backend (overrides the preset; default 10)",
    )
    p.add_argument("--preset", metavar="TOML", help="solver preset, e.g. solvers/default.toml")
    p.add_argument("--plot", metavar="PNG", help="draw the schedule as a Gantt chart")
    p.add_argument(
        "--record",
        metavar="DIR",
        help="also write the result with its provenance into DIR (instances/optima)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("ratio", help="competitive ratios against offline optima (sweep)")
    p.add_argument(
        "--family",
        default="poisson",
        help="instance family (poisson, bursty, heavy-tail, wide, single)",
    )
    p.add_argument("--n", type=int, default=8, help="jobs per instance (default 8)")
    p.add_argument("--seeds", type=int, default=20, help="instances, seeds 0..N-1 (default 20)")
    p.add_argument("--policies", default="a-srpt,srpt,fifo,sjf,srsf,2d-las")
    p.add_argument("--workers", type=int, default=1, help="parallel processes (default 1)")
    p.add_argument(
        "--backend",
        choices=("loky", "dask"),
        default="loky",
        help="process pool on this machine, or Dask",
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://host:8786")
    p.add_argument(
        "--store",
        default="ratio-results.sqlite",
        help="SQLite file; finished instances are kept and skipped on a rerun",
    )
    p.add_argument("--solver", choices=("portfolio", "milp", "cpsat"), default="portfolio")
    p.add_argument(
        "--time-limit",
        type=float,
        default=10.0,
        metavar="S",
        help="offline solver seconds per backend and instance",
    )
    p.add_argument(
        "--nonpreemptive-opt",
        action="store_true",
        help="compare with the non-preemptive optimum instead",
    )
    p.add_argument("--out", metavar="DIR", help="write ratio-cdf.png and ratio-vs-load.png here")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_ratio)

    p = sub.add_parser("worst-case", help="search for an instance with a bad ratio")
    p.add_argument("--policy", default="a-srpt")
    p.add_argument("--n", type=int, default=6)
    p.add_argument("--family", default="poisson")
    p.add_argument("--budget", default="60s", help="wall-clock budget, e.g. 300s")
    p.add_argument("--time-limit", type=float, default=5.0, metavar="S")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="worst-case.json", help="instance file to write")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_worst_case)

    p = sub.add_parser("place", help="compare placement methods on an instance's DNN jobs")
    p.add_argument("instance")
    p.add_argument("--methods", default="ilp,mincut,kl,greedy,consolidate,random,spread")
    p.add_argument("--free-gpus", metavar="N,N,...", help="free GPUs per server (default: all)")
    p.add_argument("--time-limit", type=float, default=10.0, metavar="S", help="for ilp")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_place)

    p = sub.add_parser("graph", help="draw a job's worker graph and a placement to PNG")
    p.add_argument("model", help="a bundled model, e.g. resnet50 or gpt2-1.5b")
    p.add_argument("--parallelism", default="1,1,1", metavar="DP,PP,TP")
    p.add_argument("--free-gpus", metavar="N,N,...", help="also place it on these free GPUs")
    p.add_argument("--method", default="mincut")
    p.add_argument("--intra-gbps", type=float, default=300.0)
    p.add_argument("--inter-gbps", type=float, default=12.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="worker-graph.png")
    p.set_defaults(func=cmd_graph)

    p = sub.add_parser("predict", help="rolling-origin evaluation of length predictors")
    p.add_argument(
        "source",
        help="an instance file, a Gavel .trace file, 'gavel' (bundled), 'pollux[:K]' (bundled "
        "Pollux workload K, lengths imputed) or 'recurring[:N]' (synthetic)",
    )
    p.add_argument("--predictors", default="rf,history,median,last,global,oracle")
    p.add_argument("--windows", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", metavar="DIR", help="write calibration.png here")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("sensitivity", help="policies under growing prediction error")
    p.add_argument("instance")
    p.add_argument("--policies", default="a-srpt,srpt,sjf,2d-las")
    p.add_argument("--mu", default="1,1.5,2,4,8", help="distortions to try (>= 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", metavar="DIR", help="write sensitivity.png here")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_sensitivity)

    p = sub.add_parser("replay", help="every policy on an instance: table, plots, provenance")
    p.add_argument("instance")
    p.add_argument("--policies", default="a-srpt,fifo,srtf,2d-las,sjf")
    p.add_argument(
        "--placement",
        default="mincut",
        help="how DNN jobs' workers are arranged (a placement method)",
    )
    p.add_argument("--predictor", default="oracle", help="length predictor (rf, history, ...)")
    p.add_argument(
        "--refit-every",
        type=int,
        metavar="K",
        help="refit the predictor after every K completions",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="asrpt-replay", help="folder for plots and results.json")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("import", help="convert a trace into an instance file")
    p.add_argument(
        "format",
        choices=("gavel", "pollux", "tiresias", "philly", "helios", "pai"),
        help="trace format",
    )
    p.add_argument("source", help="trace file (pai: the folder with pai_task_table.csv)")
    p.add_argument("-o", "--output", required=True, help="instance file to write")
    p.add_argument(
        "--cluster",
        type=_parse_servers,
        default=(8,) * 16,
        help="SERVERSxGPUS or a list of GPUs per server (default 16x8)",
    )
    p.add_argument("--n-jobs", type=int, help="keep only the first N jobs")
    p.add_argument("--gpu-kind", default="v100", help="gavel: GPU kind of the throughputs")
    p.add_argument("--seed", type=int, default=0, help="pollux: seed of the imputed lengths")
    p.add_argument("--strict", action="store_true", help="stop at the first bad row")
    p.add_argument(
        "--map-models",
        metavar="NAME=MODEL,...",
        help="turn jobs of these trace models into DNN jobs of bundled models",
    )
    p.add_argument("--intra-gbps", type=float, default=300.0, help="with --map-models")
    p.add_argument("--inter-gbps", type=float, default=12.5, help="with --map-models")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("demo", help="A-SRPT vs every baseline on the bundled workload")
    p.add_argument("--out", default="asrpt-demo", help="folder for the plots (default asrpt-demo)")
    p.add_argument("--n-jobs", type=int, default=400, help="jobs from the trace (default 400)")
    p.add_argument(
        "--cluster",
        type=_parse_servers,
        default=(8,) * 8,
        help="SERVERSxGPUS or a list of GPUs per server (default 8x8)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 2 on bad input.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        status: int = args.func(args)
    except (AsrptError, UsageError, ValueError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"asrpt-opt: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
