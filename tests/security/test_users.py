"""With user accounts (made by the admin), every visitor logs in, and uploads and conversations belong to the user:
the same user on two browsers sees the same documents, another user does not; the page without a login shows
nothing but the login form."""
from __future__ import annotations

import httpx
import pytest

from tests.security.conftest import serve

PASSWORDS = {"ines": "harbour-master-1", "jonas": "bakery-owner-22"}


@pytest.fixture(scope="module")
def users_server(tmp_path_factory):
    yield from serve(tmp_path_factory.mktemp("users"), users=PASSWORDS)


def _client(server, name):
    from gradio_client import Client

    return Client(server.url, auth=(name, PASSWORDS[name]), verbose=False)


def test_without_a_login_nothing_is_served(users_server):
    r = httpx.get(f"{users_server.url}/config")
    assert r.status_code in (401, 403)
    from gradio_client import Client
    from gradio_client.exceptions import AuthenticationError

    with pytest.raises((AuthenticationError, ValueError)):  # a 401, or "Could not login" for a refused /login
        Client(users_server.url, verbose=False)
    with pytest.raises((AuthenticationError, ValueError)):
        Client(users_server.url, auth=("ines", "wrong-password"), verbose=False)


def test_uploads_and_conversations_belong_to_the_user(users_server, tmp_path):
    from gradio_client import handle_file

    doc = tmp_path / "roster.md"
    doc.write_text("The night watch roster lists Ines on Mondays and Jonas on Fridays at the boathouse.\n",
                   encoding="utf-8")
    ines_1, ines_2, jonas = _client(users_server, "ines"), _client(users_server, "ines"), _client(users_server, "jonas")
    table, *_ = ines_1.predict([handle_file(str(doc))], None, api_name="/upload")
    assert "ready" in str(table)
    owner = {r["doc_id"]: r["owner"] for r in users_server.service.ctx.catalog.documents(None)}["roster.md"]
    assert owner == "user:ines"

    def ask(c):
        history, *_ = c.predict("Who is on the night watch on Fridays?", [], 5, 800, "dense", "extractive", None,
                                None, [], api_name="/ask")
        return str(history)

    assert "roster.md" in ask(ines_2)  # the same user on another browser
    assert "roster.md" not in ask(jonas)
