"""Issue 52: a language per person. A browser that asks for English gets the sign-in page in English (<html lang>
too); a person switches Nederlands / English in the account menu, by keyboard, and the page speaks it at once; the
choice is stored on the person, so another browser of theirs opens in it; both languages pass axe."""

import json
import re

import pytest
from playwright.sync_api import expect

from tests.conftest import throwaway_user
from tests.e2e.conftest import end_active_quizzes, sign_in
from tests.e2e.test_a11y import VIEWPORTS, violations
from tests.e2e.test_chat import ask, open_chat


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
    expect(page.locator("label[for=email]")).to_have_text("Email address")
    expect(page.locator("#forgot-link")).to_have_text("Forgot your password?")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    assert violations(page) == []
    # a refusal speaks the card's language too (it came in Dutch: an event's language is its own)
    page.fill("#email", "nobody-here@example.com")  # (no account's sign-in limit used up)
    page.fill("#password", "not the password")
    page.click("#sign-in")
    expect(page.locator("#signin-error")).to_have_text("Email address or password is incorrect.")
    page.click("#forgot-link")  # the pages a signed-out person reaches speak it too, <html lang> with them
    expect(page.locator("#forgot-card")).to_contain_text("Forgot password")
    expect(page.locator("#forgot-no-mail")).to_contain_text("does not send email here")  # this app sends none
    expect(page.locator("html")).to_have_attribute("lang", "en")
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


def drop_rows_of(pb, user_id: str) -> None:
    """Every row that points at the person (the quiz's session, costs, the chat's log), so they can be deleted."""
    collections = pb.send("GET", "/api/collections", params={"perPage": 200})["items"]
    users = next(c["id"] for c in collections if c["name"] == "users")
    for collection in collections:
        fields = [f["name"] for f in collection.get("fields", []) if f.get("type") == "relation"
                  and f.get("collectionId") == users]
        for name in fields:
            for row in pb.all(collection["name"], filter=f'{name} = "{user_id}"', fields="id"):
                pb.delete(collection["name"], row["id"])


def english_person(served_app, role="learner"):
    """A person of the demo tenant who chose English (as the account menu or `PATCH /api/me` stores it)."""
    made = throwaway_user(served_app.superuser(), role=role, prefix="english", name="Emma English")
    email, row = made.__enter__()
    served_app.superuser().update("users", row["id"], {"language": "en"})
    return made, email


def test_the_learners_walk_in_english_chat_with_sources_and_the_quiz_lock(served_app, browser, claude):
    """The learner's main walk in English: the pages and the chat window speak English, the answer cites its
    sources under "Sources", a quiz counts "Question 1 of 8" and hides R42 until it is stopped."""
    made, email = english_person(served_app)
    try:
        ctx = browser.new_context(locale="nl-NL", bypass_csp=True)  # a Dutch browser: her choice wins
        page = ctx.new_page()
        sign_in(page, served_app, email, path="/topics/aow", fresh=True)
        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.locator("nav[aria-label]")).to_contain_text("Knowledge graph")
        # the Dutch topic on the English page is read out in Dutch (WCAG 3.1.2)
        expect(page.locator("#topic-content")).to_have_attribute("lang", "nl")
        expect(page.locator("#topic-title")).to_have_attribute("lang", "nl")
        open_chat(page)
        expect(page.locator("#r42-input")).to_have_attribute("placeholder", "Ask your question…")
        claude.reply_text("The AOW is the state pension [ref:1].")
        ask(page, "What is the AOW?")
        answer = page.locator(".r42-assistant").last
        expect(answer).to_contain_text("state pension")
        expect(page.locator(".r42-sources-title").last).to_have_text("Sources")
        assert "answer in English" in json.dumps(claude.requests[-1]["body"]["system"])  # the turn's tail
        assert violations(page, still=False) == []

        page.goto(served_app.url + "/testen")
        page.click("#quiz-start")
        expect(page.locator("#quiz-progress")).to_have_text(re.compile(r"^Question 1 of \d+$"))
        expect(page.locator("#r42-launcher")).to_be_hidden()
        page.click("#quiz-stop")
        expect(page.get_by_role("alertdialog")).to_contain_text("Stop the quiz?")
        page.click("#quiz-stop-confirm")
        expect(page.locator("#r42-launcher")).to_be_visible()
        ctx.close()
    finally:
        end_active_quizzes(served_app)
        drop_rows_of(served_app.superuser(), served_app.superuser().first("users", f'email = "{email}"')["id"])
        made.__exit__(None, None, None)


def test_the_admins_walk_in_english_topics_people_and_costs(served_app, browser, tmp_path):
    """The admin's main pages in English, with numbers the English way, and no axe finding; and what the server
    says back in English (a refused address and a refused file came in Dutch: made before the event knew its reader)."""
    made, email = english_person(served_app, role="admin")
    try:
        ctx = browser.new_context(locale="nl-NL", bypass_csp=True)
        page = ctx.new_page()
        sign_in(page, served_app, email, path="/admin/topics", fresh=True)
        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.locator("#main")).to_contain_text("Add documents")
        expect(page.locator("tbody tr").first).to_be_visible()
        assert violations(page) == []
        page.goto(served_app.url + "/admin/people")
        expect(page.locator("#main h1, #main h2").first).to_have_text("People")
        page.click("#people-invite-open")
        expect(page.get_by_role("dialog")).to_contain_text("Invite")
        page.fill("#invite-email", "someone@nowhere")
        page.click("#invite-send")
        expect(page.locator("#invite-error")).to_have_text(
            "'someone@nowhere' is incomplete: a domain belongs after the @, as in name@organisation.com.")
        page.keyboard.press("Escape")
        expect(page.get_by_role("dialog")).to_have_count(0)  # closed (by the server), not scanned mid-fade
        script = tmp_path / "class.py"
        script.write_text("print('not a list of people')\n", encoding="utf-8")
        page.click("#people-import-open")
        with page.expect_file_chooser() as chooser:
            page.locator(".csv-drop").click()
        chooser.value.set_files(str(script))
        expect(page.get_by_role("dialog")).to_contain_text("class.py is not a CSV file")
        page.keyboard.press("Escape")
        expect(page.get_by_role("dialog")).to_have_count(0)
        assert violations(page) == []
        page.goto(served_app.url + "/admin/costs")
        expect(page.locator("#main")).to_contain_text("Costs and credits")
        # numbers the English way ("1,000.00", "$ 0.0000"), not the Dutch "1.000,00"
        expect(page.locator("#cost-credits-left")).to_have_text(re.compile(r"^[\d,]+\.\d\d$|^Unlimited$"))
        expect(page.locator("#cost-usd")).to_have_text(re.compile(r"^\$\s[\d,]*\d\.\d{2,4}$"))
        assert violations(page) == []
        ctx.close()
    finally:
        made.__exit__(None, None, None)
