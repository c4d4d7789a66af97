"""Keyword ranking: from a query text to its terms, and the policy that weighs them.

Words are lower-cased, possessive "'s" is dropped, and English function words (the list below)
are removed so that an OR query does not match every record on "the" or "what". The index
itself stems (FTS5's porter tokenizer, PostgreSQL's english configuration).

The ranking policy lives here, once for every backend (``keyword_search``): a term weighs its
idf, ``log((N - n + 0.5) / (n + 0.5))`` (at least ``1e-6``), with ``N`` and ``n`` the
statistics of what the search selects (of the selection when it holds at most
``SELECTION_STATS`` records, else of its namespace): other namespaces, and other users of the
same one, never shift a ranking. Terms held by more than ``max(MAX_DF_FLOOR, MAX_DF_RATIO *
N)`` records are left out: they add almost nothing to the score but would make every record
that holds them a candidate (when every term is that common, the rarest stays); so are terms
held by half the records or more (an idf of zero) when another term carries evidence. The
backend scores each record by the weighted sum of its own BM25 term frequency and length part
(``SearchIndexes.keyword_scores``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Protocol

from .._types import TermStats
from ..filters import Selection

__all__ = ["MAX_DF_FLOOR", "MAX_DF_RATIO", "SELECTION_STATS", "STOPWORDS", "idf",
           "keyword_search", "query_terms", "weigh"]

#: a selection of at most this many records has its own statistics; a larger one its namespace's
SELECTION_STATS = 5000
#: terms in more records than ``max(MAX_DF_FLOOR, MAX_DF_RATIO * N)`` are left out
MAX_DF_FLOOR = 2000
MAX_DF_RATIO = 0.02
#: the smallest idf (FTS5's): a term held by half the records or more is evidence of nothing
MIN_IDF = 1e-6

STOPWORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't
doing don't down during each few for from further had hadn't has hasn't have haven't having he
he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if
in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off on
once only or other ought our ours ourselves out over own same shan't she she'd she'll she's
should shouldn't so some such than that that's the their theirs them themselves then there
there's these they they'd they'll they're they've this those through to too under until up very
was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which
while who who's whom why why's will with won't would wouldn't you you'd you'll you're you've
your yours yourself yourselves also just get got s t
""".split())

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)


def query_terms(text: str, *, max_terms: int = 64) -> list[str]:
    """Distinct content words of a query, in order of first appearance."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        if word.endswith("'s"):
            word = word[:-2]
        if word in STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        seen.setdefault(word, None)
        if len(seen) >= max_terms:
            break
    return list(seen)


def idf(records: int, holders: int) -> float:
    """BM25's idf, ``log((N - n + 0.5) / (n + 0.5))``, at least ``1e-6`` (as FTS5's)."""
    if records <= 0:
        return MIN_IDF
    holders = min(max(holders, 0), records)  # a count reported past the cap may pass N
    return max(MIN_IDF, math.log((records - holders + 0.5) / (holders + 0.5)))


def cap(records: int) -> int:
    """How many holders a term may have before it is left out."""
    return max(MAX_DF_FLOOR, int(MAX_DF_RATIO * records))


def weigh(stats: TermStats, terms: Sequence[str]) -> list[tuple[str, float]]:
    """The terms that count, each with its weight (see the module docstring)."""
    known = [t for t in terms if t in stats.matches]
    if not known:
        return []
    limit = cap(stats.records)
    kept = [t for t in known if stats.matches[t] <= limit] or [
        min(known, key=lambda t: (stats.matches[t], known.index(t)))]
    weights = [(t, idf(stats.records, stats.matches[t])) for t in kept]
    if any(w > MIN_IDF and stats.matches[t] for t, w in weights):
        weights = [(t, w) for t, w in weights if w > MIN_IDF]
    return weights


class _Keywords(Protocol):
    def term_stats(self, sel: Selection, terms: Sequence[str], *, selection_up_to: int,
                   cap: Callable[[int], int]) -> TermStats: ...

    def keyword_scores(self, sel: Selection, weighted: Sequence[tuple[str, float]], limit: int
                       ) -> list[tuple[str, float]]: ...


def keyword_search(store: _Keywords, sel: Selection, terms: Sequence[str], limit: int
                   ) -> list[tuple[str, float]]:
    """(id, score) of the best ``limit`` records for ``terms`` (plain words), best first: BM25
    with the statistics of what the search selects. No terms: []."""
    words = list(dict.fromkeys(w for t in terms if (w := t.replace('"', " ").strip())))
    if not words or limit <= 0:
        return []
    stats = store.term_stats(sel, words, selection_up_to=SELECTION_STATS, cap=cap)
    weighted = weigh(stats, words)
    return store.keyword_scores(sel, weighted, limit) if weighted else []
