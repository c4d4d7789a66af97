"""Every REST route of the server, declared once: its method, its path under ``/v1`` and where
its fields travel. The server's routes are made from this table (``server/routes.py``,
``server/event_routes.py``; the catalog's operations name theirs) and
``Client`` sends through it (``request``), so that a path is written in one place.

A field named in the path (``{memory_id}``) fills it; the others of a GET or DELETE go in the
query string, those of a POST or PATCH in the JSON body, but for the ones a route names in
``query`` (a PATCH's namespace, a POST that carries no JSON body).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

__all__ = ["PREFIX", "ROUTES", "Route", "request"]

#: the version prefix of every route of the API (health, metrics and the inspector's page are
#: outside it)
PREFIX = "/v1"
_FIELD = re.compile(r"{(\w+)}")


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str  #: under PREFIX; ``{field}`` segments are request fields
    #: fields of a POST or PATCH sent in the query string, not the body
    query: tuple[str, ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields named in the path."""
        return tuple(_FIELD.findall(self.path))

    @property
    def url(self) -> str:
        return PREFIX + self.path


ROUTES: dict[str, Route] = {
    # memories
    "add_memory": Route("POST", "/memories"),
    "add_memories": Route("POST", "/memories/batch"),
    "add_messages": Route("POST", "/memories/messages"),
    "list_memories": Route("POST", "/memories/list"),
    "get_memory": Route("GET", "/memories/{memory_id}"),
    "update_memory": Route("PATCH", "/memories/{memory_id}", query=("namespace",)),
    "delete_memory": Route("DELETE", "/memories/{memory_id}"),
    "delete_memories": Route("POST", "/memories/delete"),
    "memory_history": Route("GET", "/memories/{memory_id}/history"),
    "restore_memory": Route("POST", "/memories/{memory_id}/restore", query=("namespace",)),
    "invalidate_memory": Route("POST", "/memories/{memory_id}/invalidate",
                               query=("namespace",)),
    "audit_memories": Route("POST", "/audit"),
    # retrieval
    "search_memories": Route("POST", "/search"),
    "memory_context": Route("POST", "/context"),
    "stats": Route("GET", "/stats"),
    # entities
    "list_entities": Route("POST", "/entities/list"),
    "get_entity": Route("POST", "/entities/profile"),
    # transfer
    "export": Route("GET", "/export"),
    "import": Route("POST", "/import", query=("skip_existing", "namespace")),
    # cognition
    "reflect": Route("POST", "/reflect", query=("namespace",)),
    "consolidate": Route("POST", "/consolidate", query=("namespace",)),
    # episodes, learning, agents
    "record_episode": Route("POST", "/episodes"),
    "episode_context": Route("GET", "/episodes/context"),
    "episode_summary": Route("GET", "/episodes/summary"),
    "learn_outcome": Route("POST", "/learning/outcomes"),
    "task_advice": Route("POST", "/learning/advice"),
    "store_agent_memory": Route("POST", "/agents/entries"),
    "agent_range": Route("GET", "/agents/{agent_id}/range"),
    "similar_agent_states": Route("POST", "/agents/{agent_id}/similar"),
    # change events and webhooks
    "list_events": Route("GET", "/events/list"),
    "stream_events": Route("GET", "/events"),
    "register_webhook": Route("POST", "/webhooks"),
    "list_webhooks": Route("GET", "/webhooks"),
    "delete_webhook": Route("DELETE", "/webhooks/{webhook_id}"),
    "webhook_dead_letters": Route("GET", "/webhooks/{webhook_id}/dead-letters"),
    "redeliver_webhook": Route("POST", "/webhooks/{webhook_id}/redeliver",
                               query=("namespace",)),
    # the inspector's reads
    "namespaces": Route("GET", "/namespaces"),
    "inspect_records": Route("POST", "/inspect/records"),
    "inspect_record": Route("GET", "/inspect/records/{record_id}"),
    "inspect_overview": Route("GET", "/inspect/overview"),
}


def request(name: str, values: Mapping[str, Any]
            ) -> tuple[str, str, dict[str, Any], dict[str, Any] | None]:
    """The method, URL, query parameters and JSON body (None: no body) of a call of route
    ``name`` with ``values`` (None values are left out)."""
    route = ROUTES[name]
    given = {k: v for k, v in values.items() if v is not None}
    url = PREFIX + _FIELD.sub(lambda m: quote(str(given.pop(m.group(1))), safe=""),
                              route.path)
    if route.method in ("GET", "DELETE"):
        return route.method, url, given, None
    query = {k: given.pop(k) for k in route.query if k in given}
    return route.method, url, query, given or None
