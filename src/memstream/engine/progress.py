"""Progress of long operations, one callback shape for every caller that shows it.

``progress(stage, done, total)``: ``stage`` names the step ("read", "store", "export",
"embedding", "records", "history", "merge"), ``done`` how much of it is finished so far and
``total`` how much there is in all (None when it is not known). Import, export, migration,
consolidation and ``wait_embedded`` call it; the command line draws it as a bar on a terminal
and as plain lines otherwise.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["ProgressFn", "pending_embeddings", "wait_embedded"]

ProgressFn = Callable[[str, int, "int | None"], None]


def pending_embeddings(mem: Memory) -> int:
    """Records of every namespace still waiting for their vector."""
    counts = [mem.stats(namespace=ns) for ns in mem.namespaces()]
    return sum(int(c["records"]) - int(c["embedded"]) for c in counts)


def wait_embedded(mem: Memory, progress: ProgressFn | None = None, *,
                  poll: float = 0.5) -> None:
    """Wait until background embedding is done, reporting ("embedding", done, total)."""
    if mem.embedder is None:
        return
    pending = pending_embeddings(mem) if progress is not None else 0
    worker = threading.Thread(target=mem.flush, name="memstream-flush", daemon=True)
    worker.start()
    total = pending
    while worker.is_alive():
        worker.join(poll)
        if progress is not None and total:
            left = pending_embeddings(mem)
            total = max(total, left)
            progress("embedding", total - left, total)
    if progress is not None and total:
        progress("embedding", total, total)
