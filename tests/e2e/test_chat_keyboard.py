"""R42 by keyboard and screen reader (issue 25): the Ctrl+/ shortcut, focus on open and close, one polite
announcement per answer with the log aria-busy while it streams, a modal dialog that keeps Tab inside on a phone,
and an edit that can be cancelled."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import sign_in
from tests.e2e.test_chat import ask, open_chat

ACTIVE = "(() => { const a = document.activeElement; return a ? (a.id || a.className || a.tagName) : ''; })()"


def active_in(page, selector: str) -> bool:
    return page.evaluate(f"!!(document.activeElement && document.activeElement.closest({selector!r}))")


@pytest.fixture
def phone(browser):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    yield ctx.new_page()
    ctx.close()


def test_keyboard_only_shortcut_ask_announce_reach_the_chip_and_close(served_app, browser, claude):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    claude.reply_text("De AOW is het basispensioen van de overheid [ref:1]. Je krijgt het vanaf de AOW-leeftijd "
                      "[ref:1], ook als je nooit hebt gewerkt.", chunk_delay=0.3)
    sign_in(page, served_app, "learner@example.com")
    launcher = page.locator("#r42-launcher")
    expect(launcher).to_have_attribute("aria-keyshortcuts", "Control+/")
    assert "Ctrl+/" in launcher.get_attribute("title")  # the shortcut is in the launcher's tooltip
    page.keyboard.press("Control+/")
    expect(page.locator("#r42-input")).to_be_focused()
    window = page.locator("#r42-window")
    expect(window).to_have_attribute("role", "complementary")  # beside the page: not modal
    assert window.get_attribute("aria-modal") is None
    assert page.locator("#main").get_attribute("inert") is None  # the page beside it stays usable
    expect(page.locator("#r42-title")).to_have_text("R42")

    log = page.locator("#r42-messages")
    expect(log).to_have_attribute("aria-live", "off")  # the log does not read out every token
    status = page.locator("#r42-chat [role=status]")
    expect(status).to_have_count(1)
    page.keyboard.type("Wat is de AOW?")
    page.keyboard.press("Enter")
    expect(log).to_have_attribute("aria-busy", "true")
    expect(page.locator(".r42-assistant").last).to_contain_text("De AOW is")
    expect(status).to_have_text("")  # nothing announced while it streams
    expect(log).to_have_attribute("aria-busy", "false", timeout=30_000)
    expect(status).to_have_text("R42 heeft geantwoord")
    expect(page.locator("#r42-chat [aria-live=polite]:not(#r42-count), #r42-chat [role=alert]")).to_have_count(0)

    answer = page.locator(".r42-assistant").last
    expect(answer.locator("a[data-r42-cite]")).to_have_count(1)  # one source, cited twice: one chip
    expect(answer.locator(".r42-sources a")).to_have_count(1)  # and once under "Bronnen"
    expect(answer.locator(".r42-copy")).to_be_visible()  # the answer's actions are there before the walk starts
    for _ in range(30):  # back from the box through the conversation, by Shift+Tab only
        page.keyboard.press("Shift+Tab")
        if active_in(page, ".r42-assistant:last-of-type a[data-r42-cite]") or page.evaluate(
                "!!document.activeElement.matches('a[data-r42-cite]')"):
            break
    else:
        pytest.fail(f"Shift+Tab never reached the chip; focus ended on {page.evaluate(ACTIVE)}")
    chip_href = page.evaluate("document.activeElement.getAttribute('href')")
    assert chip_href == answer.locator("a[data-r42-cite]").get_attribute("href")
    page.keyboard.press("Tab")  # reading order: the chip, then the sources list, then the answer's actions
    assert page.evaluate("document.activeElement.classList.contains('r42-source')"), page.evaluate(ACTIVE)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('r42-copy')"), page.evaluate(ACTIVE)

    # forwards too (issue 49): from the message box, Tab passes "Verstuur", goes on to the answer's chip, its
    # sources and its buttons, and after the last of them leaves the window for the page (no trap)
    page.focus("#r42-input")
    for _ in range(3):
        page.keyboard.press("Tab")
        if page.evaluate("!!document.activeElement.matches('a[data-r42-cite]')"):
            break
    else:
        pytest.fail(f"Tab from the box never reached the answer's chip; focus ended on {page.evaluate(ACTIVE)}")
    assert active_in(page, ".r42-assistant")
    seen = []
    for _ in range(12):
        page.keyboard.press("Tab")
        if not active_in(page, "#r42-window"):
            break
        assert active_in(page, ".r42-assistant"), page.evaluate(ACTIVE)  # not back into the box: on to the page
        seen.append(page.evaluate(ACTIVE))
    else:
        pytest.fail(f"Tab never left the window; it went {seen}")
    assert any("r42-thumb-up" in s for s in seen), seen  # the rating buttons were on the way
    assert page.evaluate("document.activeElement !== document.body")

    page.focus("#r42-input")  # back in the window: Esc closes it and the focus goes to the launcher
    page.keyboard.press("Escape")
    expect(window).to_have_count(0)
    expect(launcher).to_be_focused()  # not <body>
    page.keyboard.press("Control+/")
    expect(page.locator("#r42-input")).to_be_focused()
    page.focus("#r42-close")
    page.keyboard.press("Enter")
    expect(window).to_have_count(0)
    expect(launcher).to_be_focused()
    ctx.close()


def test_a_failed_answer_is_announced_once_with_its_error(served_app, page, claude):
    claude.fail(500).fail(500)  # one retry by the SDK, then the error reaches the user
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is de AOW?")
    error = page.locator("#r42-error")
    expect(error).to_be_visible(timeout=30_000)
    expect(page.locator("#r42-chat [role=status]")).to_have_text(error.inner_text())
    expect(page.locator("#r42-messages")).to_have_attribute("aria-busy", "false")


def test_on_a_phone_the_window_is_a_modal_dialog_that_keeps_tab_inside_and_a_chip_closes_it(
        served_app, phone, claude):
    sign_in(phone, served_app, "learner@example.com")
    phone.keyboard.press("Control+/")
    window = phone.locator("#r42-window")
    expect(window).to_have_attribute("role", "dialog")
    expect(window).to_have_attribute("aria-modal", "true")
    expect(window).to_have_attribute("aria-labelledby", "r42-title")
    expect(phone.locator("#r42-input")).to_be_focused()
    for behind in ("#skip-link", "header", "#main"):  # the page behind is out of reach, for a screen reader too
        expect(phone.locator(behind)).to_have_attribute("inert", "")
    for key in ["Tab"] * 12 + ["Shift+Tab"] * 12:
        phone.keyboard.press(key)
        assert active_in(phone, "#r42-window"), f"{key} left the dialog for {phone.evaluate(ACTIVE)}"
    send = phone.locator("#r42-send").bounding_box()  # the composer's touch targets (32 px and 14 px before)
    assert send["height"] >= 44 and send["width"] >= 44, send
    sign = phone.locator(".r42-sign > label")
    assert sign.bounding_box()["height"] >= 44, sign.bounding_box()
    sign.tap()  # the whole row is the target: a tap beside the box toggles it
    expect(phone.locator("#r42-sign")).to_have_attribute("aria-checked", "true")
    sign.tap()
    expect(phone.locator("#r42-sign")).to_have_attribute("aria-checked", "false")

    claude.reply_text("Zie het partnerpensioen [ref:1].")
    ask(phone, "Wat is partnerpensioen?")
    chip = phone.locator(".r42-assistant").last.locator("a[data-r42-cite]")
    expect(chip).to_have_count(1)
    expect(phone.locator("#r42-messages")).to_have_attribute("aria-busy", "false", timeout=30_000)
    box = chip.bounding_box()
    assert box["height"] >= 44, box  # a touch target
    copy = phone.locator(".r42-assistant").last.locator(".r42-copy").bounding_box()
    assert copy["height"] >= 44 and copy["width"] >= 44, copy
    chip.click()
    expect(phone).to_have_url(re.compile(r"/topics/partnerpensioen#p-[0-9a-f]{10}$"))
    expect(window).to_have_count(0)  # the topic it opens is seen, not hidden behind the window
    expect(phone.locator("#topic-title")).to_be_visible()
    expect(phone.locator("#main")).not_to_have_attribute("inert", "")  # and can be used again


def test_edit_keeps_the_question_until_sent_and_cancel_restores_it(served_app, page, claude):
    claude.reply_text("Het eerste antwoord over de AOW.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is de AOW?")
    expect(page.locator(".r42-assistant").last).to_contain_text("Het eerste antwoord", timeout=30_000)
    expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)
    page.locator(".r42-edit").click()
    box = page.locator("#r42-input")
    expect(box).to_have_value("Wat is de AOW?")
    expect(box).to_be_focused()
    expect(page.locator("#r42-editing")).to_be_visible()
    box.fill("")  # emptying the box loses nothing
    expect(page.locator(".r42-user").last).to_contain_text("Wat is de AOW?")
    expect(page.locator(".r42-assistant").last).to_contain_text("Het eerste antwoord")
    page.click("#r42-edit-cancel")
    expect(page.locator("#r42-editing")).to_have_count(0)
    expect(page.locator(".r42-user").last).to_contain_text("Wat is de AOW?")
    expect(page.locator(".r42-assistant").last).to_contain_text("Het eerste antwoord")
    expect(box).to_have_value("")

    page.locator(".r42-edit").click()
    expect(box).to_have_value("Wat is de AOW?")  # the server filled the box (typing before that would be lost)
    claude.reply_text("Antwoord op de bewerkte vraag.")
    box.fill("Wat is de AOW-leeftijd?")
    page.keyboard.press("Enter")
    expect(page.locator(".r42-assistant").last).to_contain_text("Antwoord op de bewerkte vraag.", timeout=30_000)
    expect(page.locator(".r42-user")).to_have_count(1)  # the edited question replaced the old one
    expect(page.locator(".r42-user")).to_contain_text("Wat is de AOW-leeftijd?")
    expect(page.locator("#r42-messages")).not_to_contain_text("Het eerste antwoord")
