"""Request and response bodies of the REST API (validated by FastAPI, documented in OpenAPI).

Field types are deliberately plain: the engine validates meaning (non-empty text, namespaces,
importance in [0, 1], filter operators) and its errors become 422 answers with a message that
names the problem.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

# strict: a JSON true is not the number 1, and an integer is kept whole for the engine to check
Time = StrictFloat | StrictInt | StrictStr
Number = StrictFloat | StrictInt
#: the largest row offset or step the API reads (SQLite and PostgreSQL integers are 64-bit)
MAX_INT = 2**63 - 1


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Scope(_Body):
    namespace: str | None = Field(None, max_length=128,
                                  description="Default: the key's first namespace.")
    user_id: str | None = Field(None, max_length=256)
    agent_id: str | None = Field(None, max_length=256)
    run_id: str | None = Field(None, max_length=256)


class AddRequest(Scope):
    content: str = Field(..., description="The text of the memory.")
    kind: str = "observation"
    data: dict[str, Any] | None = None
    importance: Number | None = None
    step: StrictInt | None = None
    at: Time | None = Field(None, description="Seconds since the epoch or ISO 8601.")
    metadata: dict[str, Any] | None = None
    provenance: list[str] | None = None


class Message(_Body):
    role: str = "user"
    content: str


class MessagesRequest(Scope):
    messages: list[Message] = Field(..., min_length=1, max_length=200)
    infer: bool = True


class BatchItem(_Body):
    content: str
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
    text: str | None = None
    data: dict[str, Any] | None = None
    importance: Number | None = None
    metadata: dict[str, Any] | None = None


class Selecting(Scope):
    kinds: list[str] | None = None
    filters: dict[str, Any] | None = None
    since: Time | None = None
    until: Time | None = None
    step_range: tuple[StrictInt, StrictInt] | None = None
    as_of: Time | None = None


class ListRequest(Selecting):
    include_invalid: bool = False
    limit: int = Field(100, ge=0, le=1000)
    offset: int = Field(0, ge=0, le=MAX_INT)
    order: str = "created"


class DeleteAllRequest(Scope):
    kinds: list[str] | None = None
    filters: dict[str, Any] | None = None
    erase: bool = Field(False, description="Also remove the records' text, payload and history "
                        "(and the history of the scope's records deleted earlier) from every "
                        "store and index; only ids and times stay.")


class SearchRequest(Selecting):
    query: str
    k: int = Field(10, ge=1, le=1000)
    now: Time | None = None
    weights: str | dict[str, float] | list[float] | None = None
    touch: bool = True
    fusion: str | None = None


class ContextRequest(SearchRequest):
    budget: int = Field(512, ge=0, le=100_000)


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
    created_at: float
    updated_at: float | None
    last_accessed_at: float
    access_count: int
    provenance: list[str]
    invalidated_at: float | None
    superseded_by: str | None
    metadata: dict[str, Any]


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


class EpisodeRequest(_Body):
    namespace: str | None = Field(None, max_length=128)
    agent_id: str = "default"
    episode: dict[str, Any]


class LearnRequest(_Body):
    namespace: str | None = Field(None, max_length=128)
    agent: str
    project_id: str
    task: str
    outcome: bool
    strategy_used: str
    task_type: str | None = None
    duration_ms: int | None = None
    error_message: str | None = None
    feedback: str | None = None


class AdviceRequest(_Body):
    namespace: str | None = Field(None, max_length=128)
    task: str
    agent: str
    user_id: str | None = None
    top_k: int = Field(5, ge=1, le=100)


class AgentEntryRequest(_Body):
    namespace: str | None = Field(None, max_length=128)
    agent_id: str
    memory_type: str = "state"
    contents: dict[str, Any]
    step: StrictInt
    priority: Number = 1.0


class AgentSimilarRequest(_Body):
    namespace: str | None = Field(None, max_length=128)
    state: dict[str, Any]
    k: int = Field(5, ge=1, le=100)
    memory_type: str | None = None
