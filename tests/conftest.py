"""Shared fixtures: a tiny randomly initialised causal LM with a tokenizer trained here, a deterministic fake
embedder, and an app context on embedded Qdrant in a temp dir. Nothing touches the network."""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# the reader alone unless a test asks for the LM check: whether the bundled llama-server runs depends on the CPU and
# on `make check-model` (tests/app/test_reader.py drives the check with a stand-in and, where it exists, the real one)
os.environ.setdefault("MGRAG_LM_CHECK", "off")

import pytest

from tests.browser_fixtures import browser, page  # noqa: F401  (fixtures for tests/ui and tests/security)

CORPUS = [
    "The cat sat on the mat. It was a sunny day.\n\nDogs bark at night. Birds sing in the morning!",
    "Qdrant stores vectors. Chunks have parents. Children cover their parent exactly.",
    "Mr. Smith paid 3.14 dollars. Is this the end? Yes, it is.\n\nA new paragraph starts here.",
    "第一句。第二句！这是中文。",
]


@pytest.fixture(scope="session")
def tiny_lm():
    """(tokenizer, model): a byte-level BPE trained on a few lines and a 2-layer Llama with random weights."""
    return build_tiny_lm()


def build_tiny_lm():
    """The tiny LM of :func:`tiny_lm`, for child processes of the tests (the same weights: seeded)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<bos>", "<eos>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 5, trainer)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")
    hf.add_tokens(["\n\n"])
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(hf), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                      bos_token_id=hf.bos_token_id, eos_token_id=hf.eos_token_id, pad_token_id=hf.pad_token_id)
    model = LlamaForCausalLM(cfg).eval()
    return hf, model


@pytest.fixture(scope="session")
def tiny_lm_dir(tiny_lm, tmp_path_factory):
    """The tiny LM saved as a model folder, for processes that load the chunker LM from their settings
    (``MGRAG_LM_MODEL=<folder>``, with ``TINY_LM_SETTINGS``): `mgrag worker`, a killed runner."""
    tok, model = tiny_lm
    path = tmp_path_factory.mktemp("tiny-lm")
    tok.save_pretrained(path)
    model.save_pretrained(path)
    return path


# the settings that make a process cut with the tiny LM as the tests' in-process contexts do
TINY_LM_SETTINGS = {"MGRAG_LG_BOUNDARY_TOKENS": '["\\n\\n", "<eos>"]', "MGRAG_EMBEDDER": "hashing",
                    "MGRAG_TORCH_THREADS": "1"}


@pytest.fixture
def scorer(tiny_lm):
    from ingest.text.lm import LogitsScorer

    tok, model = tiny_lm
    return LogitsScorer(tok, model, prompt="Continue:", boundary_tokens=("\n\n", "<eos>"), block_tokens=64,
                        context_tokens=16)


@pytest.fixture
def fake_embedder():
    from ingest.embed import HashingEmbedder

    return HashingEmbedder(dim=64)


@pytest.fixture
def make_ctx(tmp_path, tiny_lm, fake_embedder):
    """Factory of AppContexts on a fresh data dir with the tiny LM and the fake embedder."""
    from app.context import AppContext
    from core.settings import Settings
    from ingest.text.lm import LogitsScorer

    made = []

    def make(**overrides):
        settings = Settings(data_dir=overrides.pop("data_dir", tmp_path / "data"), embedder="hashing", **overrides)
        tok, model = tiny_lm
        sc = LogitsScorer(tok, model, prompt=settings.lg_prompt, boundary_tokens=("\n\n", "<eos>"))
        ctx = AppContext(settings, embedder=fake_embedder, scorer=sc)
        made.append(ctx)
        return ctx

    yield make
    for c in made:
        c.close()


@pytest.fixture
def write(tmp_path):
    """write(name, content) -> path under a docs folder; bytes or str."""
    d = tmp_path / "docs"
    d.mkdir(exist_ok=True)

    def w(name: str, content):
        p = d / name
        if isinstance(content, str):
            p.write_text(content, encoding="utf-8")
        else:
            p.write_bytes(content)
        return p

    return w


@pytest.fixture
def indexed(make_ctx, write):
    """indexed({name: text, …}, theta=40) -> an AppContext with those documents ingested (the fake embedder)."""
    from ingest.jobs.queue import ingest_files

    def make(docs: dict, theta: int = 40):
        c = make_ctx(theta=theta)
        ingest_files(c, [write(name, text) for name, text in docs.items()])
        return c

    return make


def pytest_collection_modifyitems(config, items):
    if os.environ.get("MGRAG_SKIP_INTEGRATION") == "1":
        skip = pytest.mark.skip(reason="MGRAG_SKIP_INTEGRATION=1")
        for it in items:
            if "integration" in it.keywords:
                it.add_marker(skip)
