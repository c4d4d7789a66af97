"""What is current: changes, restatements and junk found when memories are written (the worker,
the real default model), the reads that use the links, and undoing them."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memstream import Memory, Query
from memstream.cognition import changes as model
from memstream.config import Config
from memstream.engine.stages.current import CURRENT, PROBABLE

DAY = 86400.0
T0 = 1.73e9
#: a parent's notes; the move is told without the words "address" or "moved"
NOTES = [
    ("Home address for school forms: 27 Corrin Lane, Pellham Cross, PC4 9LD.", "fact"),
    ("Theo's birthday is 12 March.", "fact"),
    ("Ivy has eczema: only the unscented emollient on her skin.", "fact"),
    ("Dentist for both kids: Thursday 14 November, 10:15, at Brightmoor Dental.", "event"),
    ("Babysitter: Jessa Pruitt, usually Friday evenings.", "fact"),
    ("Our car: blue hatchback, MOT due in April.", "fact"),
    ("Ivy's comfort toy is a grey rabbit called Pebble.", "note"),
    ("Theo's swimming lessons are on Saturdays at the leisure centre.", "event"),
    ("First night sleeping in the new house at 4 Quillon Row, Dunsby Marsh. Boxes everywhere.",
     "note"),
]
JUNK = [("ok thanks!", "message"),
        ("calendar.sync failed: HTTP 504 Gateway Timeout. Retrying in 30s.", "tool"),
        ("👍", "message")]


def _store(path: Path, notes=NOTES, **config) -> tuple[Memory, list[str]]:
    mem = Memory(path, config=Config(reflection_threshold=0, **config), llm=None)
    recs = mem.add_many([{"text": t, "kind": k, "at": T0 + n * DAY, "user_id": "maren"}
                         for n, (t, k) in enumerate(notes)], duplicates="keep")
    mem.flush()
    return mem, [r.id for r in recs]


@pytest.mark.slow
def test_a_correction_by_hand_puts_the_current_version_first(tmp_path: Path):
    """invalidate(old, superseded_by=new): the new note, which shares no word with the
    question, takes the place of the old one it replaces, and the old one follows it."""
    mem, ids = _store(tmp_path / "m.db", find_changes=False)
    with mem:
        old, new = ids[0], ids[-1]
        before = [h.record.id for h in mem.search("What is our home address?", user_id="maren",
                                                   touch=False)]
        assert before[0] == old and before.index(new) > 0
        mem.invalidate(old, superseded_by=new, at=T0 + 8 * DAY)
        hits = mem.search("What is our home address?", user_id="maren", touch=False)
        assert hits[0].record.id == new and old not in [h.record.id for h in hits]
        assert hits[0].explain.lifted and hits[0].explain.updates == (old,)
        # the past on request: the old version follows the current one
        hits = mem.search(Query("What is our home address?", include_invalid=True),
                          user_id="maren", touch=False)
        assert [h.record.id for h in hits[:2]] == [new, old]
        assert hits[1].record.superseded_by == new and not hits[1].record.valid
        assert hits[0].score >= hits[1].score
        # as of a time before the move, the old address is the one
        then = mem.search("What is our home address?", user_id="maren", touch=False,
                          as_of=T0 + 2 * DAY)
        assert then[0].record.id == old and new not in [h.record.id for h in then]


@pytest.mark.slow
def test_a_question_that_names_a_past_time_finds_what_was_so_then(tmp_path: Path):
    """A query naming a time ("on 30 October") asks what was so then: the address valid that
    day stands as itself, though a newer one replaced it since; without the date, the current
    one comes first."""
    mem, ids = _store(tmp_path / "m.db", find_changes=False)
    with mem:
        old, new = ids[0], ids[-1]  # the move: written 27 October 2024, then 4 November
        mem.invalidate(old, superseded_by=new, at=T0 + 8 * DAY)
        now = T0 + 30 * DAY
        then = mem.search("What was our home address on 30 October?", user_id="maren",
                          touch=False, now=now)
        assert then[0].record.id == old and then[0].explain.lifted is None
        assert mem.search("What is our home address?", user_id="maren", touch=False,
                          now=now)[0].record.id == new
        after = mem.search("What was our home address on 20 November?", user_id="maren",
                           touch=False, now=now)
        assert after[0].record.id == new and old not in [h.record.id for h in after]


@pytest.mark.slow
def test_junk_is_found_ranked_last_and_restored(tmp_path: Path):
    mem, ids = _store(tmp_path / "m.db", NOTES + JUNK)
    with mem:
        junk = set(ids[len(NOTES):])
        found = {f.record.id: f for f in mem.audit(kinds="junk")}
        assert set(found) == junk
        assert all(f.applied and f.confidence >= model.APPLY["junk"] and f.reason
                   for f in found.values())
        hits = mem.search("thanks, the calendar sync", user_id="maren", k=len(ids),
                          touch=False)
        order = [h.record.id for h in hits]
        real = [n for n, rid in enumerate(order) if rid not in junk]
        assert all(order.index(j) > max(real) for j in junk if j in order)
        # a prompt's context never spends tokens on junk, however it matches
        block = mem.context("ok thanks, calendar sync", user_id="maren", min_relevance=None,
                            touch=False)
        assert block.hits and not junk & {h.record.id for h in block.hits}
        tool = ids[len(NOTES) + 1]
        mem.restore(tool)
        assert not {f.record.id: f for f in mem.audit(kinds="junk")}[tool].applied
        # nothing of the record changed, yet its history and the events say it was restored
        assert [e.event for e in mem.history(tool)][-1] == "restore"
        last = mem.store.events.events_after(None, 0, limit=1000)[-1]
        assert (last.type, tool in last.record_ids) == ("restored", True)
        hits = mem.search("calendar sync failed", user_id="maren", touch=False)
        assert hits[0].record.id == tool


@pytest.mark.slow
def test_restore_undoes_a_change_in_history_and_events(tmp_path: Path):
    mem, ids = _store(tmp_path / "m.db", find_changes=False)
    with mem:
        mem.invalidate(ids[0], superseded_by=ids[-1])
        back = mem.restore(ids[0])
        assert back.valid and back.superseded_by is None
        assert [e.event for e in mem.history(ids[0])][-2:] == ["invalidate", "restore"]
        events = [e.type for e in mem.store.events.events_after(None, 0, limit=1000)]
        assert events[-2:] == ["superseded", "restored"]
        hits = mem.search("What is our home address?", user_id="maren", touch=False)
        assert hits[0].record.id == ids[0]


def test_restore_names_a_missing_record(kw_memory: Memory):
    from memstream.errors import NotFound

    with pytest.raises(NotFound, match="no record"):
        kw_memory.restore("nope")


def test_invalidate_names_a_missing_successor_and_writes_nothing(kw_memory: Memory):
    """A successor that does not exist used to be written: the memory was then invalid with a
    link to nothing, and searches hid it."""
    from memstream.errors import InvalidInput, NotFound

    rec = kw_memory.add("The bike shop is on Mill Lane")
    with pytest.raises(NotFound, match="'nope'"):
        kw_memory.invalidate(rec.id, superseded_by="nope")
    with pytest.raises(InvalidInput, match="another memory"):
        kw_memory.invalidate(rec.id, superseded_by=rec.id)
    assert kw_memory.get(rec.id).valid
    assert [e.event for e in kw_memory.history(rec.id)] == ["add"]


def test_invalidate_refuses_a_cycle_that_would_hide_every_version(kw_memory: Memory):
    from memstream.errors import InvalidInput

    a, b, c = (kw_memory.add(f"The bike shop is on {street}").id
               for street in ("Mill Lane", "Quay Street", "Hill Road"))
    kw_memory.invalidate(a, superseded_by=b)
    kw_memory.invalidate(b, superseded_by=c)
    with pytest.raises(InvalidInput, match="cycle"):
        kw_memory.invalidate(c, superseded_by=a)
    assert kw_memory.get(c).valid
    assert [h.record.id for h in kw_memory.search("bike shop", touch=False)] == [c]


def test_invalid_junk_policy_names_the_choices():
    from memstream.errors import InvalidInput

    with pytest.raises(InvalidInput, match=r"'keep'.*'refuse'"):
        Config(junk="drop").resolve()


@pytest.mark.slow
def test_chatter_is_refused_in_a_language_never_tuned_on_and_short_facts_are_kept(
        tmp_path: Path):
    """junk="refuse": an acknowledgement or a greeting is not stored (the add says so, and a
    ``refused`` event without its text tells the subscribers), in French as in English; a
    short fact sent as a chat message is stored (the junk model once read "short message" as
    junk: every fact of a new user's chat was)."""
    from memstream.errors import NotFound

    facts = ["Lena plays the cello", "Marco hates cilantro", "J'habite à Lyon depuis mars",
             "Bob prefers aisle seats"]
    chatter = ["thx!", "d'accord, merci", "Hallo, wie geht's?"]
    with Memory(tmp_path / "m.db", config=Config(junk="refuse", reflection_threshold=0),
                llm=None) as mem:
        got = {t: mem.add(t, kind="message", user_id="ana") for t in facts + chatter}
        assert {t for t, r in got.items() if r.event == "refused"} == set(chatter)
        assert all(got[t].event == "add" for t in facts)
        with pytest.raises(NotFound):
            mem.get(got["d'accord, merci"].id)
        assert mem.count(user_id="ana") == len(facts)
        events = mem.store.events.events_after(None, 0, limit=100, types=["refused"])
        assert {e.record_ids[0] for e in events} == {got[t].id for t in chatter}
        assert all(e.data["reason"].startswith("junk") and "text" not in e.data
                   for e in events)


@pytest.mark.slow
def test_short_facts_sent_as_messages_are_not_ranked_as_junk(tmp_path: Path):
    mem, _ = _store(tmp_path / "m.db", [("Lena plays the cello", "message"),
                                        ("Ana prefers window seats on long flights", "message"),
                                        ("Bob prefers aisle seats", "message"),
                                        ("ok thanks!", "message")])
    with mem:
        assert [f.record.text for f in mem.audit(kinds="junk")] == ["ok thanks!"]


def test_a_list_shows_its_scores_in_its_order():
    from memstream.engine.search import in_order

    assert in_order([0.9, 0.4, 0.7, 0.2]) == [0.9, 0.7, 0.7, 0.2]
    assert in_order([]) == []


@pytest.mark.slow
def test_hits_come_in_the_order_of_their_score(tmp_path: Path):
    """Lifts, follow-ups and current versions place hits above higher-scored ones: the list
    still reads in score order (three of 21 searches on a store of notes did not)."""
    mem, ids = _store(tmp_path / "m.db", NOTES + JUNK)
    with mem:
        mem.invalidate(ids[0], superseded_by=ids[len(NOTES) - 1])
        for q in ("What is our home address?", "When is Theo's swimming?", "Who babysits?",
                  "Remind me to thank Jessa", "car MOT", "What does Ivy need?"):
            scores = [h.score for h in mem.search(q, user_id="maren", touch=False)]
            assert scores == sorted(scores, reverse=True), q


@pytest.mark.slow
def test_a_restatement_is_a_duplicate_that_refreshes_its_original(tmp_path: Path):
    restated = ("Reminder: Theo's birthday is on 12 March, plan the party.", "message")
    mem, ids = _store(tmp_path / "m.db", [*NOTES, restated])
    with mem:
        found = mem.audit(kinds="duplicate")
        assert [(f.record.id, f.related.id if f.related else None) for f in found] == [
            (ids[-1], ids[1])]
        assert mem.get(ids[1]).last_accessed_at == mem.get(ids[-1]).created_at
        hits = mem.search("When is Theo's birthday?", user_id="maren", touch=False)
        order = [h.record.id for h in hits]
        assert order[0] == ids[1] and order.index(ids[-1]) == len(order) - 1


@pytest.mark.slow
def test_an_erase_takes_the_findings_about_its_records(tmp_path: Path):
    mem, ids = _store(tmp_path / "m.db", NOTES + JUNK)
    with mem:
        assert {f.record.id for f in mem.audit(kinds="junk")} == set(ids[len(NOTES):])
        mem.delete(ids[-1], erase=True)
        assert ids[-1] not in {f.record.id for f in mem.audit()}
        assert ids[-1] not in mem.store.kv.get_meta("audit:default")


#: (text, days ago) of a newcomer's notes over two years, in three languages; four facts
#: change, each near look-alikes (a friend visiting Lisbon, a colleague's coffee, another
#: sister's move)
NEWCOMER = [
    ("My sister Ana lives in Porto, near the river.", 700),
    ("I drink a double espresso every morning before work.", 690),
    ("Job: junior data analyst at Keller & Voss.", 680),
    ("Ana's birthday is on 3 November; she likes orchids.", 650),
    ("My dentist is Dr. Ferreira, Tuesdays only.", 640),
    ("Gym membership renews every January.", 630),
    ("Mein Vermieter heißt Herr Brandt, Telefon 0341 55 20 19.", 620),
    ("El perro de mi vecino se llama Tofu.", 610),
    ("Favourite lunch place: the Lebanese café on Elm Street.", 600),
    ("Ana's husband Rui works as a ferry pilot.", 590),
    ("Ich spiele donnerstags Badminton im Sportverein Ost.", 580),
    ("Remember: the car insurance number is AX-55120.", 570),
    ("La reunión de vecinos es el primer lunes de cada mes.", 560),
    ("Laptop: the work one is a 14-inch ThinkPad.", 550),
    ("I'm allergic to penicillin.", 540),
    ("The team standup is at 9:30 every weekday.", 530),
    ("My manager is Priya Raman.", 520),
    ("Die Heizung wurde im Oktober gewartet.", 510),
    ("Mi madre prefiere que la llame los domingos.", 500),
    ("Passport expires in 2029.", 490),
    ("Bike lock code is 7312.", 480),
    ("The database migration is due in Q2.", 400),
    ("My friend Tomás is visiting Lisbon in May for a conference.", 300),
    ("Tomás loved Lisbon and wants to go back next year.", 250),
    ("Ana moved to Lisbon with Rui last month; new flat in Alfama.", 200),
    ("These days I start the morning with green tea, no more coffee.", 150),
    ("Promoted! My title is now senior data analyst.", 120),
    ("Priya's sister also moved recently, to Madrid.", 100),
    ("Kaffee trinkt meine Kollegin Jana literweise.", 90),
    ("El alquiler sube a 950 euros en enero.", 80),
    ("Book club reads a Saramago novel this month.", 70),
    ("Plant the tulip bulbs before December.", 65),
    ("The migration slipped: it is now due in Q4.", 60),
    ("Der Zahnarzttermin ist am 12. Dezember.", 50),
    ("Renew the library card at the front desk.", 45),
    ("Water the fern twice a week.", 40),
    ("Quarterly report for the team is due on Friday.", 30),
    ("Me apunté a clases de cerámica los miércoles.", 20),
    ("Priya asked me to mentor the new intern.", 10),
    ("Call the bank about the card fee.", 5),
]


@pytest.mark.slow
def test_a_newcomers_changed_facts_come_first(tmp_path: Path):
    """The newcomer's case, with every default: 40 notes, four facts changed (the new ones
    often share no word with the question); the current version comes first for each."""
    now = T0 + 800 * DAY
    with Memory(tmp_path / "m.db", config=Config(reflection_threshold=0), llm=None) as mem:
        mem.add_many([{"text": t, "at": now - d * DAY} for t, d in NEWCOMER])
        mem.flush()
        for question, current in (
                ("Where does my sister Ana live now?", "Ana moved to Lisbon"),
                ("What do I drink in the morning these days?", "These days I start"),
                ("What is my current job title?", "Promoted!"),
                ("Which quarter is the migration due now?", "The migration slipped")):
            hits = mem.search(question, touch=False, now=now)
            assert hits[0].record.text.startswith(current), (
                question, [h.record.text for h in hits[:3]])


SWIM = ["Theo's swimming lessons: Saturdays 9:30 at the leisure centre.",
        "Swimming is now Thursdays at 17:00 at Dunsby pool; the Saturday slot was too far."]


def _unsure_weights() -> model.Weights:
    """A pair model for which a change of the nearest older record is more likely than not,
    below the confidence to link it (p 0.62 < ``APPLY``), and nothing is junk or a restatement."""
    pair = np.zeros((len(model.LABELS), len(model.PAIR_FEATURES)))
    pair[1, 0], pair[1, model.PAIR_FEATURES.index("nearest")] = -1.0, 1.5
    pair[2, 0] = -20.0
    junk = np.zeros(len(model.JUNK_FEATURES))
    junk[0] = -20.0
    return model.Weights(pair=pair, junk=junk)


@contextlib.contextmanager
def _unsure_store(path: Path, texts: list[str]) -> Iterator[tuple[Memory, list[str]]]:
    """A store compared by ``_unsure_weights``, the texts written a month apart."""
    with model.fitted(_unsure_weights()), Memory(
            path, config=Config(reflection_threshold=0), llm=None) as mem:
        ids = [r.id for r in mem.add_many(
            [{"text": t, "kind": "event", "at": T0 + n * 30 * DAY, "user_id": "maren"}
             for n, t in enumerate(texts)])]
        mem.flush()
        yield mem, ids


def test_a_probable_change_is_tentative_and_a_sure_one_applied():
    new = model.Item("b", SWIM[1], "event", T0 + 30 * DAY)
    old = [model.Item("a", SWIM[0], "event", T0)]
    found = model.decide(new, old, np.array([3.0]), [True], 3.0, 0.0, _unsure_weights())
    assert [(f.kind, f.record, f.related, f.applied, f.tentative) for f in found] == [
        ("superseded", "a", "b", False, True)]
    assert 0.5 < found[0].confidence < model.APPLY["superseded"]
    sure = _unsure_weights()
    sure.pair[1, 0] = 2.0
    found = model.decide(new, old, np.array([3.0]), [True], 3.0, 0.0, sure)
    assert [(f.applied, f.tentative) for f in found] == [(True, False)]
    unlikely = _unsure_weights()
    unlikely.pair[1, 0] = -3.0
    assert model.decide(new, old, np.array([3.0]), [True], 3.0, 0.0, unlikely) == []
    # probable though "no change" is a little more likely: tentative (it only orders reads)
    probable = _unsure_weights()
    probable.pair[1, 0] = -1.7
    found = model.decide(new, old, np.array([3.0]), [True], 3.0, 0.0, probable)
    assert [(f.applied, f.tentative) for f in found] == [(False, True)]
    assert model.TENTATIVE <= found[0].confidence < 0.5


@pytest.mark.slow
def test_a_tentative_change_puts_its_successor_first_about_now_and_links_nothing(
        tmp_path: Path):
    """Below the confidence to link, a probable change invalidates nothing: a read about now
    puts the newer record first and keeps the older one after it; a read as of a time before
    the newer one was written does not see it; restore ends the ordering."""
    with _unsure_store(tmp_path / "m.db", SWIM) as (mem, (old, new)):
        found = mem.audit()
        assert [(f.kind, f.record.id, f.related.id if f.related else None, f.applied,
                 f.tentative) for f in found] == [("superseded", old, new, False, True)]
        assert mem.get(old).valid and mem.get(old).superseded_by is None
        question = "When are Theo's swimming lessons?"
        hits = mem.search(question, user_id="maren", touch=False, now=T0 + 90 * DAY)
        assert [h.record.id for h in hits] == [new, old]
        assert hits[0].explain.lifted and hits[0].explain.updates == (old,)
        assert hits[0].score >= hits[1].score
        # its evidence is its own, not that of the record it stands above
        assert hits[0].explain.evidence != hits[1].explain.evidence
        then = mem.search(question, user_id="maren", touch=False, as_of=T0 + 10 * DAY)
        assert [h.record.id for h in then] == [old]
        mem.restore(old)
        assert [(f.applied, f.tentative) for f in mem.audit()] == [(False, False)]
        hits = mem.search(question, user_id="maren", touch=False, now=T0 + 90 * DAY)
        assert hits[0].record.id == old


@pytest.mark.slow
def test_a_time_named_before_a_record_was_written_does_not_hold_back_its_successor(
        tmp_path: Path):
    """"Are we still going to Tresswick Bay in August?", asked in June about a plan written in
    November: "August" reads as last August, before the plan existed, and held back the
    probable successor (the cancellation), as if the question asked what was so then. A time
    while the record was there still does ("on 5 November": the old slot)."""
    with _unsure_store(tmp_path / "m.db", SWIM) as (mem, (old, new)):  # 27 Oct, 26 Nov 2024
        later = mem.search("Are Theo's swimming lessons at the leisure centre still on in "
                           "September?",
                           user_id="maren", touch=False, now=T0 + 90 * DAY)
        assert [h.record.id for h in later][:2] == [new, old]
        assert later[0].explain.lifted == PROBABLE
        then = mem.search("When were Theo's swimming lessons on 5 November?",
                          user_id="maren", touch=False, now=T0 + 90 * DAY)
        assert [h.explain.lifted for h in then] == [None, None]


@pytest.mark.slow
def test_as_of_a_time_after_a_correction_puts_the_version_valid_then_first(tmp_path: Path):
    """A record corrected by hand (``invalidate(old, superseded_by=new, at=...)``) and asked
    about as of a later time: the version valid then takes the old one's place, lifted as the
    current version, where the new one came with its own lower score. As of a time before the
    correction, the old one stands."""
    with _unsure_store(tmp_path / "m.db", SWIM) as (mem, (old, new)):  # 27 Oct, 26 Nov 2024
        mem.invalidate(old, superseded_by=new, at=T0 + 30 * DAY)
        question = "Are Theo's swimming lessons at the leisure centre on Saturdays?"
        later = mem.search(question, user_id="maren", touch=False, as_of=T0 + 60 * DAY)
        assert later[0].record.id == new
        assert later[0].explain.lifted == CURRENT
        before = mem.search(question, user_id="maren", touch=False, as_of=T0 + 10 * DAY)
        assert [h.record.id for h in before] == [old]


@pytest.mark.slow
def test_the_past_asked_for_puts_what_a_record_replaced_right_after_it(tmp_path: Path):
    """With the past on request (``include_invalid``), a record that replaced another (a
    change tentative or applied) is followed by the one it replaced, above records that match
    the query better than that one."""
    pool = "Dunsby pool closes for repairs in August."
    with _unsure_store(tmp_path / "m.db", [pool, *SWIM]) as (mem, (_, old, new)):
        assert (old, new) in {(f.record.id, f.related.id if f.related else None)
                              for f in mem.audit()}
        hits = mem.search(Query("Swimming at Dunsby pool on Thursdays",
                                include_invalid=True), user_id="maren", touch=False)
        assert [h.record.id for h in hits[:2]] == [new, old]
        assert hits[1].explain.lifted and hits[1].score <= hits[0].score
        now = mem.search("Swimming at Dunsby pool on Thursdays", user_id="maren",
                         touch=False)
        assert [h.record.id for h in now][:1] == [new] and not now[1].explain.lifted


def test_findings_stay_readable_across_versions(kw_memory: Memory):
    """Tentative findings are kept apart from the rest (a version before them, another
    process of a rolling upgrade, reads the rest as it always did: it failed on the unknown
    key), and a key a later version adds to a finding is left out when read."""
    import json

    from memstream.engine import findings as changes

    store = kw_memory.store.kv
    store.set_meta("audit:default", json.dumps({"a": {
        "kind": "junk", "record": "a", "related": None, "confidence": 0.9, "reason": "",
        "applied": True, "added_later": 1}}))
    found = changes.findings(kw_memory, "default")
    assert found["a"].kind == "junk" and found["a"].applied
    changes._save(kw_memory, "default", {**found, "b": model.Decision(
        "superseded", "b", "c", 0.6, "", applied=False, tentative=True)})
    assert set(json.loads(store.get_meta("audit:default"))) == {"a"}
    assert "tentative" not in json.loads(store.get_meta("audit:default"))["a"]
    assert set(json.loads(store.get_meta("audit-tentative:default"))) == {"b"}
    assert changes.findings(kw_memory, "default")["b"].tentative


@pytest.mark.slow
def test_invalidating_by_hand_settles_a_tentative_change(tmp_path: Path):
    """The user confirms a tentative change (the same successor): it is applied; names
    another successor: it is dropped, the user's link stands."""
    with _unsure_store(tmp_path / "m.db", SWIM) as (mem, (old, new)):
        mem.invalidate(old, superseded_by=new)
        [f] = mem.audit()
        assert (f.applied, f.tentative, f.related.id if f.related else None) == (
            True, False, new)
        mem.restore(old)
        assert [(f.applied, f.tentative) for f in mem.audit()] == [(False, False)]
        third = mem.add("Swimming is cancelled for the summer.", user_id="maren",
                        at=T0 + 90 * DAY).id
        mem.flush()
        mem.invalidate(new, superseded_by=third)
        assert mem.get(new).superseded_by == third
        assert new not in {f.record.id for f in mem.audit() if f.tentative}


def test_a_sure_change_replaces_a_tentative_one_and_an_undone_one_stays():
    from memstream.engine.changes import _replaces

    tentative = model.Decision("superseded", "a", "b", 0.6, "", applied=False, tentative=True)
    sure = model.Decision("superseded", "a", "c", 0.9, "")
    assert _replaces(sure, tentative) and _replaces(sure, None)
    assert not _replaces(tentative, sure)
    assert _replaces(model.Decision("superseded", "a", "c", 0.7, "", applied=False,
                                    tentative=True), tentative)
    assert not _replaces(model.Decision("superseded", "a", "c", 0.55, "", applied=False,
                                        tentative=True), tentative)
    undone = model.Decision("superseded", "a", "b", 0.9, "", applied=False)
    assert not _replaces(sure, undone)


RATES = ["Jessa charges £11 an hour for babysitting.",
         "From February it goes up to £12.50, agreed.",
         "Jessa charges £14 an hour for babysitting now."]


def _later_is_likelier() -> model.Weights:
    """A pair model for which a change of the nearest older record is probable, the more the
    longer after it came: the second rate is a tentative change of the first (p 0.77), the
    third a sure one (0.82)."""
    w = _unsure_weights()
    w.pair[1, 0], w.pair[1, model.PAIR_FEATURES.index("days")] = -2.0, 0.5
    return w


@pytest.mark.slow
def test_as_of_a_time_between_two_probable_successors_reads_the_one_written_by_then(
        tmp_path: Path):
    """A record with two probable successors (the rate went up in February, then again):
    the likelier, later one takes its place about now; as of a time between the two, the one
    written by then does, above the first rate that matches the question better (before,
    only one successor was kept, the earlier one forgotten, and such a read put the first
    rate first)."""
    with model.fitted(_later_is_likelier()), Memory(
            tmp_path / "m.db", config=Config(reflection_threshold=0), llm=None) as mem:
        first, second, third = [r.id for r in mem.add_many(
            [{"text": t, "kind": "fact", "at": T0 + n * 30 * DAY, "user_id": "maren"}
             for n, t in enumerate(RATES)])]
        mem.flush()
        from memstream.engine.changes import findings

        f = findings(mem, "default")[first]
        assert (f.related, f.applied) == (third, True)
        assert [rid for rid, _ in f.others] == [second]
        assert 0.5 < f.others[0][1] < f.confidence
        question = "How much does Jessa charge an hour?"
        assert mem.search(question, user_id="maren", touch=False)[0].record.id == third
        then = mem.search(question, user_id="maren", touch=False, as_of=T0 + 45 * DAY)
        assert [h.record.id for h in then] == [second, first]
        assert then[0].explain.lifted == PROBABLE
        before = mem.search(question, user_id="maren", touch=False, as_of=T0 + 10 * DAY)
        assert before[0].record.id == first
        # undone by hand: the record stands as itself again, at every time
        mem.restore(first)
        assert findings(mem, "default")[first].others == ()
        then = mem.search(question, user_id="maren", touch=False, as_of=T0 + 45 * DAY)
        assert then[0].record.id == first and then[0].explain.lifted is None


def test_a_less_likely_successor_is_kept_beside_the_likelier_one():
    """The findings about one record keep every probable successor: the likelier one as
    ``related``, the others beside it, each once; a record deleted leaves them."""
    from memstream.engine.changes import _beside, _in_effect_change

    b = model.Decision("superseded", "a", "b", 0.6, "", applied=False, tentative=True)
    c = model.Decision("superseded", "a", "c", 0.9, "")
    assert _in_effect_change(c, b) and _in_effect_change(b, c)
    kept = _beside(c, b)
    assert (kept.related, kept.others) == ("c", (("b", 0.6),))
    assert _beside(kept, b).others == (("b", 0.6),)
    assert model.Decision.from_dict(kept.to_dict()) == kept
    assert "others" not in b.to_dict()
    undone = model.Decision("superseded", "a", "b", 0.6, "", applied=False)
    assert not _in_effect_change(c, undone)
    assert not _in_effect_change(dataclasses.replace(c, related="b"), b)


def test_deleting_a_probable_successor_drops_it_from_the_others(kw_memory: Memory):
    from memstream.engine import findings as changes

    kept = model.Decision("superseded", "a", "c", 0.9, "", others=(("b", 0.6), ("d", 0.5)))
    changes._save(kw_memory, "default", {"a": kept})
    changes.forget(kw_memory, "default", ["b"])
    assert changes.findings(kw_memory, "default")["a"].others == (("d", 0.5),)


# --- with an LLM (a local server that speaks the chat-completions protocol) ---------------

SCHOOL = [("Theo (8) is in Year 4 at Brindlemoor Primary, class 4B.", "fact"),
          ("Ivy's comfort toy is a grey rabbit called Pebble.", "note"),
          ("ok thanks!", "message"),
          ("Theo's first day at St Wenna's went fine; he already likes Mrs. Okafor.", "note")]


def _llm_answer(body: dict) -> str:
    """A model that reads the shown ids: the school note supersedes the old one, the
    acknowledgement is junk."""
    import json
    import re

    prompt = body["messages"][0]["content"]
    if "New memories were just" not in prompt:
        return "{}"
    decisions = []
    for block in prompt.split("\n\n"):
        head = re.match(r"(N\d+) \(", block)
        if not head:
            continue
        old = dict(re.findall(r"\n  (O\d+) \([^)]*\): ([^\n]*)", block))
        row = {"new": head.group(1), "junk": "ok thanks" in block.split("\n")[0],
               "duplicate_of": None, "supersedes": [], "why": "test"}
        if "St Wenna" in block.split("\n")[0]:
            row["supersedes"] = [k for k, v in old.items() if "Brindlemoor" in v]
        decisions.append(row)
    return json.dumps({"decisions": decisions})


@pytest.mark.slow
def test_an_llm_decides_a_batch_in_one_metered_call(tmp_path: Path):
    """A change told in other words (a new school, months later) that the offline models
    leave alone: the LLM links it, in one call for the batch; the call is metered."""
    from memstream.llm import ChatClient

    from ..chat_server import chat_server

    with chat_server() as srv:
        srv.respond = _llm_answer
        client = ChatClient(base_url=srv.url, model="test")
        with Memory(tmp_path / "m.db", config=Config(reflection_threshold=0),
                    llm=client) as mem:
            recs = mem.add_many([{"text": t, "kind": k, "at": T0 + n * 30 * DAY,
                                  "user_id": "maren", "importance": 0.5}
                                 for n, (t, k) in enumerate(SCHOOL)])
            mem.flush()
            asked = [r for r in srv.requests
                     if "New memories were just" in r["body"]["messages"][0]["content"]]
            assert len(asked) == 1
            assert len(client.usage.calls) == len(srv.requests) and client.usage.total_tokens
            assert mem.get(recs[0].id).superseded_by == recs[3].id
            found = {f.record.id: f for f in mem.audit()}
            assert found[recs[0].id].kind == "superseded" and found[recs[0].id].reason == \
                "llm: test"
            assert found[recs[2].id].kind == "junk"
            hits = mem.search("Which school is Theo at?", user_id="maren", touch=False)
            assert hits[0].record.id == recs[3].id
    offline, ids = _store(tmp_path / "offline.db", SCHOOL)
    with offline:
        assert offline.get(ids[0]).valid  # the offline models do not see this change


@pytest.mark.slow
def test_an_llm_that_cannot_answer_leaves_the_decisions_to_the_offline_models(tmp_path: Path):
    """An answer naming ids it was not shown (twice), then a server error: the offline models
    decide, junk is still found, nothing is linked from the bad answers."""
    from memstream.llm import ChatClient

    from ..chat_server import chat_server

    bad = '{"decisions": [{"new": "N1", "supersedes": ["O99"]}]}'
    with chat_server() as srv:
        srv.respond = lambda body: bad if "New memories" in body["messages"][0]["content"] \
            else "{}"
        with Memory(tmp_path / "m.db", config=Config(reflection_threshold=0),
                    llm=ChatClient(base_url=srv.url, model="test", retries=0)) as mem:
            recs = mem.add_many([{"text": t, "kind": k, "at": T0 + n * 30 * DAY,
                                  "user_id": "maren", "importance": 0.5}
                                 for n, (t, k) in enumerate(SCHOOL)])
            mem.flush()
            found = {f.record.id: f for f in mem.audit()}
            assert found[recs[2].id].kind == "junk" and not found[recs[2].id].reason.startswith(
                "llm")
            assert mem.get(recs[0].id).valid
            srv.mode = "500"
            more = mem.add("thx, got it", kind="message", user_id="maren", importance=0.5,
                           at=T0 + 200 * DAY)
            mem.flush()
            assert {f.record.id: f.kind for f in mem.audit()}.get(more.id) == "junk"


#: changes told in other words than what they replace (written for this test, in three
#: languages); the pair model without the directions links none of the first three
OTHER_WORDS = [
    ("My gym is FitBox on Harlow Street, I go before work.",
     "Cancelled FitBox. I swim at the Aquarena now, three mornings a week."),
    ("Our dentist is Dr. Pryce at Elmfield Dental.",
     "Switched the whole family to Dr. Achebe at Riverside Dental; Pryce retired."),
    ("The team standup is at 9:15 in the Oak room.",
     "Standup is now async in the channel; no more meeting."),
    ("Unser Internet kommt von Telenova, 100 Mbit für 39 Euro.",
     "Zu Glasnetz gewechselt: 500 Mbit, 45 Euro im Monat, seit gestern aktiv."),
]
FILLER = ["Bought new curtains for the living room.", "My sister Ana lives in Porto.",
          "Book club reads Middlemarch this month.", "The plumber comes on Thursday.",
          "I'm allergic to penicillin.", "Started learning the guitar.",
          "Tom's birthday is in May."]


def _decided(path: Path, old: str, new: str) -> tuple[bool, bool]:
    """``old`` then, three months later, ``new``, among ``FILLER``, compared by the worker:
    whether ``new`` was linked as the successor of ``old``, and as its duplicate."""
    with Memory(path, config=Config(reflection_threshold=0), llm=None) as mem:
        mem.add_many([{"text": t, "at": T0, "user_id": "u"} for t in FILLER])
        a = mem.add(old, user_id="u", at=T0 + 30 * DAY)
        b = mem.add(new, user_id="u", at=T0 + 120 * DAY)
        mem.flush()
        return mem.get(a.id).superseded_by == b.id, any(
            f.record.id == b.id and f.related is not None and f.related.id == a.id
            for f in mem.audit(user_id="u", kinds="duplicate"))


def _linked(path: Path, old: str, new: str) -> bool:
    return _decided(path, old, new)[0]


def _restates(path: Path, old: str, new: str) -> bool:
    return _decided(path, old, new)[1]


@pytest.mark.slow
def test_a_change_in_other_words_is_linked_through_the_directions(tmp_path: Path):
    """The shipped model with the default embedder reads where the new record's vector points
    (a change announced, what a successor adds): a change that shares few words with what it
    replaces is linked; the same model without the directions leaves the first three."""
    shipped = model.load_weights()
    assert shipped.directions is not None and shipped.plain is not None
    assert all(_linked(tmp_path / f"d{n}.db", old, new)
               for n, (old, new) in enumerate(OTHER_WORDS))
    plain = model.Weights(pair=shipped.plain, junk=shipped.junk)
    with model.fitted(plain):
        assert not any(_linked(tmp_path / f"p{n}.db", old, new)
                       for n, (old, new) in enumerate(OTHER_WORDS[:3]))


class _LetterEmbedder:
    """Another embedder: a text's vector counts its letters a to h."""

    name, dim = "letters-test-model", 8

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        out = np.array([[t.lower().count(c) + 0.1 for c in "abcdefgh"] for t in texts],
                       dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


#: restatements written as reminders (for this test): the plain model finds none of them
REMINDERS = [
    ("Lena is allergic to peanuts; she carries an EpiPen.",
     "Reminder: no peanuts at Lena's party, she's allergic."),
    ("The wifi password is bluefinch42.", "Note to self: wifi is bluefinch42."),
    ("Grandpa takes his heart pills at 8am.",
     "Don't forget Grandpa's heart pills at eight in the morning."),
]


@pytest.mark.slow
def test_a_restatement_written_as_a_reminder_is_a_duplicate(tmp_path: Path):
    """The restatement model reads how far a new memory reads like a reminder of something
    said before: these are duplicates of their originals; for the plain model, none is."""
    shipped = model.load_weights()
    assert shipped.restating is not None and shipped.plain is not None
    assert all(_restates(tmp_path / f"d{n}.db", old, new)
               for n, (old, new) in enumerate(REMINDERS))
    with model.fitted(model.Weights(pair=shipped.plain, junk=shipped.junk)):
        assert not any(_restates(tmp_path / f"p{n}.db", old, new)
                       for n, (old, new) in enumerate(REMINDERS))


def test_the_directions_are_read_only_with_their_embedder(tmp_path: Path):
    """Another embedder's vectors point elsewhere: with it, the plain pair model decides."""
    from memstream.engine.changes import _vectors

    shipped = model.load_weights()
    assert shipped.directions is not None
    with Memory(tmp_path / "m.db", embedder=_LetterEmbedder(), llm=None) as mem:
        rec = mem.add("Our dentist is Dr. Pryce.", user_id="u", at=T0)
        mem.flush()
        older = [model.Item(rec.id, rec.text, rec.kind, rec.created_at)]
        assert mem.embedder is not None and mem.embedder.name != shipped.directions.embedder
        assert _vectors(mem, shipped, rec.namespace, np.ones(mem.embedder.dim), older) is None
        renamed = dataclasses.replace(shipped, directions=dataclasses.replace(
            shipped.directions, embedder=mem.embedder.name))
        got = _vectors(mem, renamed, rec.namespace, np.ones(mem.embedder.dim), older)
        assert got is not None and got[1].shape == (1, mem.embedder.dim)


def test_the_weights_with_directions_read_back_as_written():
    shipped = model.load_weights()
    assert shipped.directions is not None and shipped.plain is not None
    raw = json.loads(model.save_weights(shipped))
    assert raw["direction_features"] == list(model.DIRECTION_FEATURES)
    assert len(raw["directions"]["announces"]["vector"]) == len(
        shipped.directions.announces.vector)
    assert np.allclose(raw["pair_with_directions"], shipped.pair, atol=1e-5)
    assert np.allclose(raw["pair"], shipped.plain, atol=1e-5)
    assert raw["restatement_features"] == list(model.RESTATEMENT_FEATURES)
    assert shipped.restating is not None
    assert np.allclose(raw["restating"], shipped.restating, atol=1e-5)


def test_the_directions_read_many_pairs_as_they_read_each():
    """``Directions.pairs`` (the bench's fits read every pair at once) gives what
    ``features`` and ``restating`` give one new record and its older ones at a time."""
    shipped = model.load_weights()
    assert shipped.directions is not None
    d = shipped.directions
    rng = np.random.default_rng(7)
    dim = len(d.announces.vector)
    new, old = rng.normal(size=(6, dim)), rng.normal(size=(6, dim))
    rows = np.vstack([model.beyond(n, o[None, :])[0] for n, o in zip(new, old, strict=True)])
    changes, restating = d.pairs(new, rows)
    assert changes.shape == (6, len(model.DIRECTION_FEATURES))
    assert restating.shape == (6, len(model.RESTATEMENT_FEATURES))
    for k in range(6):
        assert np.allclose(changes[k], d.features(new[k], old[k][None, :])[0])
        assert np.allclose(restating[k], d.restating(new[k], old[k][None, :])[0])


def _sure(kind: str) -> model.Weights:
    """Weights that read every compared pair as a sure change (``kind`` "changes") or a sure
    restatement ("restates"), and nothing as junk."""
    pair = np.zeros((len(model.LABELS), len(model.PAIR_FEATURES)))
    pair[model.LABELS.index(kind), 0] = 9.0
    junk = np.zeros(len(model.JUNK_FEATURES))
    junk[0] = -20.0
    return model.Weights(pair=pair, junk=junk)


@pytest.mark.slow
def test_a_record_without_a_user_never_retires_a_users_record(tmp_path: Path):
    with model.fitted(_sure("changes")), Memory(
            tmp_path / "m.db", config=Config(reflection_threshold=0, reader=False),
            llm=None) as mem:
        alice = [mem.add("Our wifi password is tulip-42.", user_id="alice", at=T0).id]
        mem.add("Our wifi password changed to maple-77.", at=T0 + 5 * DAY)
        mem.add("Our wifi password changed to maple-77.", user_id="bob", at=T0 + 5 * DAY)
        mem.flush()
        assert mem.get(alice[0]).valid
        assert mem.audit(kinds="superseded") == []
        assert alice[0] in {h.record.id for h in mem.search(
            "wifi password", user_id="alice", touch=False)}
        # the same owner's records are still compared
        later = mem.add("Our wifi password changed to maple-77.", user_id="alice",
                        at=T0 + 6 * DAY)
        mem.flush()
        assert mem.get(alice[0]).superseded_by == later.id


@pytest.mark.slow
def test_twins_kept_on_purpose_are_never_duplicates_and_the_newer_ranks_first(tmp_path: Path):
    text = "Backup of the accounting server finished without errors."
    with model.fitted(_sure("restates")), Memory(
            tmp_path / "m.db", config=Config(reflection_threshold=0, reader=False),
            llm=None) as mem:
        older = mem.add(text, user_id="ops", at=T0, duplicates="keep")
        newer = mem.add(text, user_id="ops", at=T0 + 100 * 3600, duplicates="keep")
        mem.flush()
        assert mem.audit(kinds="duplicate") == []
        hits = mem.search("accounting server backup", user_id="ops", touch=False,
                          now=T0 + 101 * 3600)
        assert [h.record.id for h in hits[:2]] == [newer.id, older.id]


def _all_junk() -> model.Weights:
    pair = np.zeros((len(model.LABELS), len(model.PAIR_FEATURES)))
    junk = np.zeros(len(model.JUNK_FEATURES))
    junk[0] = 9.0
    return model.Weights(pair=pair, junk=junk)


@pytest.mark.slow
@pytest.mark.parametrize("servers", [1, 2])
def test_concurrent_restores_are_never_lost(tmp_path: Path, servers: int):
    """47 findings restored by 16 threads (over one store object, or two as two servers on
    one file have): every restore holds, none stays demoted."""
    import threading

    from memstream.engine.changes import verdicts

    path = tmp_path / "m.db"
    with model.fitted(_all_junk()), Memory(
            path, config=Config(reflection_threshold=0, reader=False), llm=None) as mem:
        mem.add_many([{"text": t, "user_id": "u", "kind": "fact", "at": T0 + n * DAY}
                      for n, t in enumerate(t for t, _ in (NOTES * 6)[:47])],
                     duplicates="keep")
        mem.flush()
    with Memory(path, config=Config(reflection_threshold=0), llm=None) as one, Memory(
            path, config=Config(reflection_threshold=0), llm=None) as two:
        found = [f.record.id for f in one.audit(kinds="junk", limit=1000)]
        assert len(found) == 47
        mems = [one, two][:servers]
        todo = list(enumerate(found))

        def work(k: int) -> None:
            for n, rid in todo[k::16]:
                mems[n % servers].restore(rid)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not [f for f in one.audit(kinds="junk", limit=1000) if f.applied]
        assert not verdicts(two, "default").demoted & set(found)


@pytest.mark.slow
def test_audit_right_after_adds_waits_for_what_is_not_yet_compared(tmp_path: Path):
    """Audit used to answer [] right after some adds and list the findings two seconds later:
    it now waits for the namespace's memories still to embed and compare (as flush does)."""
    with Memory(tmp_path / "m.db", config=Config(reflection_threshold=0), llm=None) as mem:
        mem.add_many([{"text": t, "kind": k, "at": T0 + n * DAY, "user_id": "maren"}
                      for n, (t, k) in enumerate(NOTES + JUNK)])
        found = mem.audit(kinds="junk")  # no flush before it
        assert {f.record.text for f in found} >= {"ok thanks!"}
