"""Following names from the best hits to the memories that complete them (two-hop questions):
"Where does the person who gave me Dune work?" finds "Marta gave me her old copy of Dune"; the
name that hit adds to the question, Marta, leads to "Marta lives in Porto now". Pure functions
over the hits and the entities the store's graph gives for them (``engine/search.py`` reads it).

Only listed names count (confirmed: some mention's position says it is a name, or the name is
part of a confirmed one in the same memory; a German noun or a word that only ever opens a
sentence is kept but never followed). A hit leads on only when it holds a name the query names
(the question is about something the hit connects to something else), and a name leads on
only when it is specific: the query does not name it already, and it is mentioned in at most
``BRIDGE_MENTIONS`` memories (a name in every record, such as the speaker of a conversation,
links everything and so nothing). The memories it reaches rank ``BRIDGE_BONUS`` logits above
their own evidence, below the hit they were reached from, each naming the way in
``explain.via``; the relevance shown is their own. The search uses this in stores of notes,
where it wins; in conversations it lost (measured in docs/entities.md).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from .._types import Entity

__all__ = ["BRIDGE_BONUS", "BRIDGE_MENTIONS", "BRIDGE_PER_NAME", "BRIDGE_SEEDS", "bridge_names",
           "placed", "reached_from"]

#: the best hits whose names are followed
BRIDGE_SEEDS = 1
#: a name mentioned in more memories than this is not followed
BRIDGE_MENTIONS = 8
#: memories followed per name (its newest)
BRIDGE_PER_NAME = 2
#: what sharing a specific name with a better hit adds to a memory's ranking logit
BRIDGE_BONUS = 2.0


def _named(e: Entity, query_words: Collection[str]) -> bool:
    """Whether the query names ``e``: a word of its key is a word of a name in the query
    ("Marta" names "Marta Silva", and the other way round)."""
    return any(w in query_words for w in e.key.split())


def bridge_names(seeds: Sequence[str], found: Mapping[str, Sequence[Entity]],
                 query_keys: Collection[str]) -> dict[str, list[Entity]]:
    """Per seed hit that holds a listed name the query names (``query_keys``), the listed
    names worth following from it: specific, not dates, not named by the query."""
    words = {w for k in query_keys for w in k.split()}
    out: dict[str, list[Entity]] = {}
    for seed in seeds:
        held = _listed(found.get(seed, ()))
        if not any(_named(e, words) for e in held):
            continue  # the hit does not hold what the query names: nothing to go on from
        names = [e for e in held if e.kind != "date" and 1 < e.mentions <= BRIDGE_MENTIONS
                 and not _named(e, words)]
        if names:
            out[seed] = names
    return out


def _listed(held: Sequence[Entity]) -> list[Entity]:
    """The names of one memory that count: confirmed ones, and those whose every word is a word
    of a confirmed one ("Raupach" beside "Dachdecker Raupach", unconfirmed where it opens a
    German sentence alone)."""
    sure = {w for e in held if e.confirmed for w in e.key.split()}
    return [e for e in held if e.confirmed or (e.key and set(e.key.split()) <= sure)]


def reached_from(names: Mapping[str, Sequence[Entity]], mentions: Mapping[int, Sequence[str]]
                 ) -> tuple[dict[str, list[str]], dict[str, tuple[str, ...]]]:
    """Per seed, the memories its names lead to (``mentions``: each name's newest memories),
    and per memory reached, the names that led to it."""
    reached: dict[str, list[str]] = {}
    via: dict[str, tuple[str, ...]] = {}
    for seed, ents in names.items():
        for e in ents:
            for rid in mentions.get(e.id, ()):
                if rid == seed:
                    continue
                if rid not in reached.setdefault(seed, []):
                    reached[seed].append(rid)
                via[rid] = (*via.get(rid, ()), e.name)
    return reached, via


def placed(order: Sequence[str], logits: Mapping[str, float],
           reached: Mapping[str, Sequence[str]]) -> list[str]:
    """``order`` with each memory ``reached`` from a seed moved below the seed and above the
    first later hit whose ranking logit is under the memory's own plus ``BRIDGE_BONUS`` (the
    evidence of the name the two share); a memory above its seed stays where it is."""
    out = list(order)
    for seed, others in reached.items():
        if seed not in out:
            continue
        for rid in sorted(others, key=lambda r: -logits.get(r, -99.0)):
            at = out.index(seed)
            if rid in out and out.index(rid) < at:
                continue
            if rid in out:
                out.remove(rid)
            bar = logits.get(rid, -99.0) + BRIDGE_BONUS
            i = at + 1
            while i < len(out) and logits.get(out[i], -99.0) >= bar:
                i += 1
            out.insert(i, rid)
    return out
