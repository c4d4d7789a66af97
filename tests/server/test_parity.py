"""Every operation of the catalog in Python and on the command line, with every one of its
parameters (REST, MCP and ``Client`` are held to the catalog in ``test_catalog.py``): one name
per concept, and where Python or the CLI names it otherwise, the table below says so. A
parameter added to an operation and forgotten in one interface fails here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
import pytest

from memstream import Memory
from memstream.cli import cli
from memstream.engine import transfer
from memstream.engine.subscribers import ChangeEvents
from memstream.engine.webhooks import Webhooks
from memstream.episodes import EpisodeMemory
from memstream.learning import Learner
from memstream.server.catalog import OPERATIONS, Operation
from memstream.tiers import TieredMemory

from ..signatures import parameter_names

#: the Python call of each operation; a capability's instance is made for a scope (its
#: ``of``: namespace, and the agent of the episode operations), so those fields are its
PYTHON: dict[str, tuple[Callable[..., Any], set[str]]] = {
    "add_memory": (Memory.add, set()),
    "search_memories": (Memory.search, set()),
    "list_memories": (Memory.get_all, set()),
    "get_memory": (Memory.get, set()),
    "update_memory": (Memory.update, set()),
    "delete_memory": (Memory.delete, set()),
    "memory_history": (Memory.history, set()),
    "audit_memories": (Memory.audit, set()),
    "restore_memory": (Memory.restore, set()),
    "invalidate_memory": (Memory.invalidate, set()),
    "memory_context": (Memory.context, set()),
    "list_entities": (Memory.entities, set()),
    "get_entity": (Memory.entity, set()),
    "record_episode": (EpisodeMemory.record, {"namespace", "agent_id"}),
    "episode_context": (EpisodeMemory.context, {"namespace", "agent_id"}),
    "learn_outcome": (Learner.learn, {"namespace"}),
    "task_advice": (Learner.retrieve, {"namespace"}),
    "store_agent_memory": (TieredMemory.store, {"namespace"}),
    "similar_agent_states": (TieredMemory.similar, {"namespace"}),
    "list_events": (ChangeEvents.events, set()),
    "register_webhook": (Webhooks.add, set()),
    "list_webhooks": (Webhooks.list, set()),
    "delete_webhook": (Webhooks.remove, set()),
    "webhook_dead_letters": (Webhooks.dead_letters, set()),
    "redeliver_webhook": (Webhooks.redeliver, set()),
    "stream_events": (ChangeEvents.events, set()),
    "add_memories": (Memory.add_many, set()),
    "add_messages": (Memory.add, set()),
    "delete_memories": (Memory.delete_all, set()),
    "stats": (Memory.stats, set()),
    "export": (transfer.export_jsonl, set()),
    "import": (transfer.import_jsonl, {"namespace"}),
    "reflect": (Memory.reflect, set()),
    "consolidate": (Memory.consolidate, set()),
    "episode_summary": (EpisodeMemory.summary, {"namespace", "agent_id"}),
    "agent_range": (TieredMemory.step_range, {"namespace"}),
}
#: operations with no Python call of their own, and why
NOT_IN_PYTHON = {"namespaces": "the inspector's views read the memory through its public verbs",
                 "inspect_records": "the inspector's view of get_all, with each record's tier",
                 "inspect_record": "the inspector's view of get and history",
                 "inspect_overview": "the inspector's plots"}
#: what Python names otherwise (REST name -> Python name), by operation: nothing, one name per
#: concept (an old name is an alias: test_old_names_are_aliases)
PYTHON_NAMES: dict[str, dict[str, str]] = {
    "add_messages": {"messages": "text"},  # a conversation is add's text
    # the lines of a file (any iterable of str), and what to do with an id already stored
    "import": {"text": "fp", "skip_existing": "on_conflict"},
}

#: the command of each operation, what it names otherwise, and what it does not take (the
#: namespace is the global --namespace of every command)
CLI: dict[str, tuple[str, dict[str, str], set[str]]] = {
    "add_memory": ("add", {}, set()),
    "search_memories": ("search", {}, {"fusion", "step_range"}),
    "list_memories": ("list", {}, {"step_range"}),
    "get_memory": ("get", {}, set()),
    "update_memory": ("update", {}, set()),
    "delete_memory": ("delete", {}, set()),
    "memory_history": ("history", {}, set()),
    "audit_memories": ("audit", {}, set()),
    "restore_memory": ("restore", {}, set()),
    "invalidate_memory": ("invalidate", {}, set()),
    "memory_context": ("context", {}, {"fusion", "step_range", "touch"}),
    "list_entities": ("entities", {}, set()),
    "get_entity": ("entity", {}, set()),
    "record_episode": ("episodes record", {}, set()),
    "episode_context": ("episodes context", {}, set()),
    "task_advice": ("advice", {}, set()),
    "store_agent_memory": ("agents store", {}, set()),
    "similar_agent_states": ("agents similar", {}, set()),
    "learn_outcome": ("learn", {}, set()),
    "list_events": ("events", {}, set()),
    "register_webhook": ("webhooks add", {}, set()),
    "list_webhooks": ("webhooks list", {}, set()),
    "delete_webhook": ("webhooks remove", {}, set()),
    "webhook_dead_letters": ("webhooks dead-letters", {}, set()),
    "redeliver_webhook": ("webhooks redeliver", {}, set()),
    "stats": ("stats", {}, set()),
    "export": ("export", {}, set()),
    "import": ("import", {"text": "path"}, set()),
    "reflect": ("reflect", {}, set()),
    "consolidate": ("consolidate", {}, set()),
    "episode_summary": ("episodes summary", {}, set()),
}
#: operations with no command, and why
NOT_IN_CLI: dict[str, str] = {
    "add_memories": "memstream add --lines stores one memory a line, all or none",
    "add_messages": "a conversation is a program's: the command line adds texts",
    "delete_memories": "memstream erase removes everything of a user, agent or run, and "
                       "memstream delete one memory; a delete by kinds or filters is a program's",
    "agent_range": "an agent's steps are a simulation's, read from Python or REST",
    "stream_events": "memstream events lists them; following them is a program's",
    "namespaces": "the inspector's page", "inspect_records": "the inspector's page",
    "inspect_record": "the inspector's page", "inspect_overview": "the inspector's page"}


def _fields(op: Operation) -> set[str]:
    return set(op.request.model_fields)


def _python_params(fn: Callable[..., Any]) -> set[str]:
    params = parameter_names(fn)
    if fn is Memory.context:  # its other arguments are the search's
        params |= _python_params(Memory.search)
    return params


def _command_params(path: str) -> set[str]:
    """The parameters of a command and of the groups it is in (``episodes --agent A``)."""
    command: click.Command = cli
    taken: set[str] = set()
    for name in path.split():
        assert isinstance(command, click.Group)
        if command is not cli:
            taken |= {p.name for p in command.params if p.name}
        command = command.commands[name]
    return taken | {p.name for p in command.params if p.name}


def test_every_operation_has_a_python_call_and_a_command_or_a_reason():
    names = {op.name for op in OPERATIONS}
    assert set(PYTHON) | set(NOT_IN_PYTHON) == names and not set(PYTHON) & set(NOT_IN_PYTHON)
    assert set(CLI) | set(NOT_IN_CLI) == names and not set(CLI) & set(NOT_IN_CLI)


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.name in PYTHON],
                         ids=lambda op: op.name)
def test_python_takes_every_parameter(op: Operation):
    fn, by_scope = PYTHON[op.name]
    names = PYTHON_NAMES.get(op.name, {})
    wanted = {names.get(f, f) for f in _fields(op) - by_scope}
    missing = wanted - _python_params(fn)
    assert missing == set(), f"{fn.__qualname__} lacks {missing}"


@pytest.mark.parametrize("name", sorted(CLI))
def test_the_command_takes_every_parameter(name: str):
    op = next(o for o in OPERATIONS if o.name == name)
    path, names, left_out = CLI[name]
    taken = _command_params(path)
    wanted = {names.get(f, f) for f in _fields(op) - left_out - {"namespace"}}
    assert wanted - taken == set(), f"memstream {path} lacks {wanted - taken}"


def test_the_parity_check_can_fail():
    """A parameter the Python call lacks is reported (update without provenance)."""
    def update(self: Any, record_id: str, *, text: str | None = None) -> None: ...

    op = next(o for o in OPERATIONS if o.name == "update_memory")
    wanted = {PYTHON_NAMES.get("update_memory", {}).get(f, f) for f in _fields(op)}
    assert "provenance" in wanted - _python_params(update)


def test_old_names_are_aliases():
    """The names an earlier release used still work as keywords (one name per concept: the
    signature shows the new one), and giving both is refused with the one to keep."""
    from memstream import InvalidInput, NotFound

    with Memory(":memory:", embedder="none") as mem:
        rec = mem.add("Ana prefers the window seat")
        assert mem.get(record_id=rec.id) == mem.get(memory_id=rec.id) == mem.get(rec.id)
        mem.update(record_id=rec.id, importance=0.9)
        assert [h.event for h in mem.history(record_id=rec.id)] == ["add", "update"]
        with pytest.raises(InvalidInput, match="pass only 'memory_id'"):
            mem.get(rec.id, record_id=rec.id)
        with pytest.raises(NotFound):
            mem.webhooks.remove(hook_id="wh_none")
        tiers = TieredMemory.of(mem)
        tiers.store("owl", memory_type="action", contents={"x": 1}, step=1)
        assert tiers.step_range("owl", 0, 5, kind="action")[0]["step_number"] == 1
        tiers.store("owl", "state", {"x": 2}, 2)
        assert tiers.similar("owl", query={"x": 2}, k=1)[0][0]["step_number"] == 2
        learner = Learner(mem)
        assert learner.retrieve("t", "a", top_k=2) == learner.retrieve("t", "a", k=2)
        episodes = EpisodeMemory(mem, agent_id="owl")
        episodes.record({"task_id": "t", "score": 0.9, "successes": ["planned first"]})
        assert episodes.context("t", max_tokens=0) == episodes.context("t", budget=0) == ""
        assert "planned first" in episodes.context("t", max_tokens=200)
        mem.delete(record_id=rec.id)
        with pytest.raises(NotFound):
            mem.get(rec.id)
