"""Commands for what agents read and write at run time, to inspect or seed it from a shell:
advice for a task, and the agents' step-indexed states (the tiers)."""

from __future__ import annotations

from typing import Any

import click

from ..tiers import MEMORY_TYPES
from ._base import _emit, _json_arg, _short, _State, _table, cli

_KINDS = click.Choice(MEMORY_TYPES)


@cli.command()
@click.option("--task", required=True, help="The task about to start.")
@click.option("--agent", required=True, help="The agent asking.")
@click.option("--user", "user_id", help="Also this user's preferences.")
@click.option("-k", "k", default=5, show_default=True, help="At most this many of each kind.")
@click.pass_obj
def advice(st: _State, task: str, agent: str, user_id: str | None, k: int) -> None:
    """Advice for a task from what was learned: heuristics, anti-patterns, knowledge and
    preferences, as the prompt section an agent gets (every item with --json)."""
    from ..learning import Learner

    with st.memory() as mem:
        ctx = Learner(mem).retrieve(task, agent, user_id=user_id, k=k)
        if st.as_json:
            _emit({name: [{"id": i.id, **i.payload()} for i in getattr(ctx, name)]
                   for name in ("heuristics", "anti_patterns", "outcomes", "preferences",
                                "knowledge")} | {"prompt": ctx.to_prompt()})
        else:
            click.echo(ctx.to_prompt() or "(nothing learned for this task yet)")


@cli.group()
def agents() -> None:
    """Agents' states, actions and interactions by step (docs/tiers.md)."""


def _tiers(st: _State, mem: Any) -> Any:
    from ..tiers import TieredMemory

    return TieredMemory.of(mem, st.namespace)


@agents.command("store")
@click.argument("agent_id")
@click.option("--kind", type=_KINDS, default="state", show_default=True,
              help="What the contents are.")
@click.option("--contents", required=True, help="The state, action or interaction (JSON).")
@click.option("--step", type=int, required=True, help="The simulation step.")
@click.option("--priority", type=float, default=1.0, show_default=True,
              help="0 to 1: low priority leaves short-term memory first.")
@click.pass_obj
def agents_store(st: _State, agent_id: str, kind: str, contents: str, step: int,
                 priority: float) -> None:
    """Store one entry for an agent at a step (durable when this returns)."""
    with st.memory(create=True) as mem:
        entry = _tiers(st, mem).store(agent_id, kind, _json_arg(contents, "contents"), step,
                                      priority)
    _emit(entry) if st.as_json else click.echo(entry["memory_id"])


@agents.command("similar")
@click.argument("agent_id")
@click.option("--state", required=True, help="The state to compare with (JSON).")
@click.option("-k", "k", default=5, show_default=True, help="How many entries to return.")
@click.option("--kind", type=_KINDS, help="Only this kind.")
@click.pass_obj
def agents_similar(st: _State, agent_id: str, state: str, k: int, kind: str | None) -> None:
    """The agent's entries nearest to a state, with their similarity (1.0: identical)."""
    with st.memory() as mem:
        found = _tiers(st, mem).similar(agent_id, _json_arg(state, "state"), k=k, kind=kind)
    if st.as_json:
        _emit([dict(entry, similarity=score) for entry, score in found])
        return
    click.echo(_table(["similarity", "step", "kind", "contents"], [
        [f"{score:.3f}", e["step_number"], e["metadata"]["memory_type"],
         _short(str(e["contents"]), 60)] for e, score in found]))
