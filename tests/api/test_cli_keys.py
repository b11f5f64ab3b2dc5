"""`mgrag keys`: a key is printed once, stored hashed, listed without itself, revoked; it belongs to a real user."""
from __future__ import annotations

import sqlite3

from app.cli import main


def test_keys_add_list_revoke(tmp_path, capsys):
    d = str(tmp_path / "data")
    assert main(["--data-dir", d, "keys", "add", "laptop", "--user", "alice"]) == 0
    key = capsys.readouterr().out.strip()
    assert key.startswith("mgrag-") and len(key) > 50
    stored = sqlite3.connect(tmp_path / "data" / ".secrets" / "keys.sqlite").execute("SELECT * FROM keys").fetchall()
    assert key not in repr(stored) and key[:14] in repr(stored)  # hashed; only its first characters kept
    assert (tmp_path / "data" / ".secrets" / "keys.sqlite").stat().st_mode & 0o077 == 0
    assert main(["--data-dir", d, "keys", "list"]) == 0
    out = capsys.readouterr().out
    assert "laptop" in out and "user alice" in out and "active" in out and key not in out
    assert main(["--data-dir", d, "keys", "add", "laptop", "--user", "alice"]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["--data-dir", d, "keys", "revoke", "laptop"]) == 0
    capsys.readouterr()
    main(["--data-dir", d, "keys", "list"])
    assert "revoked" in capsys.readouterr().out
    from ui.keys import Keys

    assert Keys(tmp_path / "data" / ".secrets" / "keys.sqlite").check(key) is None


def test_a_key_needs_a_user_of_the_web_app(tmp_path, capsys):
    d = str(tmp_path / "data")
    assert main(["--data-dir", d, "keys", "add", "k"]) == 2
    assert "--user USER" in capsys.readouterr().err
    from ui.users import Users

    Users(tmp_path / "data" / ".secrets" / "users.sqlite").add("alice", "alice-password")
    assert main(["--data-dir", d, "keys", "add", "k", "--user", "mallory"]) == 2
    assert "no user 'mallory'" in capsys.readouterr().err
    assert main(["--data-dir", d, "keys", "add", "k", "--user", "alice"]) == 0
