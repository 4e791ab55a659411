"""The library: PolarMem without gRPC. ``Memory`` is its facade (memory.py: namespaces over one
storage backend); the modules beside it each do one of its jobs (recall planning and answer
mode, the write primitive, namespace updates, background upkeep in daemons.py), and the API layer
(polarmem_server/api) only converts messages to its calls.

    from polarmem_server.library import ItemInput, Memory, NamespaceSettings
"""

from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
from polarmem_server.library.recall import Hit, RecallResult

__all__ = ["Hit", "ItemInput", "Memory", "NamespaceSettings", "RecallResult"]
