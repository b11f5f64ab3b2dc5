"""A server without user accounts, as a newcomer runs it (issue 32): its own routes exist before it answers anything
(item 7: the API was mounted after the server started listening, so right after ``/`` answered, ``/v1/models``
answered 404 for a moment), and an API key that cannot see a browser's uploads says so (item 6: the only symptom
was "The documents do not say")."""
from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from tests.api.conftest import LIGHTHOUSE, auth

ORCHARD = "# Orchard notes\n\nThe orchard has forty apple trees and six pear trees. Pruning happens in February.\n"


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    from gradio import http_server

    from app.context import AppContext
    from core.settings import Settings
    from ingest.embed import HashingEmbedder
    from ingest.jobs.queue import enqueue, wait
    from services.service import AppService
    from tests.ui.conftest import free_port
    from ui.app import launch

    root = tmp_path_factory.mktemp("bare")
    env = pytest.MonkeyPatch()
    seen = []
    real = http_server.Server.run_in_thread

    def spy(self):  # the moment the server starts listening: which paths does its app route?
        seen.append({getattr(r, "path", None) for r in self.config.app.routes})
        return real(self)

    env.setattr(http_server.Server, "run_in_thread", spy)
    env.setenv("GRADIO_TEMP_DIR", str(root / "data" / "tmp" / "gradio"))
    settings = Settings(data_dir=root / "data", embedder="hashing", chunker="recursive", theta=40,
                        synth_backend="extractive")
    ctx = AppContext(settings, embedder=HashingEmbedder(dim=64))
    service = AppService(ctx, admin_password="test-admin-pw")
    library = enqueue(ctx, [("orchard.md", ORCHARD.encode())])  # the shared library
    browser = enqueue(ctx, [("lighthouse.md", LIGHTHOUSE.encode())], "browser:newcomer")  # a browser's upload
    service.ensure_runner().wake()
    jobs = wait(ctx.jobs, [library[0].job.job_id, browser[0].job.job_id], "searchable", timeout_s=120)
    assert all(j.searchable for j in jobs)
    key = service.api_keys.add("laptop", "me")
    demo, url = launch(service, host="127.0.0.1", port=free_port(), block=False)
    yield url.rstrip("/") + "/v1", key, seen, settings.data_dir
    demo.close()
    service.close()
    ctx.close()
    env.undo()


def test_the_api_and_the_viewer_are_routed_before_the_server_listens(bare):
    base, key, seen, _ = bare
    assert seen and {"/v1", "/mgrag/view/{token}", "/mgrag/page/{token}"} <= seen[0]
    got = httpx.get(base + "/models", headers=auth(key), timeout=30)
    assert got.status_code == 200 and got.json()["data"][0]["id"] == "mgrag"


def test_a_key_says_it_cannot_see_a_browser_s_uploads_when_there_are_no_accounts(bare):
    base, key, _, data_dir = bare
    listed = httpx.get(base + "/documents", headers=auth(key), timeout=30).json()
    assert [d["id"] for d in listed["documents"]] == ["orchard.md"]
    assert "uploaded in a browser belongs to that browser" in listed["note"]
    body = {"model": "mgrag", "messages": [{"role": "user", "content": "How long has Mrs. Alder tended the light?"}]}
    out = httpx.post(base + "/chat/completions", headers=auth(key), json=body, timeout=60).json()
    content = out["choices"][0]["message"]["content"]
    assert out["mgrag"]["abstained"] and "do not say" in content
    assert "a file uploaded in a browser belongs to that browser alone" in content and out["mgrag"]["note"]
    answered = httpx.post(base + "/chat/completions", headers=auth(key), timeout=60, json={
        "model": "mgrag", "messages": [{"role": "user", "content": "How many pear trees does the orchard have?"}]})
    assert "browser" not in answered.json()["choices"][0]["message"]["content"]  # said only with an abstention
    made = subprocess.run([sys.executable, "-m", "cli.main", "--data-dir", str(data_dir), "keys", "add", "script",
                           "--user", "me"], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0 and made.stdout.startswith("mgrag-")
    assert "files uploaded in a browser belong to that browser and no API key searches them" in made.stderr
