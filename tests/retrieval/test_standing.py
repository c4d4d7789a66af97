"""Standing instructions keep a place in the hits (retrieval.standing); recency counts fully
only for questions about the present (scoring.asks_about_now); keyword evidence of a long
passage is length-normalised (retrieval.relevance)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from memstream import Memory
from memstream.retrieval.relevance import evidence
from memstream.retrieval.scoring import PAST_RECENCY, asks_about_now
from memstream.retrieval.standing import PLAUSIBLE, SLOT, is_standing, lift, recalls_the_past

H = 3600.0
NOW = 1_700_000_000.0


@pytest.mark.parametrize("text", [
    "Always include exact API version numbers when I ask about integrations.",
    "user: Always provide step-by-step explanations when I ask about proofs.",
    "human: never book me a middle seat",
    "Please always answer in French.",
    "Don't ever schedule meetings before 9.",
    "Remember to cc my manager on travel plans.",
    "I prefer OAuth 2.0 PKCE for public clients.",
    "I'd rather take the train than fly.",
    "user: I really prefer short answers.",
])
def test_standing_statements(text: str):
    assert is_standing(text)


@pytest.mark.parametrize("text", [
    "The user always takes the 8:15 train.",  # a habit reported, not an instruction
    "Is it always this hot in July?",
    "I went hiking; I prefer mountains to beaches though.",  # not how the message opens
    "Caroline: I love painting sunsets.",
    "Caroline: Always believe in yourself!",  # said to a friend, not to the assistant
    "Sometimes I'd rather stay in.",
])
def test_not_standing(text: str):
    assert not is_standing(text)


class _Hit(NamedTuple):
    text: str
    logit: float
    lifted: bool = False


def _lift(hits: list[_Hit], k: int, query: str = "Which version should I install?"
          ) -> list[_Hit]:
    best = next((h for h in hits if is_standing(h.text)), None)
    if best is None:
        return hits[:k]
    return lift(hits[:k], best, query=query, key=lambda h: h.text,
                standing=lambda h: is_standing(h.text), logit=lambda h: h.logit,
                mark=lambda h: h._replace(lifted=True))


def test_lift_keeps_one_place_for_a_plausible_standing_memory():
    ranked = [_Hit(f"topic {n}", 3.0 - n / 10) for n in range(8)]
    rule = _Hit("Always include version numbers.", 0.0)
    got = _lift([*ranked, rule], k=10)
    assert got[SLOT - 1] == rule._replace(lifted=True)
    assert [h.text for h in got[:SLOT - 1]] == [f"topic {n}" for n in range(SLOT - 1)]
    assert len(got) == 9 and not any(h.lifted for n, h in enumerate(got) if n != SLOT - 1)
    # a shorter list: the last place, never the first
    assert [h.text for h in _lift([*ranked, rule], k=3)] == ["topic 0", "topic 1", rule.text]
    assert _lift([*ranked, rule], k=1) == ranked[:1]
    # an unrelated instruction stays where it is; one already high enough is left alone
    far = _Hit("Always include version numbers.", PLAUSIBLE - 0.1)
    assert _lift([*ranked, far], k=10) == [*ranked, far]
    early = [ranked[0], rule, *ranked[1:]]
    assert _lift(early, k=10) == early
    # a question about what the user did is answered by the memory of it, not by a rule
    assert _lift([*ranked, rule], k=10, query="Which version did I install?") == \
        [*ranked, rule]


_PAST = ["When did I book the dentist?", "How many problems have I completed so far?",
         "What have we decided about the release date?", "What was the budget I mentioned?",
         "Summarize everything we've discussed about the move",
         "Can you list the order in which I brought up my travel plans?",
         "Give me a summary of our conversations about the garden."]
_NOT_PAST = ["What should I keep in mind for a good daily routine?",
             "Can you suggest some snack ideas I can prepare quickly?",
             "What happened at the last team practice?",
             "How have our sales been doing lately?",
             "Which libraries are in this project's technology stack?",
             "Could you help me write the equation of a line through (3, 4)?"]


@pytest.mark.parametrize(("query", "past"), [(q, True) for q in _PAST]
                         + [(q, False) for q in _NOT_PAST])
def test_questions_about_the_past_and_requests_about_the_world(query: str, past: bool):
    assert recalls_the_past(query) is past


def test_asks_about_now():
    for query in ("What was I doing just now?", "Which city does the user live in now?",
                  "What is my current plan?", "the latest version", "Do I still run?"):
        assert asks_about_now(query), query
    for query in ("When did Caroline go to the support group?", "What can't Maria eat?",
                  "Which version of the SDK did I use in March?"):
        assert not asks_about_now(query), query


def test_a_standing_instruction_comes_with_a_question_on_its_subject(small: Memory):
    small.add("Always include exact library versions when I ask about technology stacks.",
              at=NOW - 90 * 24 * H)
    for n, (lib, use) in enumerate([("FastAPI", "the REST layer"), ("SQLAlchemy", "the models"),
                                    ("Celery", "background jobs"), ("Redis", "the cache"),
                                    ("pytest", "the tests"), ("React", "the dashboard"),
                                    ("Postgres", "the main database")]):
        small.add(f"For the project's technology stack we picked {lib} for {use}.",
                  at=NOW - (n + 1) * 24 * H)
    hits = small.search("Which libraries are in this project's technology stack?", k=10,
                        touch=False)
    texts = [h.record.text for h in hits]
    assert texts.index("Always include exact library versions when I ask about technology "
                       "stacks.") <= SLOT - 1
    lifted = [h for h in hits if h.explain.lifted]
    assert all(is_standing(h.record.text) for h in lifted)
    # a question on another subject does not bring it
    hits = small.search("What can I cook with lentils?", k=5, touch=False)
    assert not any(h.explain.lifted for h in hits)
    # nor does a question about what was decided before: the records of it answer that
    # (the instruction is plausibly related, and was lifted to place SLOT before)
    hits = small.search("When did we decide on the database?", k=10, touch=False)
    assert not any(h.explain.lifted for h in hits)
    assert all(h.record.text.startswith("For the project's technology stack")
               for h in hits[:SLOT])


def test_recency_counts_fully_only_for_questions_about_the_present(small: Memory):
    small.add("Moved to Porto for the new job.", at=NOW - 200 * 24 * H)
    now_hit = small.search("Where do I live now?", k=1, touch=False)[0]
    past_hit = small.search("Where did I move for the job?", k=1, touch=False)[0]
    assert now_hit.explain.weights[0] == pytest.approx(0.5)
    assert past_hit.explain.weights[0] == pytest.approx(0.5 * PAST_RECENCY)


def test_keyword_evidence_of_a_long_passage_is_read_from_its_window():
    """A long record's keyword share is read from its window, as its vector is: words past
    the window are no evidence; the window's share is not scaled down further (with the
    namespace's own null that cost BEAM dev 0.018 recall_any@5)."""
    short = "The staging cluster runs Kubernetes 1.29."
    filler = " ".join(["Notes about the deploy pipeline and its many steps."] * 8)
    whole = short + " " + filler  # under 512 characters: a whole statement, not a window
    long = whole + " " + filler  # longer than its window
    late = filler + " " + filler + " " + short  # the words only past its window
    found = evidence("Which Kubernetes version does staging run?",
                     {"s": short, "w": whole, "l": long, "x": late}, {}, {}, null=(0.0, 1.0))
    assert found["s"].keyword == found["w"].keyword == found["l"].keyword > 0
    assert found["x"].keyword == 0
