"""The kind of a name whose words and place in the sentence did not tell it
(``core.names``: kind "name", or "thing" for a word in capitals), read from the embedder: the
name alone, embedded as a query, takes the kind whose descriptions it lies nearest. A pure
function of vectors; the engine embeds (``engine/kinds.py``).

"Netflix", "Trello", "Zalando", "Iberflyt" and "Canela" carry no title, no "Street" or "GmbH",
and the sentence around them ("switched the team from Trello to Notion") says little a rule
could read in every language. A multilingual embedder has read such names in their own
contexts: the name's vector lies nearer "an app, service or device" for Spotify and nearer
"a company" for a firm. No labelled data is fitted: the descriptions below are the whole model,
written once and measured (docs/entities.md, "Kinds the words do not tell"): on the entities
dev set, matched names with the labelled kind 0.71 before, 0.86 after with the default
embedder, and 0.81 and 0.84 with two other wordings of the descriptions, so the gain is the
embedder's, not the wording's.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DESCRIBED", "DESCRIPTIONS", "UNREAD", "kinds_of"]

#: the kinds a name's words may leave open: a name the extractor could not place, and a word
#: in capitals ("IKEA", "TÜV")
UNREAD = ("name", "thing")

#: each kind a name may take, and what such a name is, in words the embedder reads as a query
DESCRIPTIONS: dict[str, tuple[str, ...]] = {
    "person": ("a person", "a person's name"),
    "place": ("a place", "a city, street or restaurant"),
    "organization": ("a company", "an organization, firm, school or club"),
    "product": ("a product", "an app, service or device"),
    "event": ("an event", "a festival or concert"),
}
#: every description, kind by kind: the rows ``kinds_of`` is given, embedded as queries
DESCRIBED: tuple[str, ...] = tuple(d for ds in DESCRIPTIONS.values() for d in ds)


def kinds_of(names: np.ndarray, described: np.ndarray) -> list[str]:
    """The kind of each name (``names``: their query vectors, a row each), the one whose
    descriptions' mean vector (``described``: the query vectors of ``DESCRIBED``) its vector
    lies nearest."""
    kinds, centres, start = list(DESCRIPTIONS), [], 0
    for k in kinds:
        centres.append(np.asarray(described[start:start + len(DESCRIPTIONS[k])]).mean(axis=0))
        start += len(DESCRIPTIONS[k])
    scores = np.asarray(names, dtype=np.float32) @ np.vstack(centres).astype(np.float32).T
    return [kinds[int(i)] for i in np.argmax(scores, axis=1)]
