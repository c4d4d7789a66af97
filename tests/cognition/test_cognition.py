"""Importance, reflection, extraction and consolidation: with a local chat-completions server
and offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memstream import Config, FixedClock, Memory
from memstream.engine.cognitive import NoInferenceWarning
from memstream.llm import ChatClient

T0 = 1_700_000_000.0


def _client(chat, **kw) -> ChatClient:
    return ChatClient(base_url=chat.url, model="local", timeout=kw.pop("timeout", 5), **kw)


def _memory(path: Path, chat=None, **kw) -> Memory:
    return Memory(path, embedder="none", llm=_client(chat, **kw) if chat else None,
                  clock=FixedClock(T0), config=Config(reflection_threshold=0))


# --- importance ---------------------------------------------------------------------------------

def test_the_importance_heuristic_reads_a_long_record_s_beginning() -> None:
    """A record longer than ``READ`` characters is judged by its beginning: a problem named
    only past it adds nothing (a 990,000-character record was read whole, in 0.36 s)."""
    from memstream.cognition.importance import READ, heuristic_importance

    filler = "the plan for the day is the same as the day before, " * (READ // 50 + 1)
    assert heuristic_importance(filler + "the build failed") == heuristic_importance(filler)
    assert heuristic_importance("the build failed " + filler) == \
        heuristic_importance(filler) + 0.15


def test_llm_rates_importance_in_the_background(tmp_path: Path, chat):
    chat.respond = lambda body: '{"rating": 9}' if "server is on fire" in json.dumps(body) \
        else '{"rating": 2}'
    with _memory(tmp_path / "m.db", chat) as mem:
        fire = mem.add("The server is on fire")
        ok = mem.add("ok")
        given = mem.add("The server is on fire again", importance=0.3)
        mem.flush(timeout=30)
        assert mem.get(fire.id).importance == 0.9
        assert mem.get(ok.id).importance == 0.2
        assert mem.get(given.id).importance == 0.3  # the caller's value always wins
        assert len(chat.requests) == 2
        assert [h.event for h in mem.history(fire.id)] == ["add", "update"]


@pytest.mark.parametrize("answer", ['{"rating": 11}', '{"rating": "very"}', "seven", "[]",
                                    '{"rating": 6.5}'])
def test_bad_ratings_keep_the_offline_value(tmp_path: Path, chat, answer):
    chat.respond = lambda body: answer
    with _memory(tmp_path / "m.db", chat) as mem:
        rec = mem.add("The deploy failed with a critical error")
        mem.flush(timeout=30)
        assert mem.get(rec.id).importance == rec.importance  # the heuristic value stays
        assert len(chat.requests) == 2  # asked once more, then gave up
        assert mem.store.queues.pending_ratings(5) == []


def test_network_errors_and_timeouts_lose_no_write(tmp_path: Path, chat):
    chat.mode, chat.delay = "slow", 1.0
    with _memory(tmp_path / "m.db", chat, timeout=0.2, retries=0) as mem:
        rec = mem.add("written while the LLM hangs")
        mem.flush(timeout=30)
        assert mem.get(rec.id).text == "written while the LLM hangs"
        assert mem.get(rec.id).importance == rec.importance
    with Memory(tmp_path / "n.db", embedder="none",
                llm=ChatClient(base_url="http://127.0.0.1:9/v1", model="m", timeout=0.5,
                               retries=0)) as mem:
        mem.add("written while the LLM is unreachable")
        mem.flush(timeout=30)
        with pytest.warns(NoInferenceWarning):
            changes = mem.add([{"role": "user", "content": "I love tea"}], infer=True)
        assert [c.record.text for c in changes] == ["I love tea"]
        assert mem.count() == 2


def test_budget_exhaustion_falls_back(tmp_path: Path, chat):
    chat.respond = lambda body: '{"rating": 9}'
    # a rating prompt is about 130 tokens: the budget allows one call, not two
    with _memory(tmp_path / "m.db", chat, daily_token_budget=200) as mem:
        first = mem.add("first, rated by the model")
        mem.flush(timeout=30)
        second = mem.add("second, over budget")
        mem.flush(timeout=30)
        assert mem.get(first.id).importance == 0.9
        assert mem.get(second.id).importance == second.importance  # offline value kept
        assert len(chat.requests) == 1


# --- reflection ---------------------------------------------------------------------------------

def _reflection_server(body: dict) -> str:
    prompt = body["messages"][0]["content"]
    if "salient high-level questions" in prompt:
        return json.dumps({"questions": ["What does Klaus care about?",
                                         "How is the research going?"]})
    numbers = [int(n) for n in re.findall(r"^(\d+)\. .*Klaus", prompt, re.M)]
    return json.dumps({"insights": [
        {"insight": "Klaus is dedicated to his research on gentrification",
         "evidence": [*numbers[:2], 999]},
        {"insight": "An insight with invented evidence only", "evidence": [999]},
    ]})


def test_llm_reflection_cites_real_records(tmp_path: Path, chat):
    chat.respond = _reflection_server
    with _memory(tmp_path / "m.db", chat) as mem:
        for text in ("Klaus is reading a book on gentrification",
                     "Klaus is writing a research paper on gentrification",
                     "Maria is making coffee", "Klaus talks with Ayesha about his research"):
            mem.add(text, importance=0.5)
        (insight,) = mem.reflect()
        assert insight.kind == "reflection"
        assert insight.text == "Klaus is dedicated to his research on gentrification"
        cited = [mem.get(i) for i in insight.provenance]
        assert len(cited) == 2 and all("Klaus" in r.text for r in cited)
        assert insight.metadata == {"reflection": "llm"}
        # a reflection can be reflected on: it is in the stream like any record
        assert any(h.record.id == insight.id for h in mem.search("dedicated research"))


def test_extractive_reflection_offline(tmp_path: Path):
    with _memory(tmp_path / "m.db") as mem:
        ids = [mem.add(t).id for t in (
            "The kitchen tap is dripping again", "The kitchen tap is dripping badly",
            "The landlord will fix the kitchen tap", "Bought fresh bread at the bakery")]
        (insight,) = mem.reflect()
        assert insight.text.startswith("Recurring: The kitchen tap is dripping")
        assert set(insight.provenance) <= set(ids) and len(insight.provenance) >= 2
        assert ids[3] not in insight.provenance


def test_automatic_reflection_after_enough_importance(tmp_path: Path, chat):
    chat.respond = lambda body: "not json"  # the LLM fails: offline reflection still happens
    mem = Memory(tmp_path / "m.db", embedder="none", llm=_client(chat), clock=FixedClock(T0),
                 config=Config(reflection_threshold=1.5))
    with mem:
        for i in range(3):
            mem.add(f"the garden gate squeaks every morning ({i})", importance=0.5)
        mem.add("the garden gate squeaks loudly", importance=0.5)
        mem.flush(timeout=30)
        reflections = mem.get_all(kinds="reflection")
        assert len(reflections) == 1 and len(reflections[0].provenance) >= 2
        mem.add("another unrelated note", importance=0.2)
        mem.flush(timeout=30)
        assert len(mem.get_all(kinds="reflection")) == 1  # the threshold starts again


def test_no_automatic_offline_reflection_without_an_llm(tmp_path: Path):
    with Memory(tmp_path / "m.db", embedder="none", llm=None, clock=FixedClock(T0),
                config=Config(reflection_threshold=1.5)) as mem:
        for i in range(6):
            mem.add(f"the garden gate squeaks every morning ({i})", importance=0.5)
        mem.flush(timeout=30)
        assert mem.get_all(kinds="reflection") == []  # nothing by itself...
        assert len(mem.reflect()) == 1  # ...but on demand, as before


# --- extraction ---------------------------------------------------------------------------------

def _extraction_server(script: dict[str, str]):
    def respond(body: dict) -> str:
        prompt = body["messages"][0]["content"]
        if prompt.startswith("Extract the facts"):
            for key, facts in script.items():
                if key in prompt:
                    return json.dumps({"facts": facts})
            return json.dumps({"facts": []})
        new = prompt.split("New fact: ", 1)[1].splitlines()[0]
        return script["decide:" + new]
    return respond


def test_extraction_adds_updates_supersedes_and_skips(tmp_path: Path, chat, ):
    chat.respond = _extraction_server({
        "I drink coffee every morning": ["The user drinks coffee every morning"],
        "I switched to green tea": ["The user now drinks green tea instead of coffee"],
        "decide:The user now drinks green tea instead of coffee":
            '{"action": "supersede", "target": 1, "text": null}',
        "I live in Lisbon": ["The user lives in Lisbon"],
        "near the river": ["The user lives in Lisbon near the river"],
        "decide:The user lives in Lisbon near the river":
            '{"action": "update", "target": 1, "text": "The user lives in Lisbon, by the river"}',
        "decide:The user lives in Lisbon": '{"action": "add", "target": null, "text": null}',
        "by the river, as I said": ["The user lives in Lisbon, by the river"],
    })
    clock = FixedClock(T0)
    with Memory(tmp_path / "m.db", embedder="none", llm=_client(chat), clock=clock,
                config=Config(reflection_threshold=0)) as mem:
        (c1,) = mem.add([{"role": "user", "content": "I drink coffee every morning"}],
                        infer=True, user_id="u")
        assert (c1.event, c1.record.text, c1.record.kind) == (
            "add", "The user drinks coffee every morning", "fact")
        clock.advance(hours=24)
        (c2,) = mem.add([{"role": "user", "content": "I switched to green tea"}], infer=True,
                        user_id="u")
        assert c2.event == "supersede" and c2.previous is not None
        assert c2.previous.id == c1.record.id and c2.previous.superseded_by == c2.record.id
        assert [h.record.text for h in mem.search("what does the user drink", user_id="u")] \
            == ["The user now drinks green tea instead of coffee"]
        before = mem.search("what does the user drink", user_id="u", as_of=T0 + 3600)
        assert [h.record.text for h in before] == ["The user drinks coffee every morning"]
        assert mem.history(c1.record.id)[-1].event == "invalidate"  # never deleted
        (c3,) = mem.add([{"role": "user", "content": "I live in Lisbon"}], infer=True,
                        user_id="u")
        (c4,) = mem.add([{"role": "user", "content": "near the river, actually"}], infer=True,
                        user_id="u")
        assert c4.event == "update" and c4.record.id == c3.record.id
        assert c4.record.text == "The user lives in Lisbon, by the river"
        asked = len(chat.requests)
        (c5,) = mem.add([{"role": "user", "content": "by the river, as I said"}], infer=True,
                        user_id="u")
        assert c5.event == "noop" and c5.record.id == c3.record.id  # not stored twice
        assert len(chat.requests) == asked + 1  # the duplicate was caught without asking
        assert mem.count(user_id="u", kinds="fact") == 2


def test_infer_without_llm_stores_messages_and_says_so(tmp_path: Path):
    with _memory(tmp_path / "m.db") as mem:
        with pytest.warns(NoInferenceWarning):
            changes = mem.add([{"role": "user", "content": "I like jazz"},
                               {"role": "assistant", "content": "Noted!"}], infer=True)
        assert [(c.event, c.record.kind, c.record.data) for c in changes] == [
            ("add", "message", {"role": "user"}), ("add", "message", {"role": "assistant"})]
        plain = mem.add([{"role": "user", "content": "no inference asked"}])
        assert plain[0].record.text == "no inference asked"


# --- as_of and consolidation ----------------------------------------------------------------------

def test_as_of_returns_what_was_valid_then(tmp_path: Path):
    clock = FixedClock(T0)
    with Memory(tmp_path / "m.db", embedder="none", clock=clock) as mem:
        old = mem.add("the office is on floor 3")
        clock.advance(hours=10)
        new = mem.add("the office is on floor 5")
        clock.advance(hours=1)
        mem.invalidate(old.id, superseded_by=new.id)  # at T0 + 11 h
        assert [r.id for r in mem.get_all(as_of=T0 + 3600)] == [old.id]
        assert [r.id for r in mem.get_all(as_of=T0 + 10.5 * 3600)] == [old.id, new.id]
        assert [r.id for r in mem.get_all(as_of=T0 + 11 * 3600)] == [new.id]
        assert [r.id for r in mem.get_all()] == [new.id]
        assert [h.record.id for h in mem.search("office floor", as_of=T0)] == [old.id]
        assert mem.get_all(as_of=T0 - 1) == []


def test_consolidation_offline_keeps_provenance(tmp_path: Path):
    with _memory(tmp_path / "m.db") as mem:
        a = mem.add("Maria is allergic to peanuts.", importance=0.4)
        b = mem.add("maria is ALLERGIC to peanuts", importance=0.9)
        c = mem.add("Maria likes Thai food")
        (change,) = mem.consolidate()
        assert change.record.id == b.id  # the most important survives
        assert set(change.record.provenance) == {a.id}
        assert mem.get(a.id).superseded_by == b.id and not mem.get(a.id).valid
        assert mem.get(c.id).valid
        assert mem.consolidate() == []


def test_consolidation_with_real_vectors_and_llm_merge(tmp_path: Path, e5, chat):
    chat.respond = lambda body: '{"text": "Maria is severely allergic to peanuts and nuts."}'
    with Memory(tmp_path / "m.db", embedder=e5, llm=_client(chat),
                config=Config(reflection_threshold=0)) as mem:
        ids = [mem.add(t, importance=0.5).id for t in (
            "Maria is severely allergic to peanuts.", "Maria has a severe peanut allergy.",
            "The train to Porto leaves at 9am.")]
        mem.flush(timeout=60)
        changes = mem.consolidate()
        assert len(changes) == 1
        merged = changes[0].record
        assert merged.text == "Maria is severely allergic to peanuts and nuts."
        assert {merged.id, *merged.provenance} == set(ids[:2])
        assert mem.get(ids[2]).valid


def test_scheduled_consolidation(tmp_path: Path, chat):
    chat.respond = lambda body: "no"  # the LLM is useless: the offline paths run
    with Memory(tmp_path / "m.db", embedder="none", llm=_client(chat), clock=FixedClock(T0),
                config=Config(reflection_threshold=0, consolidate_every=3)) as mem:
        a = mem.add("Water the ferns on Friday", importance=0.5)
        mem.add("water the ferns on friday!", importance=0.6)
        mem.flush(timeout=30)
        assert mem.get(a.id).valid  # 2 new records: not due yet
        mem.add("Pay the gas bill", importance=0.5)
        mem.flush(timeout=30)
        assert not mem.get(a.id).valid and mem.count() == 2
