"""The keyword names a function takes: its parameters, and for ``**args: Unpack[SomeArgs]``
the keys of the TypedDict (``memstream.scope.AddArgs``, ``SelectArgs``, ...)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any


def parameter_names(fn: Callable[..., Any]) -> set[str]:
    fn = inspect.unwrap(fn)
    names: set[str] = set()
    hints = typing.get_type_hints(fn, include_extras=True)
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind is p.VAR_KEYWORD:
            args = typing.get_args(hints.get(name))
            if args and typing.is_typeddict(args[0]):
                names |= set(typing.get_type_hints(args[0]))
        elif p.kind is not p.VAR_POSITIONAL:
            names.add(name)
    return names - {"self", "cls"}
