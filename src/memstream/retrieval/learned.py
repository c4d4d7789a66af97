"""What the learned stages share (``rerank``'s for conversations, ``notes``' for stores of
notes): a linear model over named features, kept in a JSON file beside the code with the
features it was fitted for, and the optimiser of its fit (``adam``). A stage brings its own
features (one function computing its ``FEATURES``, a signal being one more column there), its
pool of candidates and its objective; ``memstream bench fit-rerank`` and ``fit-notes`` fit them
through ``adam`` and write them through ``weights_json``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any

import numpy as np

__all__ = ["adam", "read_weights", "weights_json"]


def read_weights(file: str, features: Sequence[str]) -> dict[str, Any] | None:
    """The fields a fit wrote to ``file`` (beside this module), or None when the file is
    missing or was fitted for other features than ``features`` (the stage cannot use it)."""
    try:
        raw: dict[str, Any] = json.loads(
            resources.files(__package__).joinpath(file).read_text("utf-8"))
    except FileNotFoundError:
        return None
    return raw if list(raw.get("features", ())) == list(features) else None


def weights_json(features: Sequence[str], **fields: object) -> str:
    """A fit's file: the features it was fitted for, then its fields (weights, and what the fit
    reports about itself)."""
    return json.dumps({"features": list(features), **fields}, indent=1)


def adam(gradient: Callable[[np.ndarray], np.ndarray], size: int, *, epochs: int, rate: float
         ) -> np.ndarray:
    """The weights minimising an objective whose ``gradient`` (the penalty's included) is
    given, from zero, by ``epochs`` steps of Adam at learning ``rate`` (the usual moments,
    0.9 and 0.999)."""
    w = np.zeros(size)
    m1, m2 = np.zeros(size), np.zeros(size)
    for t in range(1, epochs + 1):
        grad = gradient(w)
        m1 = 0.9 * m1 + 0.1 * grad
        m2 = 0.999 * m2 + 0.001 * grad**2
        w -= rate * (m1 / (1 - 0.9**t)) / (np.sqrt(m2 / (1 - 0.999**t)) + 1e-8)
    return w
