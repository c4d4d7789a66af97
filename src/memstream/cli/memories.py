"""Commands on memories: add, search, context, get, list, update, delete, erase, history,
stats, export, import, reindex, reflect, consolidate, check, demo."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click

from .._types import ORDERS, Hit, Record
from ..engine import transfer
from ..errors import (
    BackendUnavailable,
    CorruptStore,
    InvalidInput,
)
from ..retrieval.scoring import PROFILES
from ._base import (
    F,
    _emit,
    _fmt_time,
    _json_arg,
    _scope_options,
    _short,
    _State,
    _stdin_text,
    _table,
    cli,
)
from ._progress import Progress


@cli.command()
@click.argument("text", required=False)
@click.option("--lines", is_flag=True,
              help="Read one memory per line of standard input (or of TEXT's file, '-').")
@click.option("--user", "user_id")
@click.option("--agent", "agent_id")
@click.option("--run", "run_id")
@click.option("--kind", default="observation", show_default=True)
@click.option("--data", help="A JSON object payload.")
@click.option("--metadata", help="A JSON object of metadata.")
@click.option("--importance", type=float, help="In [0, 1]; default: the offline heuristic.")
@click.option("--step", type=int)
@click.option("--at", help="When it happened (ISO 8601); default now.")
@click.option("--provenance", multiple=True,
              help="The id of a record it derives from (repeatable).")
@click.pass_obj
def add(st: _State, /, text: str | None, lines: bool, step: int | None, **fields: Any) -> None:
    """Store a memory and print its id. TEXT '-' or left out reads standard input;
    with --lines, each line is a memory (stored together: all or none)."""
    if text in (None, "-"):
        text = _stdin_text("text", "add")
    common = {**fields, "data": _json_arg(fields["data"], "data"),
              "metadata": _json_arg(fields["metadata"], "metadata"),
              "provenance": list(fields["provenance"]) or None}
    if lines:
        items = [{"text": line, **common} for line in text.splitlines() if line.strip()]
        if not items:
            raise InvalidInput("no lines to add: standard input was empty")
        with st.memory(create=True) as mem, Progress("add", st.as_json) as progress:
            records = mem.add_many(items)
            progress.wait_embedded(mem)
            progress.summary(f"added {len(records)} memories")
        _emit([r.to_dict() for r in records]) if st.as_json else \
            click.echo("\n".join(r.id for r in records))
        return
    with st.memory(create=True) as mem:
        rec = mem.add(text.strip("\n"), step=step, **common)
        mem.flush()
    _emit(rec.to_dict()) if st.as_json else click.echo(rec.id)


def _which(where: Mapping[str, Any]) -> dict[str, Any]:
    """The scope and selection options (``_scope_options``, ``_time_options``) as ``Memory``'s
    keywords: no --kind is every kind, --filter is parsed from JSON."""
    return {**where, "kinds": tuple(where.get("kinds") or ()) or None,
            "filters": _json_arg(where.get("filters"), "filter")}


def _hit_rows(hits: Sequence[Hit]) -> list[list[Any]]:
    return [[n, f"{h.score:.3f}", f"{h.explain.recency:.2f}", f"{h.explain.importance:.2f}",
             f"{h.explain.relevance:.2f}", h.record.id, _short(h.record.text)]
            for n, h in enumerate(hits, start=1)]


def _time_options(fn: F) -> F:
    """--since, --until and --as-of, as the API takes them."""
    for option in reversed([
            click.option("--since", help="Only memories from this time on (ISO 8601)."),
            click.option("--until", help="Only memories before this time (ISO 8601)."),
            click.option("--as-of", "as_of", help="As valid at this time (ISO 8601)."),
    ]):
        fn = option(fn)
    return fn


def _read_options(fn: F) -> F:
    """What every command that ranks memories takes (search, context): the scope, the times,
    the weight profile, the scoring time and whether reading refreshes the last access."""
    for option in reversed([
            _scope_options, _time_options,
            click.option("--weights", type=click.Choice(sorted(PROFILES)),
                         help="A weight profile."),
            click.option("--now", help="Score as of this time (ISO 8601)."),
            click.option("--touch/--no-touch", default=False, show_default=True,
                         help="Count the read as a use: the hits' last access moves to now "
                              "and later rankings change (an agent's read). By default the "
                              "shell only looks, as the inspector does."),
    ]):
        fn = option(fn)
    return fn


@cli.command()
@click.argument("query")
@click.option("-k", default=10, show_default=True, help="How many hits.")
@_read_options
@click.option("--min-relevance", type=float,
              help="Leave out hits whose relevance is below this (0-1).")
@click.pass_obj
def search(st: _State, /, query: str, k: int, weights: str | None, now: str | None,
           touch: bool, min_relevance: float | None, **where: Any) -> None:
    """Search memories; shows each hit's score and its recency, importance, relevance.
    QUERY '-' reads it from standard input."""
    if query == "-":
        query = _stdin_text("query", "search").strip()
    with st.memory() as mem:
        hits = mem.search(query, k=k, weights=weights, now=now, touch=touch,
                          min_relevance=min_relevance, **_which(where))
    if st.as_json:
        _emit([h.to_dict() for h in hits])
    elif not hits:
        click.echo("no matching memories")
    else:
        click.echo(_table(["#", "score", "recency", "importance", "relevance", "id", "text"],
                          _hit_rows(hits)))
    _touched(touch, len(hits))


@cli.command()
@click.argument("query")
@click.option("--budget", default=512, show_default=True,
              help="At most this many tokens (cl100k) of memories.")
@click.option("-k", default=50, show_default=True, help="How many hits to choose from.")
@_read_options
@click.option("--min-relevance", type=float,
              help="Leave out memories whose relevance is below this (0-1; default: "
                   "unrelated memories are left out).")
@click.pass_obj
def context(st: _State, /, query: str, budget: int, k: int, weights: str | None,
            now: str | None, touch: bool, min_relevance: float | None, **where: Any) -> None:
    """Print the best memories for QUERY that fit a token budget, one per line: a block to
    put in a prompt. QUERY '-' reads it from standard input."""
    if query == "-":
        query = _stdin_text("query", "context").strip()
    relevance: dict[str, Any] = {} if min_relevance is None else {
        "min_relevance": min_relevance}
    with st.memory() as mem:
        ctx = mem.context(query, budget=budget, k=k, weights=weights, now=now, touch=touch,
                          **relevance, **_which(where))
    if st.as_json:
        _emit({"text": ctx.text, "tokens": ctx.tokens, "hits": [h.to_dict() for h in ctx.hits]})
    else:
        click.echo(ctx.text if ctx.text else "no memory relevant enough")
    _touched(touch, len(ctx.hits))


def _touched(touch: bool, hits: int) -> None:
    """Say on standard error that a read counted as a use (it changes later rankings)."""
    if touch and hits:
        click.echo(f"counted as a use: the last access of {hits} memor"
                   f"{'ies' if hits != 1 else 'y'} moved to now", err=True)


def _record_lines(rec: Record) -> str:
    d = rec.to_dict()
    for key in ("created_at", "updated_at", "last_accessed_at", "invalidated_at"):
        d[key] = _fmt_time(d[key]) if d[key] is not None else None
    shown = {k: json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v
             for k, v in d.items() if v not in (None, {}, [])}
    return "\n".join(f"{k:>17}: {v}" for k, v in shown.items())


@cli.command()
@click.argument("memory_id")
@click.pass_obj
def get(st: _State, memory_id: str) -> None:
    """Show one record."""
    with st.memory() as mem:
        rec = mem.get(memory_id)
    _emit(rec.to_dict()) if st.as_json else click.echo(_record_lines(rec))


@cli.command("list")
@_scope_options
@_time_options
@click.option("--limit", default=50, show_default=True)
@click.option("--offset", default=0)
@click.option("--order", type=click.Choice(ORDERS), default="created", show_default=True,
              help="By creation (oldest first; '-created': newest first) or by step.")
@click.option("--newest-first", is_flag=True, help="The same as --order -created.")
@click.option("--all", "include_invalid", is_flag=True, help="Include invalidated records.")
@click.pass_obj
def list_(st: _State, /, limit: int, offset: int, order: str, newest_first: bool,
          **where: Any) -> None:
    """List records, oldest first (see --order). Says how many records it leaves out and
    why; a record the worker found to be junk or a restatement is marked so."""
    which = _which(where)
    with st.memory() as mem:
        recs = mem.get_all(limit=limit, offset=offset,
                           order="-created" if newest_first else order, **which)
        hidden = 0 if which.get("include_invalid") or which.get("as_of") is not None else (
            mem.count(**{**which, "include_invalid": True}) - mem.count(**which))
        found = {f.record.id: f.kind for f in mem.audit(kinds=("junk", "duplicate"),
                                                       limit=10_000) if f.applied}
    if st.as_json:
        _emit([r.to_dict() for r in recs])
        return
    click.echo(_table(["id", "created", "kind", "imp", "status", "text"],
                      [[r.id, _fmt_time(r.created_at), r.kind, f"{r.importance:.2f}",
                        _status(r, found), _short(r.text)] for r in recs]))
    if hidden:
        click.echo(f"{hidden} superseded or invalidated record{'s' * (hidden != 1)} not "
                   "listed: --all lists them too", err=True)


def _status(r: Record, found: Mapping[str, str]) -> str:
    """What is known of a record's standing: replaced, invalidated, junk or a restatement."""
    if r.superseded_by is not None:
        return "superseded"
    if r.invalidated_at is not None:
        return "invalidated"
    return found.get(r.id, "")


@cli.command()
@click.argument("memory_id")
@click.option("--text", help="The new text (embedded again).")
@click.option("--data", help="A new JSON object payload.")
@click.option("--metadata", help="A new JSON object of metadata.")
@click.option("--importance", type=float, help="In [0, 1].")
@click.option("--provenance", multiple=True,
              help="The id of a record it derives from (repeatable; replaces the list).")
@click.option("--at", help="When the change happened (ISO 8601); default now.")
@click.pass_obj
def update(st: _State, memory_id: str, text: str | None, data: str | None,
           metadata: str | None, importance: float | None, provenance: tuple[str, ...],
           at: str | None) -> None:
    """Change a record; the old values go to its history (see `history`)."""
    if text is None and data is None and metadata is None and importance is None \
            and not provenance:
        raise InvalidInput("name what to change: --text, --data, --metadata, --importance or "
                           "--provenance")
    with st.memory() as mem:
        rec = mem.update(memory_id, text=text, data=_json_arg(data, "data"),
                         metadata=_json_arg(metadata, "metadata"), importance=importance,
                         provenance=list(provenance) or None, at=at)
        mem.flush()
    _emit(rec.to_dict()) if st.as_json else click.echo(_record_lines(rec))


@cli.command()
@click.argument("memory_id")
@click.option("--erase", is_flag=True,
              help="Also remove its text, payload and history everywhere (see `erase`).")
@click.pass_obj
def delete(st: _State, memory_id: str, erase: bool) -> None:
    """Delete a record from every index (its history stays unless --erase)."""
    with st.memory() as mem:
        mem.delete(memory_id, erase=erase)
    _emit({"deleted": memory_id}) if st.as_json else click.echo(f"deleted {memory_id}")


@cli.command()
@click.pass_obj
def check(st: _State) -> None:
    """Scan a SQLite store page by page (PRAGMA integrity_check) without changing it; exit
    code 7 when it is damaged, 4 when it is the target of a migrate that did not finish."""
    from ..engine.migrate import refuse_unfinished_at
    from ..store import sqlite_path
    from ..store.sqlite.check import check_file

    path = sqlite_path(st.db)
    if path is None:
        raise InvalidInput("check reads SQLite files; PostgreSQL checks its own pages")
    problems = check_file(path)
    if problems:
        raise CorruptStore(f"{path} is damaged: {'; '.join(problems[:10])}")
    refuse_unfinished_at(path)  # healthy pages, but only part of a migrate's source
    _emit({"ok": True, "path": path}) if st.as_json else click.echo(f"{path}: ok")


@cli.command("erase")
@click.argument("memory_id", required=False)
@click.option("--user", "user_id", help="Erase every memory of this user.")
@click.option("--agent", "agent_id", help="Erase every memory of this agent.")
@click.option("--run", "run_id", help="Erase every memory of this run.")
@click.pass_obj
def erase(st: _State, memory_id: str | None, user_id: str | None, agent_id: str | None,
          run_id: str | None) -> None:
    """Erase a record, or everything of a user, agent or run: text, payload, vectors and
    history go from every store and index; only the ids and the time of erasure stay."""
    if (memory_id is None) == (user_id is None and agent_id is None and run_id is None):
        raise InvalidInput("name one record id, or --user / --agent / --run (not both)")
    with st.memory() as mem:
        if memory_id is not None:
            mem.delete(memory_id, erase=True)
            count = 1
        else:
            count = mem.delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id, erase=True)
        pending = mem.deletions.scrub_pending()
    if pending:  # never "erased" while the text is still on disk
        raise BackendUnavailable(f"erased {count} record(s) from every table, but the scrub "
                                 f"is not finished: {pending}")
    _emit({"erased": count}) if st.as_json else click.echo(f"erased {count} record(s)")


@cli.command()
@click.argument("memory_id")
@click.pass_obj
def history(st: _State, memory_id: str) -> None:
    """Show every change to a record."""
    with st.memory() as mem:
        entries = mem.history(memory_id)
    if st.as_json:
        _emit([e.to_dict() for e in entries])
    else:
        click.echo(_table(["at", "event", "what"], [
            [_fmt_time(e.at), e.event, _what(e.event, e.old, e.new)] for e in entries]))


#: what an add or import shows of the record it created: the fields a person set
_CREATED = ("text", "kind", "user_id", "agent_id", "run_id", "step", "importance", "data",
            "metadata", "provenance", "superseded_by")


def _what(event: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    """One history entry in words: what an add created the record with, what an update
    changed (from, to)."""
    if event in ("add", "import") and new:
        return "created with " + ", ".join(f"{k}={_short(repr(new[k]), 40)}" for k in _CREATED
                                           if new.get(k) not in (None, {}, [], ()))
    old, new = old or {}, new or {}
    changed = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    return ", ".join(f"{k}: {_short(repr(old.get(k)), 40)} -> {_short(repr(new.get(k)), 40)}"
                     for k in changed) or "-"


@cli.command()
@click.pass_obj
def stats(st: _State) -> None:
    """Counts for the namespace."""
    with st.memory() as mem:
        s = mem.stats()
    if st.as_json:
        _emit(s)
    else:
        s = {**s, "oldest": _fmt_time(s["oldest"]), "newest": _fmt_time(s["newest"])}
        click.echo("\n".join(f"{k:>10}: {v}" for k, v in s.items()))


@cli.command()
@click.option("--out", "out", type=click.Path(dir_okay=False), help="File (default stdout).")
@click.option("--all-namespaces", is_flag=True, help="Export every namespace.")
@click.option("--with-embeddings", is_flag=True)
@click.pass_obj
def export(st: _State, out: str | None, all_namespaces: bool, with_embeddings: bool) -> None:
    """Export records as JSON Lines (every field round-trips)."""
    with st.memory() as mem, Progress("export", quiet=out is None and sys.stdout.isatty()) \
            as progress:
        ns = None if all_namespaces else mem.config.namespace
        if out:
            with open(out, "w", encoding="utf-8") as fp:
                n = transfer.export_jsonl(mem, fp, namespace=ns, with_embeddings=with_embeddings,
                                          progress=progress)
            progress.summary(f"exported {n} records to {out}")
        else:
            n = transfer.export_jsonl(mem, sys.stdout, namespace=ns,
                                      with_embeddings=with_embeddings, progress=progress)
            progress.summary(f"exported {n} records")


@cli.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--skip-existing", is_flag=True, help="Keep stored records whose id is in the file.")
@click.pass_obj
def import_(st: _State, path: str, skip_existing: bool) -> None:
    """Import JSON Lines (all or nothing), then wait for their vectors; shows progress on
    standard error. A line is a record exported by memstream (it has an "id"), or a new memory:
    {"text": ...} with any of add's fields (user_id, kind, importance, created_at as ISO 8601
    or epoch seconds, ...); new records get ids, the current namespace and the time now."""
    with st.memory(create=True) as mem, click.open_file(path, encoding="utf-8") as fp, \
            Progress("import") as progress:
        lines = fp.readlines()
        rate: list[str] = []
        records = transfer.parse_lines(lines, mem, progress=progress, total=len(lines), rate=rate)
        n = transfer.import_jsonl(mem, [], records=records, rate=rate,
                                  on_conflict="skip" if skip_existing else "error",
                                  progress=progress)
        progress.wait_embedded(mem)
        progress.summary(f"imported {n} records")
    _emit({"imported": n}) if st.as_json else click.echo(f"imported {n} records")


@cli.command()
@click.pass_obj
def reindex(st: _State) -> None:
    """Embed every record again with the current embedder."""
    with st.memory() as mem, Progress("reindex") as progress:
        n = mem.reindex()
        progress.wait_embedded(mem)
        progress.summary(f"re-embedded {n} records")
    click.echo(f"re-embedded {n} records")


@cli.command()
@click.option("--agent", "agent_id")
@click.option("--user", "user_id")
@click.pass_obj
def reflect(st: _State, agent_id: str | None, user_id: str | None) -> None:
    """Synthesise insights from recent memories now (LLM if configured, else extractive)."""
    with st.memory() as mem:
        records = mem.reflect(agent_id=agent_id, user_id=user_id)
        mem.flush()
    if st.as_json:
        _emit([r.to_dict() for r in records])
    elif not records:
        click.echo("nothing to reflect on yet")
    else:
        for r in records:
            click.echo(f"{r.id}  {r.text}  (evidence: {', '.join(r.provenance)})")


@cli.command()
@click.option("--threshold", type=float, help="Calibrated similarity for near duplicates.")
@click.pass_obj
def consolidate(st: _State, threshold: float | None) -> None:
    """Merge near-duplicate memories into one each (the others are invalidated)."""
    with st.memory() as mem, Progress("consolidate") as progress:
        changes = mem.consolidate(threshold=threshold, progress=progress)
        progress.summary(f"checked {mem.count()} memories")
    if st.as_json:
        _emit([{"survivor": c.record.to_dict(), "merged": list(c.record.provenance)}
               for c in changes])
    else:
        click.echo(f"merged {sum(len(c.record.provenance) for c in changes)} memories into "
                   f"{len(changes)}")


@cli.command()
@click.pass_obj
def demo(st: _State) -> None:
    """Run a short scripted agent session and show what its memory retrieves."""
    from .demo import run_demo

    run_demo(st.db if st.db != "memstream.db" else None, echo=click.echo)


