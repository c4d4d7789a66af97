"""The learned ranking stage on small hand-made cases: its features, its reordering, its
weights file, its fit, and a search where it puts the right turn first."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memstream import Memory
from memstream.bench.fit_rerank import any_at, fit
from memstream.config import Config
from memstream.errors import InvalidInput
from memstream.retrieval import null, rerank
from memstream.retrieval.pipeline import reorder
from memstream.retrieval.rerank import FEATURES, Pool, features, speaker_of

F = {name: n for n, name in enumerate(FEATURES)}
DAY = 86400.0


def pool(texts: dict[str, str], times: dict[str, float], cosine: dict[str, float],
         keyword: dict[str, float], order: list[str]) -> Pool:
    """Candidates ``order`` (fused best first) of a stream in time order."""
    stream = sorted(times, key=lambda r: times[r])
    nb = {r: (stream[max(0, n - 2):n][::-1], stream[n + 1:n + 2]) for n, r in enumerate(stream)}
    return Pool(ids=order, texts=texts, speakers={r: speaker_of(t, None) for r, t in texts.items()},
                times=times, fused={r: 1 / (10 + n) for n, r in enumerate(order, start=1)},
                cosine=cosine, keyword=keyword, vector_rank={r: n for n, r in
                                                             enumerate(order, start=1)},
                keyword_rank={r: 1 for r in keyword}, neighbours=nb)


def test_speaker_from_metadata_or_a_leading_name():
    assert speaker_of("Caroline: I went hiking", None) == "caroline"
    assert speaker_of("no speaker here: really", None) is None
    assert speaker_of("hello", {"speaker": " Mel "}) == "mel"


def test_features_hand_computed():
    texts = {"a": "Mel: Do you have pets?", "b": "Caroline: We adopted a second cat.",
             "c": "Mel: I love painting sunsets.", "d": "Caroline: The hike was long."}
    # a, b, c: one session; d: two days later
    times = {"a": 0.0, "b": 30.0, "c": 60.0, "d": 2 * DAY}
    cosine = {"a": 0.6, "b": 0.4, "c": 0.2, "d": 0.2}
    x = features("What pets does Caroline have?", pool(
        texts, times, cosine, {"a": 2.0}, ["a", "b", "c", "d"]))
    row = {r: dict(zip(FEATURES, x[n], strict=True)) for n, r in enumerate("abcd")}
    std = float(np.std([0.6, 0.4, 0.2, 0.2]))
    assert row["a"]["cosine_z"] == pytest.approx((0.6 - 0.35) / std)
    assert row["b"]["prev_cosine_z"] == pytest.approx(row["a"]["cosine_z"])  # answer after
    assert row["b"]["prev_keyword"] == 1.0 and row["b"]["keyword"] == 0.0
    assert row["b"]["speaker_named"] == 1.0 and row["a"]["speaker_named"] == 0.0
    assert row["a"]["is_question"] == 1.0 and row["b"]["is_question"] == 0.0
    assert row["a"]["terms"] == pytest.approx(1 / 2)  # "pets" of ["pets", "caroline"]
    # sessions by time gap: d is alone, the other three share the keyword match of a
    assert row["c"]["session_max_keyword"] == 1.0 and row["d"]["session_max_keyword"] == 0.0
    assert row["c"]["session_terms"] == pytest.approx(1.0)  # "pets" in a, "caroline" in b
    assert row["d"]["session_terms"] == pytest.approx(1 / 2)
    assert row["a"]["fused_rank"] == 1.0 and row["d"]["fused_rank"] == pytest.approx(0.5)


def test_reorder_puts_the_stage_first_and_keeps_the_rest_in_order():
    fused = {"a": 0.5, "b": 0.4, "c": 0.3, "d": 0.2}
    out = reorder(fused, ["a", "b"], np.array([-1.0, 2.0]))
    assert sorted(out, key=lambda r: -out[r]) == ["b", "a", "c", "d"]


def test_weights_file_describes_the_features_and_a_mismatch_turns_the_stage_off(monkeypatch):
    model = rerank.load_model()
    assert model is not None and model.weights.shape == (len(FEATURES),)
    assert np.all(model.std > 0)
    monkeypatch.setattr(rerank, "FEATURES", (*FEATURES, "something new"))
    rerank.load_model.cache_clear()
    try:
        assert rerank.load_model() is None
    finally:
        monkeypatch.undo()
        rerank.load_model.cache_clear()


def test_fit_learns_the_feature_that_marks_the_evidence():
    rng = np.random.default_rng(3)
    groups = []
    for _ in range(40):
        x = rng.normal(size=(20, len(FEATURES)))
        y = np.zeros(20)
        y[rng.integers(20)] = 1.0
        x[:, F["speaker_named"]] = y + rng.normal(scale=0.1, size=20)  # marks the evidence
        groups.append((x, y))
    model = fit(groups)
    assert int(np.argmax(model.weights)) == F["speaker_named"]
    assert any_at(model, groups, 1) > 0.9 > any_at(None, groups, 1)
    restored = json.loads(model.to_json())
    assert restored["features"] == list(FEATURES)


def test_config_flag():
    assert Config().resolve({}).rerank is True
    assert Config().resolve({"MEMSTREAM_RERANK": "off"}).rerank is False
    with pytest.raises(InvalidInput, match="MEMSTREAM_RERANK"):
        Config().resolve({"MEMSTREAM_RERANK": "maybe"})


#: other topics around the exchange, so that the search has the stage's minimum of candidates
FILLER = [
    "Mel: The weather was lovely at the beach on Sunday.",
    "Caroline: I started a new book about history.", "Mel: My car needed new tires this week.",
    "Caroline: The concert downtown was so loud.", "Mel: We baked bread with the kids yesterday.",
    "Caroline: I am learning to play the guitar.", "Mel: Our garden has tomatoes finally.",
    "Caroline: The museum had a new exhibit on ships.", "Mel: I ran five miles this morning.",
    "Caroline: My cousin visits from Ohio next month.",
    "Mel: The office moved to a bigger building.", "Caroline: I painted my bedroom blue.",
    "Mel: We watched a movie about space.", "Caroline: The bakery on Main Street closed.",
    "Mel: My phone screen cracked again.", "Caroline: I volunteered at the shelter kitchen.",
    "Mel: The hiking trail was muddy.", "Caroline: I tried a new pasta recipe.",
    "Mel: The train was late twice this week.", "Caroline: I bought new running shoes."]


@pytest.mark.slow
def test_the_answer_beats_the_question_that_names_its_words(tmp_path, e5, monkeypatch):
    """Fusion puts the question (it holds both query words) first; the stage knows an answer
    follows a question and that Caroline, whom the question names, is the one answering.
    (The filler here is small talk on no subject: the stream is taken as a conversation, which
    test_pipeline's coherence test checks apart.)"""
    monkeypatch.setattr(null, "CONVERSATION", -1e9)
    exchange = ["Mel: Work is busy, I have a big deadline.",
                "Mel: Caroline, what pets do you have? I always wanted pets.",
                "Caroline: Two cats and a hamster.",
                "Mel: My pottery class moved to Thursdays."]
    # the stage orders 50 candidates or more: three rounds of small talk around the exchange
    filler = [t.replace(".", f" ({n}).") for n in range(3) for t in FILLER]
    turns = filler[:30] + exchange + filler[30:]
    firsts = {}
    for flag in (False, True):
        with Memory(tmp_path / f"r{flag}.db", embedder=e5, config=Config(rerank=flag)) as mem:
            mem.add_many([{"content": t, "at": 1000 + 30 * i} for i, t in enumerate(turns)])
            mem.flush(timeout=60)
            hits = mem.search("What pets does Caroline have?", k=1, weights="recall",
                              touch=False)
            firsts[flag] = hits[0].record.text
    assert firsts == {False: exchange[1], True: exchange[2]}

