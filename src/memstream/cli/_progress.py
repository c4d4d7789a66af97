"""Progress of the command line's long operations: a bar per stage on a terminal, a plain line
every few seconds otherwise (a log, a pipe), and a closing summary with counts and the time
taken. Everything goes to standard error, so ``--json`` output stays clean."""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any

import click
from tqdm import tqdm

from ..engine.memory import Memory
from ..engine.progress import wait_embedded

#: seconds between two plain progress lines
EVERY = 2.0


def _unicode(stream: Any) -> bool:
    """Whether the stream can show the bar's block characters (a C locale cannot)."""
    try:
        "█▏".encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class Progress:
    """``memstream.engine.progress``'s callback for one command (``verb`` starts its lines)."""

    def __init__(self, verb: str, quiet: bool = False) -> None:
        self.verb, self.quiet = verb, quiet
        self.terminal = sys.stderr.isatty()
        self.started = time.monotonic()
        self._bars: dict[str, Any] = {}
        self._said: dict[str, float] = {}
        self._last: dict[str, int] = {}

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if self.quiet:
            return
        if self.terminal:
            bar = self._bars.get(stage)
            if bar is None:
                size = shutil.get_terminal_size()  # (80, 24) when the terminal does not say
                bar = self._bars[stage] = tqdm(total=total, desc=f"{self.verb}: {stage}",
                                               unit=" items", file=sys.stderr, mininterval=0,
                                               ncols=size.columns, nrows=size.lines,
                                               ascii=not _unicode(sys.stderr))
            if total is not None and bar.total != total:
                bar.total = total
            bar.update(done - bar.n)
            return
        now = time.monotonic()
        finished = total is not None and done >= total
        if self._last.get(stage) != done and (finished or
                                              now - self._said.get(stage, 0.0) >= EVERY):
            self._said[stage], self._last[stage] = now, done
            share = f" ({100 * done / total:.0f}%)" if total else ""
            click.echo(f"{self.verb}: {stage} {done}" + (f"/{total}" if total else "") + share,
                       err=True)

    def wait_embedded(self, mem: Memory) -> None:
        """Wait for the background embedding of what was just stored, showing it."""
        wait_embedded(mem, self)

    def summary(self, text: str) -> None:
        self.close()
        if not self.quiet:
            click.echo(f"{text} in {time.monotonic() - self.started:.1f} s", err=True)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
