"""Failed logins to a user account slow down the address they come from, not the account: anyone who knows a
user's name could otherwise keep them locked out (a hostile run: 50 wrong passwords for alice, then alice's right one
refused for 15 minutes). Another address logs in with the right password at once, or after a short wait that the
name's failures from everywhere add, bounded to a few seconds. Unit tests call the login with an explicit client; one
goes through the real /login route of a launched app behind a trusted proxy, which says who the client is."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from services.auth import LoginThrottle, throttled_login
from services.users import Users
from tests.security.conftest import serve

ATTACKER, ALICE_HOME = "203.0.113.66", "198.51.100.7"


def run(coro):
    """``asyncio.run`` in a thread of its own: a test before this one may leave an event loop running in this one."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@pytest.fixture
def clock():
    return [1000.0]


@pytest.fixture
def login(tmp_path, clock):
    users = Users(tmp_path / "users.sqlite")
    users.add("alice", "alice-right-password")
    return throttled_login(users.check, LoginThrottle(clock=lambda: clock[0]))


def test_fifty_failures_from_one_address_do_not_lock_the_user_out(login):
    assert [login("alice", f"guess-{i}", client=ATTACKER) for i in range(50)] == [False] * 50
    assert login.wait_s("alice", ATTACKER) > 0  # the attacker's address is slowed down
    assert login("alice", "alice-right-password", client=ATTACKER) is False  # refused there, unchecked
    assert login.wait_s("alice", ALICE_HOME) == 0
    assert login.delay_s("alice") <= 3.0  # what the name's failures add elsewhere: a few seconds at most
    assert login("alice", "alice-right-password", client=ALICE_HOME) is True


def test_the_slowdown_grows_per_address_and_ends(login, clock):
    waits = []
    for i in range(8):
        clock[0] += login.wait_s("alice", ATTACKER)  # the attacker waits each time as long as asked
        assert login("alice", f"guess-{i}", client=ATTACKER) is False
        waits.append(login.wait_s("alice", ATTACKER))
    assert waits[:4] == [0, 0, 0, 0] and waits[4] > 0 and waits[5] > waits[4] and waits[7] > waits[6]
    clock[0] += 900.0
    assert login("alice", "alice-right-password", client=ATTACKER) is True


def test_guesses_spread_over_addresses_wait_a_bounded_time(login, clock):
    for i in range(40):  # one guess from each of 40 addresses: no address is held back ...
        assert login("alice", f"guess-{i}", client=f"192.0.2.{i}") is False
    assert 0 < login.delay_s("alice") <= 3.0  # ... but every attempt at alice waits a little first, never more
    assert login.delay_s("bob") == 0
    clock[0] += 900.0
    assert login.delay_s("alice") == 0


def test_the_request_s_address_reaches_the_login(login):
    """Gradio calls the login with the name and password; the address comes from the request's context
    (set by ui.rooms.context.LoginClient), also through the awaited form Gradio uses, which checks in a thread."""
    from services.auth import LOGIN_CLIENT

    for i in range(6):
        LOGIN_CLIENT.set(ATTACKER)
        assert login("alice", f"guess-{i}") is False

    async def attempt(client):
        LOGIN_CLIENT.set(client)
        return await login.gradio("alice", "alice-right-password")

    assert run(attempt(ATTACKER)) is False
    assert run(attempt(ALICE_HOME)) is True


def test_the_middleware_hands_the_address_of_each_request():
    from services.auth import LOGIN_CLIENT
    from ui.rooms.context import LoginClient

    seen = []

    async def app(scope, receive, send):
        seen.append(LOGIN_CLIENT.get())

    mw = LoginClient(app)
    run(mw({"type": "http", "client": (ATTACKER, 5555)}, None, None))
    run(mw({"type": "http", "client": None}, None, None))
    assert seen == [ATTACKER, ""]


PASSWORDS = {"alice": "alice-right-password"}


@pytest.fixture(scope="module")
def proxied_users(tmp_path_factory):
    """An app with a user account behind a trusted reverse proxy on loopback (it says who the client is)."""
    yield from serve(tmp_path_factory.mktemp("throttle"), users=PASSWORDS, trusted_proxies="127.0.0.1, ::1")


def _login(server, password, client):
    return httpx.post(f"{server.url}/login", data={"username": "alice", "password": password},
                      headers={"X-Forwarded-For": client}, timeout=60)


def test_through_the_real_login_route_another_address_still_gets_in(proxied_users):
    """(That the attacker's address is then refused unchecked is for the tests above, which have a clock of their
    own: here its waits run on the wall clock.)"""
    said = [_login(proxied_users, f"guess-{i}", ATTACKER).status_code for i in range(50)]
    assert said == [400] * 50
    r = _login(proxied_users, "alice-right-password", ALICE_HOME)
    assert r.status_code == 200 and r.json() == {"success": True}
