"""Dates a query names: "on June 6", "el viernes 18 de abril", "am 1. Mai", "in November",
"2025-02-14". Each becomes a span of time (a day, or a month when no day is named) in UTC,
in the most recent year that puts it at or before "now" unless the query names the year.

This reads month names of English, Spanish and German, with a day number before or after
them (a German day ends in a period, a Spanish one may be followed by "de"), and ISO dates in
any language. It is an extra, keyed to the words of three languages: a query in another
language names no date here, and nothing else changes for it (docs/retrieval.md, "Dates").
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime

__all__ = ["MONTHS", "spans"]

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
    seconds; none when it names no date."""
    when = datetime.fromtimestamp(now, tz=UTC)
    out: list[tuple[float, float, bool]] = []
    taken: list[tuple[int, int]] = []
    for n, pattern in enumerate(_PATTERNS, start=1):
        for m in pattern.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue  # part of a date already read ("June 6" is not also "in June")
            groups = m.groupdict()
            day = groups.get(f"d{n}")
            year = groups.get(f"y{n}")
            span = _span(int(year) if year else None, _month(groups[f"m{n}"]),
                         int(day) if day else None, when)
            if span is not None:
                taken.append((m.start(), m.end()))
                out.append((*span, day is not None))
    return out
