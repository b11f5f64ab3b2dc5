"""Per-session data stays with its session: a browser's feedback export holds only its own evaluations (the
admin's router training reads everyone's). Failed admin logins slow the guesser down: after five failures a
client waits, doubling each time, and while it waits even the right password is refused."""
from __future__ import annotations

import json

import pytest

from services.service import AdminAuth, AdminRequired, LoginThrottle
from tests.security.conftest import ADMIN_PASSWORD, BROWSER_A, BROWSER_B

TOKEN = "throttle-test-admin-token-0123456789abcdef"  # the admin token a client makes for its login


def _save(client, service, browser_id, question):
    """Ask over the API as ``browser_id``, then save an evaluation of that answer with source [1] ticked as its
    evidence (the page ticks nothing for the user, and an evaluation without evidence is not exported; the API's
    tick list only takes the sources the page offered, so the service saves it as the page would)."""
    from services.service import browser_owner

    client.predict(question, [], 5, 800, "dense", "extractive", browser_id, None, [], api_name="/ask")
    owner = browser_owner(browser_id)
    for kind, value in service.ask(question, backend="extractive", owner=owner):
        if kind == "done":
            eid, _, n = service.evaluate(value.to_dict(), rating="good", relevant=[1], owner=owner)
            return f"Saved evaluation #{eid}; {n} evidence span(s)."


def _export(client, browser_id):
    path, msg = client.predict(browser_id, api_name="/export_feedback")
    lines = open(path, encoding="utf-8").read().splitlines() if path else []
    return [json.loads(x) for x in lines], msg


def test_feedback_export_holds_only_the_callers_evaluations(sec_server):
    from gradio_client import Client

    a, b = Client(sec_server.url, verbose=False), Client(sec_server.url, verbose=False)
    assert "Saved evaluation" in _save(a, sec_server.service, BROWSER_A,
                                       "When does the harbour master open the lock gates?")
    recs_b, msg_b = _export(b, BROWSER_B)
    assert recs_b == [] and "0 record(s)" in msg_b
    recs_a, _ = _export(a, BROWSER_A)
    assert [r["question"] for r in recs_a] == ["When does the harbour master open the lock gates?"]
    # the admin's export (router training) has everyone's
    _, n = sec_server.service.export_feedback()
    assert n >= 1


def test_throttle_waits_double_after_five_failures():
    now = [0.0]
    t = LoginThrottle(free=5, base_s=2.0, clock=lambda: now[0])
    for _ in range(5):
        assert t.wait_s("1.2.3.4") == 0
        t.failed("1.2.3.4")
    assert t.wait_s("1.2.3.4") == pytest.approx(2.0)
    assert t.wait_s("5.6.7.8") == 0  # another client is not held up
    now[0] = 2.5
    t.failed("1.2.3.4")
    assert t.wait_s("1.2.3.4") == pytest.approx(4.0)
    t.succeeded("1.2.3.4")
    assert t.wait_s("1.2.3.4") == 0


def test_48_wrong_logins_meet_a_growing_wall_and_the_right_password_waits_too():
    auth = AdminAuth("admin", "right-pw")
    outcomes = []
    for _ in range(48):
        try:
            auth.login("admin", "guess", client="9.9.9.9")
        except AdminRequired as e:
            outcomes.append(str(e))
    assert outcomes[:5] == ["wrong user name or password"] * 5
    assert all(o.startswith("too many failed logins; try again in") for o in outcomes[5:])
    with pytest.raises(AdminRequired, match="too many failed logins"):
        auth.login("admin", "right-pw", client="9.9.9.9")
    assert auth.login("admin", "right-pw", client="10.0.0.1")  # other clients log in as usual


def test_login_over_the_api_is_throttled(sec_server, client):
    sec_server.service.auth.throttle = LoginThrottle()
    said = [str(client.predict("admin", f"guess{i}", TOKEN, api_name="/admin_login")) for i in range(8)]
    assert sum("wrong user name or password" in s for s in said) == 5
    assert all("too many failed logins" in s for s in said[5:])
    assert "too many failed logins" in str(client.predict("admin", ADMIN_PASSWORD, TOKEN, api_name="/admin_login"))
    sec_server.service.auth.throttle = LoginThrottle()  # the next tests log in from the same address
