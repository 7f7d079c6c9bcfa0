"""Issue 52: a language per person. A browser that asks for English gets the sign-in page in English (<html lang>
too); a person switches Nederlands / English in the account menu, by keyboard, and the page speaks it at once; the
choice is stored on the person, so another browser of theirs opens in it; both languages pass axe."""

import pytest
from playwright.sync_api import expect

from tests.conftest import throwaway_user
from tests.e2e.conftest import sign_in
from tests.e2e.test_a11y import VIEWPORTS, violations


@pytest.fixture
def person(served_app):
    with throwaway_user(served_app.superuser(), prefix="taal", name="Tess Taal") as (email, row):
        yield email, row


def english_browser(browser, size="desktop"):
    return browser.new_context(viewport=VIEWPORTS[size], locale="en-GB", bypass_csp=True)  # axe is injected


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_an_english_browser_gets_the_sign_in_page_in_english_and_a_dutch_one_in_dutch(served_app, browser, size):
    ctx = english_browser(browser, size)
    page = ctx.new_page()
    page.goto(served_app.url + "/")
    expect(page.locator("#sign-in-card h1, #sign-in-card h2, #sign-in-card h3").first).to_have_text("Sign in")
    expect(page.locator("label[for=email]")).to_have_text("E-mail address")
    expect(page.locator("#forgot-link")).to_have_text("Forgot your password?")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    assert violations(page) == []
    ctx.close()

    dutch = browser.new_context(locale="nl-NL").new_page()
    dutch.goto(served_app.url + "/")
    expect(dutch.locator("#sign-in")).to_have_text("Aanmelden")
    expect(dutch.locator("html")).to_have_attribute("lang", "nl")
    dutch.context.close()


def test_a_person_switches_to_english_by_keyboard_and_every_browser_of_theirs_follows(served_app, browser, person):
    email, row = person
    ctx = browser.new_context(locale="nl-NL", bypass_csp=True)
    page = ctx.new_page()
    sign_in(page, served_app, email, fresh=True)
    nav = page.locator("nav[aria-label]")
    expect(nav).to_contain_text("Onderwerpen")
    page.locator("#user-menu").focus()
    page.keyboard.press("Enter")
    english = page.locator("#language-en")
    expect(english).to_have_attribute("aria-checked", "false")
    expect(page.locator("#language-nl")).to_have_attribute("aria-checked", "true")
    for _ in range(12):  # down the menu to "English" (the focus moves a moment after the key: wait for it)
        try:
            expect(english).to_be_focused(timeout=500)
            break
        except AssertionError:
            page.keyboard.press("ArrowDown")
    expect(english).to_be_focused()  # never Enter on another item (once it was "Afmelden")
    page.keyboard.press("Enter")
    expect(nav).to_contain_text("Topics")
    expect(page.locator("nav[aria-label]")).to_have_attribute("aria-label", "Main menu")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    toast = page.get_by_text("From now on R42 speaks English with you")
    expect(toast).to_be_visible()
    assert served_app.superuser().first("users", f'id = "{row["id"]}"')["language"] == "en"  # on the person
    expect(toast).to_have_count(0, timeout=15_000)  # the page itself is scanned (a toast was once measured mid-fade)
    assert violations(page) == []

    other = browser.new_context(locale="nl-NL").new_page()  # another browser of theirs, Dutch by its own settings
    sign_in(other, served_app, email, fresh=True)
    expect(other.locator("nav[aria-label]")).to_contain_text("Knowledge graph")
    expect(other.locator("html")).to_have_attribute("lang", "en")
    other.context.close()

    page.reload()  # the next page: still English, and back to Dutch the same way
    page.locator("#user-menu").click()
    expect(page.locator("#language-en")).to_have_attribute("aria-checked", "true")
    page.locator("#language-nl").click()
    expect(nav).to_contain_text("Onderwerpen")
    expect(page.locator("html")).to_have_attribute("lang", "nl")
    ctx.close()


def test_an_admin_gives_the_organisation_english_and_its_people_without_a_choice_follow(served_app, browser):
    """The organisation's language (/admin/people, by keyboard): people who chose none of their own see R42 in it
    from their next page; someone who chose Dutch keeps Dutch. The acme tenant, put back after."""
    from r42_app.services.store.tenants import Tenants

    pb = served_app.superuser()
    tenants = Tenants(pb)
    with throwaway_user(pb, role="admin", prefix="orgtaal", tenant_slug="acme") as (admin, _), \
            throwaway_user(pb, prefix="orgtaal", tenant_slug="acme") as (learner, _), \
            throwaway_user(pb, prefix="orgtaal", tenant_slug="acme") as (dutch, dutch_row):
        pb.update("users", dutch_row["id"], {"language": "nl"})  # chose Dutch herself
        try:
            ctx = browser.new_context(locale="nl-NL", bypass_csp=True)
            page = ctx.new_page()
            sign_in(page, served_app, admin, path="/admin/people", fresh=True)
            section = page.locator("#language-section")
            expect(section).to_contain_text("Taal van je organisatie")
            expect(page.locator("#tenant-language-nl")).to_have_attribute("aria-checked", "true")
            page.locator("#tenant-language-nl").focus()
            page.keyboard.press("ArrowRight")  # the arrows move within the group, Space chooses
            expect(page.locator("#tenant-language-en")).to_be_focused()
            page.keyboard.press("Space")
            expect(page.get_by_text("R42 spreekt nu English")).to_be_visible()
            expect(page.locator("#tenant-language-en")).to_have_attribute("aria-checked", "true")
            assert tenants.language("acme") == "en"
            expect(page.get_by_text("R42 spreekt nu English")).to_have_count(0, timeout=15_000)
            assert violations(page) == []
            ctx.close()

            for email, words, lang in ((learner, "Knowledge graph", "en"), (dutch, "Kennisgraaf", "nl")):
                other = browser.new_context(locale="nl-NL").new_page()
                sign_in(other, served_app, email, fresh=True)
                expect(other.locator("nav[aria-label]")).to_contain_text(words)
                expect(other.locator("html")).to_have_attribute("lang", lang)
                other.context.close()
        finally:
            tenants.set_language("acme", "nl")
