"""Dates a query names: "on June 6", "el viernes 18 de abril", "am 1. Mai", "in November",
"2025-02-14", and days counted from now: "this morning", "gestern", "hace 3 días", "last week".
Each becomes a span of time (a day, or a month or week when no day is named) in UTC, in the
most recent year that puts it at or before "now" unless the query names the year.

This reads month names of English, Spanish and German, with a day number before or after
them (a German day ends in a period, a Spanish one may be followed by "de"), ISO dates in any
language, and the words of the three languages for today, yesterday, N days ago, last week and
this week. It is an extra, keyed to the words of three languages: a query in another language
names no date here, and nothing else changes for it (docs/retrieval.md, "Dates"). Times
relative to another event ("the morning after the outage") are read by ``anchors``.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from ..core.name_words import DATES

__all__ = ["MONTHS", "NUMBER", "NUMBERS", "number", "of_date", "overlaps", "spans", "told",
           "without_days"]

#: month names and abbreviations (lower case) of English, Spanish and German
MONTHS: dict[str, int] = {}
for _n, _names in enumerate((
        "january jan enero januar jänner", "february feb febrero februar",
        "march mar marzo märz maerz", "april apr abril",
        "may mayo mai", "june jun junio juni", "july jul julio juli",
        "august aug agosto", "september sep sept septiembre setiembre",
        "october oct octubre oktober", "november nov noviembre",
        "december dec diciembre dezember dez"), start=1):
    for _name in _names.split():
        MONTHS[_name] = _n

_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th|\.|º)?"
_YEAR = r"(?:,?\s+(?:de\s+|del\s+)?(?P<{}>(?:19|20)\d\d))?"
_PATTERNS = [
    # June 6, June 6th 2025, Feb. 14
    re.compile(rf"\b(?P<m1>{_MONTH})\.?\s+{_DAY.format('d1')}(?![\d:]){_YEAR.format('y1')}",
               re.IGNORECASE),
    # 6 June, 1. Mai, 18 de abril (de 2025)
    re.compile(rf"\b{_DAY.format('d2')}\s+(?:de\s+)?(?P<m2>{_MONTH})\b{_YEAR.format('y2')}",
               re.IGNORECASE),
    # 2025-06-06
    re.compile(r"\b(?P<y3>(?:19|20)\d\d)-(?P<m3>[01]\d)-(?P<d3>[0-3]\d)\b"),
    # in November, en noviembre, im November (a month alone)
    re.compile(rf"\b(?:in|en|im|during|durante|of|de)\s+(?P<m4>{_MONTH})\b{_YEAR.format('y4')}",
               re.IGNORECASE),
]


#: a date written in a text: its span (start, end, whether it is one day) and where it is
_Written = tuple[tuple[float, float, bool], tuple[int, int]]

#: the pattern of ISO dates (the one without a month's name), counted from 1
_ISO = 3
_WORDS = re.compile(r"\w+")

_DAY_SECONDS = 86400.0
#: numbers written out, up to a week and a half (English, Spanish, German)
NUMBERS = {w: n for n, words in enumerate((
    "", "one a an uno una un ein eine einem einen", "two dos zwei", "three tres drei",
    "four cuatro vier", "five cinco fünf fuenf", "six seis sechs", "seven siete sieben",
    "eight ocho acht", "nine nueve neun", "ten diez zehn"), start=0) for w in words.split()}
#: a count of days: digits or a number written out (``number`` reads it)
NUMBER = r"(?:\d{1,2}|" + "|".join(sorted((w for w in NUMBERS if w), key=len,
                                          reverse=True)) + ")"
#: days counted back from today: (pattern, days back, whether one day; else a week from then);
#: a pattern that counts holds the count as its one group
_FROM_NOW = [
    (re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening)|heute|hoy"
                r"|esta\s+(?:mañana|tarde|noche))\b", re.IGNORECASE), 0, True),
    (re.compile(r"\b(?:the\s+day\s+before\s+yesterday|vorgestern|anteayer)\b",
                re.IGNORECASE), 2, True),
    (re.compile(r"\b(?:yesterday|gestern|ayer|anoche)\b", re.IGNORECASE), 1, True),
    (re.compile(rf"\b(?:({NUMBER})\s+days?\s+ago|vor\s+({NUMBER})\s+tag(?:en)?"
                rf"|hace\s+({NUMBER})\s+d[ií]as?)\b", re.IGNORECASE), None, True),
    (re.compile(r"\b(?:last\s+week|letzte[n]?\s+woche|vorige[n]?\s+woche"
                r"|la\s+semana\s+pasada)\b", re.IGNORECASE), 7, False),
    (re.compile(r"\b(?:this\s+week|diese\s+woche|esta\s+semana)\b", re.IGNORECASE), 0,
     False),
]


#: what a count of days back holds (``_FROM_NOW``'s counting pattern)
_COUNTED = ("day", "tag", "hace")


def number(raw: str) -> int:
    """The count ``NUMBER`` matched: "3", "three", "drei", "tres"."""
    return int(raw) if raw.isdigit() else NUMBERS.get(raw.lower(), 0)


def overlaps(taken: list[tuple[int, int]], m: re.Match[str]) -> bool:
    """Whether ``m`` overlaps a match already read ("the day before yesterday" is not also
    "yesterday", "June 6" not also "in June")."""
    return any(a < m.end() and m.start() < b for a, b in taken)


def _from_now(query: str, when: datetime) -> list[tuple[float, float, bool]]:
    """The days or weeks ``query`` counts back from ``when`` (its day at midnight, UTC); a week
    runs Monday to Sunday."""
    today = datetime(when.year, when.month, when.day, tzinfo=UTC)
    out = []
    taken: list[tuple[int, int]] = []
    lowered = query.lower()
    for pattern, back, one_day in _FROM_NOW:
        if back is None and not any(w in lowered for w in _COUNTED):
            continue  # "3 days ago", "vor 2 Tagen", "hace tres días" hold one of these
        for m in pattern.finditer(query):
            if overlaps(taken, m):
                continue
            taken.append((m.start(), m.end()))
            days = back if back is not None else number(next(g for g in m.groups() if g))
            if one_day:
                start = today - timedelta(days=days)
                out.append((start.timestamp(), start.timestamp() + _DAY_SECONDS, True))
            else:
                monday = today - timedelta(days=today.weekday() + days)
                out.append((monday.timestamp(),
                            min(monday.timestamp() + 7 * _DAY_SECONDS, when.timestamp() + 1.0),
                            False))
    return out


def _month(raw: str) -> int:
    return int(raw) if raw.isdigit() else MONTHS[raw.lower().rstrip(".")]


def _span(year: int | None, month: int, day: int | None, now: datetime
          ) -> tuple[float, float] | None:
    if not 1 <= month <= 12:
        return None
    years = [year] if year is not None else [now.year, now.year - 1]
    for y in years:
        last = calendar.monthrange(y, month)[1]
        if day is not None and not 1 <= day <= last:
            return None
        start = datetime(y, month, day or 1, tzinfo=UTC)
        end = datetime(y, month, day, 23, 59, 59, tzinfo=UTC) if day else \
            datetime(y, month, last, 23, 59, 59, tzinfo=UTC)
        if year is not None or start <= now:
            return start.timestamp(), end.timestamp() + 1.0
    return None


def spans(query: str, now: float) -> list[tuple[float, float, bool]]:
    """The spans of time ``query`` names, as (start, end, whether it is one day), in UTC
    seconds; none when it names no date. Read once per query and time: a search's stages
    ask for them more than once."""
    return list(_spans(query, now))


@lru_cache(maxsize=64)
def _spans(query: str, now: float) -> tuple[tuple[float, float, bool], ...]:
    return tuple([span for span, _ in _written(query, now)]
                 + _from_now(query, datetime.fromtimestamp(now, tz=UTC)))


@lru_cache(maxsize=64)
def _written(query: str, now: float) -> tuple[_Written, ...]:
    """The dates written in a query and where (``_dates``): read once for ``spans`` and
    ``without_days``."""
    return tuple(_dates(query, datetime.fromtimestamp(now, tz=UTC)))


def _read(query: str, now: float) -> tuple[tuple[float, float, bool], ...]:
    when = datetime.fromtimestamp(now, tz=UTC)
    return tuple([span for span, _ in _dates(query, when)] + _from_now(query, when))


def without_days(query: str, now: float) -> str:
    """``query`` without the days it names with their day's number ("am 1. Mai", "el viernes
    18 de abril", "the May 7 outage" -> "the outage"), and the weekday before one: what a
    search matches words with. A record of that day, written then or telling of it, is found
    by its date (``of_date``); the words would find others that share them ("von März bis
    Mai", "el jueves 18 de septiembre"). The query is returned as it is when it names no day."""
    cuts = [where for (_, _, one_day), where in _written(query, now) if one_day]
    if not cuts:
        return query
    out, last = [], 0
    for start, end in sorted(cuts):
        head = query[last:start].rstrip()
        words = head.split()
        if words and words[-1].strip(",.").casefold() in DATES:  # "viernes 18 de abril"
            head = head[: len(head) - len(words[-1])]
        out.append(head)
        last = end
    out.append(query[last:])
    return " ".join(" ".join(out).split())


def _dates(query: str, when: datetime) -> list[_Written]:
    """The dates of ``_PATTERNS`` in ``query``: each span with where it is written."""
    out: list[_Written] = []
    taken: list[tuple[int, int]] = []
    # a month's name is a word of its own in every pattern that has one: a text with none is
    # not searched for them (the patterns' long alternations cost most of the reading)
    months = not MONTHS.keys().isdisjoint(_WORDS.findall(query.lower()))
    for n, pattern in enumerate(_PATTERNS, start=1):
        if n != _ISO and not months:
            continue
        for m in pattern.finditer(query):
            if overlaps(taken, m):
                continue  # part of a date already read
            groups = m.groupdict()
            day = groups.get(f"d{n}")
            year = groups.get(f"y{n}")
            span = _span(int(year) if year else None, _month(groups[f"m{n}"]),
                         int(day) if day else None, when)
            if span is not None:
                taken.append((m.start(), m.end()))
                out.append(((*span, day is not None), (m.start(), m.end())))
    return out


@lru_cache(maxsize=4096)
def told(text: str, written: float) -> tuple[float, ...]:
    """The starts of the days ``text`` names, read at the time it was ``written`` (a date, or a
    day counted back: "yesterday", "vor 2 Tagen"). Kept for the texts read last: a store's
    notes are read again by its next dated query."""
    return tuple(start for start, _, one_day in _read(text, written) if one_day)


def of_date(dated: Sequence[tuple[float, float, bool]], created_at: float,
            text: str = "") -> float:
    """1 for a record of the day the query names (``spans``), 0.5 of its month, else 0. A
    record is of the days it was written on and of the days its ``text`` tells of, read at
    the time it was written ("Yesterday's long run" written on April 13 is of April 12; "on
    12 April" in a note written in May is of April 12, as a date after the note is read in the
    year before)."""
    if not dated:
        return 0.0
    days = (created_at, *told(text, created_at)) if text else (created_at,)
    return max((1.0 if one_day else 0.5 for start, end, one_day in dated
                for day in days if start <= day < end), default=0.0)
