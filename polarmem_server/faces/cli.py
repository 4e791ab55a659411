"""`polarmem serve | quickstart | remember FILE.jsonl | recall "query" | calibrate FILE.jsonl | evaluate`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import grpc

from polarmem_server.api import config as config_module


def _serve(args: argparse.Namespace) -> int:
    from polarmem_server.api.server import PolarMemServer

    flags = {k: v for k, v in vars(args).items() if k in {f.name for f in config_module.fields(config_module.ServerConfig)}}
    server = PolarMemServer(config_module.load_config(flags, config_file=args.config)).start()
    print(f"polarmem serving on {server.address}; metrics on port {server.metrics_port}", flush=True)
    server.serve_forever()
    return 0


def _quickstart(args: argparse.Namespace) -> int:
    from polarmem_server.faces import quickstart

    return quickstart.run(top_k=args.top_k)


def _progress(done: int, total: int, failed: int, started: float) -> None:
    width = 30
    filled = int(width * done / max(total, 1))
    rate = done / max(time.perf_counter() - started, 1e-9)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} items, {failed} failed, {rate:.0f}/s")
    sys.stderr.flush()


def _remember(args: argparse.Namespace) -> int:
    """Stream a JSONL file (one item per line: id, kind, text, uri, metadata, vectors, scores,
    states). Resumable: progress is checkpointed next to the file, and items already stored
    (ALREADY_EXISTS) count as done."""
    from polarmem_server.faces.client import PolarMemClient, item_message

    path = Path(args.file)
    checkpoint = Path(str(path) + ".polarmem-progress")
    lines = path.read_text().splitlines()
    start = int(checkpoint.read_text()) if args.resume and checkpoint.exists() else 0
    failed = 0
    started = time.perf_counter()
    with PolarMemClient(args.address, token=args.token) as client:
        for batch_start in range(start, len(lines), args.batch):
            batch = []
            for number in range(batch_start, min(batch_start + args.batch, len(lines))):
                try:
                    fields = json.loads(lines[number])
                    allowed = {"id", "kind", "text", "uri", "metadata", "vectors", "scores", "states", "source", "model"}
                    batch.append(item_message(**{k: v for k, v in fields.items() if k in allowed}))
                except (ValueError, TypeError) as exc:
                    print(f"\nline {number + 1}: {exc}", file=sys.stderr)
                    failed += 1
            response = client.remember_stream(args.namespace, batch, timeout_s=600)
            for result in response.results:
                if result.HasField("error") and result.error.code != grpc.StatusCode.ALREADY_EXISTS.value[0]:
                    failed += 1
                    print(f"\nline {batch_start + result.index + 1} ({result.id}): {result.error.message}", file=sys.stderr)
            checkpoint.write_text(str(batch_start + len(batch)))
            _progress(min(batch_start + args.batch, len(lines)), len(lines), failed, started)
    sys.stderr.write("\n")
    checkpoint.unlink(missing_ok=True)
    print(f"{len(lines) - start - failed} items stored or already present, {failed} failed")
    return 1 if failed else 0


def _recall(args: argparse.Namespace) -> int:
    from polarmem_server.faces.client import MODES, PolarMemClient

    mode_names = {code: name for name, code in MODES.items()}
    with PolarMemClient(args.address, token=args.token) as client:
        response = client.recall(args.namespace, args.query, top_k=args.top_k, mode=args.mode,
                                 suppressed_k=args.top_k if args.show_suppressed else 0)
    parse = response.parse
    print(f"required={list(parse.required)} forbidden={list(parse.forbidden)} unknown={list(parse.unknown)} "
          f"mode={args.mode}->{mode_names.get(response.mode_used, '')}")
    print(f"{'rank':>4} {'tier':<9} {'score':>6}  {'id':<24} why")
    for hit in response.hits:
        why = "; ".join(hit.reasons) or "-"
        print(f"{hit.rank:>4} {hit.status:<9} {hit.s_sem:6.3f}  {hit.id[:24]:<24} {why}")
    for hit in response.suppressed:
        print(f"kept out: {hit.id} ({'; '.join(hit.reasons)})")
    tc = response.tier_counts
    print(f"tiers: {tc.entailed} entailed, {tc.neutral} neutral, {tc.conflict} conflicting")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from polarmem_server.faces import evaluation
    from polarmem_server.faces.datasets import coco_pope500, read_jsonl
    from polarmem_server.scoring.encoder import load_encoder

    rows = read_jsonl(args.data) if args.data else coco_pope500()
    queries = evaluation.read_queries(args.queries) if args.queries else None
    seeds = args.seeds or [args.seed]
    conditions = []
    for spectrum in args.spectrum:
        for partitioner in args.partitioner:
            if args.evidence == "simulated":
                conditions += [evaluation.Condition("simulated", a, partitioner, spectrum) for a in args.accuracy]
            else:
                conditions.append(evaluation.Condition(args.evidence, None, partitioner, spectrum))
    engine = args.engine if args.evidence == "engine" else ""
    # unset options keep the server's defaults (rho 0.85; rho_absent = rho)
    options = {k: v for k, v in (("kappa", args.kappa), ("rho", args.rho), ("rho_absent", args.rho_absent)) if v is not None}
    results = evaluation.evaluate_seeds(conditions, rows, seeds, load_encoder("minilm"), num_queries=args.num_queries,
                                        queries=queries, address=args.address, engine=engine, ks=args.ks,
                                        namespace_options=options,
                                        progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(evaluation.format_table(results))
    out = Path(args.out)
    meta = {"data": args.data or "bundled coco_pope500", "queries_per_seed": len(queries) if queries else args.num_queries,
            "seeds": seeds, "ks": args.ks,
            "evidence": args.evidence, "engine": engine, "namespace_options": options,
            "note": "simulated evidence is drawn from Beta distributions, not produced by a model"
            if args.evidence == "simulated" else ""}
    evaluation.write_json(results, out / "evaluation.json", meta)
    for path in evaluation.plot(results, out, args.ks):
        print(f"wrote {path}")
    print(f"wrote {out / 'evaluation.json'}")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    """Fit a namespace's score model from a labelled JSONL: one {"p_yes": 0.83, "present": true}
    per line (scores of objects whose presence a person checked)."""
    from polarmem_server.faces.client import PolarMemClient

    scores, present = [], []
    for number, line in enumerate(Path(args.file).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            scores.append(float(row["p_yes"]))
            if not isinstance(row["present"], bool):
                raise TypeError("present must be true or false")
            present.append(row["present"])
        except (ValueError, TypeError, KeyError) as exc:
            print(f"error: {args.file} line {number}: need {{\"p_yes\": number, \"present\": true|false}} ({exc})",
                  file=sys.stderr)
            return 2
    with PolarMemClient(args.address, token=args.token) as client:
        model = client.calibrate(args.namespace, scores, present)
    print(f"calibrated {args.namespace!r} on {model.fitted_on} labelled scores: present ~ Beta({model.present_a:.2f}, "
          f"{model.present_b:.2f}), absent ~ Beta({model.absent_a:.2f}, {model.absent_b:.2f}), "
          f"present share {model.prior:.2f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from polarmem_server.faces.client import MODES

    parser = argparse.ArgumentParser(prog="polarmem", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gRPC server")
    config_module.add_arguments(serve)
    serve.set_defaults(func=_serve)
    quick = sub.add_parser("quickstart", help="embedded server + bundled COCO data + side-by-side recalls")
    quick.add_argument("--top-k", type=int, default=5)
    quick.set_defaults(func=_quickstart)
    ev = sub.add_parser("evaluate", help="Conflict@K, Filter Rate, Recall@K, nDCG@K per recall mode, through gRPC")
    ev.add_argument("--data", help="labelled JSONL (id, captions, has, not_has); default: the bundled COCO file")
    ev.add_argument("--queries", help="JSONL of {required, forbidden}; default: generated from the labels")
    ev.add_argument("--num-queries", type=int, default=100)
    ev.add_argument("--evidence", choices=["labels", "simulated", "engine"], default="simulated")
    ev.add_argument("--accuracy", type=float, nargs="+", default=[0.9], help="simulated VLM accuracies")
    ev.add_argument("--partitioner", nargs="+", default=["otsu"],
                    choices=["otsu", "min_error", "mixture", "calibrated"])
    ev.add_argument("--spectrum", nargs="+", default=["all"], choices=["all", "balanced"],
                    help="score every category per image (skewed) or half present, half absent (balanced)")
    ev.add_argument("--engine", default="embedding", help="engine for --evidence engine")
    ev.add_argument("--kappa", type=float, default=1.0)
    ev.add_argument("--rho", type=float, default=None, help="posterior band of mixture / calibrated (default 0.85)")
    ev.add_argument("--rho-absent", type=float, default=None,
                    help="the band's NOT_HAS side, when it should differ: P(present) < 1 - rho_absent -> NOT_HAS")
    ev.add_argument("--ks", type=int, nargs="+", default=[1, 3, 5, 10])
    ev.add_argument("--address", help="an existing server (default: an embedded one on a free local port)")
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--seeds", type=int, nargs="+",
                    help="several seeds, pooled (each draws its own queries and simulated scores); overrides --seed")
    ev.add_argument("--out", default="evaluation")
    ev.set_defaults(func=_evaluate)
    for name, func, helptext in (("remember", _remember, "stream a JSONL file of items into a namespace"),
                                 ("recall", _recall, "run one recall and print a table"),
                                 ("calibrate", _calibrate, "fit a namespace's score model from labelled P(Yes) scores")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("-n", "--namespace", required=True)
        p.add_argument("--address", default="127.0.0.1:50051")
        p.add_argument("--token", default=None, help="bearer token")
        p.set_defaults(func=func)
        if name == "remember":
            p.add_argument("file")
            p.add_argument("--batch", type=int, default=256)
            p.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
        elif name == "calibrate":
            p.add_argument("file", help='JSONL: {"p_yes": 0.83, "present": true} per line')
        else:
            p.add_argument("query")
            p.add_argument("-k", "--top-k", type=int, default=10)
            p.add_argument("--mode", choices=list(MODES), default="hard")
            p.add_argument("--show-suppressed", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except grpc.RpcError as exc:
        print(f"error: {exc.code().name}: {exc.details()}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
