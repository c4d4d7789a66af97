"""Domain types: the record, a search hit and its explanation, a history entry.

Times are float seconds since the Unix epoch (UTC) everywhere inside memstream; the API accepts
datetimes and ISO strings too and converts them at the edge (see ``clock.to_timestamp``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, get_args

import numpy as np

from .core.jsonio import clip

__all__ = ["KINDS", "ORDERS", "Context", "Entity", "EntityProfile", "Explanation",
           "Finding", "HistoryEntry", "Hit", "MemoryChange", "Order", "Record", "Relation",
           "Signals", "TermStats"]

#: the orders of a listing: by creation (oldest first, or newest first with "-") or by step
Order = Literal["created", "-created", "step", "-step"]
ORDERS: tuple[str, ...] = get_args(Order)

#: Kinds the product itself writes. Any other lowercase identifier is accepted too.
KINDS = (
    "observation",
    "state",
    "action",
    "interaction",
    "message",
    "reflection",
    "outcome",
    "heuristic",
    "anti_pattern",
    "preference",
    "fact",
    "episode",
    "rule",
    "mistake",
    "summary",
)


@dataclass(slots=True)
class Record:
    """One memory in the stream.

    ``text`` is what is embedded and searched; ``data`` is an optional structured payload (a JSON
    object). ``importance`` is in [0, 1]. ``provenance`` lists the ids of the records this one was
    derived from. A record whose ``invalidated_at`` is set is no longer valid from that time on
    (``superseded_by`` names its successor) but is never erased by that. ``space`` is the
    vector space its embedding belongs to: "" for the memory's text embedder (every record a
    user adds), or a named space of a capability with vectors of its own ("agents": the
    agents' field-hashed states); the memory's verbs read the text space.
    """

    id: str
    namespace: str
    text: str
    kind: str = "observation"
    data: dict[str, Any] | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    step: int | None = None
    importance: float = 0.5
    created_at: float = 0.0
    updated_at: float | None = None
    last_accessed_at: float = 0.0
    access_count: int = 0
    provenance: tuple[str, ...] = ()
    invalidated_at: float | None = None
    superseded_by: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    space: str = ""
    embedding: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: what the call that returned this record did: "add" (a new memory), "refresh" (the
    #: same memory was already stored: see ``Memory.add``) or "refused" (read as junk and not
    #: stored, with ``Config(junk="refuse")``); None for a record read back
    event: str | None = field(default=None, compare=False)

    @property
    def valid(self) -> bool:
        """True while the record has not been invalidated or superseded."""
        return self.invalidated_at is None

    def to_dict(self, *, with_embedding: bool = False) -> dict[str, Any]:
        """A JSON-ready dict of every field (the embedding as a list of floats when asked)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["provenance"] = list(self.provenance)
        out["data"], out["metadata"] = clip(self.data), clip(self.metadata)
        emb = out.pop("embedding")
        if out["event"] is None:
            out.pop("event")
        if with_embedding and emb is not None:
            out["embedding"] = [float(x) for x in emb]
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Record:
        """The inverse of :meth:`to_dict`; unknown keys are an error."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(raw) - names
        if unknown:
            from .errors import InvalidInput

            raise InvalidInput(
                f"unknown record field(s) {sorted(unknown)}; known fields are {sorted(names)}"
            )
        values = dict(raw)
        values["provenance"] = tuple(values.get("provenance") or ())
        values["metadata"] = dict(values.get("metadata") or {})
        emb = values.get("embedding")
        if emb is not None:
            values["embedding"] = np.asarray(emb, dtype=np.float32)
        return cls(**values)


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a hit ranks where it does.

    ``recency``, ``importance`` and ``relevance`` are the components in [0, 1] and ``rule``
    how they made the score: "relevance-first" (the default) uses the calibrated relevance
    and the raw recency and importance, ``raw_relevance`` being the relevance's logit;
    "weighted" (the paper's) min-max normalises each over the candidates and sums them with
    ``weights``, ``raw_relevance`` being the fused relevance. ``raw_recency`` = decay ** hours
    since last access.
    ``cosine`` and ``keyword`` are the two relevance sources (None when that index did not
    return the record); ``vector_rank`` and ``keyword_rank`` are 1-based ranks in each list.
    ``lifted`` says why a hit stands above hits that score higher (None for every other hit):
    "standing instruction or preference" (retrieval.standing). ``updates`` names the records
    this hit follows up and was placed above: a newer memory about the same thing, as
    relevant to the query (a changed fact, a moved event, the reply to a question); its
    relevance is its own. ``newer`` names the newer record about the same thing, as relevant,
    that the notes stage's adjustment "a newer record is about the same thing" counts: a
    likeness, not a change found (that links the record: ``Record.superseded_by``).
    ``recency_from`` says what the recency counts from: "write" (the
    record was written then, and never used since) or "access" (a search that touched it, or
    an add of the same text, used it since: python-api.md, "When a search counts as a use").
    ``adjustments`` names what the ordering of a store of notes added to the relevance logit
    to rank the hit (retrieval.notes: "follows up the best match", "of the date the query
    names", ...), in logits; ``raw_relevance`` includes them, ``relevance`` does not.
    Under "relevance-first", ``relevance`` is the chance that the hit answers, read from its own
    evidence and its place in the list (retrieval.shown), and ``evidence`` the chance its own
    evidence alone gives (None under "weighted").
    ``ordering`` is the kind of store the search read, decided once from the store: "notes"
    (separate short records), "conversation" (turns read in their surroundings), "long records"
    (whole messages or exchanges) or "keyword" (no vectors); ``stages`` names the stages of the
    search that ran, in order: "candidates" (both indexes), "past" (the query asks about the
    past, read from its vector: retrieval.past; nothing is lifted for following up the best
    match, and versions since replaced are shown after their current one), "context"
    (smoothing over the stream), "learned" (the conversation's learned stage), "calibrated"
    (relevance as a chance), "notes" and "names" (a store of notes' ordering, and the memories
    its names lead to), "lifted" and "follow-ups" (the conversation's and long records'
    ordering), "current" (current versions in place of what they replace; junk and duplicates
    last), "standing" (standing instructions for a request) and "weighted" (the paper's
    weighted sum).
    """

    recency: float
    importance: float
    relevance: float
    raw_recency: float
    raw_importance: float
    raw_relevance: float
    weights: tuple[float, float, float]
    hours_since_access: float
    cosine: float | None = None
    keyword: float | None = None
    vector_rank: int | None = None
    keyword_rank: int | None = None
    fusion: str = "rrf"
    rule: str = "weighted"
    lifted: str | None = None
    updates: tuple[str, ...] = ()
    newer: tuple[str, ...] = ()
    recency_from: str = "write"
    adjustments: Mapping[str, float] = field(default_factory=dict)
    via: tuple[str, ...] = ()
    evidence: float | None = None
    ordering: str = ""
    stages: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["adjustments"] = dict(self.adjustments)
        out["via"] = list(self.via)
        out["newer"] = list(self.newer)
        out["stages"] = list(self.stages)
        names = ("recency", "importance", "relevance")
        out["weights"] = dict(zip(names, self.weights, strict=True))
        return out


@dataclass(frozen=True, slots=True)
class Hit:
    """A search result: the record, its final score and the explanation of that score."""

    record: Record
    score: float
    explain: Explanation

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": self.record.to_dict(),
            "score": self.score,
            "explain": self.explain.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Context:
    """A context block: the rendered text, the hits it holds and its exact token count."""

    text: str
    hits: list[Hit]
    tokens: int


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One change to a record: ``event`` is add, update, delete, invalidate, import, erase
    (what is left of an erased record: its id and the time, no content) or refresh (the same
    memory added again: its last access and access count moved)."""

    record_id: str
    namespace: str
    event: Literal["add", "update", "delete", "invalidate", "restore", "import", "erase",
                   "refresh"]
    at: float
    old: dict[str, Any] | None
    new: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["old"], out["new"] = clip(self.old), clip(self.new)
        return out


@dataclass(frozen=True, slots=True)
class MemoryChange:
    """What ``add(messages, infer=True)`` did with one fact or message: ``event`` is "add",
    "update", "supersede" (``previous`` is the record whose validity closed) or "noop"
    (``record`` is the stored memory that already said it)."""

    event: Literal["add", "update", "supersede", "noop"]
    record: Record
    previous: Record | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    """What the comparison of memories found about ``record`` (``Memory.audit``): ``kind`` is
    "superseded" (``related`` is its successor), "duplicate" (``related`` is the original it
    restates) or "junk"; ``confidence`` in [0, 1]; ``reason`` names the signals that decided
    it; ``applied`` is False once ``Memory.restore`` undid it, and for a ``tentative`` change:
    a probable one (``cognition.changes.TENTATIVE``) below the confidence to link, which
    invalidates nothing and only puts its successor first in reads about now (``restore``
    ends that too; linking it is ``Memory.invalidate(record, superseded_by=related)``)."""

    kind: Literal["superseded", "duplicate", "junk"]
    record: Record
    related: Record | None
    confidence: float
    reason: str
    applied: bool
    tentative: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "record": self.record.to_dict(),
                "related": self.related.to_dict() if self.related else None,
                "confidence": self.confidence, "reason": self.reason, "applied": self.applied,
                "tentative": self.tentative}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Finding:
        return cls(raw["kind"], Record.from_dict(dict(raw["record"])),
                   Record.from_dict(dict(raw["related"])) if raw.get("related") else None,
                   float(raw["confidence"]), str(raw["reason"]), bool(raw["applied"]),
                   bool(raw.get("tentative", False)))


class Signals(NamedTuple):
    """The fields of a record that scoring reads (``Store.signals``)."""

    id: str
    importance: float
    created_at: float
    last_accessed_at: float


@dataclass(frozen=True, slots=True)
class TermStats:
    """Keyword statistics (``SearchIndexes.term_stats``): ``records`` described, and per term
    how many of them hold it (up to the cap asked, plus one)."""

    records: int
    matches: dict[str, int]
    of_selection: bool


@dataclass(frozen=True, slots=True)
class Entity:
    """A named thing the memories of one owner mention (a person, place, organisation,
    product, identifier, ...): ``owner`` is the records' ``user_id`` (None: records without
    one); ``mentions`` counts the records that mention it, ``first_seen`` and ``last_seen`` are
    the oldest and newest of their times. ``confirmed``: some mention's position says it is a
    name (only confirmed entities are listed: docs/entities.md). ``kind`` is one of person,
    place, organization, product, event, work, id, date, thing or name: what the words say,
    and where they leave it open (thing, name), what the embedder reads in the background
    ("Kinds the words do not tell")."""

    id: int
    namespace: str
    owner: str | None
    name: str
    kind: str
    key: str
    mentions: int
    first_seen: float | None
    last_seen: float | None
    confirmed: bool = True

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["user_id"] = out.pop("owner")
        return out


@dataclass(frozen=True, slots=True)
class Relation:
    """A relation an LLM read in a memory (``record_id``): ``subject`` ``predicate``
    ``object``, valid from the memory's time until a newer relation on the same subject and
    predicate ended it (``valid_to``; None: still valid)."""

    subject: str
    predicate: str
    object: str
    record_id: str
    valid_from: float
    valid_to: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True, slots=True)
class EntityProfile:
    """One entity as ``Memory.entity`` returns it: its name and kind, the other names it goes
    by (``aliases``), the records that mention it (newest first), the entities it shares
    records with (``related``: each with the ids of the records that link them, most shared
    first) and, where an LLM read relations, those it is the subject of (``relations``: valid
    now, or at the time asked)."""

    entity: Entity
    aliases: tuple[str, ...]
    records: list[Record]
    related: list[tuple[Entity, list[str]]]
    relations: list[Relation] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.entity.name

    @property
    def kind(self) -> str:
        return self.entity.kind

    def to_dict(self) -> dict[str, Any]:
        return {**self.entity.to_dict(), "aliases": list(self.aliases),
                "records": [r.to_dict() for r in self.records],
                "related": [{**e.to_dict(), "record_ids": ids} for e, ids in self.related],
                "relations": [r.to_dict() for r in self.relations]}
