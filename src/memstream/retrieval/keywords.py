"""From a query text to the terms sent to the keyword index.

Words are lower-cased, possessive "'s" is dropped, and English function words (the list below)
are removed so that an OR query does not match every record on "the" or "what". The index
itself stems (FTS5's porter tokenizer, PostgreSQL's english configuration).
"""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "query_terms"]

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
