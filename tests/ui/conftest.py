"""One in-process web app for the UI tests (session scope, so the suite stays fast): hashing embedder, recursive
chunker, extractive backend, a temp data dir; Gradio's upload cache inside it. The embedder can be held at a gate
to keep a re-ingestion running while a test chats."""
from __future__ import annotations

import os
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from ingest.jobs.queue import ingest_files
from tests.browser_fixtures import ARTIFACTS, CHROMIUM  # noqa: F401  (the browser fixtures are in tests/conftest.py)

ADMIN_PASSWORD = "test-admin-pw"

KEEPER = ("# Lighthouse log\n\nThe survey team reached the northern lighthouse on the third morning. "
          "The keeper, Mrs. Alder, has tended the light for twenty-two years. She logs the weather at dawn.\n\n"
          "The lamp burns paraffin and is wound by hand every four hours through the night.\n")
ORCHARD = ("# Orchard notes\n\nThe orchard has forty apple trees and six pear trees. Pruning happens in February. "
           "The oldest tree was planted in 1911 by the first owner.\n")


INGESTION_FILES = (os.path.join("ingest", "pipeline.py"), os.path.join("ingest", "jobs", "work.py"))


def _called_from_ingestion() -> bool:
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename.endswith(INGESTION_FILES):
            return True
        f = f.f_back
    return False


class GatedEmbedder:
    """The hashing embedder; while ``gate`` is clear, embedding for ingestion waits (questions and the extractive
    answerer's sentence embeddings never wait), or only that of the texts ``holds(texts)`` says (one document's)."""

    def __init__(self, inner):
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()
        self.holds = lambda texts: True  # which ingestion calls the closed gate holds
        self.delay_s = 0.0  # seconds each ingestion call waits (a slow embedder, to watch progress move)

    def embed_passages(self, texts):
        if _called_from_ingestion():
            if not self.gate.is_set() and self.holds(texts):
                self.waiting.set()
                self.gate.wait(60)
            if self.delay_s:
                import time

                time.sleep(self.delay_s)
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@dataclass
class Server:
    url: str
    service: object
    embedder: GatedEmbedder
    data_dir: Path
    root: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def ui_server(tmp_path_factory):
    from app.context import AppContext
    from core.settings import Settings
    from ingest.embed import HashingEmbedder
    from services.service import AppService
    from ui.app import launch

    root = tmp_path_factory.mktemp("ui")
    data = root / "data"
    env = pytest.MonkeyPatch()  # Gradio's upload folder for this server, the old value back after it
    env.setenv("GRADIO_TEMP_DIR", str(data / "tmp" / "gradio"))
    settings = Settings(data_dir=data, embedder="hashing", chunker="recursive", theta=40, synth_backend="extractive",
                        max_file_mb=0.05, top_k=5, router="default")
    emb = GatedEmbedder(HashingEmbedder(dim=64))
    ctx = AppContext(settings, embedder=emb)
    service = AppService(ctx, admin_password=ADMIN_PASSWORD)
    docs = root / "seed"
    docs.mkdir()
    (docs / "keeper.md").write_text(KEEPER, encoding="utf-8")

    report = ingest_files(ctx, [docs / "keeper.md"])  # the shared library, as `mgrag ingest` makes it
    assert report.results[0].status == "ingested", report.results
    demo, url = launch(service, host="127.0.0.1", port=free_port(), block=False)
    yield Server(url.rstrip("/"), service, emb, data, root)
    emb.gate.set()
    demo.close()
    ctx.close()
    env.undo()
