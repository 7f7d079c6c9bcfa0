"""Issue 44, finding 8 in a real browser: "Afmelden" ends that device's token in PocketBase, and "Overal afmelden"
in the account menu (by keyboard) ends the sessions of every device, each told so."""

import json

import pytest
from playwright.sync_api import expect

from r42_app.core.messages import msg
from tests.conftest import throwaway_user
from tests.e2e.conftest import own_record, sign_in


@pytest.fixture
def temp_learner(served_app):
    """A throw-away learner of tenant demo ("Overal afmelden" must not sign a seeded user out of other tests)."""
    pb = served_app.superuser()
    with throwaway_user(pb, "learner", "Sanne Afmeld", "e2e-signout") as (email, row):
        yield email, row["id"]


def stored_token(page) -> str:
    raw = page.evaluate("localStorage.getItem('r42.session')") or ""
    return json.loads(raw) if raw.startswith('"') else raw


def sign_in_apart(pages, served_app, email: str) -> list[str]:
    """Each page signed in with a token of its own (two sign-ins in one second may get the same PocketBase token: the
    app's differ by a random few seconds of life, so another sign-in gets another)."""
    tokens: list[str] = []
    for p in pages:
        for _ in range(5):
            sign_in(p, served_app, email, fresh=True)
            if stored_token(p) not in tokens:
                break
            p.evaluate("localStorage.clear()")
        tokens.append(stored_token(p))
    assert len(set(tokens)) == len(pages)
    return tokens


def test_afmelden_ends_the_token_of_this_device_only(served_app, browser, temp_learner):
    email, user_id = temp_learner
    devices = [browser.new_context(locale="nl-NL") for _ in range(2)]
    try:
        pages = [d.new_page() for d in devices]
        tokens = sign_in_apart(pages, served_app, email)
        pages[0].click("#user-menu")
        pages[0].click("#sign-out")
        expect(pages[0].locator("#email")).to_be_visible()
        assert own_record(served_app, tokens[0], user_id) == 401  # refused by PocketBase itself
        assert own_record(served_app, tokens[1], user_id) == 200
        pages[1].reload()
        expect(pages[1].locator("#user-menu")).to_be_visible()  # the other device is still signed in
    finally:
        for d in devices:
            d.close()


def test_overal_afmelden_by_keyboard_signs_every_device_out(served_app, browser, temp_learner):
    email, user_id = temp_learner
    devices = [browser.new_context(locale="nl-NL") for _ in range(2)]
    try:
        here, there = (d.new_page() for d in devices)
        tokens = sign_in_apart([here, there], served_app, email)

        here.locator("#user-menu").focus()
        here.keyboard.press("Enter")
        item = here.locator("#sign-out-everywhere")
        expect(item).to_be_visible()
        expect(item).to_have_attribute("role", "menuitem")
        expect(item).to_contain_text("Overal afmelden")
        # the arrow keys walk the menu to it; the focus moves a moment after each key (and into the menu a moment
        # after Enter opened it), so wait for it before the next key: keys pressed at once ran out before the menu
        # had the focus on a busy machine (f37)
        for _ in range(12):
            try:
                expect(item).to_be_focused(timeout=500)
                break
            except AssertionError:
                here.keyboard.press("ArrowDown")
        expect(item).to_be_focused()
        here.keyboard.press("Enter")

        expect(here.get_by_text(msg("auth.signed_out_everywhere"))).to_be_visible()
        expect(here.locator("#email")).to_be_visible()
        assert all(own_record(served_app, t, user_id) == 404 for t in tokens)  # no token of the old key works

        there.reload()  # the other device's next page: the sign-in card, and why
        expect(there.locator("#sign-in")).to_be_visible()
        expect(there.get_by_text(msg("auth.session_ended"))).to_be_visible()
        assert stored_token(there) == ""
    finally:
        for d in devices:
            d.close()
