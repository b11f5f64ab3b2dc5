"""Uploads are read only from the server's upload folder: a path naming any other file on the server, directly or
through a symlink, is refused and logged, whether it reaches the service, the HTTP API or the Python client.
Upload cache files are removed once ingested, so nothing stays downloadable by its URL."""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys

import httpx
import pytest

from tests.security.conftest import BROWSER_A, ask, upload

SECRET = "The vault combination is 31-07-1965 and the alarm code is 4471.\n"


@pytest.fixture
def secret_file(sec_server):
    """A file on the server's disk, outside the upload folder."""
    d = sec_server.root / "server-only"
    d.mkdir(exist_ok=True)
    p = d / "vault.md"
    p.write_text(SECRET, encoding="utf-8")
    return p


def _not_ingested(service, name="vault.md"):
    docs = [r["doc_id"] for r in service.ctx.catalog.documents(None)]
    return all("vault" not in d for d in docs)


def test_service_refuses_a_path_outside_the_upload_folder(sec_server, secret_file, caplog):
    with caplog.at_level(logging.WARNING, logger="services.service"):
        rows = sec_server.service.ingest_files([secret_file], owner="browser:x")
    assert rows[0]["status"] == "refused" and "not a file uploaded to this server" in rows[0]["message"]
    assert any("outside the upload folder" in r.getMessage() for r in caplog.records)
    assert _not_ingested(sec_server.service)


def test_service_refuses_a_symlink_out_of_the_upload_folder(sec_server, secret_file):
    link_dir = sec_server.upload_root / "evil-link-dir"
    link_dir.mkdir(parents=True, exist_ok=True)
    link = link_dir / "innocent.md"
    link.symlink_to(secret_file)
    try:
        rows = sec_server.service.ingest_files([link], owner="browser:x")
    finally:
        shutil.rmtree(link_dir)
    assert rows[0]["status"] == "refused" and "not a file uploaded to this server" in rows[0]["message"]
    assert _not_ingested(sec_server.service)


def test_raw_api_call_naming_a_server_file_is_refused(sec_server, secret_file, client):
    """The request carries a FileData whose path names a file on the server (what a remote attacker can send)."""
    r = httpx.post(f"{sec_server.url}/gradio_api/call/upload", json={"data": [
        [{"path": str(secret_file), "orig_name": "x.md", "meta": {"_type": "gradio.FileData"}}], BROWSER_A]})
    assert r.status_code == 200
    with httpx.stream("GET", f"{sec_server.url}/gradio_api/call/upload/{r.json()['event_id']}") as s:
        events = "".join(s.iter_lines())
    assert "event: error" in events and "complete" not in events
    assert _not_ingested(sec_server.service)
    assert "31-07-1965" not in ask(client, "What is the vault combination?", BROWSER_A)


def test_the_reported_client_call_cannot_read_a_server_file(sec_server, secret_file):
    """The exact call of the report, `Client(url).predict([{"path": ..., "meta": {"_type": "gradio.FileData"}}],
    api_name="/upload")`, made from a client that cannot see the server's disk (its own mount namespace hides the
    folder). gradio_client uploads the files it can read itself; a path it cannot read never becomes a server read."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare to give the client its own view of the disk")
    code = (
        "from gradio_client import Client\n"
        f"c = Client({sec_server.url!r}, verbose=False)\n"
        "try:\n"
        f"    c.predict([{{'path': {str(secret_file)!r}, 'orig_name': 'x.md', "
        "'meta': {'_type': 'gradio.FileData'}}],"
        f" {BROWSER_A!r}, api_name='/upload')\n"
        "    print('UPLOADED')\n"
        "except Exception as e:\n"
        "    print('REFUSED', type(e).__name__)\n")
    hide = f"mount -t tmpfs tmpfs {secret_file.parent} && exec {sys.executable} -c \"$0\""
    r = subprocess.run(["unshare", "-m", "sh", "-c", hide, code], capture_output=True, text=True, timeout=120)
    if "mount:" in r.stderr or "unshare:" in r.stderr:
        pytest.skip(f"no mount namespace here: {r.stderr.strip()[:120]}")
    assert "REFUSED" in r.stdout, (r.stdout, r.stderr)
    assert _not_ingested(sec_server.service)


def test_uploaded_files_leave_the_upload_cache(sec_server, client, tmp_path):
    p = tmp_path / "pier.md"
    p.write_text("The north pier was rebuilt in 1998 after the winter storm. It is 140 metres long.\n",
                 encoding="utf-8")
    table = upload(client, p, BROWSER_A)
    assert "ready" in str(table)
    leftovers = [f for f in sec_server.upload_root.rglob("*") if f.is_file() and f.name == "pier.md"]
    assert leftovers == []



def test_stale_files_in_the_upload_cache_are_removed(sec_server, client, tmp_path):
    """What no upload needs any more goes when the next upload comes (and when the app starts): a file uploaded
    but never submitted, or cut off by a stop, over an hour ago; the empty temporary file Gradio's File component
    leaves in the cache per upload, a minute on. A file uploaded a moment ago stays."""
    import time

    root = sec_server.upload_root
    (root / "abandoned").mkdir(parents=True, exist_ok=True)
    abandoned = root / "abandoned" / "diary.md"
    abandoned.write_text("Never submitted.\n", encoding="utf-8")
    stray = root / "tmpstray0"
    stray.write_bytes(b"")
    (root / "fresh").mkdir(exist_ok=True)
    fresh = root / "fresh" / "now.md"
    fresh.write_text("Uploaded a moment ago.\n", encoding="utf-8")
    hour_ago, minutes_ago = time.time() - 3700, time.time() - 120
    os.utime(abandoned, (hour_ago, hour_ago))
    os.utime(stray, (minutes_ago, minutes_ago))
    p = tmp_path / "quay.md"
    p.write_text("The west quay has six bollards and one crane.\n", encoding="utf-8")
    assert "ready" in str(upload(client, p, BROWSER_A))
    assert not abandoned.exists() and not (root / "abandoned").exists() and not stray.exists()
    assert fresh.exists()
