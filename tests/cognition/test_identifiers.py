"""Identifiers (``cognition.identifiers``) and what they decide: two records naming different
identifiers are different things however alike they read, a twin of the very same text is a
record its caller kept on purpose."""

from __future__ import annotations

import numpy as np
import pytest

from memstream.cognition import changes as model
from memstream.cognition.identifiers import distinct_things, identifiers


@pytest.mark.parametrize(("text", "ids"), [
    ("Order #48210 for Ben shipped to Bristol via DPD.", {"48210"}),
    ("Rechnung RE-2025-014 an den Verlag Kranich", {"RE2025014"}),
    ("Client ID CL-0417, plate KJ-4471", {"CL0417", "KJ4471"}),
    ("Ticket #88 reopened", {"88"}),
    ("Palé 88123 cargado", {"88123"}),
    # dates, times, amounts, counts and units are not identifiers
    ("Rent 950 a month from 2025-06-01 at 7PM, 14 Feb, 3x8 @ 40 kg, 45,000 a year", set()),
    ("Call 0612 345 678 after 10:30", set()),
])
def test_identifiers_are_read_from_the_shape_of_a_token(text: str, ids: set[str]):
    assert identifiers(text) == ids


def test_records_naming_different_identifiers_are_distinct_things():
    assert distinct_things("Order #48211 shipped to Leeds.", "Order #48210 shipped to Bath.")
    assert not distinct_things("#48210 redirected to Exeter.", "Order 48210 shipped to Bath.")
    assert not distinct_things("Shipped to Leeds.", "Order #48210 shipped to Bath.")


def _eager(restates: float = 8.0) -> model.Weights:
    """A pair model that reads every pair as a sure change, or as a sure restatement when
    ``restates`` is larger than 6."""
    pair = np.zeros((len(model.LABELS), len(model.PAIR_FEATURES)))
    pair[2, 0], pair[1, 0] = restates, 6.0
    junk = np.zeros(len(model.JUNK_FEATURES))
    junk[0] = -20.0
    return model.Weights(pair=pair, junk=junk)


def _decide(new: str, old: str, read: np.ndarray | None = None, restates: float = 8.0
            ) -> list[model.Decision]:
    return model.decide(model.Item("b", new, "event", 2.0), [model.Item("a", old, "event", 1.0)],
                        np.array([3.0]), [True], 3.0, 0.0, _eager(restates),
                        read=None if read is None else lambda idx: read[idx])


def test_different_identifiers_are_never_linked_unless_the_reader_is_sure():
    older = "Order #48210 for Ben shipped to Bristol via DPD."
    newer = "Order #48211 for Ben shipped to Bristol via DPD."
    assert _decide(newer, older) == []
    assert _decide(newer, older, restates=0.0) == []
    unsure = np.array([[0.9, 0.02, 0.02, 0.02, 0.02, 0.02]])
    assert _decide(newer, older, unsure, restates=0.0) == []
    sure = np.array([[0.97, 0.01, 0.01, 0.0, 0.01, 0.0]])
    assert [f.kind for f in _decide(newer, older, sure, restates=0.0)] == ["superseded"]
    # the same identifier: the model decides as it would
    assert [f.kind for f in _decide("Order 48210 was redirected to Exeter.", older)] == [
        "duplicate"]


def test_a_twin_of_the_very_same_text_is_never_a_duplicate():
    text = "Weekly stand-up notes posted."
    assert [f.kind for f in _decide(text, text)] != ["duplicate"]


def test_the_reader_vetoes_what_it_reads_no_change_or_restatement_in():
    older, newer = "Swimming on Saturdays at 9:30.", "Swimming moved to Thursdays at 17:00."
    assert [f.kind for f in _decide(newer, older, restates=0.0)] == ["superseded"]
    no_change = np.array([[model.READ_CHANGES / 2, 0.5, 0.2, 0.1, 0.1, 0.05]])
    assert _decide(newer, older, no_change, restates=0.0) == []
    assert [f.kind for f in _decide(newer, older, no_change)] == ["duplicate"]
    no_restatement = np.array([[0.5, model.READ_RESTATES / 2, 0.2, 0.1, 0.1, 0.075]])
    assert _decide(newer, older, no_restatement) == []
    found = _decide(newer, older, no_restatement, restates=0.0)
    assert [f.kind for f in found] == ["superseded"]
    assert "the reader reads a change at 0.50" in found[0].reason


def test_a_veto_keeps_the_share_of_the_labelled_pairs_asked_for():
    read = np.array([0.9, 0.6, 0.4, 0.25, 0.15, 0.12, 0.11, 0.11, 0.11, 0.03, 0.01, 0.0])
    labelled = np.array([True] * 10 + [False] * 2)
    assert model.veto(read, labelled, keeps=0.9) == 0.1  # 0.2 would drop six of ten
    assert model.veto(read, labelled, keeps=1.0) == 0.02  # 0.05 would drop the 0.03
    assert model.veto(read, np.zeros(12, dtype=bool)) == 0.0


def test_records_of_one_template_about_different_subjects_are_distinct_things():
    from memstream.cognition.identifiers import distinct_subjects

    assert distinct_subjects("Project Rowan: waiting on legal; lead is Maja.",
                             "Project Alder: waiting on legal; lead is Maja.")
    assert distinct_subjects("Appuntamento di Anna Costa: pulizia il 9 giugno.",
                             "Appuntamento di Giulia Conti: pulizia il 3 giugno.")
    # the same subject, or a change told in other words: not distinct
    assert not distinct_subjects("Project Alder: lead is Tom now.",
                                 "Project Alder: waiting on legal; lead is Maja.")
    assert not distinct_subjects("Switched to Dr. Achebe; Pryce retired.",
                                 "Our dentist is Dr. Pryce.")
    assert distinct_things("Project Rowan: kickoff done.", "Project Alder: kickoff done.")
