"""Amplification attacks against a running ``mgrag serve`` after the fixes of issue 34: is each refused at once, and
does another key's search stay as fast as without the attack?

The hostile run of issue 34 found three ways a small request made the server do a great deal of work:

* an 80 MB (and a 40 MB) JSON ``messages`` array to ``POST /v1/chat/completions`` froze the server (memory
  1.5 → 3.6 GB, another key's search waited 29.5 s); now chat and search bodies past 2 MB are refused before they
  are read (``api/v1.py`` ``BodyLimit``);
* spreadsheet bombs: a 7.6 KB XLSX of one 100 KB shared string in 2,500 cells (474 MB of text), a 2 MB CSV of a
  million columns, a 1 MB CSV whose wide header is repeated before every row (238 MB of text); now refused before
  the work starts (``ingest/readers/formats.py`` ``_Expansion``);
* 45 concurrent ``POST /v1/documents?wait=true`` from one key held every request thread (another key's
  ``GET /v1/documents`` timed out at 60 s); now a waiting upload holds no thread and a key has at most 4 requests in
  flight (``api/v1.py`` ``InFlight``).

The hostile run of issue 47 found more: three concurrent 150 MB bodies to Gradio's own ``/gradio_api/queue/join``
(the 2 MB cap covered ``/v1`` only) held 1.95 GB; a 16 MB PDF of 100,000 real pages would have been read for ~70
hours; a 97 KB PDF whose ligature repair was quadratic cost 120 CPU-s. Now one body limit sits in front of every
route (``ui/app.py`` ``own_middleware``), a PDF past ``max_pdf_pages`` is refused before any page is read and one
PDF's ranges share ``doc_cpu_budget_s``, and the repair is linear. Rows for each, and two files that are no attack
once read right (a one-page PDF whose ``/Count`` says 100,000, the ligature PDF): those must become searchable.

This script starts the real server (``python -m cli.main --data-dir DIR serve``, the product's defaults: MiniLM on
this machine's CPU, chunker ``mg``) on a fresh data dir, makes two API keys (``mgrag keys add``), uploads one small
real document with the victim's key, then runs the phases one after the other: a baseline without attack, each
attack, and the baseline again. Throughout, a victim thread (its own key) sends ``POST /v1/search`` and
``GET /v1/documents`` every 0.5 s and records their latencies, and a sampler reads the server's resident memory
(the process and its children, psutil) every 0.2 s. Per phase: the HTTP status and the message the attacker got,
the server's RSS before and at its peak, the victim's latency p50 / p95 / max and errors, the wall seconds.

    .venv/bin/python bench/amplification.py             # writes bench/results/amplification.json (~5 minutes)
    .venv/bin/python bench/amplification.py --baseline-s 8 --out /tmp/amp.json

The API's per-key rate limit is raised to 600 requests a minute (``MGRAG_API_REQUESTS_PER_MINUTE``) so that the
victim's two requests every 0.5 s are never refused for their own rate; no attack here is bounded by that limit
(the in-flight cap and the body and expansion limits are what is measured).
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from common import ROOT, LoadMonitor, machine_info, write_json  # (common puts the project on sys.path)
from load_test import _free_port, _wait_up

from tests.pdfgen import pdf_from_objects  # the project's PDF writer (the tests' too)

# a real 95 KB PDF (an NTSB report, docugami/KG-RAG-datasets), where this machine keeps it
DOC = next((p for p in (ROOT.parent / "devdata" / "newcomer" / "ntsb-20071229X02007.pdf",
                        ROOT.parent / "devdata" / "kgrag" / "ntsb-aviation-incident-accident-reports" / "data" / "v1"
                        / "docs" / "20071229X02007.pdf") if p.exists()),
           ROOT.parent / "devdata" / "newcomer" / "ntsb-20071229X02007.pdf")
QUERY = "What was the probable cause of the accident?"
TICK_S = 0.5  # the victim's request period
RSS_EVERY_S = 0.2
VICTIM_TIMEOUT_S = 60.0
RATE_PER_MINUTE = 600
PRE_S, POST_S = 3.0, 5.0  # victim and sampler time in each attack phase before and after the attack


# -- the server --------------------------------------------------------------------------------------------------
def _env(work: Path) -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False",
            "GRADIO_TEMP_DIR": str(work / "data" / "tmp" / "gradio"), "MGRAG_LOG_LEVEL": "WARNING",
            "MGRAG_API_REQUESTS_PER_MINUTE": str(RATE_PER_MINUTE), "PYTHONPATH": str(ROOT)}


def _mgrag(work: Path) -> list[str]:
    return [sys.executable, "-m", "cli.main", "--data-dir", str(work / "data")]


def _make_key(work: Path, name: str, user: str) -> str:
    """An API key made as an admin makes one: ``mgrag keys add NAME --user USER`` (the key is its stdout)."""
    out = subprocess.run(_mgrag(work) + ["keys", "add", name, "--user", user], env=_env(work), cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.strip().splitlines()[0]


def _start_server(work: Path) -> tuple[subprocess.Popen, int, object]:
    port = _free_port()
    log = open(work / "server.log", "w")
    proc = subprocess.Popen(_mgrag(work) + ["serve", "--port", str(port)], env=_env(work), cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_up(f"http://127.0.0.1:{port}", proc)
    except Exception:
        _stop_server(proc, log)
        print((work / "server.log").read_text(errors="replace")[-4000:], file=sys.stderr)
        raise
    return proc, port, log


def _stop_server(proc: subprocess.Popen, log) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    log.close()


# -- what runs throughout: the server's memory and the victim --------------------------------------------------
class RssSampler(threading.Thread):
    """The resident memory of a process and all its children, in MB, every :data:`RSS_EVERY_S` seconds."""

    def __init__(self, pid: int):
        import psutil

        super().__init__(daemon=True)
        self.proc, self.samples, self.stop = psutil.Process(pid), [], threading.Event()

    def rss_mb(self) -> float:
        import psutil

        total = 0
        for p in [self.proc] + self.proc.children(recursive=True):
            try:
                total += p.memory_info().rss
            except psutil.Error:  # a child that ended meanwhile
                pass
        return total / 2**20

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.samples.append((time.monotonic(), self.rss_mb()))
            except Exception:  # noqa: BLE001 - the server ended
                return
            self.stop.wait(RSS_EVERY_S)

    def window(self, t0: float, t1: float) -> list[float]:
        return [mb for t, mb in list(self.samples) if t0 <= t <= t1]


class Victim(threading.Thread):
    """Another key's client: a search and a list of its documents every :data:`TICK_S` seconds, each timed."""

    def __init__(self, base: str, key: str):
        super().__init__(daemon=True)
        self.base, self.headers = base, {"Authorization": f"Bearer {key}"}
        self.records: list[dict] = []  # start (monotonic), kind, seconds, status, error
        self.stop = threading.Event()

    def _one(self, client, kind: str) -> None:
        t0 = time.monotonic()
        rec = {"t": t0, "kind": kind, "status": None, "error": None}
        try:
            if kind == "search":
                r = client.post(self.base + "/search", json={"query": QUERY, "k": 5}, headers=self.headers)
                ok = r.status_code == 200 and bool(r.json().get("passages"))
            else:
                r = client.get(self.base + "/documents", headers=self.headers)
                ok = r.status_code == 200 and bool(r.json().get("documents"))
            rec["status"] = r.status_code
            if not ok:
                rec["error"] = f"HTTP {r.status_code}: {r.text[:200]}"
        except Exception as e:  # noqa: BLE001 - a timeout or a refused connection is what is counted
            rec["error"] = f"{e.__class__.__name__}: {e}"[:200]
        rec["seconds"] = time.monotonic() - t0
        self.records.append(rec)

    def run(self) -> None:
        import httpx

        with httpx.Client(timeout=VICTIM_TIMEOUT_S) as client:
            next_at = time.monotonic()
            while not self.stop.is_set():
                self._one(client, "search")
                self._one(client, "documents")
                next_at += TICK_S
                self.stop.wait(max(0.0, next_at - time.monotonic()))
                next_at = max(next_at, time.monotonic() - TICK_S)  # a late tick does not make a burst after it

    def window(self, t0: float, t1: float, kind: str) -> dict:
        rs = [r for r in list(self.records) if t0 <= r["t"] <= t1 and r["kind"] == kind]
        lat = np.asarray([r["seconds"] for r in rs if r["error"] is None] or [float("nan")])
        errors = [r["error"] for r in rs if r["error"] is not None]
        return {"requests": len(rs), "errors": len(errors), "error_samples": errors[:3],
                "p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95)), "max": float(lat.max())}


# -- the attacks -------------------------------------------------------------------------------------------------
def _message(body: bytes) -> str:
    try:
        got = json.loads(body)
        return str(got.get("error", {}).get("message") or got)[:400]
    except ValueError:
        return body.decode("utf-8", "replace")[:400]


def raw_post(port: int, path: str, key: str | None, body: bytes, chunked: bool = False, timeout: float = 120,
             declared: int | None = None, content_type: str = "application/json") -> dict:
    """POST ``body`` as a hostile client does: the whole of it, declared (Content-Length: its length, or
    ``declared``) or streamed (chunked), while the response is read at once on the same socket (a client library
    that first writes the body loses the answer when the server closes the connection after refusing it).
    ``key`` None: no Authorization header (an anonymous visitor)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    length = len(body) if declared is None else declared
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            + (f"Authorization: Bearer {key}\r\n" if key else "")
            + f"Content-Type: {content_type}\r\nConnection: close\r\n"
            + ("Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {length}\r\n") + "\r\n")
    sent = {"bytes": 0, "error": None}

    def send() -> None:
        try:
            sock.sendall(head.encode())
            view = memoryview(body)
            for i in range(0, len(body), 1 << 16):
                piece = view[i:i + (1 << 16)]
                sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n" if chunked else piece)
                sent["bytes"] += len(piece)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError as e:  # the server closed the connection after its answer
            sent["error"] = f"{e.__class__.__name__}: {e}"

    writer = threading.Thread(target=send, daemon=True)
    t0 = time.monotonic()
    writer.start()
    out = {"request_mb": round(length / 2**20, 1), "chunked": chunked, "path": path}
    try:
        resp = http.client.HTTPResponse(sock)
        resp.begin()
        data = resp.read()
        out.update(status=resp.status, message=_message(data), seconds=time.monotonic() - t0)
    except OSError as e:
        out.update(status=None, message=f"no response: {e.__class__.__name__}: {e}", seconds=time.monotonic() - t0)
    finally:
        sock.close()
        writer.join(30)
    out.update(client_sent_mb=round(sent["bytes"] / 2**20, 1), client_send_error=sent["error"])
    return out


def upload(base: str, key: str, name: str, data: bytes, timeout: float = 600) -> dict:
    """``POST /v1/documents?wait=true`` of one file: the HTTP status, the document's status and message."""
    import httpx

    t0 = time.monotonic()
    try:
        r = httpx.post(base + "/documents", params={"wait": "true"}, files={"files": (name, data)},
                       headers={"Authorization": f"Bearer {key}"}, timeout=timeout)
    except Exception as e:  # noqa: BLE001
        return {"status": None, "message": f"{e.__class__.__name__}: {e}"[:400], "seconds": time.monotonic() - t0}
    out = {"status": r.status_code, "seconds": time.monotonic() - t0}
    if r.status_code == 200:
        [doc] = r.json()["documents"]
        out.update(document=doc["name"], document_status=doc["status"], message=str(doc.get("message", ""))[:400])
    else:
        out["message"] = _message(r.content)
    return out


def chat_body(mb: int) -> bytes:
    """A chat request whose ``messages`` array is ``mb`` MB: 4 KB user turns, as the hostile run sent."""
    turn = json.dumps({"role": "user", "content": "x" * 4096})
    n = mb * 2**20 // (len(turn) + 2)
    return ('{"model": "mgrag", "messages": [' + ", ".join([turn] * n) + "]}").encode()


def xlsx_bomb() -> bytes:
    """One 100 KB string in the shared strings table, referenced from 50 × 50 cells: a few KB zipped. Written by
    hand: openpyxl writes every cell's string inline (an 82 MB sheet part, another attack)."""
    import io
    import zipfile

    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    ct = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    cols = [chr(65 + i // 26 - 1) + chr(65 + i % 26) if i >= 26 else chr(65 + i) for i in range(50)]
    rows = "".join(f'<row r="{r}">' + "".join(f'<c r="{c}{r}" t="s"><v>0</v></c>' for c in cols) + "</row>"
                   for r in range(1, 51))
    parts = {
        "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org'
        '/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/'
        f'workbook.xml" ContentType="{ct}.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" '
        f'ContentType="{ct}.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" '
        f'ContentType="{ct}.sharedStrings+xml"/></Types>',
        "_rels/.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.'
        f'org/package/2006/relationships"><Relationship Id="rId1" Type="{rel}/officeDocument" '
        'Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<?xml version="1.0" encoding="UTF-8"?><workbook {ns} xmlns:r="{rel}"><sheets>'
        '<sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.'
        f'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{rel}/worksheet" '
        f'Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="{rel}/sharedStrings" '
        'Target="sharedStrings.xml"/></Relationships>',
        "xl/worksheets/sheet1.xml": f'<?xml version="1.0" encoding="UTF-8"?><worksheet {ns}><sheetData>{rows}'
        "</sheetData></worksheet>",
        "xl/sharedStrings.xml": f'<?xml version="1.0" encoding="UTF-8"?><sst {ns} count="2500" uniqueCount="1">'
        f'<si><t>{("lorem ipsum " * 8534)[:102_400]}</t></si></sst>',
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, text in parts.items():
            z.writestr(name, text)
    return buf.getvalue()


def csv_wide() -> bytes:
    """A 2 MB CSV of a million columns (one header row of one-letter names, one data row)."""
    return (",".join(["c"] * 1_000_000) + "\n1\n").encode()


def csv_header_repeated() -> tuple[bytes, float]:
    """A ~1 MB CSV whose header (500 columns of ~280 characters, more words than one table group holds) is
    repeated before every data row when it becomes Markdown; and that naive expansion in MB."""
    cell = ("measure {i} of the coastal survey in units of the station logbook; " * 5)[:280]
    header = ",".join(cell.replace("{i}", str(i)) for i in range(500))
    row = "1" + "," * 499
    n = (2**20 - len(header)) // (len(row) + 1)
    data = (header + "\n" + "\n".join([row] * n) + "\n").encode()
    return data, round(n * (len(header) + len(row)) / 1e6, 1)


def pdf_pages(n: int, count: int | None = None) -> bytes:
    """A PDF of ``n`` real pages (each its own page object, all sharing one content stream of one line of text) whose
    page tree's ``/Count`` says ``count`` (default ``n``): 100,000 pages are a 15 MB file, written in 0.2 s."""
    count = n if count is None else count
    stream = b"BT /F1 12 Tf 72 720 Td (A page of the long register.) Tj ET"
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>")
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Count %d /Kids [" % count + b" ".join(b"%d 0 R" % (5 + i) for i in range(n)) + b"] >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"] + [page] * n
    return pdf_from_objects(objs)


def ligature_pdf(run: int = 150_000) -> bytes:
    """A one-page PDF turned 90° (so pdfplumber reads it, where the ligature repair runs) whose font maps one glyph
    to no character (a NUL: an unmapped ligature, as "Snow\\x00ake"), then a space and one word of ``run`` letters
    on the same line: the repair's old pattern (``[\\w\\x00]*\\x00[\\w\\x00]*``) tried every start inside the
    word and scanned to its end from each (40,000 letters: 6 CPU-s; quadratic). A 1 KB file (the stream is
    compressed)."""
    import zlib

    content = zlib.compress(b"BT /F1 1 Tf 20 400 Td (Z) Tj 0 5 Td -0.55 Tc (" + b"a" * run + b") Tj ET")
    cmap = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def "
            b"1 begincodespacerange <00> <FF> endcodespacerange "
            b"2 beginbfrange <20> <59> <0020> <5B> <7E> <005B> endbfrange "
            b"1 beginbfchar <5A> <0000> endbfchar endcmap CMapName currentdict /CMap defineresource pop end end")
    return pdf_from_objects([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Count 1 /Kids [3 0 R] >>",
                 b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Rotate 90 /Contents 4 0 R "
                 b"/Resources << /Font << /F1 5 0 R >> >> >>",
                 b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content) + content + b"\nendstream",
                 b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
                 b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream"])


def concurrent_posts(port: int, path: str, key: str | None, body: bytes, n: int = 3) -> dict:
    """``n`` concurrent :func:`raw_post` of one body: the hostile run's three 150 MB bodies at once."""
    got: list[dict] = [{}] * n

    def one(i: int) -> None:
        got[i] = raw_post(port, path, key, body)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    statuses = [g.get("status") for g in got]
    return {"requests": n, "statuses": statuses, "status": statuses[0] if len(set(statuses)) == 1 else None,
            "message": got[0].get("message", ""), "request_mb": got[0].get("request_mb"), "path": path,
            "seconds": max(g.get("seconds") or 0.0 for g in got)}


def many_uploads(base: str, key: str, n: int = 45) -> dict:
    """``n`` concurrent ``POST /v1/documents?wait=true`` of small distinct files from one key."""
    got: list[dict] = [{}] * n
    go = threading.Barrier(n)

    def one(i: int) -> None:
        text = f"# Harbour note {i}\n\nFerry {i} leaves the harbour at {i % 12 + 1} o'clock on day {i}.\n"
        go.wait()
        got[i] = upload(base, key, f"note-{i:02d}.md", text.encode())

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(660)
    codes: dict[str, int] = {}
    for g in got:
        codes[str(g.get("status"))] = codes.get(str(g.get("status")), 0) + 1
    refused = next((g for g in got if g.get("status") == 429), {})
    accepted = [g for g in got if g.get("status") == 200]
    return {"requests": n, "status_counts": codes, "status": 429 if refused else None,
            "accepted": len(accepted), "refused_429": codes.get("429", 0),
            "other": n - len(accepted) - codes.get("429", 0),
            "refused_seconds_max": max((g["seconds"] for g in got if g.get("status") == 429), default=None),
            "accepted_seconds_max": max((g["seconds"] for g in accepted), default=None),
            "accepted_document_status": sorted({g.get("document_status") for g in accepted} - {None}),
            "message": refused.get("message", ""), "seconds": time.monotonic() - t0}


# -- the phases --------------------------------------------------------------------------------------------------
def _attacks(port: int, base: str, key: str) -> list[tuple[str, str, object, object]]:
    """(phase, what the attack is, a phrase the attacker's message must hold (or a tuple of phrases, one of which;
    None: a file that must be served), a callable returning its result)."""
    header_csv, header_mb = csv_header_repeated()
    xlsx, wide = xlsx_bomb(), csv_wide()
    body80, body40 = chat_body(80), chat_body(40)  # built before any phase: the attacks only send them
    body150 = b"{" + b" " * (150 * 2**20 - 2) + b"}"  # the hostile run's 150 MB JSON body (issue 47)
    register, forged, ligature = pdf_pages(100_000), pdf_pages(1, count=100_000), ligature_pdf()

    def file_attack(name: str, data: bytes, **extra):
        return lambda: {**upload(base, key, name, data), "file_kb": round(len(data) / 1024, 1), **extra}

    return [
        ("chat_80mb", "POST /v1/chat/completions with an 80 MB messages array (Content-Length declared)",
         "chat or search request", lambda: raw_post(port, "/v1/chat/completions", key, body80)),
        ("chat_40mb", "POST /v1/chat/completions with a 40 MB messages array (Content-Length declared)",
         "chat or search request", lambda: raw_post(port, "/v1/chat/completions", key, body40)),
        ("chat_40mb_chunked", "the same 40 MB streamed without a length (Transfer-Encoding: chunked)",
         "chat or search request", lambda: raw_post(port, "/v1/chat/completions", key, body40, True)),
        ("xlsx_shared_string", "upload (wait=true) of an XLSX: one 100 KB shared string in 2,500 cells",
         "spreadsheet bomb", file_attack("bomb.xlsx", xlsx, cells=2500, shared_string_kb=100,
                                         naive_text_mb=round(2500 * 102_400 / 1e6, 1))),
        ("csv_million_columns", "upload (wait=true) of a 2 MB CSV with a million columns",
         "columns, over the limit", file_attack("wide.csv", wide, columns=1_000_000)),
        ("csv_header_repeated", "upload (wait=true) of a 1 MB CSV whose wide header is repeated before every row",
         "spreadsheet bomb", file_attack("header.csv", header_csv, columns=500, naive_text_mb=header_mb)),
        ("uploads_45_concurrent", "45 concurrent uploads with wait=true from one key",
         "requests being served already", lambda: many_uploads(base, key, 45)),
        ("gradio_queue_join_150mb_x3", "three concurrent 150 MB JSON bodies to POST /gradio_api/queue/join, "
         "anonymous (issue 47)", "larger than", lambda: concurrent_posts(port, "/gradio_api/queue/join", None,
                                                                          body150, 3)),
        ("gradio_upload_declared_2gb", "POST /gradio_api/upload declaring a 2 GB multipart body, anonymous",
         "larger than", lambda: raw_post(port, "/gradio_api/upload", None, b"x" * 4096, declared=2 * 2**30,
                                         content_type="multipart/form-data; boundary=x")),
        # the login's form parser stops a field at 1 MB itself, before the body limit's 2 MB: either refusal holds
        ("login_150mb_chunked", "a 150 MB form body streamed without a length to POST /login, anonymous",
         ("larger than", "exceeded maximum size"), lambda: raw_post(port, "/login", None, body150, chunked=True,
                                         content_type="application/x-www-form-urlencoded")),
        ("viewer_150mb", "a 150 MB body to a viewer route (POST /mgrag/view/…), anonymous", "larger than",
         lambda: raw_post(port, "/mgrag/view/" + "a" * 43, None, body150)),
        ("pdf_100k_pages", "upload (wait=true) of a 15 MB PDF of 100,000 real pages", "max_pdf_pages",
         file_attack("register.pdf", register, pages=100_000)),
        ("pdf_forged_count", "upload (wait=true) of a one-page PDF whose /Count says 100,000: read as one page",
         None, file_attack("forged-count.pdf", forged, pages=1, declared_count=100_000)),
        ("ligature_pdf", "upload (wait=true) of a 1 KB PDF: an unmapped glyph beside a 150,000-letter word "
         "(the ligature repair's old quadratic case)", None, file_attack("ligature.pdf", ligature, word=150_000)),
    ]


def run_phase(name: str, victim: Victim, rss: RssSampler, attack=None, quiet_s: float = 0.0) -> dict:
    """One phase: the victim and the sampler over ``quiet_s`` (a baseline) or over the attack with
    :data:`PRE_S` before and :data:`POST_S` after it."""
    t0 = time.monotonic()
    before = rss.rss_mb()
    got = None
    if attack is None:
        time.sleep(quiet_s)
    else:
        time.sleep(PRE_S)
        t_attack = time.monotonic()
        got = attack()
        got["attack_seconds"] = time.monotonic() - t_attack
        time.sleep(POST_S)
    t1 = time.monotonic()
    mem = rss.window(t0, t1) or [before]
    out = {"phase": name, "wall_s": t1 - t0, "rss_before_mb": before, "rss_peak_mb": max(mem),
           "rss_end_mb": mem[-1], "rss_peak_gain_mb": max(mem) - before,
           "victim_search": victim.window(t0, t1, "search"), "victim_documents": victim.window(t0, t1, "documents")}
    out["victim_errors"] = out["victim_search"]["errors"] + out["victim_documents"]["errors"]
    if got is not None:
        out["attacker"] = got
    v = out["victim_search"]
    print(f"{name}: rss {before:.0f} -> {max(mem):.0f} MB, search p50 {v['p50']:.3f} p95 {v['p95']:.3f} "
          f"max {v['max']:.3f} s, errors {v['errors']}" + (f"; attacker {got.get('status')}: "
                                                          f"{str(got.get('message'))[:120]}" if got else ""),
          flush=True)
    return out


def _judge(phases: dict, expected: dict) -> None:
    """Add to each attack phase: refused (4xx with the expected phrase, no traceback) and the victim vs baseline."""
    from api.v1 import MAX_IN_FLIGHT_PER_KEY

    base = phases["baseline"]["victim_search"]
    for name, ph in phases.items():
        v = ph["victim_search"]
        ph["victim_vs_baseline"] = {"p50_ratio": v["p50"] / base["p50"], "p95_ratio": v["p95"] / base["p95"],
                                    "max_ratio": v["max"] / base["max"]}
        a = ph.get("attacker")
        if a is None:
            continue
        msg = str(a.get("message", ""))
        a["traceback_free"] = "Traceback" not in msg and 'File "' not in msg
        if expected[name] is None:  # a file that is no attack once it is read right: it must become searchable
            a["served"] = a.get("status") == 200 and a.get("document_status") in ("ready", "searchable")
            continue
        failed_doc = a.get("document_status") in ("failed", "refused")
        phrases = expected[name] if isinstance(expected[name], tuple) else (expected[name],)
        a["refused"] = bool((a.get("status") in (413, 400, 422, 429) or failed_doc) and any(p in msg for p in phrases)
                            and a.get("accepted", 0) <= MAX_IN_FLIGHT_PER_KEY)
        a["expected_phrase"] = expected[name]


def _limits() -> dict:
    """The product's limits in force (the constants the fixes added)."""
    from api.v1 import MAX_IN_FLIGHT_PER_KEY, MAX_JSON_BODY, MAX_MESSAGES
    from core.settings import Settings
    from ingest.readers.formats import EXPANSION, EXPANSION_CSV, MAX_COLUMNS, MAX_TEXT_CHARS, MIN_TEXT_CHARS

    s = Settings()
    return {"json_body_mb": MAX_JSON_BODY / 2**20, "max_messages": MAX_MESSAGES,
            "max_pdf_pages": s.max_pdf_pages, "doc_cpu_budget_s": s.doc_cpu_budget_s,
            "in_flight_per_key": MAX_IN_FLIGHT_PER_KEY, "xlsx_expansion": EXPANSION, "csv_expansion": EXPANSION_CSV,
            "min_text_chars": MIN_TEXT_CHARS, "max_text_chars": MAX_TEXT_CHARS, "max_columns": MAX_COLUMNS}


def _commit() -> dict:
    def git(*args) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "files_differing_from_commit": git("diff", "--name-only", "HEAD")
            .splitlines()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-s", type=float, default=20.0, help="seconds of each no-attack phase")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "amplification.json"))
    ap.add_argument("--keep", action="store_true", help="keep the temporary data dir (its path is printed)")
    args = ap.parse_args(argv)
    import httpx

    started, t_run = time.strftime("%Y-%m-%dT%H:%M:%S"), time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="mgrag-amplification-"))
    victim_key, attacker_key = _make_key(work, "victim", "victim"), _make_key(work, "attacker", "attacker")
    proc, port, log = _start_server(work)
    base = f"http://127.0.0.1:{port}/v1"
    python = Path(sys.executable)
    python = os.path.relpath(python, ROOT) if python.is_relative_to(ROOT) else python.name
    res = {"benchmark": "amplification", "command": " ".join([python, *sys.argv]),
           "started": started, "git": _commit(), "settings": {"api_requests_per_minute": RATE_PER_MINUTE,
           "victim_tick_s": TICK_S, "rss_every_s": RSS_EVERY_S, "pre_s": PRE_S, "post_s": POST_S,
           "baseline_s": args.baseline_s, "victim_query": QUERY, "victim_document": DOC.name},
           "limits": _limits(),
           "machine": {**machine_info(), "cpu_count": os.cpu_count(), "platform": platform.platform()}}
    try:
        res["victim_upload"] = upload(base, victim_key, DOC.name, DOC.read_bytes())
        print(f"victim's document: {res['victim_upload']}", flush=True)
        rss, victim = RssSampler(proc.pid), Victim(base, victim_key)
        with httpx.Client(timeout=VICTIM_TIMEOUT_S) as client:
            for _ in range(3):  # warm: the first search loads what it needs
                victim._one(client, "search")
        victim.records.clear()
        rss.start()
        victim.start()
        monitor = LoadMonitor(interval=2)
        phases = {"baseline": run_phase("baseline", victim, rss, quiet_s=args.baseline_s)}
        attacks = _attacks(port, base, attacker_key)
        for name, what, _, attack in attacks:
            phases[name] = {"what": what, **run_phase(name, victim, rss, attack)}
        phases["baseline_after"] = run_phase("baseline_after", victim, rss, quiet_s=args.baseline_s)
        victim.stop.set()
        rss.stop.set()
        victim.join(VICTIM_TIMEOUT_S + 5)
        res["load"] = monitor.summary()
        monitor.stop()
        _judge(phases, {name: phrase for name, _, phrase, _ in attacks})
        res["phases"] = phases
        res["server_log_tracebacks"] = (work / "server.log").read_text(errors="replace").count("Traceback")
    finally:
        _stop_server(proc, log)
    res["wall_s"] = time.monotonic() - t_run
    out = Path(args.out)
    if out.resolve() == (ROOT / "bench" / "results" / "amplification.json").resolve():
        write_json(out.name, res)
    else:
        out.write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out} ({res['wall_s']:.0f} s)")
    if args.keep:
        print(f"data dir kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    ok = all((p["attacker"].get("refused") or p["attacker"].get("served")) and p["attacker"]["traceback_free"]
             for p in phases.values() if "attacker" in p)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
