"""The embedder's precision (issue 37, "a faster MiniLM"): bf16 matrix products where the CPU computes them natively,
with vectors within cosine 0.999 of fp32's; ``auto`` picks it only there, and a wrong value is refused by name."""
from __future__ import annotations

import numpy as np
import pytest

TEXTS = [
    "Total net sales for the three months ended June 24, 2023 were $81,797 million, down 1% year over year.",
    "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition.",
    "The Company repurchased $18.0 billion of its common stock and paid dividends of $3.8 billion.",
    " ".join(["Operating income rose on higher services revenue and lower operating expenses."] * 40),  # windows
]


def test_auto_is_bf16_only_on_a_cpu_that_computes_it(monkeypatch):
    import torch

    from ingest.embed import native_bf16, resolve_precision

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    assert native_bf16() and resolve_precision("auto", "cpu") == "bf16"
    assert resolve_precision("auto", "cuda:0") == "fp32"  # a GPU keeps what it was given
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    assert not native_bf16() and resolve_precision("auto", "cpu") == "fp32"  # emulated bf16 is slower than fp32
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    assert resolve_precision("auto", "cpu") == "bf16"
    assert resolve_precision("fp32", "cpu") == "fp32" and resolve_precision("bf16", "cuda:0") == "bf16"
    with pytest.raises(ValueError, match="'fp16'.*auto, fp32 or bf16"):
        resolve_precision("fp16", "cpu")


def test_the_setting_names_the_allowed_values():
    from pydantic import ValidationError

    from core.settings import Settings

    assert Settings().embed_precision == "auto"
    with pytest.raises(ValidationError, match="embed_precision"):
        Settings(embed_precision="int4")


@pytest.mark.integration
def test_bf16_vectors_are_fp32_s_within_cosine_0_999():
    """Run whatever the CPU (without native bf16 torch emulates it: slower, the same numbers)."""
    from ingest.embed import load_embedder

    emb = load_embedder("all-MiniLM-L6-v2", precision="fp32")
    assert emb.precision == "fp32"
    fp32 = emb.embed_passages(TEXTS)
    fp32_q = emb.embed_queries(["net sales in the quarter"])
    emb.precision = "bf16"
    bf16 = emb.embed_passages(TEXTS)
    bf16_q = emb.embed_queries(["net sales in the quarter"])
    late = emb.embed_spans([TEXTS[0]], [[(0, len(TEXTS[0]))]])[0]
    cos = np.sum(fp32 * bf16, axis=1)
    assert bf16.dtype == np.float32 and np.allclose(np.linalg.norm(bf16, axis=1), 1.0, atol=1e-5)
    assert cos.min() >= 0.999, cos
    assert not np.array_equal(fp32, bf16)  # bf16 did run: the numbers moved, a little
    assert float(fp32_q[0] @ bf16_q[0]) >= 0.999 and float(late[0] @ fp32[0]) >= 0.999
    # the ranking a question gets is the same
    assert np.argsort(-(fp32 @ fp32_q[0])).tolist() == np.argsort(-(bf16 @ bf16_q[0])).tolist()
    emb.precision = "fp16"
    with pytest.raises(ValueError, match="'fp16'"):
        emb.embed_passages(TEXTS[:1])
