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


def same_order(a: str, b: str) -> bool:
    """Whether the words two strategies share come in the same order in both: "run the
    migrations, then switch traffic" and "switch traffic, then run the migrations" hold the
    same steps in another order, and are different strategies. Words are compared on their
    first five letters (switch, switching); fewer than two shared words is no evidence."""
    def steps(text: str) -> list[str]:
        return list(dict.fromkeys(w[:5] for w in _STEP_WORD.findall(text.lower())))

    sa, sb = steps(a), steps(b)
    shared = set(sa) & set(sb)
    return len(shared) < 2 or [w for w in sa if w in shared] == [w for w in sb if w in shared]


def errors_similar(a: str, b: str) -> bool:
    """One error message contains the other, ignoring case."""
    la, lb = a.lower().strip(), b.lower().strip()
    return bool(la and lb) and (la in lb or lb in la)
