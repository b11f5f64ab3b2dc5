"""With user accounts (made by the admin), every visitor logs in, and uploads and conversations belong to the user:
the same user on two browsers sees the same documents, another user does not; the page without a login shows
nothing but the login form."""
from __future__ import annotations

import httpx
import pytest

from tests.security.conftest import ADMIN_PASSWORD, serve

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
    assert owner == users_server.service.users.owner("ines")  # the account's, by its id (test_account_ids.py)

    def ask(c):
        history, *_ = c.predict("Who is on the night watch on Fridays?", [], 5, 800, "dense", "extractive", None,
                                None, [], api_name="/ask")
        return str(history)

    assert "roster.md" in ask(ines_2)  # the same user on another browser
    assert "roster.md" not in ask(jonas)


def test_a_removed_user_s_open_page_is_logged_out_and_never_reaches_the_name_s_next_account(users_server):
    """A page still open after its user was removed must not keep working, nor become the page of a new account the
    admin later gives the same name (Gradio keeps the login by name)."""
    from gradio_client import Client

    service = users_server.service
    service.users.add("kim", "kim-first-pw-1")
    kim = Client(users_server.url, auth=("kim", "kim-first-pw-1"), verbose=False)
    kim.predict("Who is on the night watch?", [], 5, 800, "dense", "extractive", None, None, [], api_name="/ask")
    token = service.login("admin", ADMIN_PASSWORD, token="u" * 40)
    service.remove_user(token, "kim", "delete")  # their conversation of the question above goes with them
    service.users.add("kim", "kim-second-pw-2")  # someone else now
    with pytest.raises(httpx.HTTPStatusError, match="401"):  # the login has ended
        kim.predict("Who is on the night watch?", [], 5, 800, "dense", "extractive", None, None, [], api_name="/ask")
    service.remove_user(token, "kim", "delete")
