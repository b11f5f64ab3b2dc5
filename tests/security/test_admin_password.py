"""The Admin tab's password, when ``admin_password`` is not set: made once, kept in the data dir's ``.secrets/``
(mode 0600) across restarts, logged only when it is made; ``mgrag admin password`` shows it, ``--reset`` makes a
new one. An explicitly set password wins."""
from __future__ import annotations

import logging
import stat

import pytest

from cli.main import main
from core.settings import Settings


@pytest.fixture(autouse=True)
def _no_password_in_env(monkeypatch):
    monkeypatch.delenv("MGRAG_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("MGRAG_CONFIG", raising=False)


def _start(data, **kw) -> str:
    """The admin password of a web app service started (as `mgrag serve` does) on ``data``, then stopped."""
    from ui.app import start_service

    service = start_service(Settings(data_dir=data, embedder="hashing", **kw))
    try:
        return service.auth.password
    finally:
        service.close()
        service.ctx.close()


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_generated_password_is_kept_across_starts_and_logged_once(tmp_path, caplog):
    data = tmp_path / "data"
    with caplog.at_level(logging.INFO, logger="ui.app"):
        first = _start(data)
        logged_first = caplog.text.count(first)
        second = _start(data)
    assert first and second == first
    assert logged_first == 1 and caplog.text.count(first) == 1  # the second start does not print it again
    kept = data / ".secrets" / "admin_password"
    assert kept.read_text().strip() == first
    assert _mode(kept) == 0o600 and _mode(kept.parent) == 0o700


def test_cli_shows_the_password_and_reset_makes_a_new_one(tmp_path, capsys):
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "admin", "password"]) == 0
    shown = capsys.readouterr().out
    pw = (data / ".secrets" / "admin_password").read_text().strip()
    assert pw in shown
    assert _start(data) == pw  # the server uses the one shown
    assert main(["--data-dir", str(data), "admin", "password"]) == 0
    assert pw in capsys.readouterr().out  # shown again, not changed
    assert main(["--data-dir", str(data), "admin", "password", "--reset"]) == 0
    new = (data / ".secrets" / "admin_password").read_text().strip()
    assert new != pw and len(new) >= 12 and new in capsys.readouterr().out
    assert _mode(data / ".secrets" / "admin_password") == 0o600
    assert _start(data) == new


def test_an_explicit_password_wins_and_the_cli_says_so(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    kept = _start(data)
    assert _start(data, admin_password="set-by-the-operator") == "set-by-the-operator"
    monkeypatch.setenv("MGRAG_ADMIN_PASSWORD", "set-by-the-operator")
    assert main(["--data-dir", str(data), "admin", "password", "--reset"]) == 2
    err = capsys.readouterr().err
    assert "MGRAG_ADMIN_PASSWORD" in err and "set-by-the-operator" not in err
    assert (data / ".secrets" / "admin_password").read_text().strip() == kept  # not changed
