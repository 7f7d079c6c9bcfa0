"""External tools in the browser (issue 13): a high-risk MCP tool shows a confirmation card; Toestaan runs
it (the admins see the message and the audited call), Weigeren does not; and an API client answers the
same question with POST /api/chat/confirm while its stream waits."""

import json

import httpx
import pytest
from playwright.sync_api import expect

from tests.conftest import DEMO_PASSWORD
from tests.e2e.conftest import sign_in, wait_for_mcp_servers
from tests.e2e.test_chat import ask, open_chat


@pytest.fixture(autouse=True)
def servers_connected(served_app):
    wait_for_mcp_servers(served_app)


def test_toestaan_runs_the_tool_once_and_the_admins_see_it(served_app, browser, page, claude):
    claude.reply_tool("r42demo__send_message", {"subject": "Terugbelverzoek", "text": "Bel mij morgen."})
    claude.reply_text("Ik heb je bericht aan de beheerders verstuurd.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Laat de beheerder weten dat ik gebeld wil worden")
    card = page.locator(".r42-confirm").last
    expect(card).to_contain_text("r42demo__send_message")
    expect(card).to_contain_text("subject: Terugbelverzoek")
    expect(card).to_have_attribute("data-state", "pending")
    card.locator(".r42-confirm-allow").click()
    expect(card).to_contain_text("Toegestaan")
    expect(page.locator(".r42-assistant").last).to_contain_text("Ik heb je bericht aan de beheerders verstuurd.")
    result = claude.requests[1]["body"]["messages"][-1]["content"][0]
    assert json.loads(result["content"])["status"] == "sent"

    admin = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    sign_in(admin, served_app, "admin@example.com", path="/admin/tools")
    expect(admin.locator("#demo-messages")).to_contain_text("Terugbelverzoek")
    expect(admin.locator('#mcp-servers [data-server="r42demo"]')).to_contain_text("Verbonden")
    call = admin.locator('#mcp-calls .tool-call[data-status="ok"]').filter(has_text="r42demo__send_message").first
    expect(call).to_contain_text("learner@example.com")


def test_weigeren_does_not_run_the_tool(served_app, page, claude):
    claude.reply_tool("r42demo__send_message", {"subject": "Niet versturen", "text": "Dit mag niet weg."})
    claude.reply_text("Goed, ik heb niets verstuurd.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Stuur iets naar de beheerder")
    card = page.locator(".r42-confirm").last
    card.locator(".r42-confirm-deny").click()
    expect(card).to_contain_text("Geweigerd")
    expect(page.locator(".r42-assistant").last).to_contain_text("Goed, ik heb niets verstuurd.")
    result = claude.requests[1]["body"]["messages"][-1]["content"][0]
    assert result["is_error"] is True and json.loads(result["content"])["status"] == "declined"
    messages = served_app.data_dir / "mcp-demo-messages.jsonl"
    assert "Niet versturen" not in (messages.read_text() if messages.exists() else "")


def test_an_api_client_confirms_while_its_stream_waits(served_app, claude):
    token = httpx.post(f"{served_app.pb_url}/api/collections/users/auth-with-password",
                       json={"identity": "admin@example.com", "password": DEMO_PASSWORD}).json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    claude.reply_tool("r42demo__send_message", {"subject": "Via de API", "text": "Hallo."})
    claude.reply_text("Verstuurd.")
    seen = []
    with httpx.stream("POST", f"{served_app.url}/api/chat", headers=headers, timeout=60,
                      json={"messages": [{"role": "user", "content": "Stuur een bericht"}], "mode": "fts"}) as resp:
        for line in resp.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            seen.append(event["type"])
            if event["type"] == "confirm_required":
                assert event["tool"] == "r42demo__send_message" and event["input"]["subject"] == "Via de API"
                bad = httpx.post(f"{served_app.url}/api/chat/confirm", headers=headers,
                                 json={"id": event["id"], "decision": "maybe"})
                assert bad.status_code == 400
                ok = httpx.post(f"{served_app.url}/api/chat/confirm", headers=headers,
                                json={"id": event["id"], "decision": "allow"})
                assert ok.status_code == 200
                replay = httpx.post(f"{served_app.url}/api/chat/confirm", headers=headers,
                                    json={"id": event["id"], "decision": "allow"})
                assert replay.status_code == 409 and replay.json()["type"] == "confirmation_used"
    assert seen[-1] == "done" and "confirm_required" in seen
    assert "Via de API" in (served_app.data_dir / "mcp-demo-messages.jsonl").read_text()
