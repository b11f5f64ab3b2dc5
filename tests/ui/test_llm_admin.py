"""The LLM chosen in the UI: the Admin tab lists an OpenAI-compatible endpoint's models, tests the connection naming
what failed, and saves it server side (the key never goes back to the page); the chat's backend menu offers only
the backends that can run here and says why the others cannot."""
from __future__ import annotations

import os
import socket
import stat

import pytest

from ingest.jobs.queue import ingest_files
from services.service import AdminRequired, AppService
from tests.app.stub_openai import StubOpenAI


@pytest.fixture
def svc(make_ctx):
    return AppService(make_ctx(chunker="recursive", theta=20, synth_backend="extractive"), admin_password="pw")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_models_listed_and_connection_tested(svc):
    tok = svc.login("admin", "pw")
    with StubOpenAI(api_key="sk-secret", strict_models=True) as stub:
        assert svc.llm_models(tok, stub.base_url, "sk-secret") == ["stub-llm", "stub-llm-large"]
        assert svc.llm_test(tok, stub.base_url, "stub-llm", "sk-secret").startswith("connected: 2 model(s) listed")
        with pytest.raises(ValueError, match=r"refused the API key \(HTTP 401\): check the key"):
            svc.llm_models(tok, stub.base_url, "sk-wrong")
        with pytest.raises(ValueError, match="was not found \\(HTTP 404\\): the base URL should end in /v1"):
            svc.llm_models(tok, stub.base_url[:-3], "sk-secret")
        with pytest.raises(ValueError, match="model 'llama9' is not among the endpoint's models: stub-llm"):
            svc.llm_test(tok, stub.base_url, "llama9", "sk-secret")
    with pytest.raises(ValueError, match="nothing is listening there"):
        svc.llm_models(tok, f"http://127.0.0.1:{_free_port()}/v1")
    with pytest.raises(ValueError, match="enter the endpoint's base URL"):
        svc.llm_models(tok, "")
    with pytest.raises(AdminRequired):
        svc.llm_models("not-a-token", "http://127.0.0.1:1/v1")


def test_saved_endpoint_is_used_and_its_key_is_never_shown(svc, tmp_path):
    from app.answer import answer

    tok = svc.login("admin", "pw")
    assert svc.backends()["openai"].startswith("no endpoint: the admin sets one on the Admin tab")
    doc = tmp_path / "keeper.md"
    doc.write_text("The keeper has tended the light for twenty-two years. She logs the weather.", encoding="utf-8")
    ingest_files(svc.ctx, [doc])
    with StubOpenAI(reply=None, api_key="sk-secret") as stub:
        shown = svc.set_llm(tok, stub.base_url, "stub-llm", "sk-secret", password="pw")
        assert shown == {"base_url": stub.base_url, "model": "stub-llm", "key_set": True}
        assert "sk-secret" not in repr(shown) and svc.backends()["openai"] is None
        a = answer(svc.ctx, "How long has the keeper tended the light?", backend="openai")
        assert "twenty-two years" in a.text and stub.requests[-1]["auth"] == "Bearer sk-secret"
        assert stub.requests[-1]["body"]["model"] == "stub-llm"
        # saved with mode 0600, and a new server on the same data dir uses it
        path = svc.ctx.settings.data_dir / ".secrets" / "llm.json"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        again = AppService(svc.ctx, admin_password="pw")
        assert again.llm_endpoint(again.login("admin", "pw"))["model"] == "stub-llm"
        # an empty key keeps the stored one; clearing drops it
        assert svc.set_llm(tok, stub.base_url, "stub-llm-large", "", password="pw")["key_set"] is True
        assert svc.set_llm(tok, stub.base_url, "stub-llm-large", clear_key=True, password="pw")["key_set"] is False
    with pytest.raises(ValueError, match="is not an http:// or https:// address"):
        svc.set_llm(tok, "ftp://example.org/v1", "m", password="pw")


def test_backend_menu_says_why_a_backend_cannot_run(svc, tmp_path):
    svc.ctx.settings = svc.ctx.settings.model_copy(update={"synth_model": str(tmp_path / "no-such-model")})
    status = svc.backends()
    assert status["extractive"] is None
    assert "is not on this machine" in status["transformers"] and "MGRAG_SYNTH_MODEL" in status["transformers"]
