"""The dates a query names (retrieval.dates), in English, Spanish and German, by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream.retrieval.dates import of_date, spans, without_days

NOW = datetime(2025, 6, 12, 15, 30, tzinfo=UTC).timestamp()


def _days(query: str) -> list[tuple[str, str, bool]]:
    def day(t: float) -> str:
        return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d")
    return [(day(a), day(b - 1), one) for a, b, one in spans(query, NOW)]


@pytest.mark.parametrize(("query", "expected"), [
    ("Who did I have coffee with on Friday, June 6?", [("2025-06-06", "2025-06-06", True)]),
    ("How did the April 12th long run go?", [("2025-04-12", "2025-04-12", True)]),
    ("¿Dónde cenamos el viernes 18 de abril?", [("2025-04-18", "2025-04-18", True)]),
    ("Was haben wir am 1. Mai gemacht?", [("2025-05-01", "2025-05-01", True)]),
    # a date after "now" is last year's; a named year is kept
    ("Where was the user on November 28?", [("2024-11-28", "2024-11-28", True)]),
    ("What happened on 3 March 2023?", [("2023-03-03", "2023-03-03", True)]),
    ("the 2025-02-14 report", [("2025-02-14", "2025-02-14", True)]),
    # a month alone is the whole month
    ("What instrument problem did I record in November?",
     [("2024-11-01", "2024-11-30", False)]),
    ("¿Qué hicimos en marzo?", [("2025-03-01", "2025-03-31", False)]),
    # counted back from now (2025-06-12, a Thursday)
    ("What did the vet say this morning?", [("2025-06-12", "2025-06-12", True)]),
    ("Who called yesterday?", [("2025-06-11", "2025-06-11", True)]),
    ("What did I order the day before yesterday?", [("2025-06-10", "2025-06-10", True)]),
    ("Where was I four days ago?", [("2025-06-08", "2025-06-08", True)]),
    ("¿Qué compré ayer?", [("2025-06-11", "2025-06-11", True)]),
    ("¿Qué pasó hace tres días?", [("2025-06-09", "2025-06-09", True)]),
    ("Was habe ich vorgestern gekocht?", [("2025-06-10", "2025-06-10", True)]),
    ("Wen habe ich vor 2 Tagen getroffen?", [("2025-06-10", "2025-06-10", True)]),
    # a week runs Monday to Sunday; this week ends now
    ("What did we fix last week?", [("2025-06-02", "2025-06-08", False)]),
    ("¿Qué reservamos la semana pasada?", [("2025-06-02", "2025-06-08", False)]),
    ("Was ist diese Woche passiert?", [("2025-06-09", "2025-06-12", False)]),
    # no date
    ("I may go at 6", []), ("Run the migration on staging", []),
    ("What is the deadline for the tax return?", []), ("June is nice", []),
    ("What happened on February 30?", []),
])
def test_the_dates_a_query_names(query: str, expected: list[tuple[str, str, bool]]) -> None:
    assert _days(query) == expected



def _at(day: str, hour: int = 12) -> float:
    return datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC).timestamp()


def test_a_record_is_of_the_days_it_tells_of_read_when_it_was_written() -> None:
    asked = spans("How did the April 12 long run go?", NOW)
    # written the day after, about the day before: of April 12
    assert of_date(asked, _at("2025-04-13"), "Yesterday's 7 mi long run felt fine.") == 1.0
    assert of_date(asked, _at("2025-04-13"), "Gestern 12 km gelaufen.") == 1.0
    assert of_date(asked, _at("2025-04-14"), "Ayer no corrí.") == 0.0
    # a day it names, read in the year that puts it at or before its writing
    assert of_date(asked, _at("2025-05-02"), "Notes from the run on 12 April: calves.") == 1.0
    assert of_date(asked, _at("2025-04-02"), "Race on April 12, bib 301.") == 0.0
    # written on the day itself, whatever it says; a month it names is no day of it
    assert of_date(asked, _at("2025-04-12"), "Rest day.") == 1.0
    assert of_date(asked, _at("2025-05-02"), "Ran a lot in April.") == 0.0
    assert of_date(spans("What did she run in April?", NOW), _at("2025-05-01"),
                   "Yesterday was the last run of the month.") == 0.5
    assert of_date([], _at("2025-04-13"), "Yesterday's run.") == 0.0


@pytest.mark.parametrize(("query", "words"), [
    ("¿Dónde cenamos el viernes 18 de abril?", "¿Dónde cenamos el ?"),
    ("Was haben wir am 1. Mai gemacht?", "Was haben wir am gemacht?"),
    ("What config did we change the morning after the May 7 outage?",
     "What config did we change the morning after the outage?"),
    ("Where was I on Friday, June 6 2025?", "Where was I on ?"),
    # a month alone, a day counted from now, or no date: the words stay
    ("What did we hear from Greenview at the start of May?",
     "What did we hear from Greenview at the start of May?"),
    ("What did I eat yesterday?", "What did I eat yesterday?"),
    ("Is Friday the team lunch?", "Is Friday the team lunch?"),
])
def test_the_words_a_search_matches_leave_out_the_days_the_query_names(query: str,
                                                                       words: str) -> None:
    assert without_days(query, NOW) == words


def test_a_store_without_vectors_still_finds_a_day_by_its_words(tmp_path) -> None:
    """Without vectors nothing reads a record's date, so the words of the day stay in what the
    query matches; with them, a query that is nothing but a day keeps its words too."""
    from memstream import Config, Memory

    with Memory(tmp_path / "words.db", embedder="none",
                config=Config(reflection_threshold=0)) as mem:
        mem.add("Dentist on May 7 at 10.")
        mem.add("Bought milk.")
        assert [h.record.text for h in mem.search("What is on May 7?", k=2)] == \
            ["Dentist on May 7 at 10."]
        assert [h.record.text for h in mem.search("May 7", k=2)] == ["Dentist on May 7 at 10."]


def test_outside_a_store_of_notes_a_day_is_still_found_by_its_words(tmp_path) -> None:
    """Only the notes ordering reads the day a record tells of ("my interview on September
    20", said weeks before): a store of long records or a conversation reads only the day each
    was written, so there the words of a day the query names stay in what it matches. Before,
    they were left out wherever vectors were (a BEAM question lost its answer from the top 5)."""
    from memstream import Memory

    filler = " ".join(f"(detail {i} of a long message about the week)" for i in range(40))
    with Memory(tmp_path / "long.db") as mem:  # the default embedder
        told = mem.add("The final interview at Northwind is on September 20 at 10. " + filler)
        for text in ("Groceries and the plan for meals.", "The bike needs new brakes.",
                     "Notes on the book club's next title.", "The garden fence was repaired."):
            mem.add(text + " " + filler)
        mem.flush()
        hits = mem.search("How should I get ready for September 20?", k=5, touch=False)
    found = next(h for h in hits if h.record.id == told.id)
    assert found.explain.ordering == "long records"
    assert found.explain.keyword_rank == 1  # the day's words found it
