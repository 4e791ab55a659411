"""The asyncio client (grpc.aio): the same methods, arguments, results and errors as the
synchronous PolarMemClient (client.py), awaited. Requests are built by the same functions
(client_requests), the same retry policy, deadlines and wait for a starting server apply.

    async with AsyncPolarMemClient("127.0.0.1:50051") as client:
        response = await client.recall("photos", "a dog but no cat", include_context=True)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Iterable, Mapping, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.faces import client_requests as build
from polarmem_server.faces.client import ClientBase, ReadyWait
from polarmem_server.faces.client_requests import Content, item_message


class AsyncPolarMemClient(ClientBase):
    """asyncio client; see PolarMemClient for the arguments. Create it inside a running event
    loop (grpc.aio binds the channel to it) and close it with `await close()` or `async with`."""

    grpc_module = grpc.aio

    async def _await_ready(self, timeout_s: float | None) -> tuple[float | None, bool]:
        """As PolarMemClient._await_ready, awaited."""
        wait = ReadyWait(timeout_s)
        while not self._ready and (left := wait.time_left()) > 0:
            try:
                response = await self._health.Check(health_pb2.HealthCheckRequest(), timeout=left, wait_for_ready=True)
                answer = wait.heard(response.status, None)
            except grpc.RpcError as exc:
                answer = wait.heard(None, exc)
            if answer == "ready":
                self._ready = True
            elif answer == "wait":
                await asyncio.sleep(wait.pause())
        if not (self._ready or wait.reached):
            # As PolarMemClient._await_ready: the transport's own error, not a bare deadline.
            await self._health.Check(health_pb2.HealthCheckRequest(), timeout=wait.last_check_timeout())
        return wait.call_options()

    async def _run(self, call: build.Call, timeout_s: float | None = None) -> Any:
        """As PolarMemClient._run, awaited."""
        timeout, wait = self._call_options(call, timeout_s)
        if not self._ready:
            timeout, wait = await self._await_ready(timeout)
        response = await getattr(self._stub, call.rpc)(
            call.request, timeout=timeout, metadata=self._metadata, wait_for_ready=wait
        )
        return self._result(call, response)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncPolarMemClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def health(self, service: str = "", timeout_s: float = 5.0) -> str:
        response = await self._health.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    async def wait_ready(self, timeout_s: float = 60.0) -> None:
        await asyncio.wait_for(self._channel.channel_ready(), timeout_s)

    async def create_namespace(
        self,
        name: str,
        spaces: Iterable[Any] = (),
        encoder: str = "",
        kappa: float | None = None,
        aliases: Mapping[str, str] | None = None,
        templates: Sequence[str] | None = None,
        partitioner: str = "",
        rho: float | None = None,
        rho_absent: float | None = None,
        degenerate_policy: str = "",
        fixed_threshold: float | None = None,
        template_std_max: float | None = None,
        concepts: Sequence[str] | None = None,
        declared_accuracy: float | None = None,
        ann: Mapping[str, Any] | bool | None = None,
        open_vocabulary: bool | None = None,
        timeout_s: float | None = None,
    ) -> pb.NamespaceInfo:
        config, _ = build.namespace_config(
            spaces,
            encoder,
            kappa,
            aliases,
            templates,
            partitioner,
            rho,
            rho_absent,
            degenerate_policy,
            fixed_threshold,
            template_std_max,
            concepts,
            declared_accuracy,
            ann,
            open_vocabulary,
        )
        return await self._run(build.create_namespace_call(name=name, config=config), timeout_s)

    async def get_namespace(self, name: str, timeout_s: float | None = None) -> pb.NamespaceInfo:
        return await self._run(build.get_namespace_call(name=name), timeout_s)

    async def list_namespaces(self, timeout_s: float | None = None) -> list[pb.NamespaceInfo]:
        return await self._run(build.list_namespaces_call(), timeout_s)

    async def update_namespace(self, name: str, *, timeout_s: float | None = None, **changes: Any):
        """Keyword arguments as PolarMemClient.update_namespace."""
        return await self._run(build.update_namespace_call(name, **changes), timeout_s)

    async def delete_namespace(self, name: str, timeout_s: float | None = None) -> None:
        await self._run(build.delete_namespace_call(name=name), timeout_s)

    async def remember(
        self,
        namespace: str,
        *,
        timeout_s: float | None = None,
        id: str = "",
        kind: str = "visual",
        text: str = "",
        uri: str = "",
        metadata: Mapping[str, str] | None = None,
        vectors: Mapping[str, Any] | None = None,
        scores: Mapping[str, Sequence[float]] | None = None,
        states: Mapping[str, str] | None = None,
        verify_concepts: Sequence[str] | None = None,
        content: Content | None = None,
        source: str = "",
        model: str = "",
    ) -> pb.Item:
        item = item_message(
            id=id,
            kind=kind,
            text=text,
            uri=uri,
            metadata=metadata,
            vectors=vectors,
            scores=scores,
            states=states,
            verify_concepts=verify_concepts,
            content=content,
            source=source,
            model=model,
        )
        return await self._run(build.remember_call(namespace=namespace, item=item), timeout_s)

    async def remember_stream(
        self,
        namespace: str,
        items: Iterable[pb.ItemInput] | AsyncIterable[pb.ItemInput],
        timeout_s: float | None = None,
        items_per_message: int = 64,
    ) -> pb.RememberStreamResponse:
        """As PolarMemClient.remember_stream; `items` may also be an async iterable."""
        requests = (
            build.async_remember_stream_requests if isinstance(items, AsyncIterable) else build.remember_stream_requests
        )
        return await self._run(build.remember_stream_call(namespace, items, items_per_message, requests), timeout_s)

    async def observe(
        self,
        namespace: str,
        id: str,
        scores: Mapping[str, Sequence[float]] | None = None,
        states: Mapping[str, str] | None = None,
        vectors: Mapping[str, Any] | None = None,
        *,
        text: str = "",
        content: Content | None = None,
        verify_concepts: Sequence[str] | None = None,
        source: str = "",
        model: str = "",
        timeout_s: float | None = None,
    ) -> pb.ObserveResponse:
        call = build.observe_call(namespace, id, scores, states, vectors, text, content, verify_concepts, source, model)
        return await self._run(call, timeout_s)

    async def forget(self, namespace: str, id: str, timeout_s: float | None = None) -> None:
        await self._run(build.forget_call(namespace=namespace, id=id), timeout_s)

    async def get_item(
        self,
        namespace: str,
        id: str,
        include_history: bool = False,
        include_vectors: bool = False,
        timeout_s: float | None = None,
        consistency: str | None = None,
        consistency_token: bytes | None = None,
    ) -> pb.GetItemResponse:
        call = build.get_item_call(namespace, id, include_history, include_vectors, consistency, consistency_token)
        return await self._run(call, timeout_s)

    async def get_concept(
        self,
        namespace: str,
        concept: str,
        polarity: str = "has",
        page_size: int = 0,
        page_token: str = "",
        timeout_s: float | None = None,
    ) -> pb.GetConceptResponse:
        return await self._run(build.get_concept_call(namespace, concept, polarity, page_size, page_token), timeout_s)

    async def list_concepts(
        self, namespace: str, page_size: int = 0, page_token: str = "", timeout_s: float | None = None
    ) -> pb.ListConceptsResponse:
        return await self._run(build.list_concepts_call(namespace, page_size, page_token), timeout_s)

    async def list_items(
        self,
        namespace: str,
        page_size: int = 0,
        page_token: str = "",
        *,
        has: Sequence[str] | None = None,
        not_has: Sequence[str] | None = None,
        metadata_equals: Mapping[str, str] | None = None,
        kinds: Sequence[str] | None = None,
        timeout_s: float | None = None,
        consistency: str | None = None,
        consistency_token: bytes | None = None,
    ) -> pb.ListItemsResponse:
        """As PolarMemClient.list_items."""
        call = build.list_items_call(
            namespace, page_size, page_token, has, not_has, metadata_equals, kinds, consistency, consistency_token
        )
        return await self._run(call, timeout_s)

    async def update_item(
        self,
        namespace: str,
        id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> pb.UpdateItemResponse:
        """As PolarMemClient.update_item."""
        return await self._run(build.update_item_call(namespace, id, text, metadata), timeout_s)

    async def clear_namespace(self, name: str, timeout_s: float | None = None) -> int:
        """As PolarMemClient.clear_namespace."""
        return await self._run(build.clear_namespace_call(name=name), timeout_s)

    async def score_concepts(
        self,
        namespace: str,
        concepts: Sequence[str] | None,
        *,
        text: str = "",
        content: Content | None = None,
        timeout_s: float | None = None,
        **item: Any,
    ) -> pb.ScoreConceptsResponse:
        return await self._run(build.score_concepts_call(namespace, concepts, text, content, **item), timeout_s)

    async def calibrate(
        self, namespace: str, p_yes: Sequence[float], present: Sequence[bool], timeout_s: float | None = None
    ) -> pb.Calibration:
        return await self._run(build.calibrate_call(namespace, p_yes, present), timeout_s)

    async def backup(self, destination_dir: str, timeout_s: float | None = None) -> pb.BackupResponse:
        """As PolarMemClient.backup."""
        return await self._run(build.backup_call(destination_dir), timeout_s)

    async def recall(
        self,
        namespace: str,
        text: str = "",
        *,
        timeout_s: float | None = None,
        consistency: str | None = None,
        consistency_token: bytes | None = None,
        **options: Any,
    ) -> pb.RecallResponse:
        """Keyword arguments as PolarMemClient.recall."""
        call = build.recall_call(
            namespace, text, consistency=consistency, consistency_token=consistency_token, **options
        )
        return await self._run(call, timeout_s)
