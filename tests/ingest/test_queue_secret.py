"""MGRAG_QUEUE_SECRET (issue 47): the key that signs every job and result of the scale-out queue must be random. A
random one passes; spaces, one key held down, a word repeated, too short, unset are refused, and `mgrag worker` and
`mgrag serve` with MGRAG_QUEUE_URL say so in one line that names the setting and how to make one (no traceback)."""
from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys

import pytest

from tests.ingest.test_durability import ROOT

GUESSABLE = ["", " " * 16, "short", "k" * 32, "password1234567890" * 2, "password1234567890" * 3,
             "Password1234567890!" * 2, "0123456789abcdef" * 2, "1234567890" * 4, "a" * 40 + "bcdefgh"]


def test_a_random_secret_passes_and_a_guessable_one_is_refused_in_one_line():
    from ingest.jobs.remote import SignedJSON

    for good in (secrets.token_hex(32), secrets.token_urlsafe(32), secrets.token_hex(16), os.urandom(16).hex()):
        s = SignedJSON(good)
        assert s.loads(s.dumps({"n": 1})) == {"n": 1}
    for bad in GUESSABLE:
        with pytest.raises(ValueError) as e:
            SignedJSON(bad)
        said = str(e.value)
        assert "\n" not in said and said.startswith("MGRAG_QUEUE_SECRET is "), said
        assert "secrets.token_hex(32)" in said, said
    with pytest.raises(ValueError, match="only spaces"):
        SignedJSON(" " * 16)
    with pytest.raises(ValueError, match="guessable"):
        SignedJSON("k" * 32)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(("cmd", "secret"), [("worker", "k" * 32), ("worker", " " * 16), ("worker", ""),
                                             ("serve", "k" * 32)])
def test_worker_and_serve_refuse_a_guessable_queue_secret_in_one_line(tmp_path, cmd, secret):
    """Before anything is served or any Redis is asked (none listens at the URL): exit code 2, one error line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MGRAG_QUEUE_URL": f"redis://127.0.0.1:{_free_port()}/0",
           "MGRAG_QUEUE_SECRET": secret, "MGRAG_EMBEDDER": "hashing", "MGRAG_UI_PORT": str(_free_port()),
           "MGRAG_UI_HOST": "127.0.0.1"}
    p = subprocess.run([sys.executable, "-m", "cli.main", "--data-dir", str(tmp_path / "data"), cmd], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=90)
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert len(errors) == 1 and errors == p.stderr.strip().splitlines()[-1:], p.stderr[-2000:]
    assert "MGRAG_QUEUE_SECRET is " in errors[0] and "secrets.token_hex(32)" in errors[0]
