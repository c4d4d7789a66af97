"""How far could names lead between the memories a question needs? (docs/entities.md, "Search:
following names"). Reads the labelled evidence only, no search:

    python benchmarks/names_between_evidence.py ../shared/data/locomo_dev.json \\
        ../shared/data/everyday_dev.json

For each LoCoMo category and for the everyday suite's multi_hop questions, the share of
questions that name something (the strong mentions of ``core.names.extract``; in LoCoMo,
the two speakers' names left out: every turn is theirs), whose evidence shares a name with
the question, and, with two or more pieces of evidence, where two of them share a name: an
upper bound on what a walk over the entity graph, seeded by the query or by one piece of
evidence, can reach."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from memstream.bench.locomo import CATEGORIES, load
from memstream.core.names import extract, key_of


def keys(text: str, leave: frozenset[str] | set[str] = frozenset()) -> set[str]:
    return {m.key for m in extract(text) if m.strong} - leave


def tally(t: Counter[str], query: set[str], evidence: list[set[str]]) -> None:
    t["questions"] += 1
    t["name something"] += bool(query)
    t["evidence shares a name with the question"] += any(e & query for e in evidence)
    if len(evidence) > 1:
        t["with two or more pieces of evidence"] += 1
        t["two pieces of evidence share a name"] += any(
            evidence[i] & evidence[j] for i in range(len(evidence))
            for j in range(i + 1, len(evidence)))


def show(name: str, t: Counter[str]) -> None:
    n, multi = t["questions"], t["with two or more pieces of evidence"]
    print(f"{name:<22}{n:>5}{t['name something'] / n:>10.2f}"
          f"{t['evidence shares a name with the question'] / n:>12.2f}{multi:>8}"
          + (f"{t['two pieces of evidence share a name'] / multi:>12.2f}" if multi else
             f"{'-':>12}"))


def main(locomo: str, everyday: str) -> None:
    print(f"{'':<22}{'n':>5}{'name sth':>10}{'ev ~ query':>12}{'n (2+)':>8}{'ev ~ ev':>12}")
    by: dict[str, Counter[str]] = {}
    for conv in load(locomo):
        speakers = {key_of(t.text.split(":", 1)[0]) for t in conv.turns if ":" in t.text}
        turns = {t.dia_id: keys(t.text.split(":", 1)[-1], speakers) for t in conv.turns}
        for q in conv.questions:
            evidence = [turns[d] for d in q.evidence if d in turns]
            if evidence:
                tally(by.setdefault(CATEGORIES[q.category], Counter()),
                      keys(q.text, speakers), evidence)
    for name, t in sorted(by.items()):
        show(f"LoCoMo {name}", t)
    t = Counter()
    for q in json.loads(Path(everyday).read_text(encoding="utf-8"))["questions"]:
        if q["type"] == "multi_hop":
            tally(t, keys(q["question"]), [keys(x) for x in q["expected"]])
    show("everyday multi_hop", t)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python benchmarks/names_between_evidence.py LOCOMO_JSON EVERYDAY_JSON")
    main(sys.argv[1], sys.argv[2])
