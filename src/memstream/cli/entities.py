"""Commands on the entity graph: entities, entity (docs/entities.md)."""

from __future__ import annotations

import click

from ._base import _emit, _fmt_time, _short, _State, _table, cli


@cli.command()
@click.argument("query", required=False)
@click.option("--user", "user_id", help="Only this user's memories.")
@click.option("--agent", "agent_id", help="Only this agent's memories.")
@click.option("--run", "run_id", help="Only this run's or session's memories.")
@click.option("--limit", default=50, show_default=True, help="At most this many entities.")
@click.pass_obj
def entities(st: _State, query: str | None, user_id: str | None, agent_id: str | None,
             run_id: str | None, limit: int) -> None:
    """List the named things the memories mention (QUERY: part of a name), most mentioned
    first."""
    with st.memory() as mem:
        found = mem.entities(query, user_id=user_id, agent_id=agent_id, run_id=run_id,
                             limit=limit)
    if st.as_json:
        _emit([e.to_dict() for e in found])
    else:
        click.echo(_table(["name", "kind", "mentions", "first", "last", "user"],
                          [[e.name, e.kind, str(e.mentions), _fmt_time(e.first_seen),
                            _fmt_time(e.last_seen), e.owner or ""] for e in found]))


@cli.command()
@click.argument("name")
@click.option("--user", "user_id", help="The user whose memories mention it.")
@click.option("--limit", default=20, show_default=True,
              help="At most this many memories, and this many related entities.")
@click.option("--as-of", "as_of", help="The relations valid at this time (ISO 8601).")
@click.pass_obj
def entity(st: _State, name: str, user_id: str | None, limit: int, as_of: str | None) -> None:
    """Show one entity: its other names, the memories that mention it (newest first) and the
    entities it shares memories with."""
    with st.memory() as mem:
        p = mem.entity(name, user_id=user_id, limit=limit, as_of=as_of)
    if st.as_json:
        _emit(p.to_dict())
        return
    e = p.entity
    click.echo(f"{e.name} ({e.kind}): {e.mentions} memories, {_fmt_time(e.first_seen)} to "
               f"{_fmt_time(e.last_seen)}" + (f"; also {', '.join(p.aliases)}" if p.aliases
                                              else ""))
    click.echo(_table(["id", "created", "text"], [[r.id, _fmt_time(r.created_at), _short(r.text)]
                                                  for r in p.records]))
    if p.related:
        click.echo("related: " + ", ".join(f"{r.name} ({len(ids)})" for r, ids in p.related))
    for rel in p.relations:
        click.echo(f"{rel.subject} {rel.predicate} {rel.object} (since "
                   f"{_fmt_time(rel.valid_from)})")
