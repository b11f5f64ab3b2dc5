"""The admin login slow-down counts failures per client address, and that address is the connection's peer: a
client's own X-Forwarded-For header cannot make it a new client. Only when the peer is a configured trusted proxy
(``trusted_proxies``, e.g. the reverse proxy on 127.0.0.1) does the address the proxy forwarded count. Both go
through the real HTTP path: an app launched on a free port, called from 127.0.0.1."""
from __future__ import annotations

import httpx
import pytest
from pydantic import ValidationError

from core.settings import Settings
from services.service import LoginThrottle
from tests.security.conftest import ADMIN_PASSWORD, serve

TOKEN = "forwarded-for-test-token-0123456789abcdef"  # the admin token a client makes for its login


def _login(url: str, password: str, forwarded_for: str) -> str:
    """What the admin_login API answers (its server-sent events as text), called with an X-Forwarded-For header."""
    r = httpx.post(f"{url}/gradio_api/call/admin_login", json={"data": ["admin", password, TOKEN]},
                   headers={"X-Forwarded-For": forwarded_for}, timeout=60)
    r.raise_for_status()
    return httpx.get(f"{url}/gradio_api/call/admin_login/{r.json()['event_id']}", timeout=60).text


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    """An app whose reverse proxy (on loopback) is trusted to say who the client is."""
    yield from serve(tmp_path_factory.mktemp("proxied"), trusted_proxies="127.0.0.1, ::1")


def test_a_fresh_forwarded_for_header_does_not_escape_the_lock(sec_server):
    sec_server.service.auth.throttle = LoginThrottle()
    try:
        said = [_login(sec_server.url, f"guess{i}", f"203.0.113.{i + 1}") for i in range(8)]
        assert sum("wrong user name or password" in s for s in said) == 5, said
        assert all("too many failed logins" in s for s in said[5:]), said
        right = _login(sec_server.url, ADMIN_PASSWORD, "198.51.100.77")
        assert "too many failed logins" in right and "Logged in as" not in right
    finally:
        sec_server.service.auth.throttle = LoginThrottle()  # the next tests log in from the same address


def test_behind_a_trusted_proxy_the_forwarded_client_is_counted(proxied):
    said = [_login(proxied.url, f"guess{i}", "203.0.113.7") for i in range(6)]
    assert sum("wrong user name or password" in s for s in said) == 5
    assert "too many failed logins" in said[5]
    assert "too many failed logins" in _login(proxied.url, ADMIN_PASSWORD, "203.0.113.7")
    # the client put an address of its own in front; the proxy appended the one it saw: that one counts
    assert "too many failed logins" in _login(proxied.url, ADMIN_PASSWORD, "198.51.100.2, 203.0.113.7")
    assert "Logged in as" in _login(proxied.url, ADMIN_PASSWORD, "198.51.100.2")  # another client, not held up


def test_trusted_proxies_takes_addresses_and_networks_only():
    assert Settings(trusted_proxies=" 127.0.0.1 , 10.0.0.0/8,::1").trusted_proxies == "127.0.0.1,10.0.0.0/8,::1"
    assert Settings().trusted_proxies == ""  # default: no proxy is trusted
    for bad in ("*", "proxy.example.org", "10.0.0.300"):
        with pytest.raises(ValidationError, match="trusted_proxies: .* is not an IP address or network"):
            Settings(trusted_proxies=bad)
