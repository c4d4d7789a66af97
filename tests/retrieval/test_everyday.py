"""Everyday stores with the real model: relevance on one scale in any language, the newest
version of a changed fact first (with the link in ``explain``), "nothing relevant" said by a low
relevance and by ``min_relevance``. The stores here are our own, in the spirit of the
development suite (short notes of one person, in English, German and Spanish)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstream import Config, FixedClock, Memory
from memstream.engine.nulls import null_rows
from memstream.errors import InvalidInput
from memstream.filters import Selection

from .conftest import NOW

pytestmark = pytest.mark.slow
DAY = 86400.0

#: (text, days ago) of a German translator's notes
GERMAN = [
    ("Mein Steuerberater heißt Herr Albers, Kanzlei in der Karl-Liebknecht-Straße.", 200),
    ("Die Wohnung in der Gohliser Straße 12 ist gekündigt, Auszug Ende März.", 120),
    ("Neue Adresse ab April: Arndtstraße 7, 04275 Leipzig.", 80),
    ("Der Verlag zahlt für Literaturübersetzungen 21 Euro pro Normseite.", 150),
    ("Abgabe der Romanübersetzung beim Verlag: 15. Mai.", 60),
    ("Lieblingscafé zum Arbeiten: das Café Kandler am Thomaskirchhof.", 170),
    ("Zahnarzttermin bei Dr. Petersen verschoben auf Donnerstag 9 Uhr.", 10),
    ("Meine Schwester Lena hat im Oktober Geburtstag, sie mag Keramik.", 190),
    ("Das Fahrrad steht seit dem Umzug im Hinterhof, Schloss-Code 4471.", 70),
    ("Für Rechnungen immer die Steuernummer und die Bankverbindung angeben.", 140),
]
#: (text, days ago) of a Spanish traveller's notes
SPANISH = [
    ("El vuelo a Tokio sale de Barajas el 3 de octubre a las 11:40.", 90),
    ("Reservé el ryokan de Kioto para tres noches, del 6 al 9 de octubre.", 85),
    ("Prefiero asiento de pasillo en vuelos de más de seis horas.", 200),
    ("Mi pasaporte caduca en 2031.", 300),
    ("La boda de Carmen en Sevilla es el 14 de junio en la Hacienda Los Naranjos.", 120),
    ("Cambiaron el vuelo a Tokio: ahora sale el 4 de octubre a las 9:15.", 20),
    ("El seguro de viaje es de Mapfre, póliza 88-4410-27.", 60),
    ("En Lisboa nos quedamos en el barrio de Alfama, cerca del mirador.", 150),
]


@pytest.fixture
def notes(e5, tmp_path: Path):
    with Memory(tmp_path / "notes.db", embedder=e5, clock=FixedClock(NOW), llm=None,
                config=Config(reflection_threshold=0, embed_mode="sync")) as mem:
        for ns, rows in (("de", GERMAN), ("es", SPANISH)):
            mem.add_many([{"content": t, "at": NOW - d * DAY} for t, d in rows], namespace=ns)
        yield mem


def test_the_newest_version_of_a_changed_fact_comes_first_in_any_language(notes: Memory):
    hits = notes.search("Unter welcher Adresse wohne ich?", namespace="de", k=3, touch=False)
    assert hits[0].record.text.startswith("Neue Adresse ab April")
    hits = notes.search("¿Cuándo sale el vuelo a Tokio?", namespace="es", k=3, touch=False)
    assert hits[0].record.text.startswith("Cambiaron el vuelo a Tokio")
    old = next(h for h in hits if h.record.text.startswith("El vuelo a Tokio"))
    # the link is in the explanation; the newer record's relevance is its own, not the older's
    assert old.record.id in hits[0].explain.updates
    assert hits[0].explain.relevance != old.explain.relevance


def test_relevance_reads_the_same_across_languages(notes: Memory):
    """An answer stands well above the store's other records; a question nothing answers has
    a low best relevance, in German as in Spanish (the background sentences are English)."""
    for ns, asked, answer in (("de", "Wie heißt mein Steuerberater?", "Mein Steuerberater"),
                              ("es", "¿De qué compañía es el seguro de viaje?", "El seguro")):
        hits = notes.search(asked, namespace=ns, k=5, touch=False)
        assert hits[0].record.text.startswith(answer)
        assert hits[0].explain.relevance > 0.3
        assert all(h.explain.relevance < 0.3 for h in hits[1:])
    for ns, asked in (("de", "Welche Blutgruppe habe ich?"),
                      ("es", "¿Cuál es la contraseña del wifi de casa?")):
        best = notes.search(asked, namespace=ns, k=1, touch=False)[0]
        assert best.explain.relevance < 0.5, best.record.text
        assert notes.search(asked, namespace=ns, min_relevance=0.5, touch=False) == []


def test_min_relevance_is_checked_and_context_leaves_out_the_unrelated(notes: Memory):
    with pytest.raises(InvalidInput, match="min_relevance"):
        notes.search("Arndtstraße", namespace="de", min_relevance=1.5)
    with pytest.raises(InvalidInput, match="min_relevance"):
        notes.search("Arndtstraße", namespace="de", min_relevance=10**400)
    ctx = notes.context("Welche Blutgruppe habe ich?", namespace="de", touch=False)
    every = notes.context("Welche Blutgruppe habe ich?", namespace="de", touch=False,
                          min_relevance=0)
    assert len(ctx.hits) < len(every.hits) == len(GERMAN)
    assert all(h.explain.relevance >= 0.02 for h in ctx.hits)


def test_notes_are_not_a_conversation_and_turns_are(notes: Memory, e5):
    """Context smoothing and the learned stage read a record's neighbours: they apply to a
    stream whose consecutive records are about the same thing, not to separate notes."""
    bg = notes.vectors.background()
    assert not null_rows(notes.store, Selection("de"), bg).conversation
    talk = []
    for subject in ("the garden", "the new job", "the trip to Rome", "the cat", "the concert",
                    "the flat", "the marathon", "the wedding"):
        talk += [f"Ana: How is {subject} going?", f"Ben: {subject.capitalize()} is going well.",
                 f"Ana: Tell me more about {subject}.",
                 f"Ben: There is a lot to say about {subject}.",
                 f"Ana: I am glad {subject} worked out."]
    notes.add_many([{"content": t, "at": NOW - 1000 + i} for i, t in enumerate(talk)],
                   namespace="talk")
    assert null_rows(notes.store, Selection("talk"), bg).conversation


def test_the_window_seat_note_answers_where_ana_likes_to_sit(e5, tmp_path: Path):
    pytest.importorskip("langgraph")
    from memstream.integrations.langgraph import MemstreamStore

    with Memory(tmp_path / "lg.db", embedder=e5, llm=None,
                config=Config(reflection_threshold=0, embed_mode="sync")) as mem:
        store = MemstreamStore(mem)
        store.put(("people",), "1", {"text": "Ana always asks for a window seat when she flies."})
        store.put(("people",), "2", {"text": "Ana is vegetarian."})
        store.put(("people",), "3", {"text": "Bob prefers an aisle seat."})
        hits = store.search(("people",), query="Where does Ana like to sit?", limit=3)
        assert hits[0].key == "1"


def test_a_record_of_the_day_the_query_names_comes_first(notes: Memory):
    from datetime import UTC, datetime

    def at(day: int) -> float:
        return datetime(2023, 4, day, 21, 0, tzinfo=UTC).timestamp()

    notes.add("Cenamos en la Sidrería El Texu, cachopo para compartir.", namespace="es",
              at=at(18))
    notes.add("Cenamos en La Panera, mucho mejor que la noche anterior.", namespace="es",
              at=at(19))
    hits = notes.search("¿Dónde cenamos el 18 de abril?", namespace="es", k=3, touch=False)
    assert hits[0].record.text.startswith("Cenamos en la Sidrería El Texu")
    assert hits[0].explain.adjustments["of the date the query names"] > 1.0
    hits = notes.search("¿Dónde cenamos el 19 de abril?", namespace="es", k=3, touch=False)
    assert hits[0].record.text.startswith("Cenamos en La Panera")


@pytest.mark.parametrize(("ns", "others", "outing", "day", "question"), [
    ("es", [("Marta organiza una cena el viernes 19 de septiembre en su casa.", (3, 1))],
     "Sidrería El Texu: fabada y cachopo sin gluten, un trato estupendo.", (4, 18),
     "¿Dónde cenamos el viernes 18 de abril?"),
    ("de", [("Birkenpollenallergie: von März bis Mai abends Cetirizin.", (2, 20)),
            ("Stadtwerke erhöhen den Stromabschlag ab Mai auf 92 €.", (4, 22))],
     "Radtour zum See mit Mila im Anhänger; auf dem Rückweg einen Platten gehabt.", (5, 1),
     "Was haben wir am 1. Mai gemacht?"),
])
def test_a_day_the_query_names_is_found_by_its_date_not_by_the_words_of_other_dates(
        notes: Memory, ns: str, others: list[tuple[str, tuple[int, int]]], outing: str,
        day: tuple[int, int], question: str):
    """"el viernes 18 de abril" matched "el viernes 19 de septiembre" by its words ("viernes",
    "de"), which put a dinner planned for September above the note written on April 18. A
    day the query names is found by its date (written then, or telling of it): its words,
    and the weekday before it, are left out of what the notes' words match."""
    from datetime import UTC, datetime

    for text, (month, d) in others:
        notes.add(text, namespace=ns, at=datetime(2023, month, d, 9, 0, tzinfo=UTC).timestamp())
    notes.add(outing, namespace=ns, at=datetime(2023, *day, 17, 0, tzinfo=UTC).timestamp())
    hits = notes.search(question, namespace=ns, k=3, touch=False)
    assert hits[0].record.text == outing
    assert hits[0].explain.adjustments["of the date the query names"] > 1.0


#: (namespace, the flood and three notes on a neighbour, written days ago, the question and
#: the start of the note of the morning after)
FLOODS = [
    ("de", [("Hochwasser im Keller, die Feuerwehr hat bis Mitternacht gepumpt.", 40),
            ("Herr Öztürk von nebenan hat seine Kellerregale zum Trocknen in den Hof gestellt.",
             39.6),
            ("Herr Öztürk hat den Gutachter der Versicherung durch seinen Keller geführt.", 25),
            ("Herr Öztürk hat die neuen Kellerregale aus dem Baumarkt aufgebaut.", 12)],
     "Was hat Herr Öztürk am Morgen nach dem Hochwasser gemacht?", "Herr Öztürk von nebenan"),
    ("en", [("Flooded basement: the fire brigade pumped water out until midnight.", 40),
            ("Mr. Okafor next door carried his soaked boxes out to the driveway to dry.", 39.6),
            ("Mr. Okafor walked the insurance assessor through his basement.", 25),
            ("Mr. Okafor put up new basement shelves from the hardware store.", 12)],
     "What did Mr. Okafor do the morning after the flood?", "Mr. Okafor next door"),
]


def test_a_question_counted_from_an_event_reads_the_records_times(notes: Memory):
    """"The morning after the flood" is counted from the flood's record: of three notes on the
    same neighbour, the one written the next morning comes first, named in ``adjustments``, in
    German and in English; and "gestern" counts from now."""
    for ns, rows, query, expected in FLOODS:
        notes.add_many([{"content": t, "at": NOW - d * DAY} for t, d in rows], namespace=ns)
        hits = notes.search(query, namespace=ns, k=3, touch=False)
        assert hits[0].record.text.startswith(expected), ns
        assert hits[0].explain.adjustments["in the time the query counts from its event"] > 0
    notes.add("Thermostat im Bad auf Stufe 3 gedreht.", namespace="de", at=NOW - DAY)
    notes.add("Die Heizung entlüftet, jetzt gluckert sie nicht mehr.", namespace="de",
              at=NOW - 3600)
    hits = notes.search("Was habe ich gestern an der Heizung gemacht?", namespace="de", k=3,
                        touch=False)
    assert hits[0].record.text.startswith("Thermostat im Bad")
    assert hits[0].explain.adjustments["of the date the query names"] > 1.0


#: (namespace, the storm and three other notes, written days ago, the question and the start of
#: the note of that night)
STORMS = [
    ("storm-en", [("Hailstorm tonight: the greenhouse roof is smashed and the power is out.", 30),
                  ("Two cyclists knocked and asked to wait out the weather in the barn.", 29.9),
                  ("The glazier measured the greenhouse for new roof panels.", 20),
                  ("Planted tomato seedlings in the greenhouse.", 45)],
     "Who came by on the night of the hailstorm?", "Two cyclists"),
    ("storm-es", [("Granizada esta noche: el tejado del invernadero está roto y no hay luz.", 30),
                  ("Dos ciclistas llamaron a la puerta y pidieron esperar en el granero.", 29.9),
                  ("El cristalero midió el invernadero para los paneles nuevos.", 20),
                  ("Planté tomateras en el invernadero.", 45)],
     "¿Quién vino la noche de la granizada?", "Dos ciclistas"),
]


def test_what_happened_in_the_time_counted_from_an_event_comes_before_the_event(
        notes: Memory):
    """"The night of the hailstorm" asks what happened then, not about the storm: the note
    written that night comes first though the storm's own note matches the words best, the
    storm right after, in English and in Spanish; ``adjustments`` names the lift."""
    from memstream.retrieval.notes import AFTER_EVENT_LABEL

    for ns, rows, query, expected in STORMS:
        notes.add_many([{"content": t, "at": NOW - d * DAY} for t, d in rows], namespace=ns)
        hits = notes.search(query, namespace=ns, k=3, touch=False)
        assert hits[0].record.text.startswith(expected), ns
        assert hits[0].explain.adjustments[AFTER_EVENT_LABEL] > 0
        assert hits[1].record.text == rows[0][0], ns


#: a coach's notes on a client, most of them without his name, in English and German
COACHED = {
    "coach-en": ([("Tomás called: his knee feels better, next session moved to Thursday.", 3),
                  ("Tomás prefers sessions before work, never after 6pm.", 40),
                  ("Weigh-in: 82.4 kg.", 5),
                  ("Bench press 3x5 at 70 kg, squat 3x5 at 90 kg.", 8),
                  ("Tomás sent a photo of his new running shoes.", 12)],
                 "How much does Tomás weigh?"),
    "coach-de": ([("Tomás hat angerufen: dem Knie geht es besser, die nächste Stunde ist am "
                   "Donnerstag.", 3),
                  ("Tomás trainiert lieber vor der Arbeit, nie nach 18 Uhr.", 40),
                  ("Wiegen: 82,4 kg.", 5),
                  ("Bankdrücken 3x5 mit 70 kg, Kniebeugen 3x5 mit 90 kg.", 8),
                  ("Tomás hat ein Foto seiner neuen Laufschuhe geschickt.", 12)],
                 "Wie viel wiegt Tomás?"),
}


def test_a_person_the_notes_do_not_name_does_not_pull_the_query_to_the_notes_that_do(
        notes: Memory):
    """A coach's notes on a client mostly leave his name out: asked what he weighs, the
    weigh-in comes first, not the notes that name him (the German query read whole put a
    photo of his shoes first)."""
    for ns, (rows, query) in COACHED.items():
        notes.add_many([{"content": t, "at": NOW - d * DAY, "user_id": "coach"}
                        for t, d in rows], namespace=ns)
        hits = notes.search(query, namespace=ns, user_id="coach", k=3, touch=False)
        assert hits[0].record.text == rows[2][0], ns
        assert hits[0].explain.relevance > 0.5, ns


def test_a_record_that_tells_of_the_day_the_query_names_comes_first(notes: Memory):
    """A note written the day after ("yesterday's run") is of the day it tells of, as one
    written that day is, in English and in German."""
    from datetime import UTC, datetime

    def at(day: int) -> float:
        return datetime(2023, 4, day, 8, 0, tzinfo=UTC).timestamp()

    for ns, rows, query in [
            ("en", ["Long run 5 mi at an easy pace, heart rate in zone 2.",
                    "Yesterday's long run, 7 mi: felt fine, left heel sore this morning.",
                    "The long run went well: 8 mi in the rain, heel fine."],
             "How did the April 12 long run go?"),
            ("de", ["Langer Lauf, 8 km locker, Puls im grünen Bereich.",
                    "Gestern der lange Lauf über 12 km: lief gut, die Ferse tut heute weh.",
                    "Langer Lauf 15 km im Regen, Ferse gut, Beine schwer am Ende."],
             "Wie lief der lange Lauf am 12. April?")]:
        for text, day in zip(rows, (5, 13, 20), strict=True):
            notes.add(text, namespace=f"run-{ns}", at=at(day))
        hits = notes.search(query, namespace=f"run-{ns}", k=3, touch=False)
        assert hits[0].record.text == rows[1], ns
        assert hits[0].explain.adjustments["of the date the query names"] > 1.0


def test_the_reply_to_a_stored_question_comes_first_and_names_it(notes: Memory):
    """A reported question ("asked whether...") matches the query best; the reply, written a
    day later and about the same thing, answers it (a reply worded unlike the question, whose
    own evidence is far below it, is not lifted that far: the stage adds at most a few
    logits): the notes stage puts it first, names the
    question in ``updates`` and its own addition in ``adjustments``; its relevance stays its
    own."""
    notes.add("Habe die Vermieterin gefragt, ob wir die Küche streichen dürfen.",
              namespace="de", at=NOW - 30 * DAY)
    notes.add("Die Vermieterin sagt, die Küche dürfen wir streichen, aber nur in hellen Farben.",
              namespace="de", at=NOW - 29 * DAY)
    hits = notes.search("Dürfen wir die Küche streichen?", namespace="de", k=3, touch=False)
    asked = next(h for h in hits if h.record.text.startswith("Habe die Vermieterin"))
    assert hits[0].record.text.startswith("Die Vermieterin sagt")
    assert hits[0].explain.updates == (asked.record.id,)
    assert hits[0].explain.adjustments["follows up the best match"] > 0
    assert hits[0].explain.evidence < asked.explain.evidence  # its evidence, not lifted
    assert "a newer record is about the same thing" in asked.explain.adjustments
    assert asked.explain.newer == (hits[0].record.id,)


def test_a_few_notes_in_another_language_are_not_all_alike(e5, tmp_path: Path):
    """A store of a handful of notes compares two records with its own pairs, not only with
    the English background: Portuguese notes all look alike beside English sentences, and then
    a note about a doctor's appointment "followed up" the wifi password and came first for a
    question about the wifi (and a note about the wifi for one about football practice)."""
    notes = [("A consulta com a Dra. Sousa ficou para quinta-feira às 10h.", 30),
             ("A consulta com a Dra. Sousa foi remarcada para sexta-feira às 9h30.", 5),
             ("Moro em Lisboa, na Rua das Flores 22.", 200),
             ("O meu filho Tiago joga futebol aos sábados de manhã.", 100),
             ("Prefiro café sem açúcar.", 300),
             ("A senha do wifi de casa é laranja-2024.", 50)]
    with Memory(tmp_path / "pt.db", embedder=e5, clock=FixedClock(NOW), llm=None,
                config=Config(reflection_threshold=0, embed_mode="sync")) as mem:
        mem.add_many([{"content": t, "at": NOW - d * DAY} for t, d in notes])
        for asked, answer in (("Qual é a senha da internet?", "A senha do wifi"),
                              ("Em que dia o Tiago tem treino?", "O meu filho Tiago"),
                              ("Quando é a consulta com a Dra. Sousa?",
                               "A consulta com a Dra. Sousa foi remarcada")):
            hits = mem.search(asked, k=3, touch=False)
            assert hits[0].record.text.startswith(answer), asked
        # the one true update keeps its link; the unrelated notes have none
        top = mem.search("Quando é a consulta com a Dra. Sousa?", k=6, touch=False)
        assert "follows up the best match" in top[0].explain.adjustments
        assert not any("follows up the best match" in h.explain.adjustments for h in top[1:])


#: notes of one person written in bursts, one subject after another (eight subjects)
BURSTS = {
    "the kitchen renovation": [
        "Got three quotes for the kitchen cabinets; the cheapest is from Holt Joinery.",
        "The kitchen worktop will be oak, oiled, not lacquered.",
        "Kitchen electrics need a new circuit for the induction hob.",
        "The tiler can start on the kitchen splashback on the 14th.",
        "Kitchen sink: undermount, single bowl, with a boiling-water tap.",
    ],
    "the marathon training": [
        "Long run this week: 18 km at an easy pace.",
        "Marathon plan: taper starts three weeks before race day.",
        "Bought new trail shoes for the long runs; half a size up.",
        "Interval session: 6 x 800 m at 10k pace.",
        "Race day gels: one every 40 minutes from km 10.",
    ],
    "the tax return": [
        "The tax return is due on January 31.",
        "Need the P60 from work for the tax return.",
        "Rental income from the flat goes on the property pages.",
        "Claim the home office allowance this year.",
        "The accountant charges a flat fee for the self-assessment.",
    ],
    "the car": [
        "The car's MOT is due in March.",
        "Winter tyres go on in November.",
        "The car's battery was replaced last month under warranty.",
        "Car insurance renews in June; compare quotes first.",
        "The car makes a rattle over speed bumps; check the exhaust.",
    ],
    "the dog": [
        "The dog's vaccinations are due in May.",
        "The dog eats grain-free food, 200 g twice a day.",
        "Dog walker comes Tuesdays and Thursdays at noon.",
        "The dog hates fireworks; keep him inside on bonfire night.",
        "Flea treatment for the dog every month on the 1st.",
    ],
    "the book club": [
        "Book club meets at Ruth's on the last Friday.",
        "This month's book club pick is a Le Guin novel.",
        "I host the book club in April; bring the good wine.",
        "Book club voted to read more non-fiction next year.",
        "The book club's WhatsApp group is muted on weekdays.",
    ],
    "the job search": [
        "Applied for the product role at Fenwick Labs.",
        "Interview prep: practise the system design question.",
        "Recruiter from Halden called about a contract role.",
        "Update the CV with the migration project.",
        "Second interview at Fenwick Labs on Thursday at 3.",
    ],
    "the garden": [
        "Planted garlic in the raised bed by the shed.",
        "The apple tree needs pruning in late winter.",
        "Tomatoes in the greenhouse need feeding every week.",
        "Compost bin is full; turn it next weekend.",
        "Slugs ate the lettuce again; try copper tape.",
    ],
}


def test_notes_written_in_bursts_are_not_a_conversation(e5, tmp_path: Path):
    """Notes on one subject after another follow one another as closely as a conversation's
    turns (coherence 1.07 here, LoCoMo's conversations 0.64-1.13), but few of them are turns
    (a chat message, or "Name: ..."): they are ranked as notes. The same texts stored as chat
    messages are a conversation."""
    texts = [t for subject in BURSTS.values() for t in subject]
    with Memory(tmp_path / "bursts.db", embedder=e5, clock=FixedClock(NOW), llm=None,
                config=Config(reflection_threshold=0, embed_mode="sync")) as mem:
        for ns, kind in (("notes", "note"), ("chat", "message")):
            mem.add_many([{"content": t, "kind": kind, "at": NOW - 3600 * (len(texts) - i)}
                          for i, t in enumerate(texts)], namespace=ns)
        bg = mem.vectors.background()
        notes, chat = (null_rows(mem.store, Selection(ns), bg) for ns in ("notes", "chat"))
        assert notes.coherence > 0.5 and notes.turns < 0.5 and not notes.conversation
        assert chat.coherence > 0.5 and chat.turns == 1.0 and chat.conversation


#: (text, days ago) of a developer's notes: an option tried and dropped, then the one chosen
DASHBOARD = [
    ("Standup moved to 9:30 for the whole platform team.", 120),
    ("Tried Chart.js for the fleet dashboard: too slow with 20k points, dropping it.", 60),
    ("Fleet dashboard charts will use ECharts, same as the billing reports.", 57),
    ("Staging database is refreshed from production every Sunday night.", 100),
    ("Priya owns the on-call rota until the end of the quarter.", 90),
    ("The API rate limit for partners is 600 requests a minute.", 80),
    ("Deploys are frozen from December 20 to January 3.", 40),
    ("Laptop refresh: the new machines arrive in February.", 30),
    ("Feature flags live in LaunchDarkly; clean up stale ones monthly.", 70),
    ("Design review for the route planner is on Thursday.", 10),
]


def test_a_question_about_the_past_gets_what_was_dropped_not_what_followed(small: Memory):
    """The chosen library follows up the dropped one (newer, alike): a question about now
    gets it first, and one about what was tried and dropped gets the dropped one first, where
    the follow-up used to be lifted above it. The search says it read the past
    (``explain.stages``)."""
    small.add_many([{"content": t, "at": NOW - d * DAY} for t, d in DASHBOARD], namespace="n")
    now = small.search("Which charting library does the fleet dashboard use?", namespace="n",
                       k=3, touch=False)
    assert now[0].record.text.startswith("Fleet dashboard charts will use ECharts")
    assert "past" not in now[0].explain.stages
    past = small.search("Which charting library did we try for the fleet dashboard and then "
                        "drop?", namespace="n", k=3, touch=False)
    assert past[0].record.text.startswith("Tried Chart.js")
    assert "past" in past[0].explain.stages
    assert all("follows up the best match" not in h.explain.adjustments for h in past)


def test_a_question_about_the_past_finds_the_version_replaced_by_hand(small: Memory):
    """After ``invalidate(old, superseded_by=new)`` a question about now gets the new fact
    and never the old one; a question about before, in English or Spanish, gets the new
    fact and the old one right after it, without ``include_invalid``."""
    rows = [("My sister Ana lives in Porto, near the river.", 300),
            ("Ana moved to Lyon for her new job.", 30),
            ("The car insurance renews in April.", 200),
            ("Dentist every six months, next one in May.", 100),
            ("I prefer the window seat on long flights.", 250),
            ("Book club meets on the first Tuesday.", 150),
            ("Dad's birthday is on the 12th of August.", 220),
            ("The boiler was serviced in October.", 60)]
    old, new, *_ = [r.id for r in small.add_many(
        [{"content": t, "at": NOW - d * DAY} for t, d in rows], namespace="n")]
    small.invalidate(old, superseded_by=new, namespace="n")
    now = small.search("Where does my sister Ana live now?", namespace="n", k=3, touch=False)
    assert now[0].record.id == new and old not in [h.record.id for h in now]
    for question in ("Where did my sister Ana use to live?", "¿Dónde vivía antes mi hermana Ana?",
                     "Wo hat Ana früher gewohnt?"):
        hits = small.search(question, namespace="n", k=3, touch=False)
        assert [h.record.id for h in hits[:2]] == [new, old], question
        assert not hits[1].record.valid
