"""Old parameter names kept as aliases: one name per concept across Python, REST, MCP and the
CLI, without breaking a caller who learned the earlier one.

``renamed(record_id="memory_id")`` lets a function whose parameter is now ``memory_id`` still be
called with ``record_id=...``; passing both is an error that names the one to keep. The old
name is not in the signature (typed callers and help show the one name); it keeps working.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from ..errors import InvalidInput

__all__ = ["renamed", "unalias"]

F = TypeVar("F", bound=Callable[..., Any])


def unalias(kwargs: dict[str, Any], aliases: dict[str, str]) -> dict[str, Any]:
    """``kwargs`` with each old name (a key of ``aliases``) replaced by its new name."""
    for old, new in aliases.items():
        if old in kwargs:
            if new in kwargs:
                raise _both(old, new)
            kwargs[new] = kwargs.pop(old)
    return kwargs


def _both(old: str, new: str) -> InvalidInput:
    return InvalidInput(f"{old!r} is the old name of {new!r}: pass only {new!r}")


def renamed(**aliases: str) -> Callable[[F], F]:
    """Accept the old keyword names of renamed parameters (old name = new name)."""
    def wrap(fn: F) -> F:
        names = list(inspect.signature(fn).parameters)
        place = {new: names.index(new) for new in aliases.values()}

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in aliases.items():
                if old in kwargs and len(args) > place[new]:  # the new one given by position
                    raise _both(old, new)
            return fn(*args, **unalias(kwargs, aliases))

        return cast(F, call)
    return wrap
