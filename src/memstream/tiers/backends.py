"""Where the short-term and intermediate tiers live: Redis (shared by every process that uses
the same server and prefix) or this process. Both keep whole entries (JSON-able dicts) with a
time-to-live and, per agent, an index ordered by step."""

from __future__ import annotations

import binascii
import bisect
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from ..core import jsonio as _json
from ..errors import BackendUnavailable, MissingDependency
from .features import DIM

__all__ = ["InProcessTier", "RedisTier", "TierBackend"]


class TierBackend(Protocol):
    name: str

    def put(self, entries: Sequence[dict[str, Any]]) -> None:
        """Store or replace entries (each has memory_id, agent_id, step_number)."""

    def get(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The live entries among ``ids``."""

    def index(self, agent_id: str) -> list[tuple[int, str]]:
        """(step, id) of the agent's live entries, ordered by step then id."""

    def remove(self, agent_id: str, ids: Iterable[str]) -> None: ...

    def spans(self, agent_ids: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        """(entries, oldest step, newest step) of each agent with entries (index rows of
        expired entries may still count)."""

    def vectors(self, agent_id: str) -> tuple[list[str], bytes]:
        """The ids of the agent's live entries that have a vector at this tier's resolution,
        and those vectors (float16, one after the other, in the same order)."""

    def agents(self) -> list[str]: ...

    def clear(self, agent_id: str | None = None) -> None: ...

    def memory_bytes(self) -> int | None:
        """What the backend uses, when it can tell."""


def _vec_of(name: str, entry: dict[str, Any]) -> bytes:
    """The vector a tier searches, as float16 bytes (empty: none): the full one in STM, the
    compressed one in IM. Entries carry it in base64 (``vectors.floats`` reads that)."""
    value = entry.get("im_vec" if name == "im" else "vec")
    return binascii.a2b_base64(value) if isinstance(value, str) else b""


class InProcessTier:
    """A tier in this process's memory."""

    def __init__(self, name: str, ttl: float | None) -> None:
        self.name, self.ttl = name, ttl
        self._entries: dict[str, tuple[float, dict[str, Any]]] = {}
        self._by_agent: dict[str, list[tuple[int, str]]] = {}
        self._vecs: dict[str, dict[str, bytes]] = {}
        self._lock = threading.RLock()

    def _alive(self, until: float) -> bool:
        return until == 0 or until > time.monotonic()

    def put(self, entries: Sequence[dict[str, Any]]) -> None:
        until = time.monotonic() + self.ttl if self.ttl else 0.0
        with self._lock:
            for e in entries:
                rid, agent = e["memory_id"], e["agent_id"]
                if rid not in self._entries:
                    bisect.insort(self._by_agent.setdefault(agent, []),
                                  (int(e["step_number"]), rid))
                self._entries[rid] = (until, e)
                vec = _vec_of(self.name, e)
                if vec:
                    self._vecs.setdefault(agent, {})[rid] = vec

    def get(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        with self._lock:
            found = {i: self._entries.get(i) for i in ids}
        return {i: v[1] for i, v in found.items() if v is not None and self._alive(v[0])}

    def index(self, agent_id: str) -> list[tuple[int, str]]:
        with self._lock:
            rows = list(self._by_agent.get(agent_id, []))
            dead = [rid for _, rid in rows if not self._alive(self._entries[rid][0])]
        if dead:
            self.remove(agent_id, dead)
            gone = set(dead)
            rows = [r for r in rows if r[1] not in gone]
        return rows

    def spans(self, agent_ids: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        with self._lock:
            rows = {a: self._by_agent.get(a) for a in agent_ids}
            return {a: (len(r), r[0][0], r[-1][0]) for a, r in rows.items() if r}

    def remove(self, agent_id: str, ids: Iterable[str]) -> None:
        gone = set(ids)
        with self._lock:
            vecs = self._vecs.get(agent_id, {})
            for rid in gone:
                self._entries.pop(rid, None)
                vecs.pop(rid, None)
            if agent_id in self._by_agent:
                self._by_agent[agent_id] = [r for r in self._by_agent[agent_id]
                                            if r[1] not in gone]

    def vectors(self, agent_id: str) -> tuple[list[str], bytes]:
        with self._lock:
            pairs = [(rid, vec) for rid, vec in self._vecs.get(agent_id, {}).items()
                     if self._alive(self._entries[rid][0])]
        return [rid for rid, _ in pairs], b"".join(vec for _, vec in pairs)

    def agents(self) -> list[str]:
        with self._lock:
            return sorted(a for a, rows in self._by_agent.items() if rows)

    def clear(self, agent_id: str | None = None) -> None:
        with self._lock:
            if agent_id is None:
                self._entries.clear()
                self._by_agent.clear()
                self._vecs.clear()
            else:
                self.remove(agent_id, [rid for _, rid in self._by_agent.get(agent_id, [])])

    def memory_bytes(self) -> int | None:
        return None


# ARGV: key prefix, ttl (0: none), then four lists joined by newlines (which none of their
# items holds: ids and agent ids have no control characters, JSON escapes them): ids, agents,
# steps, JSON bodies; then the entries' vectors (float16 bytes) one after the other and their
# lengths, joined by newlines (0: none). Eight arguments for a whole batch, so the client packs
# almost nothing; the splitting runs in Redis. Keys are built from the prefix, so this needs a
# single Redis, not a cluster. Per agent, ':a:' is the index (score: step) and ':w:' the
# vectors: a hash by id of when the entry expires (a little-endian double, Redis server time;
# 0: never) followed by the vector's float16 bytes.
_PUT_LUA = """
local p, ttl = ARGV[1], tonumber(ARGV[2])
local function split(s)
  local t, start = {}, 1
  while true do
    local stop = string.find(s, '\\n', start, true)
    if not stop then t[#t + 1] = string.sub(s, start); return t end
    t[#t + 1] = string.sub(s, start, stop - 1)
    start = stop + 1
  end
end
local ids, owners, steps, bodies, blob, lens =
  split(ARGV[3]), split(ARGV[4]), split(ARGV[5]), split(ARGV[6]), ARGV[7], split(ARGV[8])
local agents, at, expires = {}, 1, 0
if ttl > 0 then
  local now = redis.call('TIME')
  expires = tonumber(now[1]) + tonumber(now[2]) / 1e6 + ttl
end
local stamp = struct.pack('<d', expires)
for i = 1, #ids do
  local id, agent = ids[i], owners[i]
  if ttl > 0 then
    redis.call('SET', p .. ':e:' .. id, bodies[i], 'EX', ttl)
  else
    redis.call('SET', p .. ':e:' .. id, bodies[i])
  end
  redis.call('ZADD', p .. ':a:' .. agent, steps[i], id)
  local n = tonumber(lens[i])
  if n > 0 then
    redis.call('HSET', p .. ':w:' .. agent, id, stamp .. string.sub(blob, at, at + n - 1))
    at = at + n
  end
  agents[agent] = true
end
for agent in pairs(agents) do
  redis.call('SADD', p .. ':agents', agent)
  if ttl > 0 then
    redis.call('EXPIRE', p .. ':a:' .. agent, ttl)
    redis.call('EXPIRE', p .. ':w:' .. agent, ttl)
  end
end
return #ids
"""

# a row of the vector hash: when the entry expires, then the vector (DIM float16)
_ROW = np.dtype([("expires", "<f8"), ("vector", f"V{2 * DIM}")])
_STAMPED = _ROW.itemsize


class RedisTier:
    """A tier in Redis: one JSON string per entry (with the TTL) and one sorted set per agent
    (score = step), under ``<prefix>:<tier>:``."""

    def __init__(self, name: str, url: str, ttl: float | None, prefix: str = "memstream"
                 ) -> None:
        try:
            import redis
        except ImportError as exc:
            raise MissingDependency("Redis tiers need: pip install 'memstream[redis]'") from exc
        self.name, self.ttl = name, ttl
        self._r = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
        self._errors = (redis.RedisError, OSError)
        self._k = f"{prefix}:{name}"
        self._put_script = self._r.register_script(_PUT_LUA)

    def close(self) -> None:
        self._r.close()

    def _call(self, fn: Any) -> Any:
        try:
            return fn()
        except self._errors as exc:
            raise BackendUnavailable(f"Redis ({self.name} tier) failed: {exc}") from exc

    def ping(self) -> None:
        self._call(self._r.ping)

    def put(self, entries: Sequence[dict[str, Any]]) -> None:
        """One atomic script call per batch: with a thousand agents writing a step, one round
        trip instead of four commands per entry."""
        self.send(self.encode(entries))

    def encode(self, entries: Sequence[dict[str, Any]]) -> list[str | int | bytes] | None:
        """``put`` in two halves: the arguments of the script call (None: nothing to do)..."""
        if not entries:
            return None
        vecs = [_vec_of(self.name, e) for e in entries]
        return [self._k, int(self.ttl) if self.ttl else 0,
                "\n".join([e["memory_id"] for e in entries]),
                "\n".join([e["agent_id"] for e in entries]),
                "\n".join([str(int(e["step_number"])) for e in entries]),
                "\n".join([_json.dumps(e) for e in entries]),
                b"".join(vecs), "\n".join([str(len(vec)) for vec in vecs])]

    def send(self, args: list[str | int | bytes] | None) -> None:
        """... and the call, which holds Python's interpreter lock only to write and read the
        socket (so another thread can run it while this one works)."""
        if args is not None:
            self._call(lambda: self._put_script(args=args))

    def get(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        raw = self._call(lambda: self._r.mget([f"{self._k}:e:{i}" for i in ids]))
        return {i: _json.loads(v) for i, v in zip(ids, raw, strict=True) if v is not None}

    def index(self, agent_id: str) -> list[tuple[int, str]]:
        rows = self._call(lambda: self._r.zrange(f"{self._k}:a:{agent_id}", 0, -1,
                                                 withscores=True))
        pairs = [(int(score), member.decode()) for member, score in rows]
        if self.ttl and pairs:  # entries expire on their own; drop their index rows
            alive = self._call(lambda: self._r.mget([f"{self._k}:e:{i}" for _, i in pairs]))
            dead = [i for (_, i), v in zip(pairs, alive, strict=True) if v is None]
            if dead:
                self.remove(agent_id, dead)
                gone = set(dead)
                pairs = [p for p in pairs if p[1] not in gone]
        pairs.sort()
        return pairs

    def spans(self, agent_ids: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        def run() -> list[Any]:
            pipe = self._r.pipeline(transaction=False)
            for agent in agent_ids:
                key = f"{self._k}:a:{agent}"
                pipe.zcard(key)
                pipe.zrange(key, 0, 0, withscores=True)
                pipe.zrange(key, -1, -1, withscores=True)
            return list(pipe.execute())

        raw = self._call(run)
        out = {}
        for n, agent in enumerate(agent_ids):
            count, first, last = raw[3 * n: 3 * n + 3]
            if count and first and last:
                out[agent] = (int(count), int(first[0][1]), int(last[0][1]))
        return out

    def remove(self, agent_id: str, ids: Iterable[str]) -> None:
        ids = list(ids)
        if not ids:
            return

        def run() -> None:
            pipe = self._r.pipeline(transaction=False)
            pipe.delete(*[f"{self._k}:e:{i}" for i in ids])
            pipe.zrem(f"{self._k}:a:{agent_id}", *ids)
            pipe.hdel(f"{self._k}:w:{agent_id}", *ids)
            pipe.execute()
        self._call(run)

    def vectors(self, agent_id: str) -> tuple[list[str], bytes]:
        def run() -> list[Any]:
            pipe = self._r.pipeline(transaction=False)
            pipe.hgetall(f"{self._k}:w:{agent_id}")
            pipe.time()
            return list(pipe.execute())

        found, (seconds, micros) = self._call(run)
        rows = [(k, v) for k, v in found.items() if len(v) == _STAMPED]
        if not rows:
            return [], b""
        table = np.frombuffer(b"".join(v for _, v in rows), dtype=_ROW)
        live = np.flatnonzero((table["expires"] == 0) | (table["expires"] > seconds + micros / 1e6))
        return [rows[j][0].decode() for j in live], table["vector"][live].tobytes()

    def agents(self) -> list[str]:
        return sorted(a.decode() for a in self._call(lambda: self._r.smembers(
            f"{self._k}:agents")))

    def clear(self, agent_id: str | None = None) -> None:
        agents = [agent_id] if agent_id is not None else self.agents()
        for agent in agents:
            self.remove(agent, [i for _, i in self.index(agent)])
            self._call(lambda a=agent: self._r.srem(f"{self._k}:agents", a))

    def memory_bytes(self) -> int | None:
        return int(self._call(lambda: self._r.info("memory"))["used_memory"])
