"""Issue 10, hole 8: the served app lets only its own origins (and R42_CORS_ORIGINS) read its answers
or open the event websocket -- no browser needed, the headers tell."""

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

FOREIGN = "http://evil.example"


def own_origins(app):
    return [app.url, app.url.replace("127.0.0.1", "localhost")]


def preflight(app, origin):
    return httpx.options(f"{app.url}/api/chat", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})


def event_socket(app, origin):
    return connect(app.url.replace("http://", "ws://") + "/_event/?EIO=4&transport=websocket", origin=origin,
                   open_timeout=15)


def test_a_foreign_origin_gets_no_allow_origin_on_the_api_preflight(served_app):
    resp = preflight(served_app, FOREIGN)
    assert resp.status_code >= 400
    assert resp.headers.get("access-control-allow-origin") not in (FOREIGN, "*")


def test_the_apps_own_origins_pass_the_api_preflight(served_app):
    for origin in own_origins(served_app):
        resp = preflight(served_app, origin)
        assert resp.status_code == 200 and resp.headers["access-control-allow-origin"] == origin
        assert resp.headers["access-control-allow-credentials"] == "true"


@pytest.mark.parametrize("path", ["/api/health", "/ping", "/"])
def test_answers_to_a_foreign_origin_carry_no_allow_origin(served_app, path):
    """Our API (the api_transformer app), Reflex's own backend routes and the page itself."""
    foreign = httpx.get(served_app.url + path, headers={"Origin": FOREIGN})
    assert "access-control-allow-origin" not in foreign.headers
    own = httpx.get(served_app.url + path, headers={"Origin": served_app.url})
    assert own.headers["access-control-allow-origin"] == served_app.url


def test_socketio_polling_from_a_foreign_origin_is_refused(served_app):
    resp = httpx.get(f"{served_app.url}/_event/?EIO=4&transport=polling", headers={"Origin": FOREIGN})
    assert resp.status_code == 400 and "not an accepted origin" in resp.text
    assert "access-control-allow-origin" not in resp.headers


def test_the_event_websocket_refuses_a_foreign_origin(served_app):
    with pytest.raises(InvalidStatus):
        with event_socket(served_app, FOREIGN):
            pass


def test_the_event_websocket_opens_for_the_apps_own_origins(served_app):
    for origin in own_origins(served_app):
        with event_socket(served_app, origin) as ws:
            assert ws.recv(timeout=15).startswith("0")  # the Engine.IO "open" packet
