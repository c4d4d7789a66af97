"""Long records are embedded by their passage window: the first 512 characters, cut at a word
boundary; the whole text stays stored and keyword-searchable."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memstream import Config, Memory
from memstream.embed.cache import PASSAGE_CHARS, passage


class Recording:
    """A real (if crude) embedder that remembers what it was asked to embed."""

    name, dim = "recording-test", 8

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        out = np.ones((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = [len(t) for t in texts]
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def test_passage_cuts_at_a_word_boundary():
    short = "a short memory"
    assert passage(short) == short
    long = "word " * 300
    cut = passage(long)
    assert len(cut) <= PASSAGE_CHARS and long.startswith(cut) and not cut.endswith("wor")


def test_a_long_record_is_embedded_by_its_window_and_found_by_any_word(tmp_path):
    emb = Recording()
    text = "Planning notes. " + "filler " * 400 + "The secret ingredient is cardamom."
    with Memory(tmp_path / "p.db", embedder=emb,  # type: ignore[arg-type]
                config=Config(embed_mode="sync", reflection_threshold=0)) as mem:
        rec = mem.add(text)
        assert mem.get(rec.id).text == text
        assert [t for t in emb.seen if t.startswith("Planning")] == [passage(text)]
        assert mem.search("cardamom", touch=False)[0].record.id == rec.id


def test_stored_texts_embed_one_thread_per_call_on_every_core(e5) -> None:
    """Each engine call for stored texts runs on one OpenMP thread, calls side by side on a
    handle per usable core: a core another process keeps busy slows only its own calls, never
    a parallel step of every call (docs/embedders.md)."""
    import os

    texts = [f"note {i}: the boiler in flat {i} was serviced on a Tuesday" for i in range(40)]
    assert len(e5._calls(texts)) >= 2
    before = e5.embed_documents(texts)
    assert e5.document_workers == len(os.sched_getaffinity(0))
    lib = e5._model._lib
    threads = {e5._pool.submit(lib.omp_get_max_threads).result() for _ in range(8)}
    assert threads == {1}
    one_by_one = np.vstack([e5.embed_documents([t]) for t in texts])
    assert np.array_equal(before, one_by_one)  # the same vectors however the calls go
