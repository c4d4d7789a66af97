"""Would a second retrieval round reach LoCoMo's multi-hop evidence? (docs/entities.md, "Search:
following names"). Each question's default top 40 is read once; then each reordering below is
scored against the default on every category, with multi-hop by conversation:

    python benchmarks/multihop_rounds.py ../shared/data/locomo_dev.json

- ``seeded``: the default's first ``keep`` hits stay; the rest come in the order of
  ``alpha`` cos(turn, query) + (1 - alpha) cos(turn, best hit), over the default's 40 (a second
  dense round seeded by the first, as pseudo-relevance feedback does);
- ``sessions``: at most ``cap`` turns of one session in the first ten (the default's first three
  stay), the rest after them;
- ``speaker``: where the question names one of the conversation's two speakers, every turn of
  the other speaker moves ``depth`` places down (97% of multi-hop evidence is the named
  speaker's, and 9% of the default's first ten multi-hop hits are the other's).

It prints recall_any@5 / recall_frac@10 per category. Nothing is fitted: every setting is
printed, so a choice made by reading them is a choice made on this set."""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from memstream import Config, Memory
from memstream.bench.locomo import CATEGORIES, load

POOL = 40
ORDER = ("overall", "multi-hop", "temporal", "open-domain", "single-hop")


@dataclass
class Asked:
    conversation: str
    category: str
    evidence: set[str]
    query: np.ndarray
    ranked: list[str]  # dia_ids, the default's order
    vectors: np.ndarray  # the ranked turns' unit vectors
    others: set[str]  # the ranked turns of the speaker the question does not name (if it
    # names one of the two)


Reorder = Callable[[Asked], list[str]]


def read(path: str) -> list[Asked]:
    """Every question's default top ``POOL``, with the unit vectors of the turns."""
    asked = []
    with Memory(":memory:", config=Config(reflection_threshold=0), llm=None) as mem:
        assert mem.embedder is not None
        for conv in load(path):
            ns = "locomo-" + re.sub(r"[^A-Za-z0-9._-]", "-", conv.sample_id)
            mem.add_many(({"text": t.text, "at": t.at, "metadata": {"dia_id": t.dia_id}}
                          for t in conv.turns), namespace=ns)
            mem.flush()
            records = mem.get_all(namespace=ns, limit=None, include_invalid=True)
            dia = {r.id: r.metadata["dia_id"] for r in records}
            vectors = mem.embedder.embed_documents([r.text for r in records])
            unit = {dia[r.id]: v / np.linalg.norm(v) for r, v in zip(records, vectors, strict=True)}
            now = max(t.at for t in conv.turns) + 86400
            speaker = {t.dia_id: t.text.split(":", 1)[0] for t in conv.turns}
            for q in conv.questions:
                qv = mem.embedder.embed_query(q.text)
                hits = mem.search(q.text, k=POOL, namespace=ns, now=now, touch=False,
                                  vector=qv)
                ranked = [dia[h.record.id] for h in hits]
                named = {s for s in speaker.values() if re.search(rf"\b{re.escape(s)}\b", q.text)}
                others = {d for d in ranked if speaker[d] not in named} if len(named) == 1 \
                    else set()
                asked.append(Asked(conv.sample_id, CATEGORIES[q.category], set(q.evidence),
                                   qv / np.linalg.norm(qv), ranked,
                                   np.stack([unit[d] for d in ranked]), others))
            print(f"read {conv.sample_id}: {len(conv.questions)} questions", file=sys.stderr)
    return asked


def seeded(alpha: float, keep: int) -> Reorder:
    def reorder(a: Asked) -> list[str]:
        score = alpha * (a.vectors @ a.query) + (1 - alpha) * (a.vectors @ a.vectors[0])
        rest = [a.ranked[i] for i in np.argsort(-score, kind="stable") if i >= keep]
        return a.ranked[:keep] + rest
    return reorder


def sessions(cap: int, keep: int = 3) -> Reorder:
    def reorder(a: Asked) -> list[str]:
        out, later, count = list(a.ranked[:keep]), [], defaultdict(int)
        for d in out:
            count[d.split(":")[0]] += 1
        for d in a.ranked[keep:]:
            s = d.split(":")[0]
            (out if count[s] < cap else later).append(d)
            count[s] += d in out
        return out + later
    return reorder


def speaker(depth: int) -> Reorder:
    def reorder(a: Asked) -> list[str]:
        place = {d: n + (depth if d in a.others else 0) for n, d in enumerate(a.ranked)}
        return sorted(a.ranked, key=lambda d: place[d])  # stable: ties keep the default's order
    return reorder


def report(name: str, asked: list[Asked], reorder: Reorder) -> None:
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    by_conv: dict[str, list[float]] = defaultdict(list)
    for a in asked:
        r = reorder(a)
        any5 = float(any(d in a.evidence for d in r[:5]))
        frac10 = len(set(r[:10]) & a.evidence) / len(a.evidence)
        for key in (a.category, "overall"):
            sums[key][0] += any5
            sums[key][1] += frac10
            sums[key][2] += 1
        if a.category == "multi-hop":
            by_conv[a.conversation].append(frac10)
    cells = " ".join(f"{sums[c][0] / sums[c][2]:.3f}/{sums[c][1] / sums[c][2]:.3f}"
                     for c in ORDER)
    convs = " ".join(f"{np.mean(v):.2f}" for v in by_conv.values())
    print(f"{name:<22} {cells}   {convs}")


def main() -> None:
    asked = read(sys.argv[1])
    print(f"{'':<22} " + " ".join(f"{c[:11]:<11}" for c in ORDER)
          + "   multi-hop frac@10 by conversation")
    report("default", asked, lambda a: a.ranked)
    for keep in (5, 7):
        for alpha in (0.7, 0.5):
            report(f"seeded keep {keep} a {alpha}", asked, seeded(alpha, keep))
    for cap in (1, 2, 3):
        report(f"sessions cap {cap}", asked, sessions(cap))
    for depth in (3, 10, POOL):
        report(f"speaker depth {depth}", asked, speaker(depth))


if __name__ == "__main__":
    main()
