"""Which orderings a search runs is decided once, from the kind of store it reads, and each hit
says so: ``explain.ordering`` (the kind) and ``explain.stages`` (what ran, in order)."""

from __future__ import annotations

from pathlib import Path

from memstream import Memory

NOTES = ["Ana moved to Lisbon in March", "I drink green tea in the morning",
         "My sister Ana works as a nurse", "The migration is due in Q3", "Bought a new bike"]


def test_a_store_of_notes_runs_the_notes_ordering(tmp_path: Path):
    with Memory(tmp_path / "notes.db") as mem:  # the default embedder
        for text in NOTES:
            mem.add(text, user_id="u")
        mem.flush()
        hits = mem.search("where does Ana live", user_id="u")
    assert {h.explain.ordering for h in hits} == {"notes"}
    assert {h.explain.stages for h in hits} == {
        ("candidates", "calibrated", "notes", "names", "current", "standing")}


def test_without_vectors_and_under_the_papers_weights(tmp_path: Path):
    with Memory(tmp_path / "kw.db", embedder="none") as mem:
        for text in NOTES:
            mem.add(text)
        first = mem.search("Ana Lisbon")[0]
        paper = mem.search("Ana Lisbon", weights="paper")[0]
    assert first.explain.ordering == "keyword"
    assert first.explain.stages == ("candidates", "calibrated", "lifted", "current", "standing")
    assert paper.explain.stages == ("candidates", "weighted", "current")


def test_long_records_are_their_own_kind(tmp_path: Path):
    with Memory(tmp_path / "long.db") as mem:
        for n, text in enumerate(NOTES):
            mem.add(f"{text}. " + " ".join(f"(detail {n}.{i} of a long message)"
                                           for i in range(40)))
        mem.flush()
        hit = mem.search("where does Ana live")[0]
    assert hit.explain.ordering == "long records"
    assert "notes" not in hit.explain.stages and "lifted" in hit.explain.stages


def test_the_stages_are_in_a_hits_json(tmp_path: Path):
    with Memory(tmp_path / "json.db", embedder="none") as mem:
        mem.add("Ana moved to Lisbon")
        raw = mem.search("Ana")[0].to_dict()["explain"]
    assert raw["ordering"] == "keyword"
    assert raw["stages"] == ["candidates", "calibrated", "lifted", "current", "standing"]
