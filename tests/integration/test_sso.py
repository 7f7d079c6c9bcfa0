"""Signing in with the organisation's identity provider (issue 48), through the app's own routes
(`/auth/oidc/start`, `/auth/oidc/callback`) against real providers on loopback: oidc-provider-mock (an independent
implementation, on Authlib's server) for the ordinary ways in, and tests/oidc_peer.py (joserfc; enforces PKCE) for
what a broken or hostile provider, a replay or another browser would try. Nothing of ours is faked."""

import logging
import re
import secrets
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from oidc_provider_mock import run_server_in_thread

from r42_app.api import api
from r42_app.container import services
from r42_app.core.identity import Tenant
from r42_app.core.sso import Person, SsoError
from r42_app.services.adapters.mailer import Mailer
from r42_app.services.sso_signin import CODE_PARAM, COOKIE, ERROR_PARAM
from r42_app.services.store.auth import AuthError
from r42_app.services.store.people import Actor, People
from r42_app.services.store.sso import SsoStore
from r42_app.services.store.tenants import Tenants
from tests.conftest import user_token
from tests.oidc_peer import OidcPeer

pytestmark = pytest.mark.anyio
GOOD = "paarse-fiets-op-dinsdag"
ADMINS = "r42-beheer"


@pytest.fixture
def org(admin_pb, seeded):
    """A tenant of its own and an e-mail domain of its own: (tenant, domain)."""
    tag = secrets.token_hex(3)
    return Tenants(admin_pb).create("sso-" + tag, f"Acme {tag}"), f"acme-{tag}.nl"


@pytest.fixture
def peer():
    with OidcPeer() as provider:
        yield provider


def connect(admin_pb, tenant: Tenant, issuer: str, client_id: str, secret: str, domain: str, **kw):
    return SsoStore(admin_pb, loopback_ok=True).set(tenant, "", "cli", issuer, client_id, secret, [domain], ADMINS, **kw)


async def round_trip(email: str, next_path: str = "/", cookie: str | None = None, login=None):
    """What a browser does: start at the app, go to the provider (`login` signs in there when it asks), come back
    to the callback with the app's cookie. Returns (the callback's response, the cookie)."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as app:
        started = await app.get("/auth/oidc/start", params={"email": email, "next": next_path})
        if started.status_code != 302:
            return started, ""
        jar = cookie if cookie is not None else started.cookies.get(COOKIE, "")
        with httpx.Client(timeout=10) as browser:
            at_provider = browser.get(started.headers["location"])
            if login is not None:
                at_provider = login(browser, started.headers["location"])
        assert at_provider.status_code in (302, 303), at_provider.text
        back = urlsplit(at_provider.headers["location"])
        assert back.path == "/auth/oidc/callback"
        app.cookies.clear()  # the browser's cookie is the one it has (or not): `cookie` stands for another browser's
        if jar:
            app.cookies.set(COOKIE, jar)
        done = await app.get(f"/auth/oidc/callback?{back.query}")
        return done, jar


def landed(response) -> tuple[str, dict[str, str]]:
    assert response.status_code == 303, response.text
    where = urlsplit(response.headers["location"])
    return where.path, {k: v[0] for k, v in parse_qs(where.query).items()}


async def signed_in(response, cookie: str):
    path, query = landed(response)
    assert ERROR_PARAM not in query, query
    session = await services().sso_signin.redeem(query[CODE_PARAM], cookie)
    assert session is not None
    return path, session


# -- the ordinary ways in, against an independent provider ----------------------------------------------------------

@pytest.fixture
def mock_provider():
    with run_server_in_thread(require_nonce=True) as server:
        yield f"http://localhost:{server.server_port}"


def mock_login(sub: str):
    """Sign in at oidc-provider-mock's own form as `sub` (its users' claims are set with PUT /users/<sub>)."""
    def login(browser: httpx.Client, url: str):
        return browser.post(url, data={"sub": sub, "action": "authorize"})
    return login


async def test_a_verified_person_of_the_domain_joins_as_a_learner_and_lands_where_they_were(
        api_env, admin_pb, org, mock_provider):
    tenant, domain = org
    connect(admin_pb, tenant, mock_provider, "r42", "geheim-" + secrets.token_hex(8), domain)
    email = f"lotte@{domain}"
    httpx.put(f"{mock_provider}/users/lotte-1", json={"email": email, "email_verified": True,
                                                      "name": "Lotte Jansen"}).raise_for_status()
    done, cookie = await round_trip(email, "/topics/partnerpensioen?x=1", login=mock_login("lotte-1"))
    path, session = await signed_in(done, cookie)
    assert path == "/topics/partnerpensioen"  # the direct link survives the round trip
    assert session.user.email == email and session.user.name == "Lotte Jansen" and session.user.role == "learner"
    assert session.user.tenant_id == tenant.id
    row = admin_pb.get("users", session.user.id)
    assert (row["state"], row["signs_in_with"], row["sso_subject"]) == ("active", "sso", "lotte-1")
    assert services().auth.verify(session.token).user.id == session.user.id  # a real session token
    listed = People(admin_pb, Mailer(), "http://x").get(tenant, session.user.id)
    assert listed.signs_in_with == "sso" and listed.to_json()["signs_in_with"] == "sso"  # /admin/people says how

    # the same person again, with another e-mail at the provider: the same account (matched by subject)
    httpx.put(f"{mock_provider}/users/lotte-1", json={"email": f"l.jansen@{domain}", "email_verified": True,
                                                      "name": "Lotte Jansen"}).raise_for_status()
    again, cookie = await round_trip(email, login=mock_login("lotte-1"))
    _, second = await signed_in(again, cookie)
    assert second.user.id == session.user.id
    assert len(admin_pb.all("users", filter=f'tenant = "{tenant.id}"')) == 1


async def test_a_member_of_the_admin_group_becomes_an_admin_and_leaving_the_group_makes_them_a_learner(
        api_env, admin_pb, org, mock_provider):
    tenant, domain = org
    connect(admin_pb, tenant, mock_provider, "r42", "geheim-" + secrets.token_hex(8), domain)
    # a second admin first, so that the group may take the role away from this one (the last admin stays one)
    people = People(admin_pb, Mailer(), "http://x")
    link = people.invite(tenant, Actor.cli(), f"baas@{domain}", "Baas", "admin")
    people.redeem(link.url.split("token=")[1], GOOD)
    email = f"it@{domain}"
    httpx.put(f"{mock_provider}/users/it-1", json={"email": email, "email_verified": True,
                                                   "groups": [ADMINS, "iedereen"]}).raise_for_status()
    done, cookie = await round_trip(email, login=mock_login("it-1"))
    _, session = await signed_in(done, cookie)
    assert session.user.role == "admin"
    httpx.put(f"{mock_provider}/users/it-1", json={"email": email, "email_verified": True,
                                                   "groups": ["iedereen"]}).raise_for_status()
    later, cookie = await round_trip(email, login=mock_login("it-1"))
    _, session = await signed_in(later, cookie)
    assert session.user.role == "learner"
    audit = [r["arguments"] for r in admin_pb.all("audit_log", filter=f'tenant = "{tenant.id}" && tool = "people"')]
    assert {(a["target"], a["what"], a["after"]) for a in audit} >= {(email, "created", "admin"),
                                                                      (email, "role", "learner")}


async def test_an_invited_person_signing_in_through_the_provider_accepts_the_invitation(
        api_env, admin_pb, org, peer):
    tenant, domain = org
    connect(admin_pb, tenant, peer.issuer, peer.client_id, peer.secret, domain)
    people = People(admin_pb, Mailer(), "http://x")
    invited = people.invite(tenant, Actor.cli(), f"nieuw@{domain}", "Nieuw", "learner").person
    peer.person = {"sub": "n-1", "email": f"nieuw@{domain}", "email_verified": True}
    done, cookie = await round_trip(f"nieuw@{domain}")
    _, session = await signed_in(done, cookie)
    assert session.user.id == invited.id
    assert people.get(tenant, invited.id).state == "active"


# -- refusals: each says why, and nobody gets in ---------------------------------------------------------------------

def refused(response) -> str:
    path, query = landed(response)
    assert CODE_PARAM not in query
    return query[ERROR_PARAM]


async def test_refused_domain_unverified_e_mail_and_deactivated_person_say_why(api_env, admin_pb, org, peer):
    tenant, domain = org
    connect(admin_pb, tenant, peer.issuer, peer.client_id, peer.secret, domain)
    peer.person = {"sub": "x-1", "email": "iemand@elders.nl", "email_verified": True}
    assert refused((await round_trip(f"x@{domain}"))[0]) == "sso.domain_not_allowed"
    peer.person = {"sub": "x-2", "email": f"nog@{domain}", "email_verified": False}
    assert refused((await round_trip(f"nog@{domain}"))[0]) == "sso.email_unverified"
    peer.person = {"sub": "x-3", "email": f"nog@{domain}"}  # no email_verified at all: not verified either
    assert refused((await round_trip(f"nog@{domain}"))[0]) == "sso.email_unverified"
    assert admin_pb.all("users", filter=f'tenant = "{tenant.id}"') == []  # nobody was made

    peer.person = {"sub": "weg-1", "email": f"weg@{domain}", "email_verified": True}
    _, session = await signed_in(*(await round_trip(f"weg@{domain}")))
    people = People(admin_pb, Mailer(), "http://x")
    link = people.invite(tenant, Actor.cli(), f"baas@{domain}", "Baas", "admin")  # someone stays admin
    people.redeem(link.url.split("token=")[1], GOOD)
    people.set_state(tenant, Actor.cli(), session.user.id, "deactivated")
    assert refused((await round_trip(f"weg@{domain}"))[0]) == "sso.deactivated"  # deactivation wins over the IdP

    # an address with no tenant behind it gets the password field, not a provider
    start = await round_trip("iemand@onbekend-domein.nl")
    assert refused(start[0]) == "sso.domain_not_allowed"


@pytest.mark.parametrize(("knob", "value", "code"), [
    ("nonce", "een-andere-nonce", "sso.token_invalid"),
    ("exp", -600, "sso.token_expired"),
    ("tamper", "baas@{domain}", "sso.token_invalid"),
    ("aud", "een-andere-client", "sso.token_invalid"),
    ("iss", "https://nep.example", "sso.token_invalid"),
    ("key", "unknown", "sso.token_invalid"),
    ("forged", "k1", "sso.token_invalid"),
])
async def test_a_token_that_does_not_hold_is_refused(api_env, admin_pb, org, peer, caplog, knob, value, code):
    tenant, domain = org
    connect(admin_pb, tenant, peer.issuer, peer.client_id, peer.secret, domain)
    peer.person = {"sub": "p-1", "email": f"piet@{domain}", "email_verified": True}
    if knob in ("key", "forged"):  # signed with a key the provider never published (under its key id, or another)
        from joserfc.jwk import RSAKey
        value = RSAKey.generate_key(2048, parameters={"kid": "k1" if knob == "forged" else "k-unknown"}, private=True)
        knob = "key"
    peer.knobs[knob] = value.format(domain=domain) if isinstance(value, str) else value
    with caplog.at_level(logging.INFO):
        done, _ = await round_trip(f"piet@{domain}")
    assert refused(done) == code
    assert admin_pb.all("users", filter=f'tenant = "{tenant.id}"') == []
    if not hasattr(value, "kid") or value.kid == "k1":
        assert peer.requests.count(("GET", "/jwks")) <= 1
    else:  # an unknown key id fetches the set once more (a rotation?), then refuses
        assert peer.requests.count(("GET", "/jwks")) == 2
    logged = caplog.text
    assert "sso sign-in refused" in logged
    # no secret, no token (header.payload.signature) in the log; a random state or nonce may well hold "eyJ"
    assert peer.secret not in logged and not re.search(r"eyJ[\w-]{8,}\.[\w-]{8,}\.", logged)


async def test_a_rotated_key_is_fetched_and_the_sign_in_works(api_env, admin_pb, org, peer):
    tenant, domain = org
    connect(admin_pb, tenant, peer.issuer, peer.client_id, peer.secret, domain)
    peer.person = {"sub": "r-1", "email": f"roos@{domain}", "email_verified": True}
    await signed_in(*(await round_trip(f"roos@{domain}")))  # the key set is cached now
    fetched = peer.requests.count(("GET", "/jwks"))
    peer.rotate()
    await signed_in(*(await round_trip(f"roos@{domain}")))
    assert peer.requests.count(("GET", "/jwks")) == fetched + 1


async def test_pkce_is_sent_and_a_code_or_state_works_once_and_only_in_its_own_browser(
        api_env, admin_pb, org, peer):
    tenant, domain = org
    connect(admin_pb, tenant, peer.issuer, peer.client_id, peer.secret, domain)
    peer.person = {"sub": "q-1", "email": f"quinten@{domain}", "email_verified": True}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as app:
        started = await app.get("/auth/oidc/start", params={"email": f"quinten@{domain}", "next": "/graph"})
        cookie = started.cookies[COOKIE]
        assert "HttpOnly" in started.headers["set-cookie"] and "samesite=lax" in started.headers["set-cookie"].lower()
        sent = parse_qs(urlsplit(started.headers["location"]).query)
        assert sent["code_challenge_method"] == ["S256"] and sent["nonce"][0] and sent["state"][0]
        back = urlsplit(httpx.get(started.headers["location"]).headers["location"]).query

        app.cookies.clear()
        app.cookies.set(COOKIE, "een-ander-" + "x" * 40)
        other = await app.get(f"/auth/oidc/callback?{back}")
        assert refused(other) == "sso.expired"  # another browser cannot finish it ...
        app.cookies.clear()
        app.cookies.set(COOKIE, cookie)
        again = await app.get(f"/auth/oidc/callback?{back}")
        assert refused(again) == "sso.expired"  # ... and the state was spent by that try: a replay finds nothing
    assert peer.token_requests == []  # no code was exchanged

    done, cookie = await round_trip(f"quinten@{domain}", "/graph")
    assert "code_verifier" in peer.token_requests[-1]
    path, query = landed(done)
    assert path == "/graph"
    assert await services().sso_signin.redeem(query[CODE_PARAM], "een-ander-" + "x" * 40) is None  # not elsewhere
    assert await services().sso_signin.redeem(query[CODE_PARAM], cookie) is None  # spent by that try
    done, cookie = await round_trip(f"quinten@{domain}", "/graph")
    code = landed(done)[1][CODE_PARAM]
    assert await services().sso_signin.redeem(code, cookie) is not None
    assert await services().sso_signin.redeem(code, cookie) is None  # once


async def test_no_open_redirect_and_a_cancelled_or_unreachable_provider_says_so(api_env, admin_pb, org, peer):
    tenant, domain = org
    connect(admin_pb, tenant, peer.issuer, peer.client_id, peer.secret, domain)
    peer.person = {"sub": "o-1", "email": f"olga@{domain}", "email_verified": True}
    for evil in ("//evil.example/x", "https://evil.example", "/\\evil.example", "javascript:alert(1)"):
        path, query = landed((await round_trip(f"olga@{domain}", evil))[0])
        assert path == "/" and CODE_PARAM in query
    peer.knobs["deny"] = True
    assert refused((await round_trip(f"olga@{domain}"))[0]) == "sso.cancelled"

    down = OidcPeer()  # a provider that is not running: its port is closed again (connections refused)
    down._server.server_close()
    other = Tenants(admin_pb).create("sso-weg-" + secrets.token_hex(3), "Weg BV")
    connect(admin_pb, other, down.issuer, down.client_id, down.secret, "weg-" + domain)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as app:
        started = await app.get("/auth/oidc/start", params={"email": f"a@weg-{domain}", "next": "/graph"})
    assert started.status_code == 303
    assert landed(started) == ("/graph", {ERROR_PARAM: "sso.unreachable"})


async def test_a_provider_whose_discovery_names_another_issuer_is_not_used(api_env, admin_pb, org, peer):
    tenant, domain = org
    connect(admin_pb, tenant, peer.issuer, peer.client_id, peer.secret, domain)
    peer.knobs["discovery_issuer"] = "https://login.anders.example"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as app:
        started = await app.get("/auth/oidc/start", params={"email": f"a@{domain}"})
    assert landed(started)[1] == {ERROR_PARAM: "sso.unreachable"}


# -- settings, passwords, and the wall -------------------------------------------------------------------------------

async def test_settings_are_checked_the_secret_is_never_shown_and_passwords_can_be_switched_off(
        api_env, admin_pb, org, peer):
    tenant, domain = org
    store = SsoStore(admin_pb, loopback_ok=True)
    for issuer, domains, code in (("http://login.acme.nl", [domain], "sso.issuer_https"),
                                  ("ftp://x", [domain], "sso.issuer_invalid"),
                                  (peer.issuer, ["geen domein"], "sso.domains_invalid"),
                                  (peer.issuer, [], "sso.domains_missing")):
        with pytest.raises(SsoError) as caught:
            store.set(tenant, "", "cli", issuer, "r42", "geheim", domains)
        assert caught.value.code == code
    assert store.get(tenant) is None  # nothing was written
    other = Tenants(admin_pb).create("sso-ander-" + secrets.token_hex(3), "Ander BV")
    connect(admin_pb, other, peer.issuer, "r42", "geheim", domain)
    with pytest.raises(SsoError) as caught:
        connect(admin_pb, tenant, peer.issuer, "r42", "geheim", domain)
    assert caught.value.code == "sso.domain_taken"
    store.off(other, "", "cli")

    # a password that worked before SSO keeps working until passwords are switched off for the domain
    people = People(admin_pb, Mailer(), "http://x")
    link = people.invite(tenant, Actor.cli(), f"wachtwoord@{domain}", "W", "admin")
    people.redeem(link.url.split("token=")[1], GOOD)
    config = connect(admin_pb, tenant, peer.issuer, peer.client_id, peer.secret, domain)
    assert "secret" not in str(config.to_json()) and peer.secret not in str(config.to_json())
    assert services().auth.sign_in(f"wachtwoord@{domain}", GOOD).user.tenant_id == tenant.id
    store.set(tenant, "", "cli", peer.issuer, peer.client_id, None, [domain], passwords=False)  # secret kept
    with pytest.raises(AuthError) as caught:
        services().auth.sign_in(f"wachtwoord@{domain}", GOOD)
    assert caught.value.code == "auth.sso_only"
    assert store.secret(tenant.id) == peer.secret


async def test_an_admin_token_cannot_read_the_settings_nor_link_a_person_to_a_provider(api_env, admin_pb, org, peer,
                                                                                       pb_server):
    tenant, domain = org
    connect(admin_pb, tenant, peer.issuer, peer.client_id, peer.secret, domain)
    people = People(admin_pb, Mailer(), "http://x")
    link = people.invite(tenant, Actor.cli(), f"baas@{domain}", "Baas", "admin")
    people.redeem(link.url.split("token=")[1], GOOD)
    token = user_token(admin_pb, f"baas@{domain}", GOOD)
    learner = people.invite(tenant, Actor.cli(), f"leerling@{domain}", "L", "learner").person
    headers = {"Authorization": token}
    with httpx.Client(base_url=pb_server.url, headers=headers) as pb:
        listed = pb.get("/api/collections/tenant_sso/records")
        assert listed.status_code == 403, listed.text  # superuser only
        for field, value in (("sso_subject", "overgenomen"), ("sso_issuer", "https://nep.example"),
                             ("signs_in_with", "sso")):
            answer = pb.patch(f"/api/collections/users/records/{learner.id}", json={field: value})
            # the two hidden fields are dropped from a non-superuser's body (PocketBase answers 200, writes nothing);
            # the visible one is refused by users.updateRule
            assert answer.status_code in (400, 403, 404) or field != "signs_in_with", answer.text
            assert admin_pb.get("users", learner.id).get(field) in ("", None), field
        made = pb.post("/api/collections/users/records", json={
            "email": f"nieuw@{domain}", "tenant": tenant.id, "role": "learner", "state": "invited",
            "password": GOOD, "passwordConfirm": GOOD, "signs_in_with": "sso"})
        assert made.status_code in (400, 403), made.text  # users.createRule: not the sign-in fields
        made = pb.post("/api/collections/users/records", json={
            "email": f"nieuw2@{domain}", "tenant": tenant.id, "role": "learner", "state": "invited",
            "password": GOOD, "passwordConfirm": GOOD, "sso_issuer": peer.issuer, "sso_subject": "overgenomen"})
        if made.status_code == 200:  # hidden fields from a non-superuser are dropped, never stored
            assert admin_pb.get("users", made.json()["id"]).get("sso_subject") in ("", None)
    with pytest.raises(SsoError) as caught:  # and a person of another tenant is never taken over
        SsoStore(admin_pb, loopback_ok=True).person(SsoStore(admin_pb, loopback_ok=True).get(tenant),
                                  Person(peer.issuer, "s-demo", "learner@example.com", "", False))
    assert caught.value.code == "sso.other_tenant"


async def test_a_domain_is_claimed_only_where_the_tenant_has_people_and_never_over_another_tenants_people(
        api_env, admin_pb, org, peer):
    tenant, domain = org
    store = SsoStore(admin_pb, loopback_ok=True)
    people = People(admin_pb, Mailer(), "http://x")
    link = people.invite(tenant, Actor.cli(), f"baas@{domain}", "Baas", "admin")
    people.redeem(link.url.split("token=")[1], GOOD)
    admin = admin_pb.first("users", f'email = "baas@{domain}"')
    for claimed, code in (("gmail.com", "sso.domain_unproven"), ("example.com", "sso.domain_in_use")):
        with pytest.raises(SsoError) as caught:  # example.com: the demo tenant's people
            store.set(tenant, admin["id"], f"baas@{domain}", peer.issuer, peer.client_id, peer.secret,
                      [domain, claimed])
        assert caught.value.code == code
    with pytest.raises(SsoError) as caught:  # the operator neither
        store.set(tenant, "", "cli", peer.issuer, peer.client_id, peer.secret, ["example.com"])
    assert caught.value.code == "sso.domain_in_use"
    assert store.get(tenant) is None

    # the admin's own domain is theirs; passwords off locks out only this tenant's people of it
    store.set(tenant, admin["id"], f"baas@{domain}", peer.issuer, peer.client_id, peer.secret, [domain],
              passwords=False)
    other = Tenants(admin_pb).create("sso-buur-" + secrets.token_hex(3), "Buur BV")
    neighbour = people.invite(other, Actor.cli(), f"buur@{domain}", "Buur", "learner")  # an operator's doing
    people.redeem(neighbour.url.split("token=")[1], GOOD)
    assert services().auth.sign_in(f"buur@{domain}", GOOD).user.tenant_id == other.id
    with pytest.raises(AuthError) as caught:
        services().auth.sign_in(f"baas@{domain}", GOOD)
    assert caught.value.code == "auth.sso_only"
    # PocketBase refuses the same password to a REST client too (pb_hooks), with the same words
    from r42_app.core.messages import msg
    from r42_app.services.store.pb import PocketBase

    direct = PocketBase(services().settings.pb_url)
    try:
        with pytest.raises(Exception) as refused_by_pb:
            direct.send("POST", "/api/collections/users/auth-with-password",
                        body={"identity": f"baas@{domain}", "password": GOOD})
        assert msg("auth.sso_only") in str(refused_by_pb.value)
    finally:
        direct.close()

    # a change of issuer or client id wants the secret again (the stored one is never sent to a new provider)
    with pytest.raises(SsoError) as caught:
        store.set(tenant, admin["id"], f"baas@{domain}", peer.issuer, "een-andere-client", None, [domain])
    assert caught.value.code == "sso.secret_needed"
