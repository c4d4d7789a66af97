"""Small, documented rules: task-type inference and when two strategies or errors match."""

from __future__ import annotations

__all__ = ["errors_similar", "infer_task_type", "words_overlap"]

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


def errors_similar(a: str, b: str) -> bool:
    """One error message contains the other, ignoring case."""
    la, lb = a.lower().strip(), b.lower().strip()
    return bool(la and lb) and (la in lb or lb in la)
