"""/admin/feedback (issue 25): a rated answer is shown rendered, its [ref:N] as source chips, with its sources."""

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
