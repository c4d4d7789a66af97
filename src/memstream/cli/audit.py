"""``memstream audit`` and ``memstream restore``: what the comparison of new memories with
older ones found (changed facts, restatements, junk), and undoing one of its decisions."""

from __future__ import annotations

import click

from ..engine.progress import pending_embeddings
from ._base import _emit, _short, _State, _table, cli
from ._progress import Progress


@cli.command()
@click.option("--user", "user_id", help="Only the findings about this user's memories.")
@click.option("--agent", "agent_id", help="Only the findings about this agent's memories.")
@click.option("--kind", "kinds", multiple=True,
              type=click.Choice(["superseded", "duplicate", "junk"]),
              help="Only findings of this kind (repeatable).")
@click.option("--limit", default=100, show_default=True, help="At most this many findings.")
@click.pass_obj
def audit(st: _State, user_id: str | None, agent_id: str | None, kinds: tuple[str, ...],
          limit: int) -> None:
    """List changed facts (superseded, with the successor), restatements (duplicate, with the
    original) and junk, most confident first; `memstream restore ID` undoes one. A tentative
    change links nothing (it puts the successor first in reads about now). Memories not yet
    embedded and compared are first waited for, with a progress line: an audit tells what is
    known of every memory stored."""
    with st.memory() as mem:
        if pending_embeddings(mem):
            with Progress("audit", st.as_json) as progress:
                progress.wait_embedded(mem)
                progress.summary("compared the memories not yet compared")
        found = mem.audit(user_id=user_id, agent_id=agent_id, kinds=kinds or None, limit=limit)
    if st.as_json:
        _emit([f.to_dict() for f in found])
    else:
        click.echo(_table(["kind", "id", "text", "related", "confidence", "applied"], [
            [f.kind, f.record.id, _short(f.record.text, 40),
             _short(f.related.text, 40) if f.related else "", f"{f.confidence:.2f}",
             "yes" if f.applied else "tentative" if f.tentative else "undone"]
            for f in found]))


@cli.command()
@click.argument("memory_id")
@click.option("--superseded-by", "superseded_by", metavar="ID",
              help="The memory that replaces it: searches put that one in its place.")
@click.pass_obj
def invalidate(st: _State, memory_id: str, superseded_by: str | None) -> None:
    """Mark a memory as no longer true (kept in its history and in as-of reads); with
    --superseded-by, name what replaces it (confirms a tentative change `memstream audit`
    lists). `memstream restore ID` undoes it."""
    with st.memory() as mem:
        rec = mem.invalidate(memory_id, superseded_by=superseded_by)
    if st.as_json:
        _emit(rec.to_dict())
    else:
        click.echo(f"invalidated {rec.id}"
                   + (f", superseded by {rec.superseded_by}" if rec.superseded_by else "")
                   + f": {_short(rec.text)}")


@cli.command()
@click.argument("memory_id")
@click.pass_obj
def restore(st: _State, memory_id: str) -> None:
    """Undo what was decided about a memory: valid again when it was superseded or
    invalidated, no longer ranked as junk or a duplicate (kept in its history)."""
    with st.memory() as mem:
        rec = mem.restore(memory_id)
    if st.as_json:
        _emit(rec.to_dict())
    else:
        click.echo(f"restored {rec.id}: {_short(rec.text)}")
