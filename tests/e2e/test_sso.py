"""Issue 48 in the browser: a person of an organisation with its own identity provider types their e-mail on the
sign-in card, is sent to the provider (tests/oidc_peer.py, a real one on loopback) and comes back signed in on the
page they had opened; a refusal is said on the card in Dutch. Other addresses keep the password field."""

import secrets
from urllib.parse import urlsplit

from playwright.sync_api import expect

from r42_app.services.store.sso import SsoStore
from r42_app.services.store.tenants import Tenants
from tests.conftest import free_port
from tests.oidc_peer import OidcPeer


def test_an_organisation_signs_in_through_its_provider_and_lands_on_the_page_it_opened(served_app, page):
    superuser = served_app.superuser()
    tag = secrets.token_hex(3)
    tenant = Tenants(superuser).create(f"sso-{tag}", f"Acme {tag}")
    domain = f"acme-{tag}.nl"
    with OidcPeer() as peer:
        SsoStore(superuser, loopback_ok=True).set(tenant, "", "cli", peer.issuer, peer.client_id, peer.secret, [domain])
        peer.person = {"sub": "lotte", "email": f"lotte@{domain}", "email_verified": False, "name": "Lotte Jansen"}

        page.goto(served_app.url + "/graph")
        expect(page.locator("#password")).to_be_visible()  # nothing typed yet: the usual card
        page.fill("#email", f"lotte@{domain}")
        page.keyboard.press("Tab")  # leaving the field tells whether the organisation has its own sign-in page
        expect(page.locator("#sign-in")).to_have_text(f"Inloggen met Acme {tag}")
        expect(page.locator("#sso-hint")).to_contain_text("laat je aanmelden via haar eigen inlogpagina")
        expect(page.locator("#password")).to_have_count(0)

        # the provider has not verified the address: back on the card, saying why, nobody signed in
        page.focus("#email")
        page.keyboard.press("Enter")
        expect(page.locator("#signin-error")).to_contain_text("nog niet bevestigd")
        # the page takes the code out of the address as it applies it: the card may show a moment before
        page.wait_for_url(lambda url: "r42_signin" not in url)
        assert urlsplit(page.url).path.rstrip("/") == "/graph"
        expect(page.locator("#user-menu")).to_have_count(0)

        peer.person["email_verified"] = True
        page.fill("#email", f"lotte@{domain}")
        page.keyboard.press("Enter")  # Enter alone goes to the provider
        page.wait_for_selector("#user-menu")
        page.wait_for_url(lambda url: "r42_signin" not in url)  # (the menu may show a moment before: f40)
        assert urlsplit(page.url).path.rstrip("/") == "/graph"
        expect(page.locator("#user-menu")).to_contain_text("Lotte Jansen")
        expect(page.locator("#r42-launcher")).to_be_visible()
        expect(page.locator("#signin-error")).to_have_count(0)

    # another address on the same card keeps the password field
    page.click("#user-menu")
    page.click("#sign-out")
    page.fill("#email", "learner@example.com")
    page.keyboard.press("Tab")
    expect(page.locator("#password")).to_be_visible()
    expect(page.locator("#sign-in")).to_have_text("Aanmelden")


def test_an_admin_connects_the_provider_on_the_people_page_and_the_secret_is_never_shown(served_app, page):
    from r42_app.services.adapters.mailer import Mailer
    from r42_app.services.store.people import Actor, People
    from tests.e2e.test_people import GOOD, accept

    superuser = served_app.superuser()
    tag = secrets.token_hex(3)
    tenant = Tenants(superuser).create(f"sso-admin-{tag}", f"Beheer {tag}")
    domain = f"beheer-{tag}.nl"
    link = People(superuser, Mailer(), served_app.url).invite(tenant, Actor.cli(), f"baas@{domain}", "Baas", "admin")
    accept(page, link.url, GOOD)
    page.goto(served_app.url + "/admin/people")
    card = page.locator("#sso-section")
    expect(card).to_contain_text("Inloggen met je organisatie")
    expect(page.locator("#sso-redirect")).to_have_value(served_app.url + "/auth/oidc/callback")

    with OidcPeer() as peer:
        page.fill("#sso-issuer", "http://login.nergens.example")
        page.fill("#sso-client-id", peer.client_id)
        page.fill("#sso-secret", peer.secret)
        page.fill("#sso-domains", f"{domain}, Extra-{tag}.nl")
        page.fill("#sso-group", "r42-beheer")
        page.click("#sso-save")
        expect(page.locator("#sso-error")).to_contain_text("moet met https:// beginnen")
        expect(page.locator("#sso-issuer")).to_be_focused()
        assert SsoStore(superuser, loopback_ok=True).get(tenant) is None  # nothing stored
        nobody = f"http://127.0.0.1:{free_port()}"  # nobody answers there: the admin is told which address R42 read
        page.fill("#sso-issuer", nobody)
        page.click("#sso-save")
        expect(page.locator("#sso-error")).to_contain_text(f"R42 kon {nobody}/.well-known/openid-configuration niet")
        expect(page.locator("#sso-issuer")).to_be_focused()

        page.fill("#sso-issuer", peer.issuer)
        page.keyboard.press("Enter")
        # an admin claims only domains the organisation has people on (not someone else's, not gmail.com)
        expect(page.locator("#sso-error")).to_contain_text(f"extra-{tag}.nl toe te voegen")
        expect(page.locator("#sso-domains")).to_be_focused()
        page.fill("#sso-domains", domain)
        page.keyboard.press("Enter")
        expect(page.locator("#sso-shown-domains")).to_have_text(domain)
        assert ("GET", "/.well-known/openid-configuration") in peer.requests  # the provider was asked first
        assert peer.secret not in page.content()
        page.reload()
        expect(page.locator("#sso-shown-issuer")).to_have_text(peer.issuer)
        assert peer.secret not in page.content()

        # a change without typing the secret again keeps it
        page.click("#sso-edit")
        expect(page.locator("#sso-secret")).to_have_value("")
        page.fill("#sso-group", "")
        page.click("#sso-save")
        expect(page.locator("#sso-section")).to_contain_text("Geen")  # no admin group any more
        assert SsoStore(superuser, loopback_ok=True).secret(tenant.id) == peer.secret

        page.click("#sso-off")
        page.click("#sso-off-confirm")
        expect(page.locator("#sso-issuer")).to_be_visible()
        assert SsoStore(superuser, loopback_ok=True).get(tenant) is None


def test_an_invitation_to_an_organisation_without_passwords_opens_its_sign_in_instead(served_app, page):
    from r42_app.services.adapters.mailer import Mailer
    from r42_app.services.store.people import Actor, People

    superuser = served_app.superuser()
    tag = secrets.token_hex(3)
    tenant = Tenants(superuser).create(f"sso-inv-{tag}", f"Zonder Wachtwoord {tag}")
    domain = f"zw-{tag}.nl"
    link = People(superuser, Mailer(), served_app.url).invite(tenant, Actor.cli(), f"nina@{domain}", "Nina",
                                                              "learner")
    with OidcPeer() as peer:
        SsoStore(superuser, loopback_ok=True).set(tenant, "", "cli", peer.issuer, peer.client_id, peer.secret,
                                                  [domain], passwords=False)
        peer.person = {"sub": "nina", "email": f"nina@{domain}", "email_verified": True, "name": "Nina"}
        page.goto(link.url)
        expect(page.locator("#link-sso")).to_contain_text("niet met een wachtwoord")
        expect(page.locator("#new-password")).to_have_count(0)
        page.locator("#link-sso-start").focus()
        page.keyboard.press("Enter")
        page.wait_for_selector("#user-menu")
        expect(page.locator("#user-menu")).to_contain_text("Nina")
        assert People(superuser, Mailer(), served_app.url).get(tenant, link.person.id).state == "active"

        # "Wachtwoord vergeten?" for such an address says where to sign in instead of mailing a link
        page.click("#user-menu")
        page.click("#sign-out")
        page.goto(served_app.url + "/wachtwoord-vergeten")
        page.fill("#forgot-email", f"nina@{domain}")
        page.keyboard.press("Enter")
        expect(page.locator("#forgot-error")).to_contain_text("niet met een wachtwoord")


def test_the_sign_in_settings_work_by_keyboard_alone(served_app, page):
    """Connect, change and switch off the identity provider with Tab, typing and Enter only."""
    from tests.e2e.test_a11y import tab_to
    from tests.e2e.test_lti_admin import admin_of_new_tenant

    tenant = admin_of_new_tenant(served_app, page, "sso-kb")
    domain = f"{tenant.slug}.nl"  # the admin's own domain (admin_of_new_tenant: baas@<slug>.nl)
    page.goto(served_app.url + "/admin/people")
    with OidcPeer() as peer:
        tab_to(page, "#sso-issuer")
        page.keyboard.type(peer.issuer)
        for value in (peer.client_id, peer.secret, domain, "r42-beheer"):
            page.keyboard.press("Tab")
            page.keyboard.type(value)
        expect(page.locator("#sso-group")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.locator("#sso-shown-domains")).to_have_text(domain)
        tab_to(page, "#sso-off")
        page.keyboard.press("Enter")
        expect(page.locator("#sso-off-confirm")).to_be_visible()
        tab_to(page, "#sso-off-confirm")
        page.keyboard.press("Enter")
        expect(page.locator("#sso-issuer")).to_be_visible()
        assert SsoStore(served_app.superuser(), loopback_ok=True).get(tenant) is None
