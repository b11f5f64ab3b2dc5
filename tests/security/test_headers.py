"""Every response of the web server carries ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: same-origin``
and a Content-Security-Policy (issue 47): the Gradio page's lets it run (Gradio needs inline and evaluated scripts)
but loads, calls, posts and frames nothing outside the server; the viewer's lets nothing run but its own one script
and loads nothing but its page image. What the app shows is escaped already; the headers keep it harmless if some
markup ever got through."""
from __future__ import annotations

import base64
import hashlib
import re

import httpx
import pytest

from tests.browser_fixtures import ask_and_open_sources

# A violation of the page's policy, as the browser reports it to the page (a script added before any of the page's)
REPORT_VIOLATIONS = ("window.__csp = []; document.addEventListener('securitypolicyviolation', "
                     "e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")


def policy(response) -> dict[str, list[str]]:
    """The response's Content-Security-Policy as directive: sources."""
    csp = response.headers.get("content-security-policy")
    assert csp, f"{response.request.url}: no Content-Security-Policy"
    return {d.split()[0]: d.split()[1:] for d in csp.split(";") if d.strip()}


def common_headers(response) -> None:
    assert response.headers.get("x-content-type-options") == "nosniff", (response.request.url, response.headers)
    assert response.headers.get("referrer-policy") == "same-origin", (response.request.url, response.headers)


@pytest.fixture(scope="module")
def viewer_link(sec_server) -> str:
    svc = sec_server.service
    a = next(v for k, v in svc.ask("Who opens the lock gates?", backend="extractive") if k == "done")
    src = a.to_dict()["sources"][0]
    return f"{sec_server.url}/{svc.view_link(src, [(src['matched_start'], src['matched_end'])])}"


def test_the_app_page_loads_nothing_from_elsewhere(sec_server):
    for path in ("/", "/gradio_api/info", "/no-such-page"):
        r = httpx.get(sec_server.url + path, timeout=10)
        common_headers(r)
        p = policy(r)
        assert p["default-src"] == ["'self'"] and p["connect-src"] == ["'self'"], p
        assert p["object-src"] == ["'none'"] and p["frame-ancestors"] == ["'self'"] and p["form-action"] == ["'self'"]
        for directive in ("img-src", "font-src", "media-src", "script-src", "style-src"):  # no other origin at all
            assert not [s for s in p[directive] if s not in ("'self'", "data:", "blob:", "'unsafe-inline'",
                                                             "'unsafe-eval'")], (directive, p)


def test_the_viewer_page_runs_only_its_own_script(sec_server, viewer_link):
    r = httpx.get(viewer_link, timeout=30)
    assert r.status_code == 200 and "lock gates" in r.text
    common_headers(r)
    p = policy(r)
    assert p["default-src"] == ["'none'"] and p["img-src"] == ["'self'"] and p["frame-ancestors"] == ["'self'"], p
    scripts = re.findall(r"<script>(.*?)</script>", r.text, re.S)
    assert scripts, "the viewer page has its scroll script"
    hashes = {f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts}
    assert set(p["script-src"]) == hashes, (p["script-src"], hashes)  # its scripts by hash; nothing inline else
    for path in (viewer_link.replace("/view/", "/original/"), f"{sec_server.url}/mgrag/view/forged-token"):
        r = httpx.get(path, timeout=30)
        common_headers(r)
        assert policy(r)["default-src"] == ["'none'"]


def test_the_api_answers_with_the_headers(sec_server):
    key = sec_server.service.api_keys.add("headers-key", "ines")
    for headers in ({}, {"Authorization": f"Bearer {key}"}):
        r = httpx.get(f"{sec_server.url}/v1/models", headers=headers, timeout=10)
        assert r.status_code == (200 if headers else 401)
        common_headers(r)
        assert policy(r)["frame-ancestors"] == ["'self'"]


@pytest.mark.browser
def test_the_app_and_the_viewer_work_under_their_policies(sec_server, page, viewer_link, tracker):
    """In Chromium the page loads, answers a question with its sources, shows each tab, and the viewer opens, with
    no violation of either policy reported; a control image from another origin is reported and never fetched, so
    the silence is the policy's doing, not a deaf listener's."""
    from playwright.sync_api import expect

    page.add_init_script(REPORT_VIOLATIONS)
    ask_and_open_sources(page, sec_server.url, "Who opens the lock gates every morning?")
    expect(page.locator("#chatbot")).to_contain_text("Captain Ines Varga", timeout=30_000)
    for tab in ("Admin", "Evaluate", "Chat"):
        page.get_by_role("tab", name=tab).click()
    assert page.evaluate("window.__csp") == []
    page.evaluate(f"() => {{ const i = new Image(); i.src = '{tracker.url}/control.png'; "
                  "document.body.appendChild(i); }")
    page.wait_for_function("window.__csp.length > 0")
    assert page.evaluate("window.__csp") == [f"img-src {tracker.url}/control.png"]
    assert tracker.hits == []

    page.goto(viewer_link)
    expect(page.locator("mark").first).to_be_visible()
    assert page.evaluate("window.__csp") == []
