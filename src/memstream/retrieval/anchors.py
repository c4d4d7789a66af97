"""Times a query counts from another event: "the morning after the outage", "the night of the
storm", "a week after she switched shoes", "ein paar Tage vor der Prüfung", "el sábado después
de la boda".

Each becomes a window of days relative to the time of the record the query is anchored on
(which record that is, the notes stage decides: its strongest candidates), and a weekday when
the query names one ("the Saturday after"). Reading the event itself is left to relevance:
the query matches the anchor's record as it matches any record, and the words after the
window ("after *the great storm*") name it.

This reads the words of English, Spanish and German. Like ``dates`` it is an extra, keyed to
three languages' words: a query in another language names no window here, and nothing else
changes for it (docs/retrieval.md, "Dates").
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.name_words import TITLES
from .dates import NUMBER, number, overlaps
from .keywords import query_terms
from .relevance import term_finder

__all__ = ["Window", "event_share", "windows"]


@dataclass(frozen=True, slots=True)
class Window:
    """From ``start`` to ``end`` days after the anchor's time (negative: before it); on
    ``weekday`` only (Monday 0) when set; ``event``: the words that name the anchor's event
    where the query names it after the window ("after *the great storm*"), else ""."""

    start: float
    end: float
    weekday: int | None = None
    event: str = ""

    def holds(self, days: np.ndarray, weekdays: np.ndarray) -> np.ndarray:
        """Which of the records ``days`` after the anchor (on ``weekdays``) it holds."""
        inside: np.ndarray = (days >= self.start) & (days <= self.end)
        return inside if self.weekday is None else inside & (weekdays == self.weekday)


_WEEKDAYS = {w: n for n, words in enumerate((
    "monday lunes montag", "tuesday martes dienstag", "wednesday miércoles miercoles mittwoch",
    "thursday jueves donnerstag", "friday viernes freitag", "saturday sábado sabado samstag "
    "sonnabend", "sunday domingo sonntag")) for w in words.split()}
_WEEKDAY = "(?P<weekday>" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + ")"
_PART = (r"(?:morning|day|night|evening|afternoon|morgen|tag|nacht|abend|nachmittag"
         r"|mañana|día|dia|noche|tarde)")
_AFTER = r"(?:after|later|nach|später|despu[eé]s(?:\s+de(?:l)?)?|siguiente)"
_BEFORE = r"(?:before|earlier|vor(?:her)?|antes(?:\s+de(?:l)?)?|anterior)"
_COUNT = f"(?P<n>{NUMBER})"
_FEW = r"(?:a\s+few|a\s+couple\s+of|several|ein\s+paar|einige[n]?|unos|unas|algunos|pocos)"
_DAYS = r"(?:days?|tage[n]?|d[ií]as?)"
_WEEK = r"(?:week|woche|semana)"

#: (pattern, window in days); a pattern with ``n`` counts days, one with ``weekday`` names one
_RULES: list[tuple[re.Pattern[str], tuple[float, float]]] = [
    (re.compile(rf"\b{_COUNT}\s+{_DAYS}\s+{_AFTER}", re.IGNORECASE), (-1.0, 1.0)),
    (re.compile(rf"\b{_COUNT}\s+{_DAYS}\s+{_BEFORE}", re.IGNORECASE), (-1.0, 1.0)),
    (re.compile(rf"\b{_FEW}\s+{_DAYS}\s+{_AFTER}", re.IGNORECASE), (1.0, 6.0)),
    (re.compile(rf"\b{_FEW}\s+{_DAYS}\s+{_BEFORE}", re.IGNORECASE), (-6.0, -1.0)),
    (re.compile(rf"\b(?:the|a|one|about\s+a|die|eine|la|una)\s+{_WEEK}\s+{_AFTER}",
                re.IGNORECASE), (3.0, 11.0)),
    (re.compile(rf"\b(?:the|a|one|about\s+a|die|eine|la|una)\s+{_WEEK}\s+{_BEFORE}",
                re.IGNORECASE), (-11.0, -3.0)),
    (re.compile(rf"\b{_WEEKDAY}\s+{_AFTER}", re.IGNORECASE), (0.0, 8.0)),
    (re.compile(rf"\b{_WEEKDAY}\s+{_BEFORE}", re.IGNORECASE), (-8.0, 0.0)),
    (re.compile(rf"\b{_PART}\s+{_AFTER}(?!\s+(?:tomorrow|morgen|mañana))", re.IGNORECASE),
     (0.0, 2.0)),
    (re.compile(rf"\b{_PART}\s+{_BEFORE}", re.IGNORECASE), (-2.0, 0.0)),
    # "the night of the storm", "in der Nacht des Sturms", "la noche de la tormenta"
    (re.compile(rf"\b(?:the|in\s+der|am|la|el)\s+{_PART}\s+(?:of\s+the|des|der|vom|de\s+la"
                rf"|del)\s+(?!week|month|year|woche|monats?|jahr|semana|mes|año)",
                re.IGNORECASE), (-0.75, 1.0)),
]
_BACK = re.compile(_BEFORE + r"$", re.IGNORECASE)
#: every rule holds one of these words: a query without any names no window (one scan)
_HINT = re.compile(r"after|later|nach|später|despu|siguiente|before|earlier|vor|antes"
                   r"|anterior|\bof\s+the\b|\bdes\b|\bder\b|\bvom\b|\bde\b|\bdel\b",
                   re.IGNORECASE)
#: the event's words run to the end of the clause: a mark, or a full stop after a word that
#: is no title or initial ("the week after Dr. Haddad's exam" names Dr. Haddad's exam)
_CLAUSE_END = re.compile(r"[?.!;,:]")
_WORD_BEFORE = re.compile(r"(\w+)$")


def _event(rest: str) -> str:
    """The words after a window's rule that name its event, to the end of the clause."""
    for m in _CLAUSE_END.finditer(rest):
        if m.group(0) == ".":
            before = _WORD_BEFORE.search(rest[:m.start()])
            if before is not None and (len(before[1]) == 1 or before[1].lower() in TITLES):
                continue  # "Dr.", "J.": a title or an initial
        return rest[:m.start()].strip()
    return rest.strip()


def windows(query: str) -> list[Window]:
    """The windows of time ``query`` counts from another event (none in most queries)."""
    out: list[Window] = []
    if not _HINT.search(query):
        return out
    taken: list[tuple[int, int]] = []
    for pattern, (start, end) in _RULES:
        for m in pattern.finditer(query):
            if overlaps(taken, m):
                continue  # "three days after" is not also "days after"
            taken.append((m.start(), m.end()))
            groups = m.groupdict()
            weekday = _WEEKDAYS[groups["weekday"].lower()] if groups.get("weekday") else None
            if groups.get("n"):
                days = float(number(groups["n"]))
                days = -days if _BACK.search(m.group(0)) else days
                start, end = days + start, days + end
            event = _event(query[m.end():])
            out.append(Window(start, end, weekday, event))
    return out


def event_share(counted: Sequence[Window], texts: Sequence[str]) -> np.ndarray | None:
    """Per text, the largest share of the words naming an event of ``counted`` it holds, each
    word weighed by its rarity among ``texts`` (as keyword evidence reads words: their first
    five letters; a word most texts hold names no event); None when no window names one."""
    best: np.ndarray | None = None
    for window in counted:
        terms = list(dict.fromkeys(t[:5] for t in query_terms(window.event)))
        if not terms or not texts:
            continue
        find = term_finder(terms)
        held = [find(t) for t in texts]
        n = len(texts)
        weight = {t: max(0.0, math.log((n + 1) / (sum(t in h for h in held) + 0.5)))
                  for t in terms}
        total = sum(weight.values())
        if total <= 0:
            continue
        share = np.array([sum(weight[t] for t in h) / total for h in held], dtype=np.float64)
        best = share if best is None else np.maximum(best, share)
    return best
