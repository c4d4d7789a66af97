"""``memstream events`` and ``memstream webhooks``: read the change events of a namespace, and
register, inspect and deliver its webhooks (docs/events.md)."""

from __future__ import annotations

import json
import time

import click

from ..events import EVENT_TYPES, ChangeEvent
from ._base import _emit, _fmt_time, _State, _table, cli

_TYPES = click.Choice(EVENT_TYPES)


def _line(e: ChangeEvent) -> str:
    scope = " ".join(f"{k}={getattr(e, k)}" for k in ("user_id", "agent_id", "run_id")
                     if getattr(e, k) is not None)
    ids = ",".join(e.record_ids[:3]) + (f" (+{len(e.record_ids) - 3})"
                                        if len(e.record_ids) > 3 else "")
    return f"{e.seq:>8}  {_fmt_time(e.at)}  {e.type:<17} {e.kind or '-':<11} {ids}  {scope}"


@cli.command("events")
@click.option("--after", type=click.IntRange(min=0), default=0, show_default=True,
              help="Only events numbered above this (resume where a reader stopped).")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@click.option("--type", "types", multiple=True, type=_TYPES,
              help="Only this type (repeatable).")
@click.option("--follow", "-f", is_flag=True,
              help="Keep printing new events as they commit (Ctrl-C stops).")
@click.pass_obj
def events(st: _State, after: int, limit: int, types: tuple[str, ...], follow: bool) -> None:
    """The namespace's change events, oldest first: number, time, type, kind, record ids,
    scope (never the text unless the store is configured to include it)."""
    with st.memory() as mem:
        cursor = after
        while True:
            batch = mem.events(namespace=st.namespace, after=cursor, limit=limit, types=types)
            for e in batch:
                click.echo(json.dumps(e.to_dict()) if st.as_json else _line(e))
            cursor = batch[-1].seq if batch else cursor
            if not follow:
                return
            if len(batch) < limit:
                time.sleep(0.5)


@cli.group()
def webhooks() -> None:
    """Webhooks: a namespace's change events POSTed to a URL, signed, at least once."""


@webhooks.command("add")
@click.argument("url")
@click.option("--type", "types", multiple=True, type=_TYPES,
              help="Only this event type (repeatable; default: all).")
@click.option("--secret", default=None, help="The signing secret (default: a new one).")
@click.option("--from-start", is_flag=True, help="Also send the events still kept.")
@click.pass_obj
def webhooks_add(st: _State, url: str, types: tuple[str, ...], secret: str | None,
                 from_start: bool) -> None:
    """Register a webhook and print its id and secret (shown only this once)."""
    with st.memory() as mem:
        hook = mem.webhooks.add(url, namespace=st.namespace, types=types, secret=secret,
                                from_start=from_start)
    if st.as_json:
        _emit(hook.to_dict(secret=True))
    else:
        click.echo(f"{hook.id}  {hook.url}  namespace {hook.namespace}")
        click.echo(f"secret {hook.secret}  (shown only now: check signatures with it)")


@webhooks.command("list")
@click.pass_obj
def webhooks_list(st: _State) -> None:
    """The namespace's webhooks and how delivery stands."""
    with st.memory() as mem:
        hooks = mem.webhooks.list(namespace=st.namespace)
    if st.as_json:
        _emit([h.to_dict() for h in hooks])
        return
    click.echo(_table(["id", "url", "types", "delivered", "cursor", "failed tries",
                       "dead letters", "last error"], [
        [h.id, h.url, ",".join(h.types) or "all", h.delivered, h.cursor, h.attempts, h.dead,
         h.last_error or "-"] for h in hooks]))


@webhooks.command("remove")
@click.argument("webhook_id")
@click.pass_obj
def webhooks_remove(st: _State, webhook_id: str) -> None:
    """Stop sending events to a webhook and forget it."""
    with st.memory() as mem:
        mem.webhooks.remove(webhook_id, namespace=st.namespace)
    click.echo(f"removed {webhook_id}")


@webhooks.command("dead-letters")
@click.argument("webhook_id")
@click.pass_obj
def webhooks_dead(st: _State, webhook_id: str) -> None:
    """The events a webhook gave up on, with the last error."""
    with st.memory() as mem:
        rows = mem.webhooks.dead_letters(webhook_id, namespace=st.namespace)
    if st.as_json:
        _emit(rows)
    else:
        click.echo(_table(["event", "given up", "error"],
                          [[r["seq"], _fmt_time(float(str(r["at"]))), r["error"] or "-"]
                           for r in rows]))


@webhooks.command("redeliver")
@click.argument("webhook_id")
@click.pass_obj
def webhooks_redeliver(st: _State, webhook_id: str) -> None:
    """Send a webhook's dead letters again (and the events after them)."""
    with st.memory() as mem:
        n = mem.webhooks.redeliver(webhook_id, namespace=st.namespace)
    click.echo(f"{n} dead letters queued again")


@webhooks.command("deliver")
@click.option("--timeout", type=float, default=None,
              help="Stop after this many seconds (default: when nothing is left to send).")
@click.option("--forever", is_flag=True, help="Keep delivering as events come (no server).")
@click.pass_obj
def webhooks_deliver(st: _State, timeout: float | None, forever: bool) -> None:
    """Deliver due webhook events from this process (``memstream serve`` does this itself)."""
    with st.memory() as mem:
        sent = mem.webhooks.deliver(until_idle=not forever, timeout=timeout)
    click.echo(f"{sent} events delivered")
