"""Hostile and odd inputs: only regular files are read (a FIFO does not hang, /dev/zero is not read), text encodings
are detected rather than read as Latin-1, NULs are removed, encrypted PDFs open (or say they need a password), and
CLI argument errors are one line with no traceback."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.readers.loaders import IngestError, load_bytes, load_file, read_regular_file
from tests.ingest.test_pipeline import _text_pdf

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args, data_dir, timeout=120):
    env = {**os.environ, "MGRAG_EMBEDDER": "hashing", "MGRAG_CHUNKER": "recursive", "MGRAG_THETA": "40",
           "MGRAG_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=timeout)


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    with pytest.raises(IngestError, match=r"pipe.md: is a FIFO \(named pipe\); only regular files are read"):
        load_file(fifo)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_and_never_read(tmp_path, device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    link = tmp_path / "notes.txt"
    link.symlink_to(device)
    for p in (Path(device), link):
        with pytest.raises(IngestError, match="is a device; only regular files are read"):
            read_regular_file(p, max_bytes=1024)


def test_a_file_that_grows_while_read_stops_at_the_limit(tmp_path):
    p = tmp_path / "log.txt"
    p.write_bytes(b"x" * 100)
    with pytest.raises(IngestError, match="over the limit"):
        read_regular_file(p, max_bytes=50)


def test_cli_ingest_of_a_fifo_and_a_device_reports_and_exits(tmp_path):
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    good = tmp_path / "good.md"
    good.write_text("The ferry leaves at noon. It returns at six.", encoding="utf-8")
    r = _cli("ingest", "--quiet", str(fifo), "/dev/zero", str(good), data_dir=tmp_path / "data")
    assert "pipe.md: is a FIFO (named pipe); only regular files are read" in r.stdout
    assert "zero: is a device; only regular files are read" in r.stdout
    assert "ready      good.md" in r.stdout and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, message", [
    (["ask", "--k", "0", "q"], "mgrag ask: error: argument --k: must be at least 1, got 0"),
    (["ask", "--budget", "-5", "q"], "mgrag ask: error: argument --budget: must be at least 50, got -5"),
    (["ask", "--k", "many", "q"], "mgrag ask: error: argument --k: expected a whole number, got 'many'"),
    (["reingest", "--theta", "2"], "mgrag reingest: error: argument --theta: must be at least 4, got 2"),
])
def test_cli_argument_errors_are_one_line(tmp_path, args, message):
    r = _cli(*args, data_dir=tmp_path / "data")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [message + f" (see `{message.split(':')[0]} --help`)"]


def test_cli_setting_out_of_range_is_one_line(tmp_path):
    env_k = {"MGRAG_TOP_K": "0"}
    r = subprocess.run([sys.executable, "-m", "cli.main", "ask", "q"], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, **env_k, "MGRAG_DATA_DIR": str(tmp_path / "d")}, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == "error: setting top_k: Input should be greater than or equal to 1 (got '0')"


def test_shift_jis_text_is_detected_not_latin1():
    text = "東京は日本の首都です。港には多くの船が停泊しています。灯台守は毎朝天気を記録します。"
    doc = load_bytes("notes.txt", text.encode("shift_jis"))
    assert doc.text == text and "decoded as" in doc.warning and "(detected)" in doc.warning


def test_western_text_still_reads_as_cp1252():
    doc = load_bytes("menu.txt", "Café crème brûlée. Très bon — “quoted”.".encode("cp1252"))
    assert doc.text == "Café crème brûlée. Très bon — “quoted”." and "cp1252" in doc.warning


def test_nul_bytes_after_the_first_8kb_are_removed():
    data = b"A harbour note. " * 600 + b"Hidden\x00 NUL\x00 bytes\x01 here. The end."
    assert b"\x00" not in data[:8192]
    doc = load_bytes("notes.txt", data)
    assert "\x00" not in doc.text and "\x01" not in doc.text and "Hidden NUL bytes here." in doc.text
    assert "removed 3 control character(s)" in doc.warning


def _encrypted(user_password: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter()
    w.append(PdfReader(io.BytesIO(_text_pdf("The lighthouse logbook is kept in the lamp room."))))
    w.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="AES-256")
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def test_aes_encrypted_pdf_without_a_user_password_is_read():
    doc = load_bytes("log.pdf", _encrypted(""))
    assert "lighthouse logbook" in doc.text


def test_password_protected_pdf_says_so():
    with pytest.raises(IngestError, match=r"locked.pdf: is a password-protected PDF; remove the password"):
        load_bytes("locked.pdf", _encrypted("hunter2"))
