"""Issue 21: every response of the served app carries the security headers, and a page's policy allows its
own inline scripts by hash (never 'unsafe-inline'), scripts from its origin, connections to the app only."""

import base64
import hashlib
import re

import httpx
import pytest

from r42_app import routes

PAGES = [route.replace("[slug]", "pensioenregeling") for route, _title in routes.PAGES]


def policy(resp) -> dict[str, list[str]]:
    header = resp.headers["content-security-policy"]
    return {d.split()[0]: d.split()[1:] for d in header.split(";") if d.strip()}


@pytest.mark.parametrize("path", PAGES + ["/api/health", "/r42.js", "/ping", "/favicon.svg", "/geen-pagina"])
def test_every_response_carries_the_security_headers(served_app, path):
    resp = httpx.get(served_app.url + path, follow_redirects=True, timeout=30)
    assert resp.headers["x-content-type-options"] == "nosniff"
    assert resp.headers["referrer-policy"] == "no-referrer"
    assert resp.headers["x-frame-options"] == "DENY"
    csp = policy(resp)
    assert "'unsafe-inline'" not in csp["script-src"] and "*" not in " ".join(csp["script-src"])
    assert csp["object-src"] == ["'none'"] and csp["base-uri"] == ["'none'"] and csp["frame-ancestors"] == ["'none'"]
    assert csp["img-src"] == ["'self'", "data:", "blob:"]
    assert all(src in ("'self'", served_app.url, served_app.url.replace("127.0.0.1", "localhost"))
               or src.startswith("ws://") for src in csp["connect-src"])


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_a_page_allows_exactly_its_own_inline_scripts(served_app, encoding):
    resp = httpx.get(served_app.url + "/", headers={"Accept-Encoding": encoding}, timeout=30)
    assert resp.status_code == 200 and "text/html" in resp.headers["content-type"]
    inline = re.findall(r"<script\b(?![^>]*\ssrc=)[^>]*>(.*?)</script>", resp.text, re.S)
    assert inline, "the page has inline scripts to allow"
    hashes = {f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in inline}
    allowed = {s for s in policy(resp)["script-src"] if s.startswith("'sha256-")}
    assert allowed == hashes


def test_a_not_modified_page_keeps_the_policy_it_was_served_with(served_app):
    """A reload answers 304 without a body: a policy computed from that empty body would name no script, and the
    browser would apply it to the cached page (a blank page after every reload)."""
    first = httpx.get(served_app.url + "/", timeout=30)
    again = httpx.get(served_app.url + "/", headers={"If-None-Match": first.headers["etag"]}, timeout=30)
    assert again.status_code == 304
    assert "content-security-policy" not in again.headers
    assert again.headers["x-content-type-options"] == "nosniff"


def test_a_reloaded_page_still_runs(served_app, page):
    from tests.e2e.conftest import sign_in

    sign_in(page, served_app, "learner@example.com")
    for _ in range(2):
        page.reload()
        page.wait_for_selector("#r42-launcher")
