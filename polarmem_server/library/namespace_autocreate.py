"""Namespaces created on first use (per-user / per-agent memory), when the operator allows it.

A write (Remember, RememberStream) to a namespace that does not exist creates it from the server's
template: the settings `polarmem namespace create NAME` gives (the default text encoder, an open
vocabulary, every other setting at its default), as long as fewer than `max_namespaces`
namespaces exist. Reads never create one: a Recall of a missing namespace stays NOT_FOUND. Off by
default (ServerConfig.auto_create_namespaces); the limit answers RESOURCE_EXHAUSTED."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.settings import NamespaceSettings, check_namespace_name
from polarmem_server.errors import AlreadyExists, NotFound, ResourceExhausted, quoted

if TYPE_CHECKING:
    from polarmem_server.library.memory import Memory

DEFAULT_MAX_NAMESPACES = 1000


def template_settings(name: str) -> NamespaceSettings:
    """The settings of a namespace created on first use (module doc)."""
    return NamespaceSettings(name=name, open_vocabulary=True)


@dataclass
class AutoCreate:
    """Whether and how many namespaces a write may create."""

    enabled: bool = False
    max_namespaces: int = DEFAULT_MAX_NAMESPACES

    def namespace_for_write(self, memory: Memory, name: str) -> Namespace:
        """The namespace `name`, created from the template first when it is missing and allowed.
        The name is checked first: an invalid one is INVALID_ARGUMENT whatever the count (a
        caller must not be told to delete namespaces to fix a typo)."""
        check_namespace_name(name)
        try:
            return memory.namespace(name)
        except NotFound:
            if not self.enabled:
                raise
        if len(memory.list_namespaces()) >= self.max_namespaces:
            raise ResourceExhausted(
                f"namespace {quoted(name)} does not exist and the server's limit of "
                f"{self.max_namespaces} namespaces is reached; delete one or ask the operator"
            )
        try:
            return memory.create_namespace(template_settings(name))
        except AlreadyExists:  # created meanwhile by another call
            return memory.namespace(name)
