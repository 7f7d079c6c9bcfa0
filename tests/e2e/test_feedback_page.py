"""/admin/feedback (issue 25): a rated answer is shown rendered, its [ref:N] as source chips, with its sources."""

import re
import uuid

from playwright.sync_api import expect

from tests.e2e.conftest import sign_in
from tests.e2e.test_a11y import violations
from tests.e2e.test_chat import ask, open_chat


def test_the_feedback_page_shows_the_answer_with_its_sources_not_raw_refs(served_app, browser, claude):
    ctx = browser.new_context()
    page = ctx.new_page()
    claude.reply_text("De **franchise** is het deel van het salaris zonder opbouw [ref:1].")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is de franchise eigenlijk?")
    last = page.locator(".r42-assistant").last
    expect(last.locator(".r42-cite")).to_have_count(1)
    expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)
    chip = last.locator(".r42-cite").first.inner_text().strip()
    last.locator(".r42-thumb-up").click()
    expect(last.locator(".r42-thumb-up")).to_have_attribute("aria-pressed", "true")
    ctx.close()

    admin_ctx = browser.new_context(bypass_csp=True)  # axe is injected below
    admin = admin_ctx.new_page()
    sign_in(admin, served_app, "admin@example.com", path="/admin/feedback")
    row = admin.locator(".feedback-row", has_text="Wat is de franchise eigenlijk?").first
    expect(row.locator(".feedback-answer strong")).to_have_text("franchise")  # markdown, rendered
    expect(row).not_to_contain_text("[ref:")
    expect(row.locator(".feedback-answer .r42-cite")).to_have_text(chip)
    source = row.locator(".feedback-sources a")
    expect(source).to_have_count(1)
    expect(source).to_have_text(chip)
    assert (source.get_attribute("href") or "").startswith("/topics/")
    found = violations(admin)  # the rendered answer and its chips pass axe too
    assert found == [], "\n".join(found)
    admin_ctx.close()


def test_a_rating_stored_with_forged_citations_shows_no_chip_that_leaves_the_app(served_app, browser):
    """Issue 44, finding 6: a learner's rating whose citation slug held markdown made a source chip to another site
    on this page. Such a row stored before PocketBase refused them (written here by the superuser, whom the hook
    lets through) shows R42's one real citation as a chip, the forged ones not at all, and a link to elsewhere as
    what it is."""
    pb = served_app.superuser()
    demo = pb.first("tenants", 'slug = "demo"')
    learner = pb.first("users", 'email = "learner@example.com"')
    question = f"Een oude beoordeling {uuid.uuid4().hex[:8]}"
    row = pb.create("chat_feedback", {
        "tenant": demo["id"], "user": learner["id"], "rating": "down", "message_id": uuid.uuid4().hex,
        "question": question, "answer": "De AOW [ref:1], de bron [ref:2] en [ref:3]. "
                                        "[AOW: log opnieuw in](/topics/aow#p-0123456789)",
        "citations": [{"ref": 1, "slug": "aow", "label": "AOW", "anchor": "p-0123456789"},
                      {"ref": 2, "label": "Officiële bron",
                       "slug": 'x) [Officiële bron: log opnieuw in](https://evil.example/login "r42:bron") ('},
                      {"ref": 3, "slug": "aow", "label": "AOW\n\n[Inloggen](https://evil.example/3)"}]})
    ctx = browser.new_context()
    try:
        admin = ctx.new_page()
        sign_in(admin, served_app, "admin@example.com", path="/admin/feedback")
        card = admin.locator(".feedback-row", has_text=question)
        answer = card.locator(".feedback-answer")
        expect(answer).to_contain_text("log opnieuw in")
        chip = answer.locator("[data-r42-cite]")
        expect(chip).to_have_count(1)
        expect(chip).to_have_text("AOW")
        expect(chip).to_have_attribute("href", "/topics/aow#p-0123456789")
        expect(card.locator('[href*="evil.example"]')).to_have_count(0)
        lookalike = answer.get_by_role("link", name="AOW: log opnieuw in")  # the chip's href, not its label
        expect(lookalike).not_to_have_attribute("data-r42-cite", re.compile(".*"))
        assert lookalike.evaluate("el => getComputedStyle(el).textDecorationLine") == "underline"
        expect(card.locator(".feedback-sources a")).to_have_count(1)
        expect(card.locator(".feedback-sources a")).to_have_text("AOW")
    finally:
        ctx.close()
        pb.delete("chat_feedback", row["id"])
