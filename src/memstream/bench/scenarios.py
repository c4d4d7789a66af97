"""Everyday retrieval scenarios: a small store of two dozen memories spread over a month, plus
the memories of one case; a question; the memory that must come first.

Every case runs against the same distractors, among them a recent (three days old) and
important note that answers nothing ("found a catastrophic bug in the billing export"). Times
are days before "now"; importance is given where a case is about it (else the offline
heuristic rates it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: (text, days ago, importance or None)
DISTRACTORS: list[tuple[str, float, float | None]] = [
    ("Went for a 10 km run along the river before work.", 29, None),
    ("Booked a dentist check-up for the kids next month.", 27, None),
    ("The CI job for the payments service is flaky again; reran it twice.", 25, None),
    ("Bought a new pair of hiking boots on sale.", 24, None),
    ("Had lunch with Priya at the Thai place near the office.", 22, None),
    ("Renewed the car insurance; the premium went up a little.", 21, None),
    ("Watched a documentary about octopuses with the family.", 19, None),
    ("The team agreed to move the weekly sync to Wednesday mornings.", 18, None),
    ("Fixed the leaking kitchen tap with a new washer.", 16, None),
    ("Read two chapters of the novel about the lighthouse keeper.", 15, None),
    ("Paid the electricity bill online.", 13, None),
    ("Planted tomatoes and basil on the balcony.", 12, None),
    ("Tried a new sourdough recipe; the crust came out too dark.", 10, None),
    ("Reviewed the pull request that adds retries to the mail sender.", 9, None),
    ("Called grandma to wish her a happy birthday.", 8, None),
    ("The printer on the third floor is out of toner.", 7, None),
    ("Cleaned out the garage and donated old toys.", 6, None),
    ("Ordered more printer paper and sticky notes for the office.", 5, None),
    ("Took the cat to the vet for her yearly vaccination.", 4, None),
    ("Updated the laptop to the latest operating system.", 3, None),
    ("Went to the farmers market and bought strawberries.", 2, None),
    ("Listened to a podcast episode about sleep and memory.", 1.5, None),
    ("Found a catastrophic bug in the billing export: invoices were duplicated.", 3, 1.0),
    ("Replied to a long email thread about the office party budget.", 0.1, None),
]


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    query: str
    expected: str
    #: the case's own memories: (text, days ago, importance or None); ``expected`` among them
    memories: list[tuple[str, float, float | None]] = field(default_factory=list)


def _one(name: str, kind: str, query: str, text: str, days: float,
         importance: float | None = None) -> Case:
    return Case(name, kind, query, text, [(text, days, importance)])


CASES: list[Case] = [
    # old but relevant beats recent or important but unrelated
    _one("allergy", "old relevant", "What can't Maria eat?",
         "Maria is allergic to peanuts and shellfish.", 28),
    _one("school start", "old relevant", "When does the kid begin classes?",
         "School starts for Leo on September 4th.", 26),
    _one("k8s version", "old relevant", "Which Kubernetes version does staging run?",
         "Staging runs Kubernetes 1.29; production is still on 1.27.", 20),
    _one("plane seat", "old relevant", "Where does Ana like to sit on a plane?",
         "Ana always asks for a window seat when she flies.", 17),
    _one("wifi", "old relevant", "What's the wifi password at the cabin?",
         "The cabin wifi password is pinecone-42.", 30),
    _one("parking", "old relevant", "Where did I park the car at the airport?",
         "Parked the car at the airport in lot C, row 14.", 9),
    _one("plumber", "old relevant", "Who fixed the boiler last time?",
         "Marco the plumber repaired the boiler; his number is on the fridge.", 23),
    _one("passport", "old relevant", "When does my passport expire?",
         "My passport expires in March 2027.", 29),
    # paraphrase with no shared words
    _one("vegetarian", "paraphrase", "Does Tom eat meat?",
         "Tom became a vegetarian last year.", 14),
    _one("car trouble", "paraphrase", "Why was I late to work on Tuesday?",
         "My car wouldn't start on Tuesday morning, so I had to take the bus.", 11),
    _one("bike theft", "paraphrase", "What happened to my bicycle?",
         "Someone stole my bike from outside the library.", 19),
    _one("moving abroad", "paraphrase", "Is Sofia relocating to another country?",
         "Sofia accepted a job in Berlin and will emigrate in spring.", 16),
    # the newer of two facts
    # written as an assistant keeps notes about its user: with the default embedder, "I just
    # moved to Lisbon." is less like the question than "Paid the electricity bill online."
    Case("city now", "newer fact", "Which city does the user live in now?",
         "The user just moved to Lisbon.", [("The user moved to Porto.", 200, None),
                                            ("The user just moved to Lisbon.", 5, None)]),
    Case("phone number", "newer fact", "What is Jonas's phone number?",
         "Jonas has a new phone number: 555-0199.",
         [("Jonas's phone number is 555-0142.", 60, None),
          ("Jonas has a new phone number: 555-0199.", 3, None)]),
    Case("manager", "newer fact", "Who is my manager?",
         "Since the reorganisation my manager is Chen.",
         [("My manager is Dana.", 90, None),
          ("Since the reorganisation my manager is Chen.", 10, None)]),
    # a rescheduled event
    Case("dentist moved", "rescheduled", "When is the dentist appointment?",
         "The dentist appointment was moved to Thursday at 3 pm.",
         [("The dentist appointment is on Tuesday at 10 am.", 12, None),
          ("The dentist appointment was moved to Thursday at 3 pm.", 2, None)]),
    Case("launch moved", "rescheduled", "When is the product launch?",
         "The product launch has been postponed to June 12.",
         [("The product launch is planned for May 20.", 25, None),
          ("The product launch has been postponed to June 12.", 4, None)]),
    # the more important of two twins
    Case("important twin", "importance", "What did the doctor say about my blood pressure?",
         "The doctor said my blood pressure is dangerously high and I must start medication.",
         [("The doctor said my blood pressure is a bit high.", 8, 0.3),
          ("The doctor said my blood pressure is dangerously high and I must start medication.",
           8, 0.95)]),
    Case("important deadline", "importance", "What is the deadline for the tax return?",
         "Hard deadline: the tax return must be filed by April 30 or we pay a penalty.",
         [("Someone mentioned the tax return deadline is around the end of April.", 6, 0.2),
          ("Hard deadline: the tax return must be filed by April 30 or we pay a penalty.", 6,
           0.9)]),
    # exact terms, numbers, names
    _one("error code", "exact term", "What does error E4021 mean?",
         "Error E4021 means the upload token expired.", 21),
    _one("ticket", "exact term", "What was ticket OPS-7731 about?",
         "OPS-7731: the nightly backup job skips the analytics database.", 18),
    _one("room number", "number", "Which room is the workshop in?",
         "The workshop is in room 4.17 on the fourth floor.", 13),
    _one("budget figure", "number", "How much is the marketing budget this quarter?",
         "The marketing budget for this quarter is 42,000 euros.", 24),
    _one("name lookup", "name", "What does Bartholomew do for a living?",
         "Bartholomew works as a marine biologist in Plymouth.", 27),
    _one("name lookup 2", "name", "Who is Ingrid?",
         "Ingrid is my sister-in-law; she lives in Oslo.", 22),
    # nothing relevant: recency and importance decide
    Case("just now", "nothing relevant", "What was I doing just now?",
         "Replied to a long email thread about the office party budget.", []),
    Case("today", "nothing relevant", "What did I do today?",
         "Replied to a long email thread about the office party budget.", []),
    # a stored question and its answer
    Case("gym hours", "question vs answer", "What time does the gym open on Sundays?",
         "The gym opens at 8 am on Sundays.",
         [("What time does the gym open on Sundays?", 3, None),
          ("The gym opens at 8 am on Sundays.", 3, None)]),
    Case("library hours", "question vs answer", "Until when is the library open on Fridays?",
         "The library is open until 9 pm on Fridays.",
         [("Until when is the library open on Fridays?", 7, None),
          ("The library is open until 9 pm on Fridays.", 6.9, None)]),
    # identical twins at different times: the newer one
    Case("twins", "identical twins", "Where are the spare keys?",
         "The spare keys are in the blue bowl by the door.",
         [("The spare keys are in the blue bowl by the door.", 20, 0.5),
          ("The spare keys are in the blue bowl by the door.", 2, 0.5)]),
    Case("twins 2", "identical twins", "What is the gate code?",
         "The gate code is 1379.",
         [("The gate code is 1379.", 15, 0.5), ("The gate code is 1379.", 1, 0.5)]),
]

#: for the twins: which copy must come first (the newer one)
NEWEST_OF_TWINS = {"twins": 2, "twins 2": 1}

DAY = 86400.0
#: "now" of every scenario (2024-06-01T12:00:00Z)
NOW = 1_717_243_200.0


class _Remembering:
    """An embedder that embeds each document text once (the runs' fresh stores all ask for the
    background sentences of relevance)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.seen: dict[str, Any] = {}

    def embed_documents(self, texts: Any) -> Any:
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self.seen]
        if todo:
            self.seen.update(zip(todo, self.inner.embed_documents(todo), strict=True))
        return np.vstack([self.seen[t] for t in texts]) if texts else \
            self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


@dataclass
class Outcome:
    case: Case
    first: str
    ok: bool


def run(embedder: Any, *, weights: str | None = None) -> list[Outcome]:
    """Each case in a fresh in-memory store (the distractors plus its memories, vectors from
    ``embedder``, embedded once), searched at ``NOW`` without touching; whether the expected
    memory comes first."""
    from ..config import Config
    from ..core.clock import FixedClock
    from ..engine.memory import Memory

    texts = sorted({t for t, _, _ in DISTRACTORS} | {t for c in CASES for t, _, _ in c.memories})
    vectors = dict(zip(texts, embedder.embed_documents(texts), strict=True))
    embedder = _Remembering(embedder)  # each fresh store embeds the background sentences once
    out = []
    for case in CASES:
        config = Config(reflection_threshold=0)
        with Memory(":memory:", embedder=embedder, config=config, clock=FixedClock(NOW),
                    llm=None) as mem:
            # every memory a record of its own, so the twins are two records to rank (by
            # default the second add of the same text would refresh the first: tested apart)
            for text, days, importance in DISTRACTORS + case.memories:
                mem.add(text, at=NOW - days * DAY, importance=importance,
                        embedding=vectors[text], duplicates="keep")
            hits = mem.search(case.query, k=3, touch=False, weights=weights)
            first = hits[0].record if hits else None
            ok = first is not None and first.text == case.expected
            if first is not None and ok and case.name in NEWEST_OF_TWINS:  # the newer copy
                ok = first.last_accessed_at >= NOW - NEWEST_OF_TWINS[case.name] * DAY - 1
            out.append(Outcome(case, first.text if first else "", ok))
    return out


def render(results: dict[str, list[Outcome]]) -> str:
    """Per kind of case: how many put the expected memory first, for each weighting."""
    names = list(results)
    kinds = list(dict.fromkeys(o.case.kind for o in next(iter(results.values()))))
    lines = [f"{'kind':<20}" + "".join(f"{n:>12}" for n in names)]
    for kind in kinds:
        cells = []
        for n in names:
            rows = [o for o in results[n] if o.case.kind == kind]
            cells.append(f"{sum(o.ok for o in rows)}/{len(rows)}")
        lines.append(f"{kind:<20}" + "".join(f"{c:>12}" for c in cells))
    lines.append(f"{'all':<20}" + "".join(
        f"{sum(o.ok for o in results[n])}/{len(results[n])}".rjust(12) for n in names))
    for n in names:
        for o in results[n]:
            if not o.ok:
                lines.append(f"  {n}: {o.case.name}: first was {o.first!r}")
    return "\n".join(lines)
