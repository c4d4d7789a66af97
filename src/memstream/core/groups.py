"""Items grouped by the pairs that link them (union-find): near-duplicates in consolidation and
in search."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["join"]


def join(count: int, pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The indices ``0 .. count - 1`` grouped by ``pairs`` (transitively), each group in
    ascending order, the groups in order of their first index; a lone index is a group of one.

    >>> join(5, [(0, 3), (3, 4)])
    [[0, 3, 4], [1], [2]]
    """
    parent = list(range(count))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in pairs:
        parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for i in range(count):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])
