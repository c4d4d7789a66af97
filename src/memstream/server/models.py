"""Request and response bodies of the REST API (validated by FastAPI, documented in OpenAPI).

Field types are deliberately plain: the engine validates meaning (non-empty text, namespaces,
importance in [0, 1], filter operators) and its errors become 422 answers with a message that
names the problem.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from .._types import Order
from ..config import CONTEXT_MIN_RELEVANCE
from ..core.clock import iso
from ..scope import Query, Scope

# strict: a JSON true is not the number 1, and an integer is kept whole for the engine to check
Time = StrictFloat | StrictInt | StrictStr
Number = StrictFloat | StrictInt
#: a time in an answer: ISO 8601 in UTC (seconds since the epoch in Python)
IsoTime = Annotated[float, PlainSerializer(iso, return_type=str, when_used="json"),
                    Field(json_schema_extra={"format": "date-time"})]
#: the largest row offset or step the API reads (SQLite and PostgreSQL integers are 64-bit)
MAX_INT = 2**63 - 1


def _was(name: str, old: str) -> AliasChoices:
    """A field's name and the old name it is still read by (one name per concept)."""
    return AliasChoices(name, old)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _utf8(cls, data: Any) -> Any:
        """A lone surrogate ("\\ud800") anywhere in a body is refused with the field's name:
        no such string can be stored, filtered on or answered as UTF-8."""
        _no_surrogate(data, "")
        return data


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogate(value: Any, where: str, depth: int = 0) -> None:
    if isinstance(value, str):
        if _SURROGATE.search(value):
            raise ValueError(f"{where or 'the body'} contains a lone surrogate (as \\ud800); "
                             "send valid UTF-8 text")
    elif depth < 40 and isinstance(value, dict):
        for k, v in value.items():
            name = f"{where}.{k}" if where else str(k)
            _no_surrogate(k, f"{where or 'the body'} (a key)", depth + 1)
            _no_surrogate(v, name, depth + 1)
    elif depth < 40 and isinstance(value, list):
        for n, v in enumerate(value):
            _no_surrogate(v, f"{where}[{n}]", depth + 1)


NAMESPACE = "The namespace (tenant) to use. Default: the API key's first namespace."
FILTERS = ("A filter on the payload (data) and metadata: {\"field\": value} for equality; "
           "{\"field\": {\"gte\": 3, \"lt\": 10}} with eq, ne, in, nin, gt, gte, lt, lte, "
           "contains; dotted keys reach nested fields (\"place.city\"); \"metadata.x\" "
           "addresses metadata; {\"OR\": [...]}, {\"AND\": [...]}, {\"NOT\": {...}} combine.")
TIME = "A time: seconds since the epoch, or ISO 8601 (\"2026-03-01T09:00:00Z\")."
#: the weight profiles (retrieval.scoring.PROFILES)
Profile = Literal["default", "recall", "balanced", "paper", "recent"]


def _ns() -> Any:
    return Field(None, max_length=128, description=NAMESPACE)


class ScopeFields(_Body):
    """A ``memstream.Scope``, flat (namespace, user, agent, run)."""

    namespace: str | None = _ns()
    user_id: str | None = Field(None, max_length=256,
                                description="The user the memories are about.")
    agent_id: str | None = Field(None, max_length=256,
                                 description="The agent that keeps the memories.")
    run_id: str | None = Field(None, max_length=256,
                               description="One run or session of an agent.")

    def scope(self, namespace: str) -> Scope:
        """The public ``Scope`` these fields name, in the namespace the key resolved."""
        return Scope(namespace, self.user_id, self.agent_id, self.run_id)


def _kinds() -> Any:
    return Field(None, description="Only these kinds (e.g. [\"fact\"]).")


def _filters() -> Any:
    return Field(None, description=FILTERS)


class AddRequest(ScopeFields):
    text: str = Field(..., validation_alias=_was("text", "content"),
                      description="The text of the memory (old name: content).")
    kind: str = Field("observation", description="What it is: observation, fact, preference, "
                      "decision, outcome, reflection, or your own word.")
    data: dict[str, Any] | None = Field(None, description="A JSON payload kept with it "
                                        "(filters can select on it).")
    importance: Number | None = Field(None, description="0 to 1; estimated when left out.")
    step: StrictInt | None = Field(None, description="A simulation step, for step clocks.")
    at: Time | None = Field(None, description="When it happened (default: now). " + TIME)
    metadata: dict[str, Any] | None = Field(None, description="Free metadata (source, tags).")
    provenance: list[str] | None = Field(None, description="Ids of the memories it rests on.")


class Message(_Body):
    role: str = "user"
    content: str


class MessagesRequest(ScopeFields):
    messages: list[Message] = Field(..., min_length=1, max_length=200)
    infer: bool = True


class BatchItem(_Body):
    text: str = Field(..., validation_alias=_was("text", "content"),
                      description="The text of the memory (old name: content).")
    kind: str = "observation"
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    data: dict[str, Any] | None = None
    importance: Number | None = None
    step: StrictInt | None = None
    at: Time | None = None
    metadata: dict[str, Any] | None = None
    provenance: list[str] | None = None


class AddManyRequest(_Body):
    namespace: str | None = Field(None, max_length=128)
    items: list[BatchItem] = Field(..., min_length=1, max_length=10_000)


class UpdateRequest(_Body):
    text: str | None = Field(None, description="The new text (embedded again).")
    data: dict[str, Any] | None = Field(None, description="The new payload (replaces it).")
    importance: Number | None = Field(None, description="The new importance, 0 to 1.")
    metadata: dict[str, Any] | None = Field(None, description="The new metadata (replaces it).")
    provenance: list[str] | None = Field(
        None, description="The ids of the memories it rests on (replaces them).")
    at: Time | None = Field(None, description="When the change happened (default: now). " + TIME)


class MemoryRef(_Body):
    memory_id: str = Field(..., max_length=128, description="The memory's id.")
    namespace: str | None = _ns()


class UpdateMemoryRequest(MemoryRef, UpdateRequest):
    pass


class InvalidateBody(_Body):
    superseded_by: str | None = Field(
        None, max_length=128, description="The memory that replaces it (a changed fact's new "
        "version: searches then put that one in its place).")


class InvalidateRequest(MemoryRef, InvalidateBody):
    pass


class DeleteMemoryRequest(MemoryRef):
    erase: bool = Field(False, description="Also remove its text, payload and history from "
                        "every store and index (only the id and time stay).")


class QueryFields(ScopeFields):
    """A ``memstream.Scope`` and ``memstream.Query``, flat (a search's text is ``query``)."""

    kinds: list[str] | None = _kinds()
    filters: dict[str, Any] | None = _filters()
    since: Time | None = Field(None, description="Only memories from this time on. " + TIME)
    until: Time | None = Field(None, description="Only memories before this time. " + TIME)
    step_range: tuple[StrictInt, StrictInt] | None = Field(
        None, description="Only memories with first <= step <= last.")
    as_of: Time | None = Field(None, description="Read the memories as they were valid at "
                               "this time (invalidated ones then included). " + TIME)

    def as_query(self) -> Query:
        """The public ``Query`` these fields name."""
        return Query(text=getattr(self, "query", None), kinds=self.kinds, filters=self.filters,
                     since=self.since, until=self.until, step_range=self.step_range,
                     include_invalid=getattr(self, "include_invalid", False), as_of=self.as_of)


class ListRequest(QueryFields):
    include_invalid: bool = Field(False, description="Also memories invalidated (superseded).")
    limit: int = Field(100, ge=0, le=1000, description="At most this many.")
    offset: int = Field(0, ge=0, le=MAX_INT, description="Skip this many first.")
    order: Order = Field(
        "created", description="created: oldest first; -created: newest first; step: by step "
        "(then by creation); -step: the highest step first.")


class DeleteAllRequest(ScopeFields):
    kinds: list[str] | None = _kinds()
    filters: dict[str, Any] | None = _filters()
    erase: bool = Field(False, description="Also remove the records' text, payload and history "
                        "(and the history of the scope's records deleted earlier) from every "
                        "store and index; only ids and times stay.")


class SearchRequest(QueryFields):
    query: str = Field(..., description="What to find, in words (a question works).")
    k: int = Field(10, ge=1, le=1000, description="How many memories to return.")
    now: Time | None = Field(None, description="The time recency is measured from "
                             "(default: now). " + TIME)
    weights: Profile | dict[str, float] | list[float] | None = Field(
        None, description="How recency, importance and relevance count: a profile name, "
        "{\"recency\": r, \"importance\": i, \"relevance\": v} or [r, i, v]. "
        "Default: the server's (relevance first).")
    touch: bool = Field(True, description="Mark the hits as accessed (a read-only key never "
                        "does).")
    fusion: Literal["rrf", "convex"] | None = Field(
        None, description="How keyword and vector candidates are merged.")
    min_relevance: float | None = Field(
        None, ge=0, le=1, description="Leave out hits whose relevance is below this (0-1; "
        "with the default profile, the calibrated chance that the memory answers): a search "
        "where nothing answers comes back empty.")


class ContextRequest(SearchRequest):
    budget: int = Field(512, ge=0, le=100_000, description="The token budget of the text.")
    k: int = Field(50, ge=1, le=1000, description="How many memories to consider for it.")
    min_relevance: float | None = Field(
        CONTEXT_MIN_RELEVANCE, ge=0, le=1, description="Leave out memories whose relevance is "
        f"below this (default {CONTEXT_MIN_RELEVANCE}: no unrelated memory pads the prompt; "
        "0 keeps every hit).")


class RecordOut(BaseModel):
    id: str
    namespace: str
    text: str
    kind: str
    data: dict[str, Any] | None
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    step: int | None
    importance: float
    created_at: IsoTime
    updated_at: IsoTime | None
    last_accessed_at: IsoTime
    access_count: int
    provenance: list[str]
    invalidated_at: IsoTime | None
    superseded_by: str | None
    metadata: dict[str, Any]
    space: str = Field("", description="The vector space of its embedding: \"\" for text, "
                       "\"agents\" for agents' states.")
    event: str | None = Field(None, description="What an add did: \"add\" (a new record), "
                              "\"refresh\" (the same text was stored: that record, refreshed) "
                              "or \"refused\" (read as junk and not stored: the server runs "
                              "with MEMSTREAM_JUNK=refuse); absent elsewhere.")


class HitOut(BaseModel):
    record: RecordOut
    score: float
    explain: dict[str, Any]


class ContextOut(BaseModel):
    text: str
    tokens: int
    hits: list[HitOut]


class ChangeOut(BaseModel):
    event: str
    record: RecordOut
    previous_id: str | None


AGENT = "The agent (default: \"default\")."


class EpisodeRequest(_Body):
    namespace: str | None = _ns()
    agent_id: str = Field("default", description=AGENT)
    episode: dict[str, Any] = Field(..., description="The finished episode: task_id, score "
                                    "(0 to 1), steps, trajectory_summary, mistakes, successes, "
                                    "mistake_cards.")


class EpisodeContextRequest(_Body):
    namespace: str | None = _ns()
    agent_id: str = Field("default", description=AGENT)
    task_id: str | None = Field(None, description="The task about to start (its own lessons "
                                "first).")
    budget: int | None = Field(None, ge=0, le=100_000,
                               validation_alias=_was("budget", "max_tokens"),
                               description="An exact limit in cl100k_base tokens (old name: "
                               "max_tokens).")


class LearnRequest(_Body):
    namespace: str | None = _ns()
    agent: str = Field(..., description="The agent that made the attempt.")
    project_id: str = Field(..., description="The project it belongs to.")
    task: str = Field(..., description="What the task was.")
    outcome: bool = Field(..., description="true: it succeeded; false: it failed.")
    strategy_used: str = Field(..., description="What the agent did.")
    task_type: str | None = Field(None, description="Its type (inferred when left out).")
    duration_ms: int | None = Field(None, description="How long it took.")
    error_message: str | None = Field(None, description="The error, for a failure.")
    feedback: str | None = Field(None, description="What the user said about it.")


class AdviceRequest(_Body):
    namespace: str | None = _ns()
    task: str = Field(..., description="The task about to start.")
    agent: str = Field(..., description="The agent asking.")
    user_id: str | None = Field(None, description="Also this user's preferences.")
    k: int = Field(5, ge=1, le=100, validation_alias=_was("k", "top_k"),
                   description="At most this many of each kind (old name: top_k).")


MemoryType = Literal["state", "action", "interaction"]


class AgentEntryRequest(_Body):
    namespace: str | None = _ns()
    agent_id: str = Field(..., description="The agent.")
    kind: MemoryType = Field("state", validation_alias=_was("kind", "memory_type"),
                             description="What the contents are (old name: memory_type).")
    contents: dict[str, Any] = Field(..., description="The state, action or interaction.")
    step: StrictInt = Field(..., description="The simulation step.")
    priority: Number = Field(1.0, description="0 to 1: low priority leaves STM first.")


class AgentSimilarRequest(_Body):
    namespace: str | None = _ns()
    state: dict[str, Any] = Field(..., description="The state to compare with.")
    k: int = Field(5, ge=1, le=100, description="How many entries to return.")
    kind: MemoryType | None = Field(None, validation_alias=_was("kind", "memory_type"),
                                    description="Only this kind (old name: memory_type).")


class AgentSimilarOp(AgentSimilarRequest):
    agent_id: str = Field(..., description="The agent.")


#: the change-event types (memstream.events.EVENT_TYPES)
EventType = Literal["added", "refreshed", "updated", "invalidated", "superseded", "deleted",
                    "restored", "refused", "touched", "reflected", "consolidated",
                    "outcome_learned", "heuristic_created", "heuristic_updated",
                    "episode_recorded", "tier_moved"]
TYPES = "Only events of these types (all when empty)."


class WebhookRequest(_Body):
    namespace: str | None = _ns()
    url: str = Field(..., max_length=2048, description="Where to POST the namespace's events "
                     "(http or https). Each body is signed: see docs/events.md.")
    types: list[EventType] = Field(default_factory=list, max_length=len(get_args(EventType)),
                                   description=TYPES)
    secret: str | None = Field(None, min_length=16, max_length=256,
                               description="The signing secret (made when left out; shown "
                               "once, in this answer).")
    from_start: bool = Field(False, description="Also send the events still kept from before "
                             "(default: from now on).")


class NamespaceRequest(_Body):
    namespace: str | None = _ns()


class AuditRequest(_Body):
    namespace: str | None = _ns()
    user_id: str | None = Field(None, max_length=256,
                                description="Only the findings about this user's memories.")
    agent_id: str | None = Field(None, max_length=256,
                                 description="Only the findings about this agent's memories.")
    kinds: list[Literal["superseded", "duplicate", "junk"]] | None = Field(
        None, max_length=3, description="Only findings of these kinds (all when empty).")
    limit: int = Field(100, ge=1, le=10_000, description="At most this many findings.")


class EntitiesRequest(ScopeFields):
    query: str | None = Field(None, max_length=256, description="Only the entities whose name "
                              "contains this (case and accents aside).")
    limit: int = Field(50, ge=1, le=1000, description="At most this many entities.")


class EntityRequest(_Body):
    namespace: str | None = _ns()
    name: str = Field(..., min_length=1, max_length=256, description="The entity's name; a "
                      "shorter form works where the scope leaves no doubt ('Marta' finds "
                      "'Marta Silva').")
    user_id: str | None = Field(None, max_length=256,
                                description="The user whose memories mention it.")
    limit: int = Field(20, ge=1, le=1000, description="At most this many memories, and this "
                       "many related entities.")
    as_of: Time | None = Field(None, description="The relations valid at this time (an LLM "
                               "reads them when relations are on); default: now. " + TIME)


class WebhookRef(_Body):
    namespace: str | None = _ns()
    webhook_id: str = Field(..., max_length=64, description="The webhook's id (wh_...).")


class EventsRequest(_Body):
    namespace: str | None = _ns()
    after: StrictInt = Field(0, ge=0, le=MAX_INT, description="Only events numbered above "
                             "this (the last number a reader saw): resume here.")
    limit: int = Field(100, ge=1, le=1000, description="At most this many events.")
    types: list[EventType] = Field(default_factory=list, max_length=len(get_args(EventType)),
                                   description=TYPES)


class NoFields(_Body):
    """An operation that takes nothing (the key says whose)."""


class ExportRequest(_Body):
    namespace: str | None = _ns()
    with_embeddings: bool = Field(False, description="Also each record's vector (larger; an "
                                  "import into a store with the same embedder skips embedding).")


class ImportRequest(_Body):
    namespace: str | None = _ns()
    skip_existing: bool = Field(False, description="Skip records whose id is stored (default: "
                                "an id already stored refuses the whole import).")
    text: str = Field(..., description="JSON Lines: records written by export (they have an "
                      "id), or new memories, a text with any of add's fields.")


class EpisodeSummaryRequest(_Body):
    namespace: str | None = _ns()
    agent_id: str = Field("default", description=AGENT)


class AgentRangeRequest(_Body):
    namespace: str | None = _ns()
    agent_id: str = Field(..., max_length=256, description="The agent.")
    start: int = Field(..., ge=0, le=MAX_INT, description="The first step.")
    end: int = Field(..., ge=0, le=MAX_INT, description="The last step.")
    kind: str | None = Field(None, description="Only state, action or interaction entries.")


class InspectListRequest(ListRequest):
    tiers: list[str] | None = Field(None, description="Keep records in these tiers "
                                    "(stm, im, ltm); tiers apply to the agents' records.")


class InspectRecordRequest(_Body):
    namespace: str | None = _ns()
    record_id: str = Field(..., max_length=128, description="The record's id.")


class OverviewRequest(_Body):
    namespace: str | None = _ns()
    window: int = Field(20_000, ge=1, le=200_000, description="Over the newest this many "
                        "records.")


class StreamRequest(_Body):
    namespace: str | None = Field(None, max_length=128, description="Only this namespace's "
                                  "events (default: every namespace of the key).")
    after: int | None = Field(None, ge=0, le=MAX_INT, description="Only events numbered above "
                              "this (default: from now on; Last-Event-ID resumes too).")
    types: list[EventType] | None = Field(None, max_length=len(get_args(EventType)),
                                          description=TYPES)

