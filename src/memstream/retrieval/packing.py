"""Packing hits into a token budget, counted with a real tokenizer (``memstream.core.tokens``:
cl100k_base by default; any object with ``count(text) -> int`` can replace it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._types import Hit, Record
from ..core.tokens import Tokenizer, cl100k
from ..errors import InvalidInput

__all__ = ["pack", "render_record"]

def render_record(record: Record) -> str:
    """The default one-line rendering of a record in a context block."""
    return f"- {record.text}"


def pack(hits: Sequence[Hit], budget: int, *, tokenizer: Tokenizer | None = None,
         render: Callable[[Record], str] = render_record, separator: str = "\n"
         ) -> tuple[list[Hit], str, int]:
    """The best hits whose rendered lines fit in ``budget`` tokens together.

    Hits are taken best first; one that does not fit is skipped and smaller ones after it may
    still fit. Returns (kept hits, the rendered text, its token count); the count is of the
    whole joined text, so it is exact for what the caller will send.
    """
    if budget < 0:
        raise InvalidInput("a token budget must be >= 0")
    tok = tokenizer or cl100k()
    kept: list[Hit] = []
    lines: list[str] = []
    used = 0
    for hit in hits:
        line = render(hit.record)
        candidate = separator.join([*lines, line])
        cost = tok.count(candidate)
        if cost <= budget:
            kept.append(hit)
            lines.append(line)
            used = cost
    return kept, separator.join(lines), used
