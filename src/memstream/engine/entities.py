"""What ``Memory.entities`` and ``Memory.entity`` read of the store's entity graph: the entities of
a scope, and one entity's profile with the other names it goes by (docs/entities.md).

An alias is resolved where the scope leaves no doubt: "Marta" and "Marta Silva" are one entity
when "Marta Silva" is the only longer name that starts with "Marta" in that owner's memories.
"""

from __future__ import annotations

import dataclasses

from .._types import Entity, EntityProfile
from ..core.names import key_of
from ..errors import InvalidInput, NotFound
from ..filters import Selection
from .reads import EntityReads

__all__ = ["entity_list", "entity_profile", "resolve_names"]

#: the newest records of a scope that an agent or run filter looks at
SCOPE_WINDOW = 2000


def entity_list(store: EntityReads, namespace: str, sel: Selection | None, *,
                owners: list[str] | None, query: str | None, limit: int) -> list[Entity]:
    """The confirmed entities of a scope, most mentioned first; ``sel`` (a scope narrower than
    the owner: an agent or a run) keeps those its newest records mention."""
    ids = None
    if sel is not None:
        ids = store.records.select_ids(sel, limit=SCOPE_WINDOW, order="-created")
    listed = store.graph.entities(namespace, owners, query=query, record_ids=ids,
                                  limit=limit + FOLD_MARGIN)
    return _fold_aliases(store, namespace, owners, listed)[:limit]


#: entities read past the limit, so that a name folded into its longer form leaves room
FOLD_MARGIN = 10


def _one_longer(short: Entity, found: list[Entity]) -> Entity | None:
    """The one longer name of ``short``'s owner that starts with it ("marta" -> "marta
    silva"), or None when there is none or more than one ("Priya Raman", "Priya Shah")."""
    same = [e for e in found if e.owner == short.owner and e.key.startswith(short.key + " ")]
    return same[0] if len(same) == 1 else None


def _fold_aliases(store: EntityReads, namespace: str, owners: list[str] | None,
                  listed: list[Entity]) -> list[Entity]:
    """A one-word name listed once, inside its longer form, where the owner's memories leave
    no doubt which it is ("Priya" and "Priya Raman": one person, its mentions counted
    together); with two longer names that start with it it stays a name of its own.
    Identifiers are never folded."""
    shorts = [e for e in listed if " " not in e.key and e.kind != "id"]
    if not shorts:
        return listed
    found = [e for e in store.graph.find(namespace, owners, [e.key for e in shorts])
             if e.confirmed]
    listed_ids = {e.id for e in listed}
    into: dict[int, list[Entity]] = {}
    for short in shorts:
        longer = _one_longer(short, found)
        if longer is not None and longer.id in listed_ids:
            into.setdefault(longer.id, []).append(short)
    if not into:
        return listed
    folded = {s.id for group in into.values() for s in group}
    out: list[Entity] = []
    for e in listed:
        if e.id in folded:
            continue
        group = [e, *into.get(e.id, [])]
        out.append(e if len(group) == 1 else dataclasses.replace(
            e, mentions=sum(g.mentions for g in group),
            first_seen=min((g.first_seen for g in group if g.first_seen is not None),
                           default=None),
            last_seen=max((g.last_seen for g in group if g.last_seen is not None),
                          default=None)))
    return sorted(out, key=lambda e: (-e.mentions, -(e.last_seen or 0), e.id))


def resolve_names(store: EntityReads, namespace: str, owners: list[str] | None, key: str
                  ) -> list[Entity]:
    """The entities a name means in a scope: the one of that key (per owner, the most
    mentioned), and with it the one longer name that starts with it ("Marta" -> "Marta
    Silva"); for a longer name with no entity of its own, the entity of its first word."""
    found = store.graph.find(namespace, owners, [key])
    exact = sorted((e for e in found if e.key == key), key=lambda e: (-e.mentions, e.id))
    longer = [e for e in found if e.key != key]
    if exact:
        main = exact[0]
        one = _one_longer(main, longer)
        return [main] if one is None else [main, one]
    if longer:
        owner = max(longer, key=lambda e: e.mentions).owner
        same = sorted((e for e in longer if e.owner == owner), key=lambda e: (-e.mentions, e.id))
        return same[:1]
    words = key.split()
    if len(words) > 1:
        first = sorted((e for e in store.graph.find(namespace, owners, [words[0]])
                        if e.key == words[0]), key=lambda e: (-e.mentions, e.id))
        return first[:1]
    return []


def entity_profile(store: EntityReads, namespace: str, name: str, *, owners: list[str] | None,
                   limit: int, as_of: float | None = None) -> EntityProfile:
    key = key_of(name)
    if not key:
        raise InvalidInput(f"entity name {name!r} has no letters or digits; pass a name such as "
                           "'Marta'")
    found = resolve_names(store, namespace, owners, key)
    if not found:
        raise NotFound(f"no memory in namespace {namespace!r} mentions {name!r}"
                       + ("" if owners is None else f" for user_id {owners[0]!r}")
                       + "; list the names with Memory.entities()")
    main = found[0]
    lists = store.graph.mentions([e.id for e in found], limit=limit)
    ids = list(dict.fromkeys(i for e in found for i in lists[e.id]))
    records = sorted(store.records.get(namespace, ids), key=lambda r: (-r.created_at, r.id))
    own = {e.id for e in found}
    merged: dict[int, tuple[Entity, list[str]]] = {}
    for one in found:  # what the entity and its aliases share with other names
        for e, shared in store.graph.related(one.id, limit=limit + len(own)):
            if e.id not in own:
                ids = merged.setdefault(e.id, (e, []))[1]
                ids += [i for i in shared if i not in ids]
    related = sorted(merged.values(), key=lambda item: (-len(item[1]), item[0].id))[:limit]
    aliases = tuple(dict.fromkeys(e.name for e in found if e.name != main.name))
    total = Entity(main.id, main.namespace, main.owner, main.name, main.kind, main.key,
                   sum(e.mentions for e in found),
                   min((e.first_seen for e in found if e.first_seen is not None), default=None),
                   max((e.last_seen for e in found if e.last_seen is not None), default=None),
                   confirmed=any(e.confirmed for e in found))
    relations = store.graph.relations(namespace, owners if owners is not None else [
        e.owner or "" for e in found], sorted({e.key for e in found}), as_of=as_of, limit=limit)
    return EntityProfile(total, aliases, records[:limit], related, relations)
