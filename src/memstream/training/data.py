"""The reader's training pairs, from the two training sets (never from a set a figure is
reported on):

- ``pairs_train.jsonl``: an older and a newer memory and what the newer does to the older
  (one of ``RELATIONS``);
- ``other_subjects``: each change or restatement whose two texts share what names their
  subject (an identifier, a capitalised name), that name replaced in the older text by
  another: the same attribute of another subject ("other_subject"), so that the reader
  learns to read who or what a record is about, not only what kind of news it is;
- ``changes_train.json`` (the format of the changes bench): for each memory, the pairs the
  worker would read (its ``NEAREST`` most alike older memories of the same store, by the
  embedder's cosine), labelled from the store's links: "changes" when the newer one is a
  later version of the older one's fact, "restates" when both restate one fact, otherwise
  "not a change nor a restatement" (``NEITHER``: the reader is not told which of the four
  other relations); each labelled change, restatement and near miss (``near``) is read
  whether or not it is among the nearest.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cognition.identifiers import identifiers
from ..cognition.reader import RELATIONS

__all__ = ["NEITHER", "Pair", "from_pairs", "from_stores", "other_subjects"]

#: the group of relations a pair may have when it is known only to be neither a change nor a
#: restatement
NEITHER = "neither"


@dataclass(frozen=True, slots=True)
class Pair:
    older: str
    newer: str
    #: one of ``RELATIONS``, or ``NEITHER``
    label: str


def from_pairs(path: str | Path) -> list[Pair]:
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            raw = json.loads(line)
            if raw["relation"] not in RELATIONS:
                raise ValueError(f"unknown relation {raw['relation']!r} in {path}")
            out.append(Pair(raw["older"], raw["newer"], raw["relation"]))
    return out


def from_stores(path: str | Path, embed: Callable[[Sequence[str]], np.ndarray], *,
                nearest: int = 5) -> list[Pair]:
    """The pairs of every store of a changes set; ``embed`` gives unit vectors."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    out: list[Pair] = []
    for store in raw["stores"]:
        out.extend(_store_pairs(store["memories"], embed, nearest))
    return out


def _store_pairs(memories: list[dict[str, str]], embed: Callable[[Sequence[str]], np.ndarray],
                 nearest: int) -> list[Pair]:
    mems = sorted(memories, key=lambda m: (m["at"], int(m["id"][1:])))
    by_id = {m["id"]: m for m in mems}
    canonical = {m["id"]: m.get("duplicate_of", m["id"]) for m in mems}

    def chain(mid: str) -> set[str]:
        out: set[str] = set()
        while (nxt := by_id[mid].get("superseded_by")) and nxt not in out:
            out.add(nxt)
            out.add(canonical[nxt])
            mid = nxt
        return out

    def label(old: dict[str, str], new: dict[str, str]) -> str:
        if new["id"] in chain(old["id"]) or new["id"] in chain(canonical[old["id"]]):
            return "changes"
        if canonical[old["id"]] == canonical[new["id"]]:
            return "restates"
        return NEITHER

    kept = [m for m in mems if m["label"] != "junk"]
    vecs = embed([m["text"] for m in kept])
    seen: set[tuple[str, str]] = set()
    out: list[Pair] = []

    def add(old: dict[str, str], new: dict[str, str], rel: str | None = None) -> None:
        if (old["id"], new["id"]) not in seen:
            seen.add((old["id"], new["id"]))
            out.append(Pair(old["text"], new["text"], rel or label(old, new)))

    for n, new in enumerate(kept):
        if n:
            sims = vecs[:n] @ vecs[n]
            for k in np.argsort(-sims)[:nearest]:
                add(kept[int(k)], new)
        if new.get("near") in by_id:
            add(by_id[new["near"]], new, NEITHER)
        if new.get("duplicate_of") in by_id:
            add(by_id[new["duplicate_of"]], new, "restates")
    for old in kept:
        if old.get("superseded_by") in by_id:
            add(old, by_id[old["superseded_by"]], "changes")
    return out


#: a capitalised word after the first of its sentence: a name, in most cased languages
_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b[^\W\d_][\w'-]*", re.UNICODE)


def _names(text: str) -> set[str]:
    return {w for w in _NAME.findall(text) if w[:1].isupper() and len(w) > 2}


def _other_number(token: str, rng: random.Random) -> str:
    """``token`` with each of its digits moved by one and the same non-zero step."""
    step = rng.randint(1, 8)
    return re.sub(r"\d", lambda m: str((int(m.group()) + step) % 10), token)


def other_subjects(pairs: Sequence[Pair], *, seed: int = 0) -> list[Pair]:
    """For each change or restatement whose texts share an identifier or a name, the pair
    with that identifier or name replaced in the older text: "other_subject"."""
    rng = random.Random(seed)
    pool = sorted({n for p in pairs for n in _names(p.older)})
    out: list[Pair] = []
    for p in pairs:
        if p.label not in ("changes", "restates"):
            continue
        shared_ids = [m.group() for m in re.finditer(r"[#№]?\s?[A-Z]*[-]?\d[\w-]*", p.older)
                      if identifiers(m.group()) & identifiers(p.newer)]
        if shared_ids:
            token = shared_ids[0]
            out.append(Pair(p.older.replace(token, _other_number(token, rng)), p.newer,
                            "other_subject"))
            continue
        shared = sorted(_names(p.older) & _names(p.newer))
        if shared and pool:
            name = rng.choice(shared)
            other = rng.choice(pool)
            if other != name:
                out.append(Pair(re.sub(rf"\b{re.escape(name)}\b", other, p.older), p.newer,
                                "other_subject"))
    return out
