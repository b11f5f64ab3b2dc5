"""One real server for the HTTP API tests (module scope): the web app's server with ``/v1`` mounted, a hashing
embedder, the extractive backend, two users with a key each, and a shared document in the library."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ingest.jobs.queue import ingest_files
from tests.ui.conftest import free_port

LIGHTHOUSE = ("# Lighthouse log\n\nThe survey team reached the northern lighthouse on the third morning. "
              "The keeper, Mrs. Alder, has tended the light for twenty-two years. She logs the weather at dawn.\n\n"
              "The lamp burns paraffin and is wound by hand every four hours through the night.\n")


@dataclass
class Api:
    base: str  # http://127.0.0.1:PORT/v1
    service: object
    alice: str  # API keys
    bob: str


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    from app.context import AppContext
    from core.settings import Settings
    from ingest.embed import HashingEmbedder
    from services.service import AppService
    from ui.app import launch

    root = tmp_path_factory.mktemp("api")
    env = pytest.MonkeyPatch()  # Gradio's upload folder for this server, the old value back after it
    env.setenv("GRADIO_TEMP_DIR", str(root / "data" / "tmp" / "gradio"))
    settings = Settings(data_dir=root / "data", embedder="hashing", chunker="recursive", theta=40,
                        synth_backend="extractive", max_file_mb=0.05, top_k=5, api_requests_per_minute=600)
    ctx = AppContext(settings, embedder=HashingEmbedder(dim=64))
    service = AppService(ctx, admin_password="test-admin-pw")
    seed = root / "seed"
    seed.mkdir()
    (seed / "lighthouse.md").write_text(LIGHTHOUSE, encoding="utf-8")
    assert ingest_files(ctx, [seed / "lighthouse.md"]).results[0].status == "ingested"
    service.users.add("alice", "alice-password")
    service.users.add("bob", "bob-password-1")
    alice, bob = service.api_keys.add("alice-laptop", "alice"), service.api_keys.add("bob-script", "bob")
    demo, url = launch(service, host="127.0.0.1", port=free_port(), block=False)
    yield Api(url.rstrip("/") + "/v1", service, alice, bob)
    demo.close()
    service.close()
    ctx.close()
    env.undo()


def auth(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def upload(api: Api, key: str, name: str, text: str, wait: bool = True):
    import httpx

    return httpx.post(f"{api.base}/documents", params={"wait": wait}, headers=auth(key),
                      files=[("files", (name, text.encode(), "text/markdown"))], timeout=120)


def here() -> Path:
    return Path(__file__).parent
