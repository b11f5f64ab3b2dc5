import numpy as np
import torch

from ingest.text.lm import token_logprobs


def full_pass(model, ids, extra):
    with torch.no_grad():
        lp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1).numpy()
    want = np.zeros(len(ids))
    want[1:] = lp[np.arange(len(ids) - 1), ids[1:]]
    return want, lp[:, extra]


def test_kv_cached_blocks_equal_one_full_pass(tiny_lm, scorer):
    tok, model = tiny_lm
    ids = tok(" ".join(["The cat sat on the mat. Dogs bark at night."] * 12), add_special_tokens=False)["input_ids"]
    extra = [tok.eos_token_id, tok.convert_tokens_to_ids("\n\n")]
    want, want_x = full_pass(model, ids, extra)
    lp, lx = token_logprobs(scorer, ids, block_tokens=17, max_context=4096, extra_ids=extra)
    np.testing.assert_allclose(lp, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lx, want_x, rtol=1e-4, atol=1e-5)
    assert scorer.forward_passes >= len(ids) // 17


def test_cache_reset_keeps_overlap_context(tiny_lm, scorer):
    tok, model = tiny_lm
    ids = tok(" ".join(["Birds sing in the morning!"] * 30), add_special_tokens=False)["input_ids"]
    lp, _ = token_logprobs(scorer, ids, block_tokens=16, max_context=48, overlap=8)
    assert lp.shape == (len(ids),) and lp[0] == 0 and np.all(lp[1:] < 0)
    # with the cache dropped, values differ slightly from the full pass, but every token is scored once
    assert scorer.tokens_processed > len(ids)
