"""Issue 10 in a real browser: a demoted admin's open tab loses admin powers, a revoked token signs
the tab out with a message, and the sign-in card says so when PocketBase throttles sign-ins."""


import pytest
from playwright.sync_api import expect

from tests.conftest import DEMO_PASSWORD, throwaway_user
from tests.e2e.conftest import sign_in


@pytest.fixture
def temp_admin(served_app):
    """A throw-away admin of tenant demo."""
    pb = served_app.superuser()
    with throwaway_user(pb, "admin", "Tijdelijke Beheerder", "e2e-admin") as (email, row):
        yield email, row["id"], pb


def test_a_demoted_admin_loses_the_admin_pages_in_an_open_tab(served_app, page, temp_admin):
    email, user_id, pb = temp_admin
    sign_in(page, served_app, email, path="/admin/topics/new")
    page.fill("#label", "Stale admin e2e")
    page.fill("#description", "Mag nooit worden opgeslagen.")
    pb.update("users", user_id, {"role": "learner"})
    page.click("#save-topic")  # the write checks the role now, not the one seen at sign-in
    expect(page.get_by_text("Alleen beheerders")).to_be_visible()
    page.reload()
    expect(page.locator("#forbidden")).to_be_visible()
    expect(page.locator("#save-topic")).to_have_count(0)
    page.goto(served_app.url + "/admin/topics")
    expect(page.locator("#forbidden")).to_be_visible()
    demo = pb.first("tenants", 'slug = "demo"')
    assert pb.first("topics", f'tenant = "{demo["id"]}" && slug = "stale-admin-e2e"') is None


def test_an_admin_who_makes_themselves_a_learner_is_asked_first_then_leaves_the_admin_pages(served_app, page,
                                                                                            temp_admin):
    email, user_id, pb = temp_admin
    sign_in(page, served_app, email, path="/admin/people")
    page.fill("#people-search", email)
    row = page.locator(f'.person-row[data-email="{email}"]')
    expect(page.locator(".person-row")).to_have_count(1)
    row.locator(".person-role").click()
    page.get_by_role("option", name="Deelnemer").click()
    dialog = page.get_by_role("alertdialog")
    expect(dialog).to_contain_text("Zelf deelnemer worden?")
    expect(dialog).to_contain_text("Alleen een andere beheerder kan je weer beheerder maken")
    page.click("#people-confirm")
    page.wait_for_url(served_app.url + "/")  # no admin page to stay on
    expect(page.locator("#admin-menu")).to_have_count(0)
    assert pb.get("users", user_id)["role"] == "learner"


def test_a_password_reset_signs_an_open_tab_out_with_a_message(served_app, page, temp_admin):
    email, user_id, pb = temp_admin
    sign_in(page, served_app, email, path="/admin/topics")
    expect(page.locator("#admin-topics")).to_be_visible()
    pb.update("users", user_id, {"password": "een-nieuw-wachtwoord", "passwordConfirm": "een-nieuw-wachtwoord"})
    page.reload()
    expect(page.locator("#sign-in")).to_be_visible()
    expect(page.get_by_text("Je sessie is verlopen of ingetrokken")).to_be_visible()
    expect(page.locator("#admin-topics")).to_have_count(0)
    # the stored token is written back after the render that shows the card
    page.wait_for_function("[null, '', '\"\"'].includes(localStorage.getItem('r42.session'))", timeout=5_000)


def test_the_sign_in_card_says_too_many_attempts(served_app, page, temp_admin):
    email, _user_id, _pb = temp_admin
    page.goto(served_app.url + "/")
    for i in range(5):
        page.fill("#email", email)
        page.fill("#password", f"fout-wachtwoord-{i}")
        page.click("#sign-in")
        expect(page.get_by_text("E-mailadres of wachtwoord klopt niet")).to_be_visible()
        # each refusal empties the password and puts the cursor there for the next try; the e-mail stays
        expect(page.locator("#password")).to_have_value("")
        expect(page.locator("#password")).to_be_focused()
        expect(page.locator("#email")).to_have_value(email)
    page.fill("#password", DEMO_PASSWORD)  # even the right one, for a minute
    page.click("#sign-in")
    expect(page.get_by_text("Te veel pogingen, probeer het over een minuut opnieuw")).to_be_visible()
    expect(page.locator("#user-menu")).to_have_count(0)
