import numpy as np
import pytest


@pytest.fixture(scope="module")
def tiny_roberta():
    """A randomly initialised 2-layer RoBERTa and a word-level tokenizer built here (no downloads)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaModel

    words = "<s> <pad> </s> <unk> the storm flooded cellar in october lighthouse keeper".split()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                 unk_token="<unk>")
    torch.manual_seed(0)
    cfg = RobertaConfig(vocab_size=len(words), hidden_size=24, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, pad_token_id=1)
    return hf, RobertaModel(cfg).eval()


def test_roberta_mean_pooling_ignores_padding(tiny_roberta):
    from router.encoders import RobertaEncoder

    tok, model = tiny_roberta
    enc = RobertaEncoder("tiny", model=model, tokenizer=tok)
    both = enc.embed_queries(["the storm flooded the cellar in october", "lighthouse keeper"])
    alone = enc.embed_queries(["lighthouse keeper"])
    assert both.shape == (2, 24) and enc.dim == 24
    np.testing.assert_allclose(np.linalg.norm(both, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(both[1], alone[0], atol=1e-5)  # padding in the batch does not change the vector


def test_roberta_router_end_to_end(tiny_roberta, tmp_path):
    from router.encoders import RobertaEncoder
    from router.model import MoGRouter, RouterConfig
    from router.runtime import RouterRuntime

    tok, model = tiny_roberta
    r = MoGRouter(RouterConfig(encoder="tiny", dim=24, encoder_kind="roberta"))
    rt = RouterRuntime(r, tmp_path, explicit=True, _encoder=RobertaEncoder("tiny", model=model, tokenizer=tok))
    w = rt.weights(rt.query_vector("the storm"))
    assert len(w) == 3 and all(0 < x < 1 for x in w)


def test_unavailable_roberta_says_how_to_get_it(tmp_path):
    from core.models import ModelNotAvailable
    from router.encoders import RobertaEncoder

    with pytest.raises(ModelNotAvailable, match="not available offline"):
        RobertaEncoder(str(tmp_path / "no-such-model")).embed_queries(["x"])
