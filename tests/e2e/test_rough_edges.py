"""Issue 49, the rough edges a first-time user meets (each of these failed on main before its fix): an unknown
address, an old refusal on a fresh sign-in card, Dutch plurals and quiz scopes, the chat box's height after
sending, and the phone's close button."""

from playwright.sync_api import expect

from tests.conftest import DEMO_PASSWORD
from tests.e2e.conftest import sign_in
from tests.e2e.test_chat import ask, open_chat


def test_an_unknown_address_is_said_in_dutch_inside_the_app_with_the_way_home(served_app, page):
    sign_in(page, served_app, "learner@example.com")
    page.goto(served_app.url + "/nope")
    expect(page.locator("#not-found")).to_have_text("Pagina niet gevonden")
    expect(page.locator("#user-menu")).to_be_visible()  # the app's bar, not a bare page
    assert "404: Page not found" not in page.content()
    page.click("#not-found-home")
    expect(page.locator("#welcome")).to_be_visible()
    expect(page).to_have_title("Onderwerpen · R42")
    # a topic's tab says which topic (every one said "Onderwerp"); an English reader's tabs are English
    page.goto(served_app.url + "/topics/aow")
    expect(page.locator("#topic-title")).to_be_visible()
    expect(page).to_have_title(page.locator("#topic-title").inner_text().strip() + " · R42")


def test_an_english_readers_tabs_are_titled_in_english(served_app, browser):
    ctx = browser.new_context(locale="en-GB")
    page = ctx.new_page()
    page.goto(served_app.url + "/wachtwoord-vergeten")
    expect(page).to_have_title("Forgot password · R42")
    page.goto(served_app.url + "/nope")
    expect(page).to_have_title("Page not found · R42")
    ctx.close()


def test_a_fresh_sign_in_card_does_not_show_an_earlier_refusal(served_app, page):
    page.goto(served_app.url + "/")
    page.fill("#email", "learner@example.com")
    page.fill("#password", "niet-het-wachtwoord")
    page.click("#sign-in")
    expect(page.locator("#signin-error")).to_contain_text("klopt niet")
    page.goto(served_app.url + "/admin/people")  # a link to an admin page, still signed out
    expect(page.locator("#email")).to_be_visible()
    expect(page.locator("#signin-error")).to_have_count(0)
    page.fill("#email", "learner@example.com")
    page.fill("#password", DEMO_PASSWORD)
    page.click("#sign-in")
    expect(page.locator("#forbidden")).to_be_visible()  # signed in; a learner meets "Geen toegang" there


def test_quiz_scopes_are_dutch_plurals(served_app, page):
    sign_in(page, served_app, "learner@example.com", path="/testen")
    expect(page.get_by_role("radio", name="Rollen", exact=True)).to_be_visible()
    expect(page.get_by_role("radio", name="Processen", exact=True)).to_be_visible()
    assert "Rolen" not in page.content() and "Procesen" not in page.content()


def test_the_chat_box_shrinks_back_after_a_long_question_is_sent(served_app, page, claude):
    claude.reply_text("Dat is een lange vraag.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    box = page.locator("#r42-input")
    empty = box.bounding_box()["height"]
    box.focus()
    for n in range(8):
        page.keyboard.type(f"regel {n} van een lange vraag over het partnerpensioen")
        page.keyboard.press("Shift+Enter")
    grown = box.bounding_box()["height"]
    assert grown > empty + 60, (empty, grown)
    page.keyboard.press("Enter")
    expect(page.locator(".r42-assistant").last).to_contain_text("Dat is een lange vraag.")
    expect(box).to_have_value("")
    assert abs(box.bounding_box()["height"] - empty) < 4, (empty, box.bounding_box()["height"])


def test_the_phone_chat_window_closes_with_a_44_px_target(served_app, browser):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, locale="nl-NL", is_mobile=True,
                              has_touch=True)
    try:
        page = ctx.new_page()
        sign_in(page, served_app, "learner@example.com")
        open_chat(page)
        for button in ("#r42-close", "#r42-clear"):
            size = page.locator(button).bounding_box()
            assert size["width"] >= 44 and size["height"] >= 44, (button, size)
    finally:
        ctx.close()


def test_the_keyboard_is_told_how_to_reach_r42_where_it_starts(served_app, page):
    sign_in(page, served_app, "learner@example.com", path="/topics/aow")
    page.keyboard.press("Tab")
    expect(page.locator("#skip-link")).to_be_focused()
    page.keyboard.press("Tab")
    skip = page.locator("#skip-r42")
    expect(skip).to_be_focused()
    expect(skip).to_have_text("R42 openen (Ctrl+/)")
    expect(skip).to_be_in_viewport()  # visible once focused
    page.keyboard.press("Enter")
    expect(page.locator("#r42-input")).to_be_focused()
