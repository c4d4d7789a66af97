"""The ``memstream`` command. Each command parses its options, makes one library call and
renders the result (a table, or JSON with ``--json``). Errors print one line and exit non-zero
with the code of ``EXIT_CODES``."""

from __future__ import annotations

from collections.abc import Sequence

from . import (  # noqa: F401 (each registers its commands)
    agents,
    audit,
    bench,
    capabilities,
    entities,
    events,
    memories,
    server,
    train,
)
from ._base import EXIT_CODES, cli, exit_code

__all__ = ["EXIT_CODES", "cli", "exit_code", "main"]


def main(argv: Sequence[str] | None = None) -> None:
    cli.main(args=list(argv) if argv is not None else None, prog_name="memstream")


if __name__ == "__main__":  # pragma: no cover
    main()
