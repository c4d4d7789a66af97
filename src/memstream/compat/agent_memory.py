"""The agent-memory API, as a drop-in facade over ``memstream.tiers``.

Replace ``from memory.agent_memory.api import AgentMemoryAPI`` (and the config, models, hooks
and exceptions) with imports from ``memstream.compat.agent_memory``. STM and IM live in Redis
as configured by ``RedisSTMConfig`` (or in this process when Redis cannot be reached, with a
warning); LTM is the SQLite file of ``ltm_config`` (``agent_memory.db`` by default) or a given
``memstream.Memory``. Every input is validated before any work; errors are the original
exception classes (all also ``memstream`` errors).
"""

from __future__ import annotations

import functools
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from ..engine.memory import Memory
from ..engine.records import records_of
from ..errors import BackendUnavailable, InvalidInput, MemstreamError
from ..tiers import MEMORY_TYPES, TierConfig, TierDegradedWarning, TieredMemory
from ..tiers.hooks import install_memory_hooks, with_memory

__all__ = ["ActionData", "ActionResult", "AgentMemoryAPI", "AgentState", "BaseAgent",
           "MemoryAPIException", "MemoryConfig", "MemoryConfigException",
           "MemoryMaintenanceException", "MemoryRetrievalException", "MemorySpace",
           "MemoryStoreException", "RedisIMConfig", "RedisSTMConfig", "SQLiteLTMConfig",
           "cacheable", "install_memory_hooks", "with_memory"]


class MemoryAPIException(MemstreamError):
    """Root of the agent-memory API's errors."""


class MemoryStoreException(MemoryAPIException, InvalidInput):
    """A store call was refused (bad agent id, step, priority or data)."""


class MemoryRetrievalException(MemoryAPIException, InvalidInput):
    """A retrieval call was refused (bad range, k, query)."""


class MemoryMaintenanceException(MemoryAPIException):
    """Maintenance failed."""


class MemoryConfigException(MemoryAPIException, InvalidInput):
    """The configuration is invalid."""


@dataclass
class RedisSTMConfig:
    host: str = "localhost"
    port: int = 6379
    db: int = 0
    memory_limit: int = 10000
    ttl: int = 3600
    use_redis: bool = True


@dataclass
class RedisIMConfig:
    host: str = "localhost"
    port: int = 6379
    db: int = 0
    memory_limit: int = 50000
    ttl: int = 86400


@dataclass
class SQLiteLTMConfig:
    db_path: str = "agent_memory.db"


@dataclass
class MemoryConfig:
    cleanup_interval: int = 100
    memory_priority_decay: float = 0.95
    stm_config: RedisSTMConfig | dict[str, Any] = field(default_factory=RedisSTMConfig)
    im_config: RedisIMConfig | dict[str, Any] = field(default_factory=RedisIMConfig)
    ltm_config: SQLiteLTMConfig | dict[str, Any] = field(default_factory=SQLiteLTMConfig)

    def __post_init__(self) -> None:
        try:
            if isinstance(self.stm_config, dict):
                self.stm_config = RedisSTMConfig(**self.stm_config)
            if isinstance(self.im_config, dict):
                self.im_config = RedisIMConfig(**self.im_config)
            if isinstance(self.ltm_config, dict):
                self.ltm_config = SQLiteLTMConfig(**self.ltm_config)
        except TypeError as exc:
            raise MemoryConfigException(f"unknown tier setting: {exc}") from exc
        if self.cleanup_interval < 1 or not 0 < self.memory_priority_decay <= 1:
            raise MemoryConfigException("cleanup_interval must be >= 1 and "
                                        "memory_priority_decay in (0, 1]")


@dataclass
class AgentState:
    agent_id: str
    step_number: int
    health: float = 1.0
    position_x: float = 0.0
    position_y: float = 0.0
    extra_data: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ActionData:
    action_type: str
    params: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ActionResult:
    action_type: str
    params: dict[str, Any] = field(default_factory=dict)
    reward: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


F = TypeVar("F", bound=Callable[..., Any])


def cacheable(ttl: float = 60.0, maxsize: int = 256) -> Callable[[F], F]:
    """An LRU cache whose entries expire after ``ttl`` seconds (arguments must be
    hashable; a call with unhashable ones is not cached)."""
    def decorate(fn: F) -> F:
        cache: OrderedDict[Any, tuple[float, Any]] = OrderedDict()
        lock = threading.Lock()

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            try:
                key = (args, tuple(sorted(kwargs.items())))
                hash(key)
            except TypeError:
                return fn(*args, **kwargs)
            now = time.monotonic()
            with lock:
                hit = cache.get(key)
                if hit is not None and hit[0] > now:
                    cache.move_to_end(key)
                    return hit[1]
            value = fn(*args, **kwargs)
            with lock:
                cache[key] = (now + ttl, value)
                while len(cache) > maxsize:
                    cache.popitem(last=False)
            return value

        wrapped.cache_clear = cache.clear  # type: ignore[attr-defined]
        return wrapped  # type: ignore[return-value]
    return decorate


class BaseAgent:
    """A minimal agent base: ``act`` is recorded when the class is decorated with
    ``install_memory_hooks`` and ``memory`` is set (an AgentMemoryAPI or TieredMemory)."""

    def __init__(self, agent_id: str, memory: Any = None) -> None:
        self.agent_id = agent_id
        self._api = memory
        self.memory = memory.tiered if isinstance(memory, AgentMemoryAPI) else memory
        self.step_number = 0

    def get_state(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items()
                if not k.startswith("_") and k not in ("memory", "agent_id")}

    def act(self, *args: Any, **kwargs: Any) -> Any:
        self.step_number += 1
        return None


def _validate_agent(agent_id: Any) -> str:
    if not isinstance(agent_id, str) or not agent_id.strip():
        raise MemoryStoreException(f"agent_id must be a non-empty string, got {agent_id!r}")
    return agent_id


class MemorySpace:
    """One agent's memory (``get_memory_space``/``get_memory_agent``)."""

    def __init__(self, api: AgentMemoryAPI, agent_id: str) -> None:
        self.api, self.agent_id = api, agent_id

    def retrieve_recent_states(self, count: int = 10, memory_type: str | None = None
                               ) -> list[dict[str, Any]]:
        return self.api.retrieve_recent_states(self.agent_id, count, memory_type)

    def retrieve_similar_states(self, query_state: Mapping[str, Any], k: int = 5,
                                memory_type: str | None = None) -> list[dict[str, Any]]:
        return self.api.retrieve_similar_states(self.agent_id, query_state, k, memory_type)

    def search_by_embedding(self, query_embedding: Sequence[float], k: int = 5,
                            memory_tiers: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return self.api.search_by_embedding(self.agent_id, query_embedding, k, memory_tiers)

    def search_by_content(self, content_query: str | Mapping[str, Any], k: int = 5
                          ) -> list[dict[str, Any]]:
        return self.api.search_by_content(self.agent_id, content_query, k)

    def set_cache_ttl(self, seconds: float) -> None:
        self.api.set_cache_ttl(seconds)

    def clear_cache(self) -> None:
        self.api.clear_cache()


class AgentMemoryAPI:
    """The agent-memory API (see the module docstring)."""

    def __init__(self, config: MemoryConfig | None = None, *,
                 memory: Memory | None = None) -> None:
        self.config = config or MemoryConfig()
        stm, im, ltm = self.config.stm_config, self.config.im_config, self.config.ltm_config
        assert isinstance(stm, RedisSTMConfig) and isinstance(im, RedisIMConfig)
        assert isinstance(ltm, SQLiteLTMConfig)
        self.memory = memory or Memory(ltm.db_path, embedder="none")
        url = f"redis://{stm.host}:{stm.port}/{stm.db}" if stm.use_redis else None
        tier_config = TierConfig(stm_limit=stm.memory_limit, im_limit=im.memory_limit,
                                 stm_ttl=stm.ttl, im_ttl=im.ttl,
                                 cleanup_interval=self.config.cleanup_interval,
                                 priority_decay=self.config.memory_priority_decay)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TierDegradedWarning)
            self.tiered = TieredMemory(self.memory, redis_url=url, config=tier_config)
        if self.tiered.degraded:  # no Redis: keep the tiers in this process instead
            for w in caught:
                warnings.warn(str(w.message) + "; STM and IM stay in this process",
                              TierDegradedWarning, stacklevel=2)
            self.tiered = TieredMemory(self.memory, config=tier_config)
        self._cache_ttl = 60.0
        self._cache: dict[Any, tuple[float, Any]] = {}

    # --- storing -----------------------------------------------------------------------------

    def _store(self, kind: str, agent_id: str, data: Any, step_number: int,
               priority: float) -> str:
        _validate_agent(agent_id)
        if hasattr(data, "as_dict"):
            data = data.as_dict()
        if not isinstance(data, Mapping):
            raise MemoryStoreException(f"{kind} data must be a dict, got {type(data).__name__}")
        if not isinstance(step_number, int) or isinstance(step_number, bool) or step_number < 0:
            raise MemoryStoreException(f"step_number must be an integer >= 0, got "
                                       f"{step_number!r}")
        try:
            entry = self.tiered.store(agent_id, kind, data, step_number, priority)
        except InvalidInput as exc:
            raise MemoryStoreException(str(exc)) from exc
        self._cache.clear()
        return str(entry["memory_id"])

    def store_agent_state(self, agent_id: str, state_data: Mapping[str, Any],
                          step_number: int, priority: float = 1.0) -> str:
        return self._store("state", agent_id, state_data, step_number, priority)

    def store_agent_interaction(self, agent_id: str, interaction_data: Mapping[str, Any],
                                step_number: int, priority: float = 1.0) -> str:
        return self._store("interaction", agent_id, interaction_data, step_number, priority)

    def store_agent_action(self, agent_id: str, action_data: Mapping[str, Any],
                           step_number: int, priority: float = 1.0) -> str:
        return self._store("action", agent_id, action_data, step_number, priority)

    # --- retrieving --------------------------------------------------------------------------

    def _retrieve(self, fn: Callable[[], Any], key: Any = None) -> Any:
        """Run a query; results are cached for ``set_cache_ttl`` seconds (writes clear it)."""
        now = time.monotonic()
        if key is not None and self._cache_ttl > 0:
            hit = self._cache.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]
        try:
            value = fn()
        except InvalidInput as exc:
            raise MemoryRetrievalException(str(exc)) from exc
        if key is not None and self._cache_ttl > 0:
            if len(self._cache) > 1024:
                self._cache.clear()
            self._cache[key] = (now + self._cache_ttl, value)
        return value

    @staticmethod
    def _type(memory_type: str | None) -> str | None:
        if memory_type is not None and memory_type not in MEMORY_TYPES:
            raise MemoryRetrievalException(f"memory_type must be one of {MEMORY_TYPES}")
        return memory_type

    def retrieve_state_by_id(self, agent_id: str, memory_id: str) -> dict[str, Any] | None:
        _validate_agent(agent_id)
        recs = records_of(self.memory).get(self.tiered.namespace, [memory_id])
        if not recs or recs[0].agent_id != agent_id:
            return None
        return self.tiered.merged(agent_id, recs, None)[0]

    def retrieve_recent_states(self, agent_id: str, count: int = 10,
                               memory_type: str | None = None) -> list[dict[str, Any]]:
        _validate_agent(agent_id)
        kind = self._type(memory_type)
        return self._retrieve(lambda: self.tiered.recent(agent_id, count, kind))  # type: ignore[no-any-return]

    def retrieve_similar_states(self, agent_id: str, query_state: Mapping[str, Any], k: int = 5,
                                memory_type: str | None = None) -> list[dict[str, Any]]:
        _validate_agent(agent_id)
        if not isinstance(query_state, Mapping):
            raise MemoryRetrievalException("query_state must be a dict")
        kind = self._type(memory_type)
        hits = self._retrieve(lambda: self.tiered.similar(agent_id, query_state, k, kind))
        return [dict(e, similarity_score=s) for e, s in hits]

    def retrieve_by_time_range(self, agent_id: str, start_step: int, end_step: int,
                               memory_type: str | None = None) -> list[dict[str, Any]]:
        _validate_agent(agent_id)
        kind = self._type(memory_type)
        return self._retrieve(  # type: ignore[no-any-return]
            lambda: self.tiered.step_range(agent_id, start_step, end_step, kind),
            key=("range", agent_id, start_step, end_step, kind))

    def retrieve_by_attributes(self, agent_id: str, attributes: Mapping[str, Any],
                               memory_type: str | None = None) -> list[dict[str, Any]]:
        _validate_agent(agent_id)
        kind = self._type(memory_type)
        return self._retrieve(  # type: ignore[no-any-return]
            lambda: self.tiered.by_attributes(agent_id, attributes, kind))

    def search_by_embedding(self, agent_id: str, query_embedding: Sequence[float], k: int = 5,
                            memory_tiers: Sequence[str] | None = None) -> list[dict[str, Any]]:
        _validate_agent(agent_id)
        hits = self._retrieve(lambda: self.tiered.similar(agent_id, list(query_embedding), k,
                                                          tiers=memory_tiers))
        return [dict(e, similarity_score=s) for e, s in hits]

    def search_by_content(self, agent_id: str, content_query: str | Mapping[str, Any],
                          k: int = 5) -> list[dict[str, Any]]:
        _validate_agent(agent_id)
        if isinstance(content_query, Mapping):
            return self.retrieve_by_attributes(agent_id, content_query)[:k]
        return self._retrieve(  # type: ignore[no-any-return]
            lambda: self.tiered.content_search(agent_id, content_query, k))

    def get_memory_snapshots(self, agent_id: str, steps: Sequence[int]
                             ) -> dict[int, dict[str, Any] | None]:
        out: dict[int, dict[str, Any] | None] = {}
        for step in steps:
            found = self.retrieve_by_time_range(agent_id, step, step, "state")
            out[step] = found[0] if found else None
        return out

    def get_attribute_change_history(self, agent_id: str, attribute_name: str,
                                     start_step: int | None = None,
                                     end_step: int | None = None) -> list[dict[str, Any]]:
        states = self.retrieve_by_time_range(agent_id, start_step or 0,
                                             end_step if end_step is not None else 2**62,
                                             "state")
        changes, last = [], object()
        for s in states:
            value = s["contents"].get(attribute_name)
            if value != last:
                changes.append({"step_number": s["step_number"], "value": value})
                last = value
        return changes

    def get_memory_space(self, agent_id: str) -> MemorySpace:
        return MemorySpace(self, _validate_agent(agent_id))

    get_memory_agent = get_memory_space

    # --- management --------------------------------------------------------------------------

    def force_memory_maintenance(self, agent_id: str | None = None) -> bool:
        try:
            self.tiered.maintain(agent_id)
        except BackendUnavailable as exc:
            raise MemoryMaintenanceException(str(exc)) from exc
        return True

    def clear_agent_memory(self, agent_id: str, memory_tiers: Sequence[str] | None = None
                           ) -> bool:
        self.tiered.clear(_validate_agent(agent_id), memory_tiers)
        return True

    def set_importance_score(self, agent_id: str, memory_id: str,
                             importance_score: float) -> bool:
        _validate_agent(agent_id)
        try:
            self.memory.update(memory_id, importance=importance_score,
                               namespace=self.tiered.namespace)
        except InvalidInput as exc:
            raise MemoryStoreException(str(exc)) from exc
        return True

    def configure_memory_system(self, config: Mapping[str, Any]) -> bool:
        merged = asdict(self.config)
        for key, value in config.items():
            if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
                merged[key].update(value)
            else:
                merged[key] = value
        new = MemoryConfig(**merged)
        stm = new.stm_config
        assert isinstance(stm, RedisSTMConfig)
        self.config = new
        old = self.tiered.config
        self.tiered.config = TierConfig(stm_limit=stm.memory_limit, stm_ttl=stm.ttl,
                                        im_limit=old.im_limit, im_ttl=old.im_ttl,
                                        cleanup_interval=new.cleanup_interval,
                                        priority_decay=new.memory_priority_decay)
        return True

    def get_memory_statistics(self, agent_id: str) -> dict[str, Any]:
        return self.tiered.stats(_validate_agent(agent_id))

    def clear_cache(self) -> None:
        self._cache.clear()

    def set_cache_ttl(self, seconds: float) -> None:
        if seconds < 0:
            raise MemoryConfigException("the cache TTL must be >= 0 seconds")
        self._cache_ttl = float(seconds)
