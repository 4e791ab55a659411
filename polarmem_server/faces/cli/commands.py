"""The client commands of `polarmem`: one per RPC an operator or developer needs. Each takes
the parsed flags and returns the exit status (0 ok, 1 some items failed, 2 refused)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

import grpc

from polarmem_server.faces.cli import last_write, output
from polarmem_server.faces.connection import Connection, load_connection
from polarmem_server.faces.cli.items_input import LineError, check_fields, parse_line
from polarmem_server.faces.client_requests import KIND_NAMES, MODE_NAMES, STATE_NAMES, UPDATABLE_FIELDS

# ---- flag value parsers (argparse `type=`) ---------------------------------------------------


def key_value(text: str) -> tuple[str, str]:
    """`key=value`."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def concept_scores(text: str) -> tuple[str, list[float]]:
    """`dog=0.9,0.8,0.95,0.9`: one P(Yes) per template."""
    concept, values = key_value(text)
    try:
        return concept, [float(v) for v in values.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected concept=p1,p2,... with numbers, got {text!r}") from None


def name_list(text: str) -> list[str]:
    """`dog,cat` (commas; the flag may also repeat)."""
    return [n.strip() for n in text.split(",") if n.strip()]


def space_spec(text: str) -> tuple:
    """`vis:512`, `loc:256:multi`, `vis:512:fp16`, `loc:256:multi:int8`."""
    name, _, rest = text.partition(":")
    parts = rest.split(":") if rest else []
    try:
        dim = int(parts[0])
    except (IndexError, ValueError):
        raise argparse.ArgumentTypeError(f"expected name:dim[:multi][:fp32|fp16|int8], got {text!r}") from None
    multi = "multi" in parts[1:]
    storage = next((p for p in parts[1:] if p != "multi"), "fp32")
    return (name, dim, multi, storage)


def json_value(text: str) -> Any:
    """Inline JSON, or @FILE holding JSON."""
    try:
        return json.loads(Path(text[1:]).read_text() if text.startswith("@") else text)
    except (OSError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"expected JSON or @file.json ({exc})") from None


def _flat(values: list | None) -> list[str] | None:
    if values is None:
        return None
    return [name for group in values for name in (group if isinstance(group, list) else [group])]


def _connect(args: argparse.Namespace) -> tuple[Connection, Any]:
    connection = load_connection(args)
    args.namespace = getattr(args, "namespace", None) or connection.namespace or None
    return connection, last_write.carry(connection.client())


def _need_namespace(args: argparse.Namespace) -> str:
    if not args.namespace:
        raise ValueError(
            "no namespace: pass -n NAME, or set POLARMEM_NAMESPACE (or namespace in [client] of the "
            "config file); `polarmem namespace list` shows them"
        )
    return args.namespace


# ---- readiness -------------------------------------------------------------------------------


def wait_ready(args: argparse.Namespace) -> int:
    """Polls grpc.health.v1 until the server reports SERVING (0) or `--wait-s` runs out (1), so a script can
    start `polarmem serve &` and send its first call without racing the server's start-up."""
    connection, client = _connect(args)
    deadline = time.monotonic() + args.wait_s
    last = "no answer yet"
    with client:
        while True:
            remaining = deadline - time.monotonic()
            try:
                status = client.health(args.service, timeout_s=max(0.05, min(2.0, remaining)))
                if status == "SERVING":
                    if args.json:
                        output.print_json({"address": connection.address, "service": args.service, "status": status})
                    elif not args.quiet:
                        print(f"SERVING: {connection.address}")
                    return 0
                last = status  # NOT_SERVING while the store opens, indexes rebuild and models load
            except grpc.RpcError as exc:
                last = f"{exc.code().name}: {exc.details()}"
            if time.monotonic() + WAIT_READY_POLL_S >= deadline:
                break
            time.sleep(WAIT_READY_POLL_S)
    service = f" (service {args.service!r})" if args.service else ""
    print(
        f"error: the server at {connection.address}{service} is not SERVING after {args.wait_s:g} s "
        f"(last answer: {last})",
        file=sys.stderr,
    )
    print(
        "hint: is `polarmem serve` running with this address (--address / POLARMEM_ADDRESS)? Its log says why it "
        "is not ready; a large store takes longer to open (raise --wait-s)",
        file=sys.stderr,
    )
    return 1


WAIT_READY_POLL_S = 0.1


# ---- namespaces ------------------------------------------------------------------------------


def _config_changes(args: argparse.Namespace) -> dict[str, Any]:
    return dict(
        kappa=args.kappa,
        rho=args.rho,
        rho_absent=args.rho_absent,
        partitioner=args.partitioner,
        aliases=dict(args.alias) if args.alias else None,
        templates=args.template,
        degenerate_policy=args.degenerate_policy,
        fixed_threshold=args.fixed_threshold,
        template_std_max=args.template_std_max,
        concepts=_flat(args.concept),
        declared_accuracy=args.declared_accuracy,
    )


def _ann(args: argparse.Namespace) -> dict[str, int | str] | bool | None:
    """The approximate index a `namespace create` asked for (--ann and any --ann-* setting):
    True for the defaults, else the settings given."""
    given = {
        field: value
        for field, value in (
            ("kind", args.ann_kind),
            ("m", args.ann_m),
            ("ef_search", args.ann_ef_search),
            ("nlist", args.ann_nlist),
            ("nprobe", args.ann_nprobe),
        )
        if value
    }
    if not (args.ann or given):
        return None
    return given or True


def _namespace_summary(info, out=None, list_templates: bool = True) -> None:
    """The settings table; then the verification templates, in order (scores come one per
    template in that order), unless `list_templates` is False: a new namespace shows them only
    when they were given, since the defaults are image questions that text notes never use."""
    c = info.config
    spaces = ", ".join(f"{s.name}:{s.dim}{':multi' if s.multi else ''}" for s in c.spaces)
    where = "below" if list_templates else f"`polarmem namespace get {info.name}` lists them"
    rows = [
        ("name", info.name),
        ("items", f"{info.item_count} ({info.visual_count} visual, {info.text_count} text)"),
        ("concepts", f"{info.concept_count} ({'open' if c.open_vocabulary else 'declared'} vocabulary)"),
        ("spaces", spaces),
        ("encoder", c.encoder),
        ("partitioner", c.partitioner),
        ("kappa", f"{c.kappa:g}"),
        ("rho / rho_absent", f"{c.rho:g} / {c.rho_absent:g}"),
        # image questions (one P(Yes) each): saying so keeps a text-notes user from wondering
        ("templates", f"{len(c.templates)} questions about an image, used only to verify visual items ({where})"),
        ("aliases", output.names([f"{a}->{t}" for a, t in c.aliases.items()])),
    ]
    if "concepts" in c.DESCRIPTOR.fields_by_name and len(c.concepts):
        rows.append(("declared concepts", output.names(list(c.concepts))))
    if info.HasField("calibration"):
        k = info.calibration
        rows.append(
            (
                "calibration",
                f"present Beta({k.present_a:.2f}, {k.present_b:.2f}), absent Beta({k.absent_a:.2f}, "
                f"{k.absent_b:.2f}), prior {k.prior:.2f}, {'labelled' if k.supervised else 'pooled'}",
            )
        )
    output.table(["setting", "value"], rows, out)
    if not list_templates:
        return
    for i, template in enumerate(c.templates):
        print(f"  template {i + 1}: {template}", file=out or sys.stdout)


def namespace_create(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    with client:
        info = client.create_namespace(
            args.name,
            spaces=args.space or (),
            encoder=args.encoder or "",
            ann=_ann(args),
            open_vocabulary=False if args.closed_vocabulary else None,
            **{k: v for k, v in _config_changes(args).items() if v is not None},
        )
    if args.json:
        output.print_json(info)
    else:
        print(f"created namespace {info.name!r}")
        _namespace_summary(info, list_templates=bool(args.template))
    return 0


def namespace_list(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    with client:
        infos = client.list_namespaces()
    if args.json:
        output.print_json([output.as_dict(i) for i in infos])
        return 0
    if not infos:
        print("no namespaces; create one with `polarmem namespace create NAME`")
        return 0
    output.table(
        ["name", "items", "visual", "text", "concepts", "spaces", "partitioner"],
        [
            (
                i.name,
                i.item_count,
                i.visual_count,
                i.text_count,
                i.concept_count,
                ",".join(f"{s.name}:{s.dim}" for s in i.config.spaces),
                i.config.partitioner,
            )
            for i in infos
        ],
        right=(1, 2, 3, 4),
    )
    return 0


def namespace_get(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    with client:
        info = client.get_namespace(args.name)
    output.print_json(info) if args.json else _namespace_summary(info)
    return 0


def namespace_update(args: argparse.Namespace) -> int:
    changes = {k: v for k, v in _config_changes(args).items() if v is not None}
    if not changes:
        # the repeatable flags are singular (--alias a=b --alias c=d), the fields plural
        singular = {"aliases": "alias", "templates": "template", "concepts": "concept"}
        flags = ", ".join("--" + singular.get(f, f).replace("_", "-") for f in UPDATABLE_FIELDS)
        raise ValueError(f"nothing to change: give any of {flags}")
    _, client = _connect(args)
    with client:
        response = client.update_namespace(args.name, **changes)
    if args.json:
        output.print_json(response)
    else:
        print(
            f"updated {args.name!r} ({', '.join(sorted(changes))}): {response.items_repartitioned} items "
            f"re-partitioned, {response.items_changed} changed state"
        )
    return 0


def namespace_delete(args: argparse.Namespace) -> int:
    if not args.yes:
        raise ValueError(f"deleting {args.name!r} removes every item in it; add --yes to confirm")
    _, client = _connect(args)
    with client:
        client.delete_namespace(args.name)
    output.print_json({"deleted": args.name}) if args.json else print(f"deleted namespace {args.name!r}")
    return 0


# ---- remember --------------------------------------------------------------------------------


def single_item_kind(kind: str | None, text: str | None, content: str | None) -> str | None:
    """The kind of an item given by flags: --kind if given, else as the MCP remember tool infers
    it: visual with an image (--content), text with only text; None (the schema's default,
    visual) with neither (an item known by its scores, states or vectors)."""
    if kind is not None:
        return kind
    if content is not None:
        return "visual"
    return "text" if text else None


def _single_item(args: argparse.Namespace) -> dict[str, Any] | None:
    fields = {
        "id": args.id,
        "kind": single_item_kind(args.kind, args.text, args.content),
        "text": args.text,
        "uri": args.uri,
        "metadata": dict(args.metadata) if args.metadata else None,
        "scores": dict(args.score) if args.score else None,
        "states": _states(args.state),
        "verify_concepts": _flat(args.verify),
        "content": args.content,
        "source": args.source,
        "model": args.model,
        "vectors": args.vectors_json,
    }
    fields = {k: v for k, v in fields.items() if v is not None}
    return fields or None


def _item_summary(item) -> list[tuple[str, Any]]:
    rows = [
        ("id", item.id),
        ("kind", KIND_NAMES.get(item.kind, "?")),
        ("HAS", output.names(item.has)),
        ("NOT_HAS", output.names(item.not_has)),
        ("UNCERTAIN", output.names(item.uncertain)),
    ]
    if item.text:
        rows.insert(2, ("text", output.short(item.text, 70)))
    if item.uri:
        rows.insert(2, ("uri", item.uri))
    if item.HasField("partition"):
        p = item.partition
        rows.append(
            (
                "partition",
                f"{p.method} τ={p.tau:.2f} δ={p.delta:.2f}"
                f"{' degenerate' if p.degenerate else ''}{' weak' if p.weak else ''}",
            )
        )
    return rows


def _remember_one(args: argparse.Namespace, fields: dict[str, Any], templates: int) -> int:
    check_fields(fields, templates)
    _, client = _connect(args)
    with client:
        item = client.remember(args.namespace, **fields)
    if args.json:
        output.print_json(item)
    else:
        output.table(["field", "value"], _item_summary(item))
    return 0


def _states(pairs: list[tuple[str, str]] | None) -> dict[str, str] | None:
    """--state concept=state pairs; one concept given two states is refused (the last won)."""
    states: dict[str, str] = {}
    for concept, state in pairs or ():
        if states.setdefault(concept, state) != state:
            raise ValueError(f"--state: {concept!r} given as {states[concept]} and as {state}; give it once")
    return states or None


def _sources(args: argparse.Namespace):
    """(label, base folder, lines) per input: files, or stdin for `-` / no file. Lines come as
    bytes, decoded one by one, so a line that is not UTF-8 is reported with its number."""
    for name in args.files or ["-"]:
        if name == "-":
            yield "<stdin>", Path.cwd(), getattr(sys.stdin, "buffer", sys.stdin)
        else:
            path = Path(name)
            try:
                handle = path.open("rb")
            except OSError as exc:
                raise ValueError(f"{name}: {exc.strerror or exc}") from None
            yield name, path.parent, handle


def remember(args: argparse.Namespace) -> int:
    """Items from JSONL files or stdin (or one item from flags), streamed in batches. Per-line
    errors are printed and counted; a file is checkpointed so --resume continues after the last
    batch sent; items already stored (the same item: `already_stored`; another under the id: ALREADY_EXISTS) count as done."""
    connection, client = _connect(args)
    namespace = _need_namespace(args)
    with client:
        info = client.get_namespace(namespace)  # NOT_FOUND here, before any line is read
        templates = len(info.config.templates)
        single = _single_item(args)
        if single is not None:
            if args.files:
                raise ValueError("give item files or one item's flags (--id, --text, ...), not both")
            return _remember_one(args, single, templates)
        if not args.files and sys.stdin.isatty():
            raise ValueError(
                "nothing to remember: give JSONL files, pipe lines into `polarmem remember -`, or one "
                "item's flags (--id ID --text ... / --content IMAGE --verify dog,cat)"
            )
        stored = present = failed = 0
        errors: list[dict[str, Any]] = []
        total = None
        if args.files and "-" not in args.files:
            total = 0
            for name in args.files:
                try:
                    with open(name, "rb") as handle:
                        total += sum(1 for line in handle if line.strip())
                except OSError as exc:
                    raise ValueError(f"{name}: {exc.strerror or exc}") from None
        progress = output.Progress(total, enabled=None if not args.json else False)
        seen = 0

        def report(label: str, number: int, item_id: str, code: str, message: str) -> None:
            errors.append({"file": label, "line": number, "id": item_id, "code": code, "message": message})
            if not args.json:
                progress.pause()
                print(f"{label}:{number}: {item_id + ': ' if item_id else ''}{message}", file=sys.stderr)

        for label, base, handle in _sources(args):
            checkpoint = Path(label + ".polarmem-progress") if label != "<stdin>" else None
            start = 0
            if args.resume and checkpoint is not None and checkpoint.exists():
                start = int(checkpoint.read_text().strip() or 0)
            batch: list[tuple[int, Any]] = []
            number = 0

            def send(batch, last_line: int) -> None:
                nonlocal stored, present, failed
                if batch:
                    response = client.remember_stream(
                        namespace, (item for _, item in batch), timeout_s=connection.timeout_s * 20
                    )
                    for result in response.results:
                        line, sent = batch[result.index]
                        if not result.HasField("error"):
                            if result.already_stored:  # the same item, stored before: nothing written
                                present += 1
                            else:
                                stored += 1
                        elif result.error.code == grpc.StatusCode.ALREADY_EXISTS.value[0]:
                            present += 1
                        else:
                            failed += 1
                            code = next((c.name for c in grpc.StatusCode if c.value[0] == result.error.code), "?")
                            report(label, line, result.id or sent.id, code, result.error.message)
                if checkpoint is not None:
                    checkpoint.write_text(str(last_line))
                progress.update(seen, failed)

            with handle if label != "<stdin>" else contextlib.nullcontext():
                for number, raw in enumerate(handle, start=1):
                    try:
                        line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
                    except UnicodeDecodeError as exc:  # (before: one bare error for the whole file)
                        seen += 1
                        if number <= start:
                            continue
                        failed += 1
                        report(
                            label,
                            number,
                            "",
                            "INVALID_ARGUMENT",
                            f"not UTF-8 text (byte {exc.start + 1} of the line: {exc.reason}); save the file as UTF-8",
                        )
                        continue
                    if not line.strip():
                        continue
                    seen += 1
                    if number <= start:
                        continue
                    try:
                        batch.append((number, parse_line(line, base, templates)))
                    except (LineError, ValueError) as exc:
                        failed += 1
                        report(label, number, "", "INVALID_ARGUMENT", str(exc))
                    if len(batch) >= args.batch:
                        send(batch, number)
                        batch = []
                send(batch, number)
            if checkpoint is not None:
                checkpoint.unlink(missing_ok=True)
        progress.close()
    summary = {
        "stored": stored,
        "already_present": present,
        "failed": failed,
        "seconds": round(progress.elapsed_s, 2),
        "errors": errors,
    }
    if args.json:
        output.print_json(summary)
    else:
        rate = (stored + present) / max(progress.elapsed_s, 1e-9)
        print(
            f"{stored} stored, {present} already present, {failed} failed in {progress.elapsed_s:.1f} s "
            f"({rate:,.0f} items/s)"
        )
    return 1 if failed else 0


# ---- items -----------------------------------------------------------------------------------


def observe(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    namespace = _need_namespace(args)
    with client:
        if args.score:
            templates = len(client.get_namespace(namespace).config.templates)
            check_fields({"id": args.id, "scores": dict(args.score)}, templates)
        response = client.observe(
            namespace,
            args.id,
            scores=dict(args.score) if args.score else None,
            states=_states(args.state),
            vectors=args.vectors_json,
            text=args.text or "",
            content=args.content,
            verify_concepts=_flat(args.verify),
            source=args.source or "",
            model=args.model or "",
        )
    if args.json:
        output.print_json(response)
    else:
        print(f"observed {args.id!r}: {'states changed' if response.changed else 'no state changed'}")
        output.table(["field", "value"], _item_summary(response.item))
    return 0


def get(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    namespace = _need_namespace(args)
    with client:
        response = client.get_item(namespace, args.id, include_history=args.history, include_vectors=args.vectors)
    if args.json:
        output.print_json(response)
        return 0
    item = response.item
    output.table(
        ["field", "value"],
        _item_summary(item) + [("metadata", json.dumps(dict(item.metadata))), ("version", item.version)],
    )
    if item.evidence:
        print()
        output.table(
            ["concept", "state", "mean", "std", "P(Yes) per template", "source", "obs"],
            [
                (
                    e.concept,
                    STATE_NAMES.get(e.state, "?"),
                    f"{e.mean:.3f}",
                    f"{e.template_std:.3f}",
                    " ".join(f"{p:.2f}" for p in e.p_yes) or "-",
                    e.source,
                    e.observations,
                )
                for e in item.evidence
            ],
            right=(2, 3, 6),
        )
    for change in item.history:
        print(f"  v{change.version}: HAS {output.names(change.has)} | NOT_HAS {output.names(change.not_has)}")
    for space, value in response.vectors.items():
        print(f"  vector {space}: {value.rows or 1} x {len(value.values) // max(value.rows, 1)}")
    return 0


def forget(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    namespace = _need_namespace(args)
    with client:
        client.forget(namespace, args.id)
    output.print_json({"forgotten": args.id}) if args.json else print(f"forgot {args.id!r}")
    return 0


def update(args: argparse.Namespace) -> int:
    if args.clear_metadata and args.metadata:  # (before: the metadata given was cleared too)
        raise ValueError("--metadata and --clear-metadata: give one (--metadata replaces all of it)")
    metadata = {} if args.clear_metadata else (dict(args.metadata) if args.metadata else None)
    _, client = _connect(args)
    namespace = _need_namespace(args)
    with client:
        response = client.update_item(namespace, args.id, text=args.text, metadata=metadata)
    if args.json:
        output.print_json(response)
        return 0
    item = response.item
    output.table(
        ["field", "value"],
        _item_summary(item)
        + [("metadata", json.dumps(dict(item.metadata))), ("version", item.version), ("changed", response.changed)],
    )
    return 0


def _paged(fetch: Callable[[str], Any], field: str, token: str, every: bool) -> tuple[list, Any, str]:
    """One page (`every` False) or every page from `token` on: (the pages' `field` entries, the
    last response, its next_page_token)."""
    collected: list = []
    while True:
        response = fetch(token)
        collected.extend(getattr(response, field))
        token = response.next_page_token
        if not every or not token:
            return collected, response, token


def items(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    namespace = _need_namespace(args)
    with client:
        found, _, token = _paged(
            lambda page: client.list_items(
                namespace,
                page_size=args.page_size,
                page_token=page,
                has=_flat(args.has),
                not_has=_flat(args.not_has),
                metadata_equals=dict(args.where or []),
                kinds=args.kind,
            ),
            "items",
            args.page_token or "",
            args.all,
        )
    if args.json:
        output.print_json({"items": [output.as_dict(i) for i in found], "next_page_token": token})
        return 0
    output.table(
        ["id", "kind", "HAS", "NOT_HAS", "text"],
        [
            (i.id, KIND_NAMES.get(i.kind, "visual"), output.names(i.has), output.names(i.not_has), i.text[:60])
            for i in found
        ],
    )
    if token:
        print(f"more: --page-token {token}  (or --all)")
    return 0


def namespace_clear(args: argparse.Namespace) -> int:
    if not args.yes:
        raise ValueError(f"clearing {args.name!r} deletes every item in it; add --yes to confirm")
    _, client = _connect(args)
    with client:
        deleted = client.clear_namespace(args.name)
    output.print_json({"cleared": args.name, "items_deleted": deleted}) if args.json else print(
        f"cleared namespace {args.name!r}: {deleted} items deleted"
    )
    return 0


def concepts(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    namespace = _need_namespace(args)
    with client:
        entries, response, token = _paged(
            lambda page: client.list_concepts(namespace, page_size=args.page_size, page_token=page),
            "concepts",
            args.page_token or "",
            args.all,
        )
    if args.json:
        output.print_json(
            {"concepts": [output.as_dict(e) for e in entries], "total": response.total, "next_page_token": token}
        )
        return 0
    output.table(
        ["concept", "id", "HAS", "NOT_HAS", "ALIGN"],
        [(e.concept, e.concept_id, e.stats.has, e.stats.not_has, e.stats.align) for e in entries],
    )
    print(f"{len(entries)} of {response.total} concepts")
    if token:
        print(f"more: --page-token {token}  (or --all)")
    return 0


def concept(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    namespace = _need_namespace(args)
    with client:
        ids, response, token = _paged(
            lambda page: client.get_concept(
                namespace, args.name, polarity=args.polarity, page_size=args.page_size, page_token=page
            ),
            "item_ids",
            args.page_token or "",
            args.all,
        )
    if args.json:
        body = output.as_dict(response)
        body["item_ids"] = ids
        output.print_json(body)
        return 0
    s = response.stats
    print(f"{response.concept} (id {response.concept_id}): {s.has} HAS, {s.not_has} NOT_HAS, {s.align} ALIGN")
    print(f"{args.polarity.upper()}: {', '.join(ids) if ids else '-'}")
    if token:
        print(f"more: --page-token {token}  (or --all)")
    return 0


def score(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    namespace = _need_namespace(args)
    if not args.text and not args.content:
        raise ValueError("score: give --text and/or --content (an image file) to score")
    with client:
        templates = list(client.get_namespace(namespace).config.templates)
        response = client.score_concepts(namespace, _flat(args.concepts), text=args.text or "", content=args.content)
    if args.json:
        output.print_json(response)
        return 0
    print(f"engine {response.engine} ({response.model or '-'}); nothing stored")
    output.table(
        ["concept", "mean"] + [f"t{i + 1}" for i in range(len(templates))],
        [
            (s.concept, f"{sum(s.p_yes) / max(len(s.p_yes), 1):.3f}", *(f"{p:.3f}" for p in s.p_yes))
            for s in response.scores
        ],
        right=tuple(range(1, len(templates) + 2)),
    )
    return 0


def calibrate(args: argparse.Namespace) -> int:
    """Fit a namespace's score model from a labelled JSONL: one {"p_yes": 0.83, "present": true}
    per line (scores of objects whose presence a person checked)."""
    scores, present = [], []
    try:
        lines = Path(args.file).read_text().splitlines()
    except OSError as exc:
        raise ValueError(f"{args.file}: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            unknown = set(row) - {"p_yes", "present"}
            if unknown:
                raise ValueError(f"unknown key {sorted(unknown)[0]!r}")
            scores.append(float(row["p_yes"]))
            if not isinstance(row["present"], bool):
                raise TypeError("present must be true or false")
            present.append(row["present"])
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            print(
                f"error: {args.file} line {number}: need {{\"p_yes\": number, \"present\": true|false}} ({exc})",
                file=sys.stderr,
            )
            return 2
    _, client = _connect(args)
    namespace = _need_namespace(args)
    with client:
        model = client.calibrate(namespace, scores, present)
    if args.json:
        output.print_json(model)
    else:
        print(
            f"calibrated {namespace!r} on {model.fitted_on} labelled scores: present ~ Beta({model.present_a:.2f}, "
            f"{model.present_b:.2f}), absent ~ Beta({model.absent_a:.2f}, {model.absent_b:.2f}), "
            f"present share {model.prior:.2f}"
        )
    return 0


# ---- recall ----------------------------------------------------------------------------------


def recall(args: argparse.Namespace) -> int:
    _, client = _connect(args)
    namespace = _need_namespace(args)
    required, forbidden = _flat(args.required), _flat(args.forbidden)
    both = sorted(set(required or ()) & set(forbidden or ()))
    if both:  # no note both holds and lacks a concept: the answer was an empty list, unexplained
        raise ValueError(f"--required and --forbidden both name {both[0]!r}; keep it in one of them")
    with client:
        response = client.recall(
            namespace,
            args.query or "",
            vectors=args.vectors_json,
            required=required,
            forbidden=forbidden,
            top_k=args.top_k,
            mode=args.mode,
            soft_lambda=args.soft_lambda,
            exclude_conflicts=args.exclude_conflicts,
            kinds=args.kind,
            metadata_equals=dict(args.where) if args.where else None,
            suppressed_k=args.top_k if args.show_suppressed else 0,
            include_context=args.context,
            context_budget_chars=args.context_chars,
            allow_unknown_concepts=args.allow_unknown_concepts,
            approximate=args.approximate,
            ef_search=args.ef_search,
            rank_by_confidence=args.rank_by_confidence,
            recency_half_life_s=args.recency_half_life_s,
            recency_weight=args.recency_weight,
            consistency=args.consistency,
        )
    parse = response.parse
    if args.json:
        output.print_json(response)
        return 0
    used = MODE_NAMES.get(response.mode_used, "?")
    unknown = list(parse.unknown) + [u.name for u in parse.unknown_concepts]
    print(
        f"required={list(parse.required)} forbidden={list(parse.forbidden)} unknown={unknown} "
        f"mode={args.mode or 'rule'}->{used}" + (f" ({response.mode_reason})" if response.mode_reason else "")
    )
    for skipped in parse.unknown_concepts:
        close = f" (did you mean {' or '.join(repr(n) for n in skipped.did_you_mean)}?)" if skipped.did_you_mean else ""
        print(f"  skipped unknown concept {skipped.name!r}{close}")
    for mapping in parse.mapped:
        print(f"  mapped {mapping.phrase!r} -> {mapping.concept} (cosine {mapping.similarity:.2f})")
    output.table(
        ["rank", "tier", "s_sem", "id", "text", "why"],
        [
            (
                h.rank,
                h.status + (" ✓absent" if h.absence_verified else ""),
                f"{h.s_sem:.3f}",
                output.short(h.id, 24),
                output.short(h.text or h.uri, 40),
                "; ".join(h.reasons) or "-",
            )
            for h in response.hits
        ],
        right=(0, 2),
    )
    for hit in response.suppressed:
        print(f"kept out: {hit.id} ({'; '.join(hit.reasons)})")
    tc = response.tier_counts
    print(f"tiers: {tc.entailed} entailed, {tc.neutral} neutral, {tc.conflict} conflicting")
    if args.context:
        print("\n" + response.context)
    return 0
