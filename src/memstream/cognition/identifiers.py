"""Identifiers: what names one order, ticket, invoice or pallet among many of its kind. Two
records that name different identifiers are different things, however alike they read (an
agent's log of orders from one template), unless one says it replaces the other
(``cognition.changes.DISTINCT_CHANGE``). Read from the shape of a token, never from a word of
any language."""

from __future__ import annotations

import re

__all__ = ["distinct_subjects", "distinct_things", "identifiers"]

#: what names one thing among many of its kind, in any language's records: a number after a
#: number sign, a code of capital letters and digits (with or without hyphens: "RE-2025-014",
#: "CL-0417", "T1234"), or a run of five digits or more (an order, a tracking number); not a
#: date, a time, an amount or a count
_IDENTIFIER = re.compile(
    r"[#№]\s?\d+[\w-]*"
    r"|\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*\b"
    r"|(?<![\d.,:/-])\d{5,}(?![\d.,:/-]\d)")


def identifiers(text: str) -> set[str]:
    """The identifiers ``text`` names (``_IDENTIFIER``), as their letters and digits in
    capitals ("#48210" and "48210" are one)."""
    out = set()
    for m in _IDENTIFIER.finditer(text):
        key = re.sub(r"[^0-9A-Za-z]", "", m.group()).upper()
        if key.isdigit():  # a number: after a number sign, or of five digits or more
            if len(key) >= 5 or m.group()[0] in "#№":
                out.add(key)
        elif len(key) >= 3 and any(c.isdigit() for c in key):  # a code
            out.add(key)
    return out


def distinct_things(new: str, old: str) -> bool:
    """Whether two texts are about different things of one kind: they name identifiers and
    share none (an order, a ticket, an invoice each of their own), or they open alike and
    name different subjects there (``distinct_subjects``)."""
    a, b = identifiers(new), identifiers(old)
    return (bool(a) and bool(b) and not (a & b)) or distinct_subjects(new, old)


_OPENING = re.compile(r"[^\W_][\w'-]*|#?\d[\w-]*", re.UNICODE)


def distinct_subjects(new: str, old: str) -> bool:
    """Whether two texts open with the same words and then name different subjects: the
    first word after the shared opening is capitalised in both and differs ("Project Alder:
    ..." and "Project Rowan: ...", "Appuntamento di Giulia Conti" and "Appuntamento di Anna
    Costa"): an agent's log of one template, one record per subject. Read from the words'
    order and casing only (no language's words); the opening holds no capitalised word but
    its first. On the changes sets, no labelled change or restatement reads so but one of
    559 (two months' statements of one farm)."""
    a, b = _OPENING.findall(new)[:6], _OPENING.findall(old)[:6]
    n = 0
    while n < min(len(a), len(b)) and a[n].lower() == b[n].lower():
        n += 1
    if n == 0 or n >= min(len(a), len(b)):
        return False
    return (a[n][:1].isupper() and b[n][:1].isupper()
            and not any(w[:1].isupper() for w in a[1:n]))
