"""Commands around the server: migrate, serve, mcp, keys."""

from __future__ import annotations

import logging

import click

from .. import __version__
from ..core import tracing
from ..errors import (
    MissingDependency,
)
from ._base import (
    _emit,
    _fmt_time,
    _State,
    _table,
    cli,
)
from ._progress import Progress


@cli.command()
@click.argument("source")
@click.argument("target")
@click.option("--batch", default=1000, show_default=True, help="Records per transaction.")
@click.option("--sample", default=200, show_default=True,
              help="Records per namespace compared field by field afterwards.")
@click.pass_obj
def migrate(st: _State, source: str, target: str, batch: int, sample: int) -> None:
    """Copy a whole memory between stores (e.g. SQLite -> PostgreSQL), then verify it.

    SOURCE and TARGET are store URLs or paths. TARGET must be empty, or the target of a migrate
    that did not finish (it is wiped and the copy starts again). Every table is copied:
    records with embeddings, history, API keys, settings, the event log, webhooks, dead
    letters and LangGraph checkpoints; the counts of each and a sample of records are compared,
    and the command fails if anything differs. Until then TARGET is marked unfinished and no
    memory opens it."""
    from ..engine import migrate as mig
    from ..store import open_store

    src = open_store(source)
    try:
        dst = open_store(target)
    except BaseException:
        src.close()
        raise
    try:
        with Progress("migrate", quiet=st.as_json) as progress:
            mig.copy_store(src, dst, batch=batch, progress=progress)
            progress.summary("copied")
        report = mig.verify(src, dst, sample=sample)
        mig.finish(dst, report)
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
@click.option("--metrics-token", envvar="MEMSTREAM_METRICS_TOKEN",
              help="The bearer token that reads /metrics when keys are required (a tenant's "
              "key may not). Env: MEMSTREAM_METRICS_TOKEN.")
@click.pass_obj
def serve(st: _State, host: str, port: int, max_body_mb: float, rate: float,
          log_level: str, redis_url: str | None, metrics_token: str | None) -> None:
    """Serve REST (/v1, OpenAPI at /docs), MCP (/mcp), /healthz and /metrics."""
    try:
        import uvicorn

        from ..server.app import ServerSettings, create_app
        from ..server.heap import limit_arenas
        from ..server.security import KeyPolicy, is_loopback
    except ImportError as exc:
        raise MissingDependency("the server needs: pip install 'memstream[server]'") from exc
    mem = st.memory(create=True)
    if mem.config.tracing:  # spans go where the standard OTEL_* variables say, if anywhere
        exporter = tracing.setup_from_env() or ("on, but no exporter is set "
                                                "(OTEL_EXPORTER_OTLP_ENDPOINT or "
                                                "OTEL_TRACES_EXPORTER=console)")
        click.echo(f"tracing: {exporter}", err=True)
    if not KeyPolicy(mem.store).required:  # create_app refuses to serve elsewhere openly
        if not is_loopback(host):
            click.echo(f"no API keys exist: binding to 127.0.0.1 instead of {host} (create one "
                       "with `memstream keys create`)", err=True)
            host = "127.0.0.1"
        else:
            click.echo("no API keys exist: serving 127.0.0.1 only, without authentication",
                       err=True)
    settings = ServerSettings(max_body_bytes=int(max_body_mb * 2**20), rate_per_key=rate,
                              burst_per_key=max(1, int(rate * 2)),
                              metrics_token=metrics_token or None)
    limit_arenas()  # large requests leave no heap behind: server/heap.py
    app = create_app(mem, settings, host=host, redis_url=redis_url)
    # force: the MCP SDK puts a Rich handler on the root logger, which wraps each JSON access
    # line over several; memstream logs plain lines, one per request
    logging.basicConfig(level=log_level.upper(), format="%(message)s", force=True)
    click.echo(f"memstream {__version__} on http://{host}:{port} (db: {mem.store.url})",
               err=True)
    # access_log=False: memstream.access logs each request once, as JSON (app.py)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=30,
                access_log=False,
                timeout_keep_alive=75)  # longer than clients keep idle connections: no reset race


@cli.command()
@click.pass_obj
def mcp(st: _State) -> None:
    """Serve MCP over stdio (what desktop agents and IDE assistants launch)."""
    try:
        from ..server.mcp import build_mcp
    except ImportError as exc:
        raise MissingDependency("MCP needs: pip install 'memstream[server]'") from exc
    mem = st.memory(create=True)
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
    from ..server.auth import create_key

    with st.memory(create=True) as mem:
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
    from ..server.auth import list_keys

    with st.memory() as mem:
        rows = list_keys(mem.store)
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
    from ..server.auth import revoke_key

    with st.memory() as mem:
        revoke_key(mem.store, key_id, now=mem.clock.now())
    click.echo(f"revoked {key_id}")


