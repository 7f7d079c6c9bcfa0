"""The "Leeromgevingen (LTI)" card of /admin/people (issue 48, part 2), by keyboard alone: an admin makes a one-time
registration URL that a real LMS (tests/lti_platform.py) registers itself with, adds a Canvas by hand (a wrong
address is said and focused, nothing stored), and removes it. axe finds nothing on the card with its form and URL
open, nor on the deep-linking picker a teacher sees inside the LMS, at desktop and phone size."""

import secrets
from urllib.parse import urlencode

from playwright.sync_api import expect

from r42_app.services.store.lti import LtiStore
from r42_app.services.store.tenants import Tenants
from tests.e2e.test_a11y import scan_page, tab_to, violations  # noqa: F401 - scan_page is a fixture
from tests.e2e.test_people import GOOD, accept
from tests.lti_platform import INSTRUCTOR, LtiPlatform


def admin_of_new_tenant(served_app, page, label: str):
    from r42_app.services.adapters.mailer import Mailer
    from r42_app.services.store.people import Actor, People

    superuser = served_app.superuser()
    tag = secrets.token_hex(3)
    tenant = Tenants(superuser).create(f"{label}-{tag}", f"School {tag}")
    link = People(superuser, Mailer(), served_app.url).invite(tenant, Actor.cli(), f"baas@{label}-{tag}.nl", "Baas",
                                                              "admin")
    accept(page, link.url, GOOD)
    return tenant


def press_on(page, selector: str, key: str = "Enter") -> None:
    tab_to(page, selector)
    page.keyboard.press(key)


def test_an_admin_registers_an_lms_adds_one_by_hand_and_removes_it_by_keyboard(served_app, page):
    tenant = admin_of_new_tenant(served_app, page, "lti-kb")
    store = LtiStore(served_app.superuser(), loopback_ok=True)
    page.goto(served_app.url + "/admin/people")
    expect(page.locator("#lti-none")).to_have_text("Nog geen leeromgeving gekoppeld.")
    expect(page.locator("#lti-section")).to_contain_text(served_app.url + "/lti/jwks")  # for an LMS set up by hand

    press_on(page, "#lti-make-url")
    box = page.locator("#lti-registration-url")
    expect(box).to_be_focused()
    url = box.input_value()
    assert url.startswith(served_app.url + "/lti/register?r42_invite=")
    with LtiPlatform(host="127.0.0.2") as lms:  # what Moodle does with the pasted URL
        opened = page.context.new_page()
        opened.goto(url + "&" + urlencode({"openid_configuration": lms.openid_configuration,
                                           "registration_token": lms.registration_token}))
        expect(opened.locator("#lti-registered")).to_contain_text(lms.issuer)
        opened.close()
        page.reload()
        expect(page.locator("#lti-platforms")).to_contain_text(lms.issuer)
        expect(page.locator("#lti-platforms")).to_contain_text("beheerder")

    press_on(page, "#lti-add-open")
    expect(page.locator("#lti-issuer")).to_be_focused()  # the form opens on its first field
    page.keyboard.type("http://canvas.nergens.example")
    for field, value in (("#lti-client-id", "10000000000042"), ("#lti-deployments", "7:abc, 8:def"),
                         ("#lti-jwks-url", "https://sso.canvaslms.com/api/lti/security/jwks"),
                         ("#lti-auth-url", "https://sso.canvaslms.com/api/lti/authorize_redirect")):
        tab_to(page, field)
        page.keyboard.type(value)
    page.keyboard.press("Enter")
    expect(page.locator("#lti-error")).to_contain_text("begint met https://")
    expect(page.locator("#lti-issuer")).to_be_focused()
    assert len(store.list(tenant)) == 1  # nothing stored
    page.keyboard.press("Control+a")
    page.keyboard.type("https://canvas.instructure.com")
    page.keyboard.press("Enter")
    expect(page.locator("#lti-platforms")).to_contain_text("canvas.instructure.com")
    canvas = [r for r in store.list(tenant) if r.issuer == "https://canvas.instructure.com"]
    assert [(r.client_id, r.deployment_ids) for r in canvas] == [("10000000000042", ("7:abc", "8:def"))]

    press_on(page, '[aria-label="Ontkoppel https://canvas.instructure.com"]')
    expect(page.locator("#lti-remove-confirm")).to_be_visible()
    press_on(page, "#lti-remove-confirm")
    expect(page.locator("#lti-platforms")).not_to_contain_text("canvas.instructure.com")
    assert [r.issuer for r in store.list(tenant)] == [lms.issuer]


def test_the_lti_card_and_the_teachers_picker_pass_axe(served_app, scan_page):
    tenant = admin_of_new_tenant(served_app, scan_page, "lti-axe")
    scan_page.goto(served_app.url + "/admin/people")
    scan_page.click("#lti-make-url")
    expect(scan_page.locator("#lti-registration-url")).to_be_visible()
    scan_page.click("#lti-add-open")
    for field, value in (("#lti-issuer", "http://nergens.example"), ("#lti-client-id", "c1"),
                         ("#lti-deployments", "1"), ("#lti-jwks-url", "https://nergens.example/jwks"),
                         ("#lti-auth-url", "https://nergens.example/auth")):
        scan_page.fill(field, value)
    scan_page.click("#lti-save")
    expect(scan_page.locator("#lti-error")).to_be_visible()
    found = violations(scan_page)

    with LtiPlatform(host="127.0.0.2") as lms:  # a teacher adding R42 to a course: the picker, inside the LMS
        LtiStore(served_app.superuser(), loopback_ok=True).add(
            tenant, "", "cli", lms.issuer, lms.client_id, [lms.deployment_id], lms.jwks_url, lms.auth_url)
        lms.person = {"sub": "docent-axe", "email": "", "name": "Dora", "roles": [INSTRUCTOR]}
        scan_page.goto(served_app.url + "/lti/login?" + urlencode(
            lms.initiation(served_app.url + "/lti/login", served_app.url + "/", deep_link=True)))
        expect(scan_page.locator("#lti-target")).to_be_focused()
        found += violations(scan_page)
        scan_page.goto(served_app.url + "/lti/login?iss=https://onbekend.example&login_hint=x")
        expect(scan_page.locator("#lti-error")).to_contain_text("niet bij R42 aangemeld")
        found += violations(scan_page)
    assert found == [], "\n".join(found)


def test_the_questions_before_unlinking_an_lms_and_switching_sso_off_pass_axe(served_app, scan_page):
    """The two confirmations of /admin/people that no other scan opened: "Leeromgeving ontkoppelen?" and
    "Aanmelden via je organisatie uitzetten?"; Escape closes each, and nothing is removed."""
    from r42_app.services.store.sso import SsoStore

    tenant = admin_of_new_tenant(served_app, scan_page, "axe-off")
    superuser = served_app.superuser()
    lti, sso = LtiStore(superuser, loopback_ok=True), SsoStore(superuser)
    issuer = f"https://lms-{tenant.slug.rsplit('-', 1)[-1]}.nergens.example"  # one platform is one tenant's
    lti.add(tenant, "", "cli", issuer, "c1", ["1"], issuer + "/jwks", issuer + "/auth")
    sso.set(tenant, "", "cli", "https://login.nergens.example", "r42", "geheim-" + secrets.token_hex(8),
            [f"axe-off-{tenant.slug.rsplit('-', 1)[-1]}.nl"])
    scan_page.goto(served_app.url + "/admin/people")
    scan_page.click(f'[aria-label="Ontkoppel {issuer}"]')
    expect(scan_page.get_by_role("alertdialog")).to_contain_text("Leeromgeving ontkoppelen?")
    found = violations(scan_page)
    scan_page.keyboard.press("Escape")
    expect(scan_page.get_by_role("alertdialog")).to_have_count(0)
    scan_page.click("#sso-off")
    expect(scan_page.get_by_role("alertdialog")).to_contain_text("Aanmelden via je organisatie uitzetten?")
    found += violations(scan_page)
    scan_page.keyboard.press("Escape")
    expect(scan_page.get_by_role("alertdialog")).to_have_count(0)
    assert [r.issuer for r in lti.list(tenant)] == [issuer] and sso.get(tenant) is not None
    assert found == [], "\n".join(found)
