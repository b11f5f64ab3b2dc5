"""One body limit in front of every route of the web server (issue 47): Gradio's own routes took bodies of any size
(three 150 MB JSON bodies to ``/gradio_api/queue/join`` held 2 GB of the server's memory and slowed another user's
search to 17 s), with or without a login, while only ``/v1`` had a cap. Now a body that declares more than its
route's limit is refused (413, a short JSON error) before it is read, and one that streams past it without declaring
its length is cut off: uploads (Gradio's upload route, ``/v1/documents``) up to 16 files of ``max_file_mb`` and 1 MB,
everything else (Gradio's queue, run and call routes, its login, the viewer, /v1's chat) up to 2 MB. The server keeps
answering, and a normal upload, question and API chat still work. Each test runs on a server without accounts and
on one with them, where the requests come before any login."""
from __future__ import annotations

import json
import socket
import threading
from urllib.parse import urlsplit

import httpx
import pytest

from tests.security.conftest import ask, serve, upload

PASSWORDS = {"ines": "harbour-master-1"}
MAX_FILE_MB = 1  # so uploads may be up to 16 * 1 MB + 1 MB, far above the 2 MB of every other route
JSON_TYPE, FORM_TYPE = "application/json", "application/x-www-form-urlencoded"
MULTIPART_TYPE = "multipart/form-data; boundary=b"
HUGE = 150 * 2**20

# (method, path, content type): every kind of route the server has, Gradio's and its own
ROUTES = [("POST", "/gradio_api/queue/join", JSON_TYPE), ("POST", "/gradio_api/run/ask", JSON_TYPE),
          ("POST", "/gradio_api/call/ask", JSON_TYPE), ("POST", "/login", FORM_TYPE),
          ("GET", "/mgrag/view/some-token", JSON_TYPE), ("POST", "/v1/chat/completions", JSON_TYPE),
          ("POST", "/gradio_api/upload", MULTIPART_TYPE), ("POST", "/v1/documents", MULTIPART_TYPE)]


@pytest.fixture(scope="module", params=["open", "accounts"])
def server(request, tmp_path_factory):
    users = PASSWORDS if request.param == "accounts" else None
    yield from serve(tmp_path_factory.mktemp(f"limits-{request.param}"), users=users, max_file_mb=MAX_FILE_MB)


def declared(url: str, method: str, path: str, length: int, content_type: str) -> tuple[int, dict]:
    """Send a request that declares a ``length``-byte body (Content-Length) but sends only its first bytes, and read
    the answer: (status, JSON body). A server that waits for the rest instead of answering fails the test."""
    u = urlsplit(url)
    head = (f"{method} {path} HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()
    data = b""
    with socket.create_connection((u.hostname, u.port), timeout=20) as s:
        s.sendall(head + b'{"data": ["')
        try:
            while not _complete(data):
                got = s.recv(65536)
                if not got:
                    break
                data += got
        except TimeoutError:
            pytest.fail(f"{method} {path}: no answer while the body was still to come; the server waited for "
                        f"{length} bytes instead of refusing them")
        except ConnectionResetError:
            pass  # the answer came before the server closed the connection on the unread body
    status_line, _, rest = data.partition(b"\r\n")
    assert status_line, f"{method} {path}: the connection closed without an answer"
    body = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), json.loads(body) if body.startswith(b"{") else {"raw": body[:300]}


def _complete(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    lengths = [line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    return bool(lengths) and len(body) >= int(lengths[0])


def chunks(total: int, first: bytes = b'{"data": ["', each: bytes = b""):
    """A body of about ``total`` bytes sent in 64 KiB pieces (each starting with ``each``) without a Content-Length
    (chunked)."""
    yield first
    sent = len(first)
    while sent < total:
        yield each + b"y" * 65536
        sent += len(each) + 65536


def parts(n: int, size: int):
    """A multipart body of ``n`` files of ``size`` bytes each (each under max_file_mb), streamed without a length."""
    for i in range(n):
        yield b'--b\r\nContent-Disposition: form-data; name="files"; filename="part%d.md"\r\n\r\n' % i
        for _ in range(size // 65536):
            yield b"y" * 65536
        yield b"\r\n"
    yield b"--b--\r\n"


def too_large(status: int, body: dict, what: str) -> None:
    assert status == 413, (what, status, body)
    error = body["error"]
    assert error["code"] == "request_too_large" and error["message"].startswith("the request is larger than"), body
    assert "Traceback" not in error["message"] and len(error["message"]) < 200, body


def still_up(server) -> None:
    """The server answers its page at once (the login form where there are accounts)."""
    r = httpx.get(server.url + "/", timeout=10)
    assert r.status_code == 200 and "gradio" in r.text.lower()


@pytest.mark.parametrize("method,path,content_type", ROUTES)
def test_a_body_declaring_150_mb_is_refused_before_it_is_read(server, method, path, content_type):
    status, body = declared(server.url, method, path, HUGE, content_type)
    too_large(status, body, f"{method} {path}")
    limit_mb = 2.0 if content_type != MULTIPART_TYPE else 16 * MAX_FILE_MB + 1.0
    assert f"larger than {limit_mb:.1f} MB" in body["error"]["message"], body
    still_up(server)


def test_three_huge_bodies_at_once_are_all_refused_and_a_search_still_runs(server, tmp_path):
    """The hostile run's three concurrent 150 MB bodies to the queue: each refused, and the next question answered."""
    results: list = []

    def one():
        results.append(declared(server.url, "POST", "/gradio_api/queue/join", HUGE, JSON_TYPE))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [s for s, _ in results] == [413, 413, 413], results
    assert "Captain Ines Varga" in ask(_client(server), "Who opens the lock gates?", "browser-limits-0123456789ab")


@pytest.mark.parametrize("method,path,content_type", [r for r in ROUTES if r[0] == "POST" and r[2] != MULTIPART_TYPE])
def test_a_streamed_body_past_2_mb_without_a_length_is_cut_off(server, method, path, content_type):
    """About 3 MB in 64 KiB pieces (a form in fields of 64 KiB, each under the form parser's own 1 MB cap) to every
    route that reads a body (the viewer's GET answers without reading one; its declared body is refused above)."""
    body = chunks(3 * 2**20, b"username=ines&password=x", b"&note=") if content_type == FORM_TYPE else chunks(3 * 2**20)
    r = httpx.request(method, server.url + path, headers={"Content-Type": content_type}, content=body, timeout=60)
    too_large(r.status_code, r.json(), f"{method} {path} (chunked)")
    still_up(server)


def test_an_upload_has_its_own_larger_limit(server):
    """Three files of 0.9 MB (2.7 MB, more than any other route takes) go through Gradio's upload route; a body
    that streams past 16 files of max_file_mb (20 files of 0.94 MB, each under the limit Gradio checks per file)
    is cut off with a message that says so."""
    with httpx.Client(base_url=server.url, timeout=60) as http:
        _log_in(http, server)
        files = [("files", (f"part{i}.md", b"harbour " * (900 * 1024 // 8), "text/markdown")) for i in range(3)]
        r = http.post("/gradio_api/upload", files=files)
        assert r.status_code == 200 and len(r.json()) == 3, r.text
        r = http.post("/gradio_api/upload", headers={"Content-Type": MULTIPART_TYPE},
                      content=parts(20, 15 * 65536))
        too_large(r.status_code, r.json(), "a streamed upload")
        assert "files of max_file_mb" in r.json()["error"]["message"]
    still_up(server)


def test_a_normal_upload_question_login_and_api_chat_still_work(server, tmp_path):
    doc = tmp_path / "ferry.md"
    doc.write_text("# Ferry\n\nThe ferry to the outer island leaves at noon from the north quay.\n", encoding="utf-8")
    client = _client(server)
    table = upload(client, doc, "browser-limits-0123456789ab")
    assert "ferry.md" in str(table)
    assert "north quay" in ask(client, "When does the ferry to the outer island leave?", "browser-limits-0123456789ab")
    key = server.service.api_keys.add("limits-key", "ines")
    r = httpx.post(f"{server.url}/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, timeout=60,
                   json={"model": "mgrag", "messages": [{"role": "user", "content": "Who opens the lock gates?"}]})
    assert r.status_code == 200 and "Varga" in r.json()["choices"][0]["message"]["content"], r.text


def _client(server):
    from gradio_client import Client

    auth = ("ines", PASSWORDS["ines"]) if server.service.logins_required else None
    return Client(server.url, auth=auth, verbose=False)


def _log_in(http: httpx.Client, server) -> None:
    """Log ``http`` in where the server has accounts (Gradio's /login sets the session cookie)."""
    if server.service.logins_required:
        r = http.post("/login", data={"username": "ines", "password": PASSWORDS["ines"]})
        assert r.status_code == 200, r.text
