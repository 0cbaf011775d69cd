"""Commands on workload data: predict, import."""

from __future__ import annotations

import argparse
from typing import Any

from asrpt_opt.cli._common import (
    finite,
    name_list,
    output_dir,
    output_file,
    parse_servers,
    whole,
    write_figure,
)
from asrpt_opt.cli._output import (
    Progress,
    Ticker,
    add_format_option,
    emit_json,
    emit_table,
)
from asrpt_opt.errors import UsageError
from asrpt_opt.prediction import PREDICTORS
from asrpt_opt.traces.importers import TRACE_FORMATS

__all__ = ["add_parsers"]


def cmd_predict(args: argparse.Namespace) -> int:
    """Rolling-origin evaluation of length predictors."""
    from pathlib import Path

    from asrpt_opt.prediction import make_predictor, seed_params
    from asrpt_opt.prediction.evaluate import rolling_origin
    from asrpt_opt.traces.importers import load_jobs

    output_dir(args.out, option="--out")
    inst = load_jobs(args.source)
    names = name_list(args.predictors, PREDICTORS, "predictor")
    predictors = {n: make_predictor(n, **seed_params(n, args.seed)) for n in names}
    scores = rolling_origin(
        inst.jobs,
        predictors,
        windows=args.windows,
        progress=Progress(f"{inst.name} predictors", not args.json),
    )
    plot = None
    if args.out:
        from asrpt_opt.cli._common import use_agg

        use_agg()
        from asrpt_opt.analysis.plots import plot_calibration

        Path(args.out).mkdir(parents=True, exist_ok=True)
        plot = str(Path(args.out) / "calibration.png")
        write_figure(plot_calibration(scores), plot)
    if args.json:
        emit_json(
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
    rows = [(s.name, s.mae, s.mdape, s.r2_log) for s in scores]
    emit_table(("predictor", "MAE", "median APE", "R2 (log)"), rows)
    if plot:
        print(f"calibration plot written to {plot}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """Convert a trace into an instance file, reporting every bad row."""
    from asrpt_opt.model.io import dump_instance
    from asrpt_opt.traces.importers import import_trace

    output_file(args.output, option="-o")
    mapping = None
    if args.map_models:
        pairs = [p.split("=", 1) for p in args.map_models.split(",") if p.strip()]
        if any(len(p) != 2 or not p[0] or not p[1] for p in pairs):
            raise UsageError(f"invalid --map-models {args.map_models!r}: use NAME=MODEL,...")
        mapping = {a: b for a, b in pairs}
    errors: list[str] | None = None if args.strict else []
    ticker = Ticker(lambda t: f"import: reading {args.source}, {t:.0f} s", not args.json)
    with ticker:
        inst = import_trace(
            args.format,
            args.source,
            servers=args.cluster,
            n_jobs=args.n_jobs,
            errors=errors,
            seed=args.seed,
            gpu_kind=args.gpu_kind,
            model_map=mapping,
            intra_gbps=args.intra_gbps,
            inter_gbps=args.inter_gbps,
        )
        dump_instance(inst, args.output)
    bad = errors or []
    if args.json:
        emit_json(
            {
                "format": args.format,
                "source": args.source,
                "output": args.output,
                "jobs": inst.n_jobs,
                "bad_rows": len(bad),
                "errors": bad[:20],
            }
        )
        return 0
    print(
        f"{args.source}: {inst.n_jobs} jobs written to {args.output}; {len(bad)} bad rows skipped"
    )
    for line in bad[:10]:
        print(f"  {line}")
    if len(bad) > 10:
        print(f"  ... and {len(bad) - 10} more (use --json for 20, --strict to stop at the first)")
    return 0


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the ``asrpt-opt`` parser.

    Parameters
    ----------
    sub : argparse subparsers action
        What ``ArgumentParser.add_subparsers`` returned.
    """
    p = sub.add_parser("predict", help="rolling-origin evaluation of length predictors")
    p.add_argument(
        "source",
        help="an instance file, a Gavel .trace file, 'gavel' (bundled), 'pollux[:K]' (bundled "
        "Pollux workload K, lengths imputed) or 'recurring[:N]' (synthetic)",
    )
    p.add_argument(
        "--predictors",
        default="rf,history,median,last,global,oracle",
        help=f"comma-separated, from: {', '.join(PREDICTORS)}",
    )
    p.add_argument("--windows", type=whole(2), default=10)
    p.add_argument("--seed", type=whole(0), default=0)
    p.add_argument("--out", metavar="DIR", help="write calibration.png here")
    add_format_option(p)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("import", help="convert a trace into an instance file")
    p.add_argument("format", choices=list(TRACE_FORMATS), help="trace format")
    p.add_argument("source", help="trace file (pai: the folder with pai_task_table.csv)")
    p.add_argument("-o", "--output", required=True, help="instance file to write")
    p.add_argument(
        "--cluster",
        type=parse_servers,
        default=(8,) * 16,
        help="SERVERSxGPUS or a list of GPUs per server (default 16x8)",
    )
    p.add_argument("--n-jobs", type=whole(1), help="keep only the first N jobs")
    p.add_argument("--gpu-kind", default="v100", help="gavel: GPU kind of the throughputs")
    p.add_argument("--seed", type=whole(0), default=0, help="pollux: seed of the imputed lengths")
    p.add_argument("--strict", action="store_true", help="stop at the first bad row")
    p.add_argument(
        "--map-models",
        metavar="NAME=MODEL,...",
        help="turn jobs of these trace models into DNN jobs of bundled models",
    )
    p.add_argument(
        "--intra-gbps", type=finite(0, strict=True), default=300.0, help="with --map-models"
    )
    p.add_argument(
        "--inter-gbps", type=finite(0, strict=True), default=12.5, help="with --map-models"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_import)
