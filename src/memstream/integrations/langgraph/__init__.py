"""LangGraph on memstream: the long-term memory store and the checkpointer.

``pip install 'memstream[langgraph]'``; see docs/integrations.md.
"""

from __future__ import annotations

try:
    import langgraph.checkpoint.base
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    from ...errors import MissingDependency

    raise MissingDependency(
        "the LangGraph integration needs: pip install 'memstream[langgraph]'") from exc

from .checkpoint import MemstreamSaver
from .memory_store import MemstreamSearchItem, MemstreamStore

__all__ = ["MemstreamSaver", "MemstreamSearchItem", "MemstreamStore"]
