"""Small, documented rules: task-type inference and when two strategies or errors match."""

from __future__ import annotations

import re

__all__ = ["errors_similar", "infer_task_type", "same_order", "words_overlap"]

#: First matching rule wins; the words are looked for anywhere in the lower-cased task.
TASK_TYPE_RULES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("test", "validate"), "testing"),
    (("api", "endpoint"), "api_testing"),
    (("form", "input"), "form_testing"),
    (("database", "query"), "database_validation"),
)


def infer_task_type(task: str) -> str:
    """testing, api_testing, form_testing, database_validation or general (rules above)."""
    low = task.lower()
    for words, task_type in TASK_TYPE_RULES:
        if any(w in low for w in words):
            return task_type
    return "general"


def words_overlap(a: str, b: str) -> bool:
    """The fallback strategy match without an embedder: the two strategies share at least
    min(3, half the words of the longer one) words, and at least one. (Measured on the longer
    one so that the answer does not depend on the order of the arguments.)"""
    wa, wb = set(a.lower().split()), set(b.lower().split())
    return len(wa & wb) >= max(1, min(3, max(len(wa), len(wb)) // 2))


_STEP_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
#: what separates the steps of a strategy ("A then B", "A before B", "A, B", "first A; B")
_SEQUENCE = re.compile(r"\b(?:then|before|first|next|finally|afterwards)\b|[;,]|->|→",
                       re.IGNORECASE)
_AFTER = re.compile(r"\bafter\b", re.IGNORECASE)


def _steps(text: str) -> list[set[str]]:
    """The steps of a strategy in the order they are done, each as its words' first five
    letters ("B after A" is A, then B)."""
    parts = _AFTER.split(text, maxsplit=1)
    if len(parts) == 2:
        text = f"{parts[1]} then {parts[0]}"
    chunks = (c for c in _SEQUENCE.split(text) if c.strip())
    return [s for s in ({w[:5] for w in _STEP_WORD.findall(c.lower())} for c in chunks) if s]


def same_order(a: str, b: str) -> bool:
    """Whether two strategies do their steps in the same order: each step of ``a`` matched to
    the step of ``b`` that shares most of its words, the matches must not go backwards. "Run
    migrations before switching traffic" and "switch traffic then run migrations" are the
    same steps in another order, different strategies; "validate empty fields before checking
    formats" and "check empty fields first, then validate the formats" are one. A strategy of
    one step is no evidence (True)."""
    sa, sb = _steps(a), _steps(b)
    if len(sa) < 2 or len(sb) < 2:
        return True
    places = []
    for step in sa:
        shared = [len(step & other) for other in sb]
        if max(shared):
            places.append(shared.index(max(shared)))
    return places == sorted(places)


def errors_similar(a: str, b: str) -> bool:
    """One error message contains the other, ignoring case."""
    la, lb = a.lower().strip(), b.lower().strip()
    return bool(la and lb) and (la in lb or lb in la)
