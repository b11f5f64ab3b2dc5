"""A web app of its own for the security tests (module scope): hashing embedder, recursive chunker, extractive
backend, a shared-library document, an admin password; and a local "tracker" HTTP server that counts every request
a browser makes to it (an answer must never make the reader's browser fetch anything). Chromium comes from
tests/browser_fixtures.py."""
from __future__ import annotations

import http.server
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from ingest.jobs.queue import ingest_files
from tests.ui.conftest import free_port

ADMIN_PASSWORD = "sec-admin-pw"
LIBRARY = ("# Harbour rules\n\nThe harbour master, Captain Ines Varga, opens the lock gates at six every morning. "
           "Boats longer than twelve metres must book a berth a day ahead.\n")
BROWSER_A = "browser-a-0123456789abcdefghij"
BROWSER_B = "browser-b-0123456789abcdefghij"


@dataclass
class SecServer:
    url: str
    service: object
    data_dir: Path
    root: Path
    upload_root: Path


def serve(root, users: dict[str, str] | None = None, **settings_kw):
    """A running app on a fresh data dir under ``root`` (generator: yields a :class:`SecServer`, then stops it);
    ``users`` (name: password) are created before it starts, so it requires logins; ``settings_kw`` are further
    settings."""
    from app.context import AppContext
    from core.settings import Settings
    from ingest.embed import HashingEmbedder
    from services.service import AppService
    from ui.app import launch

    data = root / "data"
    old_tmp = os.environ.get("GRADIO_TEMP_DIR")
    if old_tmp is None:  # another app in this process (the UI tests') keeps its upload folder: Gradio has one
        os.environ["GRADIO_TEMP_DIR"] = str(data / "tmp" / "gradio")
    settings = Settings(data_dir=data, embedder="hashing", chunker="recursive", theta=40,
                        synth_backend="extractive", top_k=5, **settings_kw)
    ctx = AppContext(settings, embedder=HashingEmbedder(dim=64))
    service = AppService(ctx, admin_password=ADMIN_PASSWORD)
    for name, pw in (users or {}).items():
        service.users.add(name, pw)
    (root / "library").mkdir()
    (root / "library" / "harbour.md").write_text(LIBRARY, encoding="utf-8")
    ingest_files(ctx, [root / "library" / "harbour.md"])
    demo, url = launch(service, host="127.0.0.1", port=free_port(), block=False)
    yield SecServer(url.rstrip("/"), service, data, root, service.upload_root)
    demo.close()
    ctx.close()
    if old_tmp is None:
        os.environ.pop("GRADIO_TEMP_DIR", None)


@pytest.fixture(scope="module")
def sec_server(tmp_path_factory):
    yield from serve(tmp_path_factory.mktemp("sec"))


@pytest.fixture
def client(sec_server):
    from gradio_client import Client

    return Client(sec_server.url, verbose=False)


def upload(client, path, browser_id):
    """Upload one file through the app's API as a browser would (the file travels over HTTP)."""
    from gradio_client import handle_file

    table, *_ = client.predict([handle_file(str(path))], browser_id, api_name="/upload")
    return table


def ask(client, question, browser_id, retriever="dense"):
    history, *_ = client.predict(question, [], 5, 800, retriever, "extractive", browser_id, None, [], api_name="/ask")
    return str(history)


@dataclass
class Tracker:
    url: str
    hits: list


@pytest.fixture
def tracker():
    """A local HTTP server that records every request path; stands in for a third party's tracking server."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield Tracker(f"http://127.0.0.1:{srv.server_address[1]}", hits)
    srv.shutdown()
