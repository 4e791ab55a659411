"""`polarmem mcp`: PolarMem's memory as Model Context Protocol tools, for agents.

An MCP server (the official `mcp` SDK, [mcp] extra) in front of a running PolarMem server,
talking to it through the asyncio gRPC client. Transports: stdio (the agent spawns
`polarmem mcp`) and streamable HTTP (`--transport http`, endpoint `/mcp`).

Tools: remember, recall, observe, update_item, forget, get_item, list_items, clear_namespace, list_concepts,
list_namespaces, get_namespace (docs/agents.md compares them with other MCP memory servers). Each takes
an optional `namespace` (default: the server's `-n`; with --fixed-namespace a call may not name
another). Auth: over stdio the token of `polarmem mcp` itself (--token-file / POLARMEM_TOKEN /
the config file) is sent; over HTTP only the agent's own `Authorization: Bearer ...` header is
passed through (never the process's token: that would make the port an open proxy), and bound
beyond loopback it starts only in front of a PolarMem server that demands tokens. Image content
is read from a local path or fetched from an http(s) URL (content_source.py: regular files and
public hosts only, unless allowed); over HTTP, local paths are refused unless --content-root
names the folder they must lie in (a remote agent must not read the host's files)."""

from __future__ import annotations

import argparse
import asyncio
import collections
import ipaddress
import signal
from pathlib import Path
from typing import Annotated, Any, Literal

import grpc
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only from Python 3.12 on

from polarmem_server.faces.aio_client import AsyncPolarMemClient
from polarmem_server.faces.connection import Connection, load_connection
from polarmem_server.faces.client_requests import KIND_NAMES, MODE_NAMES
from polarmem_server.faces.content_source import ContentRefused, FetchPolicy, fetch_url, read_local_file
from polarmem_server.faces.mcp_gate import JsonRpcGate, gated_stdio

MAX_CONTENT_BYTES = 16 * 1024 * 1024
FETCH_TIMEOUT_S = 30.0
# One gRPC channel per distinct bearer token: an HTTP port sees as many tokens as agents send,
# so the least recently used beyond this are closed (once no call uses them).
MAX_CLIENTS = 64
MAX_HTTP_BODY_BYTES = 24 * 1024 * 1024  # a tool call's JSON carries no content bytes, only paths / URLs

INSTRUCTIONS = """PolarMem is a verified memory: each stored note or image carries the concepts it was verified to
contain (HAS), verified NOT to contain (NOT_HAS), and those still uncertain. `recall` labels every note
it returns by what it answers of your question. Use the returned `context`: each entry starts with
[Fact Check: LABEL] — VERIFIED (the question's constraints hold on the note), ANSWERS NO (it states the
asked thing is absent), CONSTRAINT (it states what the subject avoids or lacks), RELATED (similar or
about the subject, verifying nothing asked), SUPERSEDED (a newer note says otherwise), CONFLICT (it
contradicts the question: never treat it as support). A context that starts with "(no verified
evidence for: ...)" means the memory cannot answer: say so rather than guess."""


class PolarMemTools:
    """The tools' state: where PolarMem is, the default namespace, one gRPC client per token
    (bounded, least recently used closed first)."""

    def __init__(
        self,
        connection: Connection,
        namespace: str = "",
        fixed_namespace: bool = False,
        content_root: str | None = None,
        local_paths: bool = True,
        own_token: bool = True,
        fetch_policy: FetchPolicy | None = None,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.connection = connection
        self.namespace = namespace
        self.fixed_namespace = fixed_namespace
        self.content_root = Path(content_root).expanduser().resolve() if content_root else None
        self.local_paths = local_paths or self.content_root is not None
        self.fetch_policy = fetch_policy or FetchPolicy()
        self._options = connection.client_options()
        self._own_token = own_token
        self._max_clients = max_clients
        self._clients: collections.OrderedDict[str | None, AsyncPolarMemClient] = collections.OrderedDict()
        self._in_use: collections.Counter[int] = collections.Counter()  # id(client) -> calls running on it
        self._retired: list[AsyncPolarMemClient] = []  # evicted while in use: closed when their calls end
        # Whether each namespace has an approximate index (NamespaceConfig.ann, fixed at creation),
        # read once: recall reads it where there is one (approximate_for).
        self._has_ann: dict[str, bool] = {}

    def token_of(self, ctx: Context | None) -> str | None:
        """The agent's bearer token from its HTTP request; over stdio, this process's own."""
        headers = ctx.headers if ctx is not None else None
        if headers:
            scheme, _, value = (headers.get("authorization") or "").partition(" ")
            if scheme.lower() == "bearer" and value.strip():
                return value.strip()
        return self._options["token"] if self._own_token else None

    def client(self, ctx: Context | None) -> AsyncPolarMemClient:
        """The client for the caller's token (made on first use; kept most recently used)."""
        token = self.token_of(ctx)
        client = self._clients.get(token)
        if client is None:
            client = self._clients[token] = AsyncPolarMemClient(**{**self._options, "token": token})
        self._clients.move_to_end(token)
        while len(self._clients) > self._max_clients:
            _, evicted = self._clients.popitem(last=False)
            self._retired.append(evicted)
        return client

    async def invoke(self, ctx: Context | None, method: str, *args: Any, **kwargs: Any) -> Any:
        """One client call, holding the client open for its duration."""
        client = self.client(ctx)
        self._in_use[id(client)] += 1
        try:
            return await getattr(client, method)(*args, **kwargs)
        except grpc.RpcError as exc:
            # No server there: the call waited its deadline for one and gRPC says only "Deadline
            # Exceeded"; the agent (and its developer) are told where and what to check.
            down = client._channel.get_state(try_to_connect=False) != grpc.ChannelConnectivity.READY
            if exc.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE) and down:
                raise ToolError(
                    f"UNAVAILABLE: no memory server answers at {self.connection.address} (is `polarmem serve` "
                    f"running there?); retry once it is up ({exc.code().name}: {exc.details()})"
                ) from None
            raise
        finally:
            self._in_use[id(client)] -= 1
            if not self._in_use[id(client)]:
                del self._in_use[id(client)]
            await self._close_retired()

    async def _close_retired(self) -> None:
        idle = [c for c in self._retired if not self._in_use[id(c)]]
        self._retired = [c for c in self._retired if self._in_use[id(c)]]
        for client in idle:
            await client.close()

    async def approximate_for(self, ctx: Context | None, namespace: str) -> bool:
        """Whether `recall` reads the namespace's approximate index: where the namespace was
        created with one (`polarmem namespace create --ann`), its owner's choice for its size; an
        agent never chooses exactness. At 100,000 dev caption notes answer mode cost 1.0 ms of CPU
        with it against 3.6 ms exact, the same top 5 on 298 of 300 questions (docs/agents.md).
        Read once per namespace (GetNamespace); an unreadable one reads exactly."""
        known = self._has_ann.get(namespace)
        if known is None:
            try:
                info = await self.invoke(ctx, "get_namespace", namespace)
                known = info.config.HasField("ann")
            except grpc.RpcError:
                return False  # the recall itself reports what is wrong with the namespace
            self._has_ann[namespace] = known
        return known

    def forget_index_of(self, namespace: str) -> None:
        """Reads whether `namespace` has an approximate index again at its next recall (it was
        deleted and created anew)."""
        self._has_ann.pop(namespace, None)

    @property
    def open_clients(self) -> int:
        return len(self._clients) + len(self._retired)

    async def close(self) -> None:
        for client in [*self._clients.values(), *self._retired]:
            await client.close()
        self._clients.clear()
        self._retired.clear()

    def resolve_namespace(self, namespace: str) -> str:
        if namespace and self.fixed_namespace and namespace != self.namespace:
            raise ToolError(f"namespace: this memory server is fixed to {self.namespace!r}; leave namespace empty")
        chosen = namespace or self.namespace
        if not chosen:
            raise ToolError(
                "namespace: none given and no default (start `polarmem mcp -n NAME`); list_namespaces shows them"
            )
        return chosen

    async def content(self, path: str, url: str) -> bytes | None:
        """Image bytes from a local path or an http(s) URL (at most MAX_CONTENT_BYTES), read in a
        worker thread: a slow file or host must not stop the other tool calls."""
        if path and url:
            raise ToolError("give content_path or content_url, not both")
        try:
            if path:
                if not self.local_paths:
                    raise ToolError(
                        "content_path: this server (HTTP) reads no local files; send content_url, or "
                        "start `polarmem mcp --content-root DIR`"
                    )
                file = Path(path).expanduser().resolve()
                if self.content_root is not None and not file.is_relative_to(self.content_root):
                    raise ToolError(
                        f"content_path: {path[:200]!r} is outside the content root {str(self.content_root)!r}"
                    )
                return await asyncio.to_thread(read_local_file, file, MAX_CONTENT_BYTES)
            if url:
                return await asyncio.to_thread(fetch_url, url, self.fetch_policy, MAX_CONTENT_BYTES, FETCH_TIMEOUT_S)
        except ContentRefused as exc:
            raise ToolError(str(exc)) from None
        return None


MAX_TOP_K = 50
MAX_PAGE_SIZE = 200
Kind = Literal["text", "visual"]
Mode = Literal["answer", "hard", "strict", "soft", "adaptive", "off"]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K, description="hits to return, 1-50")]
RecencyHalfLife = Annotated[float, Field(gt=0, description="seconds; opt-in recency within tiers (mode hard or off)")]
PageSize = Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE, description="items per page, 1-200")]


class ItemView(TypedDict, total=False):
    """An item as the tools return it (output schema)."""

    id: str
    kind: Kind
    has: list[str]
    not_has: list[str]
    uncertain: list[str]
    text: str
    uri: str
    metadata: dict[str, str]
    evidence: dict[str, float]
    created_ms: int
    updated_ms: int
    version: int


class HitView(TypedDict, total=False):
    """One recalled item (output schema)."""

    rank: int
    id: str
    status: str
    s_sem: float
    verification: list[str]
    entailed_by: list[str]
    conflicted_by: list[str]
    absence_verified: bool
    answer: str  # mode answer: what the model reads, e.g. "ANSWERS NO: NOT_HAS coffee"
    superseded_by: str  # mode answer, SUPERSEDED: the newer item's id
    text: str
    uri: str
    metadata: dict[str, str]


class Constraints(TypedDict, total=False):
    """How recall understood the query's constraints."""

    required: list[str]
    forbidden: list[str]
    unknown: list[str]
    did_you_mean: dict[str, list[str]]


class RecallView(TypedDict):
    """recall's structured result (output schema)."""

    context: str
    mode_used: str
    constraints: Constraints
    hits: list[HitView]
    cut: int


class ObserveView(TypedDict):
    """observe / update_item's result: the item and whether a concept changed state."""

    changed: bool
    item: ItemView


class ForgetView(TypedDict):
    forgotten: str


class ItemPage(TypedDict):
    """list_items' result: a page of items by id."""

    items: list[ItemView]
    next_page_token: str | None


class ClearView(TypedDict):
    cleared: str
    items_deleted: int


class ConceptView(TypedDict):
    concept: str
    has: int
    not_has: int


class ConceptPage(TypedDict):
    """list_concepts' result: a page of the vocabulary."""

    concepts: list[ConceptView]
    total: int
    next_page_token: str | None
    aliases: dict[str, str]


class NamespaceSummary(TypedDict):
    name: str
    items: int
    concepts: int


class NamespaceList(TypedDict):
    namespaces: list[NamespaceSummary]
    default: str | None


class NamespaceView(TypedDict):
    name: str
    items: int
    visual: int
    text: int
    concepts: int
    templates: list[str]
    partitioner: str
    open_vocabulary: bool


def item_view(item) -> ItemView:
    """An Item as the tools return it: what the memory verified about it, and when."""
    view: dict[str, Any] = {
        "id": item.id,
        "kind": KIND_NAMES.get(item.kind, "visual"),
        "has": list(item.has),
        "not_has": list(item.not_has),
        "uncertain": list(item.uncertain),
        "created_ms": item.created_ms,
        "updated_ms": item.updated_ms or item.created_ms,
        "version": item.version,
    }
    for field in ("text", "uri"):
        if getattr(item, field):
            view[field] = getattr(item, field)
    if item.metadata:
        view["metadata"] = dict(item.metadata)
    if item.evidence:
        view["evidence"] = {e.concept: round(e.mean, 3) for e in item.evidence if len(e.p_yes)}
    return view  # type: ignore[return-value]


def hit_view(hit) -> HitView:
    view: dict[str, Any] = {
        "rank": hit.rank,
        "id": hit.id,
        "status": hit.status,
        "s_sem": round(hit.s_sem, 4),
        "verification": list(hit.reasons),
        "entailed_by": list(hit.entailed_by),
        "conflicted_by": list(hit.conflicted_by),
        "absence_verified": hit.absence_verified,
    }
    for field in ("answer", "superseded_by", "text", "uri"):
        if getattr(hit, field):
            view[field] = getattr(hit, field)
    if hit.metadata:
        view["metadata"] = dict(hit.metadata)
    return view  # type: ignore[return-value]


def kept_hits(hits, include_neutral: bool, answer_mode: bool = False) -> list:
    """The hits the model sees: with a VERIFIED hit among them, only the VERIFIED ones unless
    `include_neutral` (NEUTRAL hits are only similar; CONFLICT ones contradict the query). Mode
    answer cuts nothing: every hit carries its label, and the note plain similarity puts first
    must reach the model."""
    if answer_mode or include_neutral or not any(hit.status == "VERIFIED" for hit in hits):
        return list(hits)
    return [hit for hit in hits if hit.status == "VERIFIED"]


def context_with_ids(context: str, hits, kept) -> str:
    """The server's `[i] [Fact Check: ...]` context with each entry's item id, for the kept hits
    only (renumbered): `[1] (id: n4) [Fact Check: VERIFIED] ...`, so a model reading only the
    text can observe, update or forget what it recalled. What the server wrote before the
    entries (answer mode's "(no verified evidence for: ...)") stays as it wrote it."""
    starts, position = [], 0
    for hit in hits:
        found = context.find(f"[{hit.rank}] [Fact Check: ", position)
        if found < 0:
            return context  # not the shape expected: leave it as the server wrote it
        starts.append(found)
        position = found + 1
    head = context[: starts[0]] if starts else context
    keep = {hit.rank for hit in kept}
    entries: list[str] = []
    for index, hit in enumerate(hits):
        if hit.rank not in keep:
            continue
        end = starts[index + 1] if index + 1 < len(starts) else len(context)
        body = context[starts[index] + len(f"[{hit.rank}] ") : end].rstrip("\n")
        entries.append(f"[{len(entries) + 1}] (id: {hit.id}) {body}")
    return head + "\n".join(entries)


def _rpc_error(exc: grpc.RpcError) -> ToolError:
    return ToolError(f"{exc.code().name}: {exc.details()}")


def build_server(tools: PolarMemTools) -> MCPServer:
    """The MCP server with PolarMem's tools registered."""
    server = MCPServer("polarmem", instructions=INSTRUCTIONS, log_level="WARNING")

    async def call(ctx: Context, method: str, *args: Any, **kwargs: Any):
        try:
            return await tools.invoke(ctx, method, *args, **kwargs)
        except grpc.RpcError as exc:
            raise _rpc_error(exc) from None
        except ValueError as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    async def remember(
        ctx: Context,
        text: str = "",
        id: str = "",
        content_path: str = "",
        content_url: str = "",
        verify_concepts: list[str] | None = None,
        states: dict[str, Literal["has", "not_has", "uncertain"]] | None = None,
        metadata: dict[str, str] | None = None,
        kind: Kind | None = None,
        namespace: str = "",
    ) -> ItemView:
        """Store a text note or an image in memory. A text note needs only `text`: its own words say
        what it affirms (has) and negates (not_has). Keep each note about one person: a later clause
        another named person acts in is kept without states ("Maya has a cat; Leo has a dog"
        verifies nothing of Leo's dog), and people named together share every fact. `id`: optional;
        empty = an id derived from the content, so storing the same note twice keeps one copy.
        `metadata`: string pairs you can filter on later (recall / list_items). Evidence you may
        add: `verify_concepts` (the memory's verifier checks each against `text` and/or the image at
        `content_path` / `content_url`), or `states` you already know ({"dog": "has", "cat":
        "not_has"}). `kind`: omit it (visual when an image is given, else text). Returns the stored
        item: its id and has / not_has / uncertain."""
        content = await tools.content(content_path, content_url)
        kind = kind or ("visual" if content is not None else "text")
        if kind == "text" and content is None and not text:
            # The server stores an empty text (an item with states alone), whose id, shown as its
            # text, won recalls on similarity; a note of whitespace or zero-width characters the
            # server refuses itself.
            raise ToolError("text: empty; a note needs its words (or content_path / content_url for an image)")
        item = await call(
            ctx,
            "remember",
            tools.resolve_namespace(namespace),
            id=id,
            kind=kind,
            text=text,
            uri=content_url or "",
            metadata=metadata,
            states=states,
            verify_concepts=verify_concepts,
            content=content,
        )
        if metadata and dict(item.metadata) != metadata:
            # An id derived from the content names the note whatever its metadata: the server
            # answered with the copy stored before, and the metadata asked for was not applied.
            raise ToolError(
                f"ALREADY_EXISTS: this note is stored already as {item.id} with metadata {dict(item.metadata)}; "
                "update_item changes its metadata"
            )
        return item_view(item)

    @server.tool()
    async def recall(
        ctx: Context,
        query: str = "",
        required: list[str] | None = None,
        forbidden: list[str] | None = None,
        mode: Mode | None = None,
        top_k: TopK = 5,
        include_neutral: bool = False,
        metadata_equals: dict[str, str] | None = None,
        allow_unknown_concepts: bool = False,
        recency_half_life_s: RecencyHalfLife | None = None,
        namespace: str = "",
    ) -> Annotated[CallToolResult, RecallView]:
        """Find evidence for a query, logic first. Constraints are parsed from `query` ("a dog but no
        cat") unless `required` / `forbidden` concept names are given (then `query` may be omitted).
        A name this memory does not know is an error with the closest known names, unless
        `allow_unknown_concepts` (then it is skipped and listed under constraints.unknown).
        `mode`: omit it for answer (with `recency_half_life_s`: the memory's own rule) — every
        note labelled by what it answers of the question:
        VERIFIED (the question's constraints verified on it: e.g. `VERIFIED: leo, snack,
        peanut-free`), ANSWERS_NO (verified absence: `ANSWERS NO: NOT_HAS coffee`), CONSTRAINT
        (states the subject's constraint: `NOT_HAS peanut`), RELATED (similar or about the subject,
        verifying nothing asked), SUPERSEDED (a newer note says otherwise), CONFLICT; verified
        answers first, nothing cut, and "no verified evidence for: ..." heads the context when
        nothing answers. Or the logic's modes: hard (items contradicting the constraints rank last),
        strict (also prefers items where forbidden concepts are verified absent), soft, adaptive,
        off (plain similarity); there, when some hit is VERIFIED only VERIFIED hits are returned
        (`cut` says how many others were left out) unless `include_neutral`.
        `metadata_equals`: only items with these metadata pairs. `recency_half_life_s` (mode hard
        or off): within each tier, newer items first by similarity + 0.1 x 2^(-age / half-life);
        a newer contradicting item still ranks below an older consistent one. Returns the fact-checked context
        to read — each entry `[i] (id: ITEM_ID) [Fact Check: STATUS] text` — and the hits."""
        if not query.strip() and not required and not forbidden:
            raise ToolError("query: give a query, or required / forbidden concept names")
        text = query if query.strip() else " ".join(required or [])  # what the similarity is computed from
        # answer by default; recency ranks within the logic's tiers, so with it the memory's own rule
        default_mode = "" if recency_half_life_s is not None else "answer"
        chosen = tools.resolve_namespace(namespace)
        options = dict(
            required=required,
            forbidden=forbidden,
            mode=mode or default_mode,
            top_k=top_k,
            include_context=True,
            metadata_equals=metadata_equals,
            allow_unknown_concepts=allow_unknown_concepts,
            recency_half_life_s=recency_half_life_s,
        )
        approximate = await tools.approximate_for(ctx, chosen)
        try:
            response = await tools.invoke(ctx, "recall", chosen, text, approximate=approximate, **options)
        except grpc.RpcError as exc:
            if not (approximate and exc.code() == grpc.StatusCode.FAILED_PRECONDITION):
                raise _rpc_error(exc) from None
            # the namespace was made anew without an index since it was read: once more, exactly
            tools.forget_index_of(chosen)
            response = await call(ctx, "recall", chosen, text, **options)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        parse = response.parse
        unknown = list(parse.unknown) + [u.name for u in parse.unknown_concepts]
        constraints: dict[str, Any] = {
            "required": list(parse.required),
            "forbidden": list(parse.forbidden),
            "unknown": unknown,
        }
        if parse.unknown_concepts:
            constraints["did_you_mean"] = {u.name: list(u.did_you_mean) for u in parse.unknown_concepts}
        hits = kept_hits(response.hits, include_neutral, answer_mode=(mode or default_mode) == "answer")
        context = context_with_ids(response.context, response.hits, hits)
        body = {
            "context": context,
            "mode_used": MODE_NAMES.get(response.mode_used, "hard"),
            "constraints": constraints,
            "hits": [hit_view(h) for h in hits],
            "cut": len(response.hits) - len(hits),
        }
        summary = (
            f"constraints: required={constraints['required']} forbidden={constraints['forbidden']}"
            + (f" unknown (not applied)={unknown}" if unknown else "")
            + (
                f"; {body['cut']} NEUTRAL / CONFLICT hits left out (include_neutral=true shows them)"
                if body["cut"]
                else ""
            )
        )
        text = f"{context or '(no evidence found)'}\n\n{summary}"
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=body)

    @server.tool()
    async def observe(
        ctx: Context,
        id: str,
        text: str = "",
        content_path: str = "",
        content_url: str = "",
        verify_concepts: list[str] | None = None,
        states: dict[str, Literal["has", "not_has", "uncertain"]] | None = None,
        namespace: str = "",
    ) -> ObserveView:
        """Add evidence to a stored item: new `states` ({"umbrella": "not_has"}), or new `text` /
        image content for the verifier (`verify_concepts`; none = the concepts the item already
        holds). The item is re-partitioned; returns it and whether any concept changed state. To
        rewrite a note's words use update_item."""
        content = await tools.content(content_path, content_url)
        response = await call(
            ctx,
            "observe",
            tools.resolve_namespace(namespace),
            id,
            states=states,
            text=text,
            content=content,
            verify_concepts=verify_concepts,
        )
        return {"changed": response.changed, "item": item_view(response.item)}

    @server.tool()
    async def update_item(
        ctx: Context, id: str, text: str | None = None, metadata: dict[str, str] | None = None, namespace: str = ""
    ) -> ObserveView:
        """Rewrite a stored item: new `text` (a text note's has / not_has are re-read from its new
        words; evidence you or a verifier added stays) and/or new `metadata` (replaces all of it).
        Omit a field to leave it. The old states stay in the item's history."""
        if text is None and metadata is None:
            raise ToolError("update_item: give text and/or metadata")
        response = await call(ctx, "update_item", tools.resolve_namespace(namespace), id, text=text, metadata=metadata)
        return {"changed": response.changed, "item": item_view(response.item)}

    @server.tool()
    async def forget(ctx: Context, id: str, namespace: str = "") -> ForgetView:
        """Remove one item from memory (its id is in recall's context as `(id: ...)`)."""
        await call(ctx, "forget", tools.resolve_namespace(namespace), id)
        return {"forgotten": id}

    @server.tool()
    async def get_item(ctx: Context, id: str, namespace: str = "") -> ItemView:
        """One stored item: its text / uri, metadata, timestamps and what was verified about it."""
        response = await call(ctx, "get_item", tools.resolve_namespace(namespace), id)
        return item_view(response.item)

    @server.tool()
    async def list_items(
        ctx: Context,
        has: list[str] | None = None,
        not_has: list[str] | None = None,
        metadata_equals: dict[str, str] | None = None,
        kind: Kind | None = None,
        page_size: PageSize = 50,
        page_token: str = "",
        namespace: str = "",
    ) -> ItemPage:
        """Browse stored items in id order (stable pages: pass next_page_token for the next one).
        Filters: `has` (items affirming every one of these concepts), `not_has` (items verified not
        to hold every one of these), `metadata_equals`, `kind`."""
        response = await call(
            ctx,
            "list_items",
            tools.resolve_namespace(namespace),
            page_size=page_size,
            page_token=page_token,
            has=has,
            not_has=not_has,
            metadata_equals=metadata_equals,
            kinds=[kind] if kind else None,
        )
        return {"items": [item_view(i) for i in response.items], "next_page_token": response.next_page_token or None}

    @server.tool()
    async def clear_namespace(
        ctx: Context, confirm: Annotated[bool, Field(strict=True)], namespace: str = ""
    ) -> ClearView:  # strict: "yes" / 1 are not true (issue 49)
        """Delete EVERY item of a memory (namespace); its settings and vocabulary stay. Irreversible:
        `confirm` must be true."""
        if confirm is not True:
            raise ToolError("clear_namespace: deletes every item; call again with confirm=true if that is meant")
        chosen = tools.resolve_namespace(namespace)
        deleted = await call(ctx, "clear_namespace", chosen)
        return {"cleared": chosen, "items_deleted": deleted}

    @server.tool()
    async def list_concepts(
        ctx: Context, page_token: str = "", page_size: PageSize = 100, namespace: str = ""
    ) -> ConceptPage:
        """The memory's vocabulary: every concept with how many items hold it (has) and how many
        were verified not to (not_has), by id; pass next_page_token for the next page. Use these
        names in recall's required / forbidden and list_items' has / not_has."""
        response = await call(
            ctx, "list_concepts", tools.resolve_namespace(namespace), page_size=page_size, page_token=page_token
        )
        return {
            "concepts": [
                {"concept": e.concept, "has": e.stats.has, "not_has": e.stats.not_has} for e in response.concepts
            ],
            "total": response.total,
            "next_page_token": response.next_page_token or None,
            "aliases": dict(response.aliases),
        }

    @server.tool()
    async def list_namespaces(ctx: Context) -> NamespaceList:
        """The memories (namespaces) available, with their item counts."""
        infos = await call(ctx, "list_namespaces")
        if tools.fixed_namespace:
            infos = [i for i in infos if i.name == tools.namespace]
        return {
            "namespaces": [{"name": i.name, "items": i.item_count, "concepts": i.concept_count} for i in infos],
            "default": tools.namespace or None,
        }

    @server.tool()
    async def get_namespace(ctx: Context, namespace: str = "") -> NamespaceView:
        """One memory's settings and counts."""
        info = await call(ctx, "get_namespace", tools.resolve_namespace(namespace))
        return {
            "name": info.name,
            "items": info.item_count,
            "visual": info.visual_count,
            "text": info.text_count,
            "concepts": info.concept_count,
            "templates": list(info.config.templates),
            "partitioner": info.config.partitioner,
            "open_vocabulary": info.config.open_vocabulary,
        }

    refuse_unknown_arguments(server)
    return server


def refuse_unknown_arguments(server: MCPServer) -> None:
    """A call with an argument its tool does not take is a tool error naming the argument: the
    SDK's argument models ignore extras, so `remember {"txt": ...}` stored an empty note and
    `recall {"topk": 1}` answered five hits. The input schemas say so too
    (`additionalProperties: false`)."""
    for tool in server._tool_manager.list_tools():  # (the SDK registers tools only through its decorator)
        model = tool.fn_metadata.arg_model
        model.model_config["extra"] = "forbid"
        model.model_rebuild(force=True)
        tool.parameters = model.model_json_schema(by_alias=True)


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost: may resolve anywhere


def check_exposure(host: str, connection: Connection) -> None:
    """Beyond loopback, the HTTP port is reachable by others: refuse to start unless the PolarMem
    server behind it demands a token (then every call needs the agent's own)."""
    if is_loopback(host):
        return
    from polarmem_server.faces.client import PolarMemClient

    options = {**connection.client_options(), "token": None}
    try:
        with PolarMemClient(**options) as client:
            client.list_namespaces()
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.UNAUTHENTICATED:
            return
        raise ValueError(
            f"--host {host}: cannot check that the PolarMem server at {connection.address} demands "
            f"tokens ({exc.code().name}); start it first, or bind --host 127.0.0.1"
        ) from None
    raise ValueError(
        f"--host {host} is beyond loopback, but the PolarMem server at {connection.address} answers "
        "calls without a token: anyone reaching this port could use the memory. Give the server a "
        "tokens_file, or bind --host 127.0.0.1"
    )


def run(args: argparse.Namespace) -> int:
    """`polarmem mcp`: serve until stdin closes (stdio) or SIGINT / SIGTERM (HTTP)."""
    connection = load_connection(args)
    namespace = args.namespace or connection.namespace
    if args.fixed_namespace and not namespace:
        raise ValueError("--fixed-namespace needs -n NAMESPACE")
    http = args.transport == "http"
    policy = FetchPolicy.parse(",".join(getattr(args, "fetch_allow", None) or []).split(","))
    tools = PolarMemTools(
        connection,
        namespace,
        args.fixed_namespace,
        args.content_root,
        local_paths=not http,
        own_token=not http,
        fetch_policy=policy,
    )
    server = build_server(tools)
    if not http:
        # SIGINT ends the process as SIGTERM does: raised as KeyboardInterrupt, it left the
        # session alive and deaf until stdin closed (the SDK reads stdin on a worker thread).
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        asyncio.run(_serve_stdio(server))
        return 0
    check_exposure(args.host, connection)
    return asyncio.run(_serve_http(server, tools, args.host, args.port, args.path))


async def _serve_stdio(server: MCPServer) -> None:
    """The SDK's stdio loop, with malformed requests answered (mcp_gate.py)."""
    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async does the same, with its plain streams
    async with gated_stdio() as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


async def _serve_http(server: MCPServer, tools: PolarMemTools, host: str, port: int, path: str) -> int:
    import uvicorn

    app = JsonRpcGate(server.streamable_http_app(streamable_http_path=path, host=host), MAX_HTTP_BODY_BYTES)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    http = uvicorn.Server(config)
    serving = asyncio.create_task(http.serve())
    while not http.started and not serving.done():
        await asyncio.sleep(0.05)
    if http.started:
        bound = http.servers[0].sockets[0].getsockname()
        print(
            f"polarmem mcp serving on http://{bound[0]}:{bound[1]}{path} (PolarMem at {tools.connection.address})",
            flush=True,
        )
    try:
        await serving
    finally:
        await tools.close()
    return 0 if http.started else 1
