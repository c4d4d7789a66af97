"""LangGraph's checkpointer (``BaseCheckpointSaver``) in the memory's own database.

A graph run's state is saved after every step: the checkpoint (without its channel values), one
row per channel value and version, and the pending writes of each task, in three tables beside
the memory's records (``_tables.py``). A checkpoint and its values are written in one
transaction, with SQLite's ``synchronous=FULL``, so a process killed between two steps resumes
from the last step it finished. Every capability of LangGraph's conformance suite is
implemented: put, put_writes, get_tuple, list, delete_thread, delete_for_runs, copy_thread and
prune.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ...engine.memory import Memory
from ...engine.migrate import refuse_unfinished_at
from ...engine.records import Tables, records_of
from ...engine.records import checkpoint_tables as open_tables
from ...errors import InvalidInput

__all__ = ["MemstreamSaver"]

_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_id, type, checkpoint, " \
           "metadata_type, metadata"


class MemstreamSaver(BaseCheckpointSaver[str]):
    """Checkpoints of LangGraph runs, kept where the memory keeps its records.

    ``target`` is a ``Memory`` (its SQLite file or PostgreSQL database), or a store URL or path
    of the same forms ``Memory`` takes. A memory in ``":memory:"`` gets checkpoints in memory
    too, which do not outlive the process.
    """

    def __init__(self, target: Memory | str | Path = ":memory:", *,
                 serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        url = records_of(target).url if isinstance(target, Memory) else str(target)
        refuse_unfinished_at(url)  # an unfinished migrate's target may hold part of a thread
        self._tables: Tables = open_tables(url)

    def close(self) -> None:
        self._tables.close()

    def __enter__(self) -> MemstreamSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reads ----------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        conf = _configurable(config)
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        if checkpoint_id := get_checkpoint_id(config):
            rows = self._tables.query(
                f"SELECT {_COLUMNS} FROM lg_checkpoints WHERE thread_id = ? "
                "AND checkpoint_ns = ? AND checkpoint_id = ?", (thread_id, ns, checkpoint_id))
        else:
            rows = self._tables.query(
                f"SELECT {_COLUMNS} FROM lg_checkpoints WHERE thread_id = ? "
                "AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1", (thread_id, ns))
        return self._tuple(rows[0]) if rows else None

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None
             ) -> Iterator[CheckpointTuple]:
        where, params = [], []
        if config is not None:
            conf = _configurable(config)
            where.append("thread_id = ?")
            params.append(conf["thread_id"])
            if conf.get("checkpoint_ns") is not None:
                where.append("checkpoint_ns = ?")
                params.append(conf["checkpoint_ns"])
            if checkpoint_id := get_checkpoint_id(config):
                where.append("checkpoint_id = ?")
                params.append(checkpoint_id)
        if before is not None and (before_id := get_checkpoint_id(before)):
            where.append("checkpoint_id < ?")
            params.append(before_id)
        if filter and set(filter) == {"run_id"}:
            where.append("run_id = ?")
            params.append(str(filter["run_id"]))
        sql = f"SELECT {_COLUMNS} FROM lg_checkpoints" \
              + (f" WHERE {' AND '.join(where)}" if where else "") \
              + " ORDER BY thread_id, checkpoint_ns, checkpoint_id DESC"
        if not filter and limit is not None:
            sql += f" LIMIT {max(int(limit), 0)}"
        left = limit
        for row in self._tables.query(sql, params):
            if left is not None and left <= 0:
                return
            metadata = self.serde.loads_typed((row[6], row[7]))
            if filter and not all(metadata.get(k) == v for k, v in filter.items()):
                continue
            if left is not None:
                left -= 1
            yield self._tuple(row, metadata)

    def _tuple(self, row: Sequence[Any], metadata: Any = None) -> CheckpointTuple:
        thread_id, ns, checkpoint_id, parent_id, kind, blob, meta_kind, meta = row
        checkpoint: Checkpoint = self.serde.loads_typed((kind, bytes(blob)))
        values = {}
        versions = list((checkpoint.get("channel_versions") or {}).items())
        for start in range(0, len(versions), 200):
            part = versions[start:start + 200]
            found = self._tables.query(
                "SELECT channel, type, blob FROM lg_blobs WHERE thread_id = ? AND "
                "checkpoint_ns = ? AND (" + " OR ".join(["(channel = ? AND version = ?)"]
                                                        * len(part)) + ")",
                (thread_id, ns, *(x for c, v in part for x in (c, str(v)))))
            values.update({channel: self.serde.loads_typed((vkind, bytes(vblob or b"")))
                           for channel, vkind, vblob in found if vkind != "empty"})
        writes = self._tables.query(
            "SELECT task_id, channel, type, blob, task_path, idx FROM lg_writes WHERE "
            "thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
            (thread_id, ns, checkpoint_id))
        writes.sort(key=lambda w: (w[4], w[0], w[5]))  # writes_sort_key: path, task, index
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                                     "checkpoint_id": checkpoint_id}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=metadata if metadata is not None
            else self.serde.loads_typed((meta_kind, bytes(meta))),
            parent_config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                                            "checkpoint_id": parent_id}} if parent_id else None,
            pending_writes=[(w[0], w[1], self.serde.loads_typed((w[2], bytes(w[3] or b""))))
                            for w in writes])

    # --- writes ---------------------------------------------------------------------------------

    def put(self, config: RunnableConfig, checkpoint: Checkpoint,
            metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        conf = _configurable(config)
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        stored = dict(checkpoint)
        values: dict[str, Any] = dict(stored.pop("channel_values", None) or {})  # type: ignore[call-overload]
        kind, blob = self.serde.dumps_typed(stored)
        meta = get_checkpoint_metadata(config, metadata)
        meta_kind, meta_blob = self.serde.dumps_typed(meta)
        blobs = [(thread_id, ns, channel, str(version),
                  *(self.serde.dumps_typed(values[channel]) if channel in values
                    else ("empty", None)))
                 for channel, version in new_versions.items()]
        with self._tables.transaction() as cur:
            if blobs:
                cur.executemany(
                    "INSERT INTO lg_blobs (thread_id, checkpoint_ns, channel, version, type, "
                    "blob) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", blobs)
            cur.execute(
                "INSERT INTO lg_checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
                "parent_id, run_id, type, checkpoint, metadata_type, metadata) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, checkpoint_ns, "
                "checkpoint_id) DO UPDATE SET parent_id = excluded.parent_id, run_id = "
                "excluded.run_id, type = excluded.type, checkpoint = excluded.checkpoint, "
                "metadata_type = excluded.metadata_type, metadata = excluded.metadata",
                (thread_id, ns, checkpoint["id"], conf.get("checkpoint_id"),
                 None if meta.get("run_id") is None else str(meta.get("run_id")),
                 kind, blob, meta_kind, meta_blob))
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                                 "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:
        conf = _configurable(config)
        key = (conf["thread_id"], conf.get("checkpoint_ns", ""), conf["checkpoint_id"])
        rows = [(*key, task_id, WRITES_IDX_MAP.get(channel, idx), channel,
                 *self.serde.dumps_typed(value), task_path)
                for idx, (channel, value) in enumerate(writes)]
        # a task's special writes (errors, interrupts) replace; its regular ones are kept once
        insert = ("INSERT INTO lg_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, "
                  "channel, type, blob, task_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT "
                  "(thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO ")
        special = [r for r in rows if r[4] < 0]
        regular = [r for r in rows if r[4] >= 0]
        if rows:
            with self._tables.transaction() as cur:
                if special:
                    cur.executemany(insert + "UPDATE SET channel = excluded.channel, type = "
                                    "excluded.type, blob = excluded.blob, task_path = "
                                    "excluded.task_path", special)
                if regular:
                    cur.executemany(insert + "NOTHING", regular)

    def delete_thread(self, thread_id: str) -> None:
        """Every checkpoint, channel value and pending write of a thread, gone from the files
        too: this is how a thread's state is erased (``memstream erase --user`` does not reach
        checkpoints, which belong to threads, not users)."""
        with self._tables.transaction() as cur:
            for table in ("lg_checkpoints", "lg_blobs", "lg_writes"):
                cur.execute(f"DELETE FROM {table} WHERE thread_id = ?", (str(thread_id),))
        self._tables.scrub()

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        runs = [str(r) for r in run_ids]
        if not runs:
            return
        marks = ", ".join("?" * len(runs))
        with self._tables.transaction() as cur:
            cur.execute(
                "DELETE FROM lg_writes WHERE EXISTS (SELECT 1 FROM lg_checkpoints c WHERE "
                "c.thread_id = lg_writes.thread_id AND c.checkpoint_ns = lg_writes.checkpoint_ns"
                " AND c.checkpoint_id = lg_writes.checkpoint_id AND c.run_id IN "
                f"({marks}))", runs)
            cur.execute(f"DELETE FROM lg_checkpoints WHERE run_id IN ({marks})", runs)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source, target = str(source_thread_id), str(target_thread_id)
        with self._tables.transaction() as cur:
            cur.execute(
                "INSERT INTO lg_checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_id,"
                " run_id, type, checkpoint, metadata_type, metadata) SELECT ?, checkpoint_ns, "
                "checkpoint_id, parent_id, run_id, type, checkpoint, metadata_type, metadata "
                "FROM lg_checkpoints WHERE thread_id = ? ON CONFLICT DO NOTHING",
                (target, source))
            cur.execute(
                "INSERT INTO lg_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                "SELECT ?, checkpoint_ns, channel, version, type, blob FROM lg_blobs WHERE "
                "thread_id = ? ON CONFLICT DO NOTHING", (target, source))
            cur.execute(
                "INSERT INTO lg_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, "
                "channel, type, blob, task_path) SELECT ?, checkpoint_ns, checkpoint_id, "
                "task_id, idx, channel, type, blob, task_path FROM lg_writes WHERE thread_id = "
                "? ON CONFLICT DO NOTHING", (target, source))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest`` keeps each namespace's latest checkpoint, its writes and the
        channel values it refers to; ``delete`` removes the threads."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInput(f"unknown prune strategy {strategy!r}; use 'keep_latest' or "
                               "'delete'")
        for thread_id in (str(t) for t in thread_ids):
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            self._keep_latest(thread_id)

    def _keep_latest(self, thread_id: str) -> None:
        with self._tables.transaction() as cur:
            cur.execute("SELECT checkpoint_ns, MAX(checkpoint_id) FROM lg_checkpoints WHERE "
                        "thread_id = ? GROUP BY checkpoint_ns", (thread_id,))
            latest = cur.fetchall()
            for ns, checkpoint_id in latest:
                cur.execute("DELETE FROM lg_checkpoints WHERE thread_id = ? AND checkpoint_ns ="
                            " ? AND checkpoint_id <> ?", (thread_id, ns, checkpoint_id))
                cur.execute("DELETE FROM lg_writes WHERE thread_id = ? AND checkpoint_ns = ? "
                            "AND checkpoint_id <> ?", (thread_id, ns, checkpoint_id))
        for ns, checkpoint_id in latest:
            kept = self.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                                                    "checkpoint_id": checkpoint_id}})
            versions = (kept.checkpoint.get("channel_versions") or {}) if kept else {}
            with self._tables.transaction() as cur:
                cur.execute("SELECT channel, version FROM lg_blobs WHERE thread_id = ? AND "
                            "checkpoint_ns = ?", (thread_id, ns))
                stale = [(c, v) for c, v in cur.fetchall() if str(versions.get(c)) != v]
                cur.executemany("DELETE FROM lg_blobs WHERE thread_id = ? AND checkpoint_ns = ?"
                                " AND channel = ? AND version = ?",
                                [(thread_id, ns, c, v) for c, v in stale])

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        """Versions sort as text: a zero-padded counter and a random tie-breaker."""
        number = 0 if current is None else int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # --- async twins: the same work in a worker thread ------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *,
                    filter: dict[str, Any] | None = None, before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in found:
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions
                   ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


def _configurable(config: RunnableConfig | None) -> dict[str, Any]:
    conf = (config or {}).get("configurable")
    if not isinstance(conf, dict) or not conf.get("thread_id"):
        raise InvalidInput("a checkpoint config needs {'configurable': {'thread_id': ...}}; "
                           "pass the thread_id you run the graph with")
    return conf
