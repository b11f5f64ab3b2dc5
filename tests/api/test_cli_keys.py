"""`mgrag keys`: a key is printed once, stored hashed, listed without itself, revoked; it belongs to a real user."""
from __future__ import annotations

import sqlite3

from cli.main import main


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
    from services.keys import Keys

    assert Keys(tmp_path / "data" / ".secrets" / "keys.sqlite").check(key) is None


def test_a_key_needs_a_user_of_the_web_app(tmp_path, capsys):
    d = str(tmp_path / "data")
    assert main(["--data-dir", d, "keys", "add", "k"]) == 2
    assert "--user USER" in capsys.readouterr().err
    from services.users import Users

    Users(tmp_path / "data" / ".secrets" / "users.sqlite").add("alice", "alice-password")
    assert main(["--data-dir", d, "keys", "add", "k", "--user", "mallory"]) == 2
    assert "no user 'mallory'" in capsys.readouterr().err
    assert main(["--data-dir", d, "keys", "add", "k", "--user", "alice"]) == 0


def test_removing_a_user_revokes_their_keys_even_the_last_user(tmp_path, capsys):
    """The hostile run's item 5: `mgrag users remove` left the user's keys working, and with no user left the API
    no longer checked a key's user: the removed user's key listed and searched their private documents."""
    from services.keys import Keys
    from services.users import Users

    d = str(tmp_path / "data")
    Users(tmp_path / "data" / ".secrets" / "users.sqlite").add("alice", "alice-password")
    assert main(["--data-dir", d, "keys", "add", "laptop", "--user", "alice"]) == 0
    key = capsys.readouterr().out.strip()
    keys = Keys(tmp_path / "data" / ".secrets" / "keys.sqlite")
    assert keys.check(key) is not None
    assert main(["--data-dir", d, "users", "remove", "alice"]) == 0
    assert "revoked their 1 API key" in capsys.readouterr().out
    assert keys.check(key) is None
