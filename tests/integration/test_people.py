"""People of an organisation (issue 46), against a real PocketBase and a real SMTP server (aiosmtpd): an invitation
is mailed, its link sets a password once and signs the person in; expired, reused and withdrawn links are refused;
resets and password changes; a CSV is previewed row by row and imported once; roles and deactivation; the last
admin stays one. And the wall: every rule tried with a learner's and another tenant's admin token straight against
PocketBase."""

import secrets
import time

import pytest

from r42_app.core.identity import Tenant
from r42_app.core.messages import msg
from r42_app.services.adapters.mailer import Mailer
from r42_app.services.runtime.shared_state import RedisSharedState
from r42_app.services.store.auth import AuthError, AuthService
from r42_app.services.store.pb import PBError, PocketBase
from r42_app.services.store.people import Actor, People, PeopleError
from r42_app.services.store.tenants import Tenants
from tests.conftest import direct_sign_in, user_token

pytestmark = pytest.mark.anyio

GOOD = "paarse-fiets-op-dinsdag"
OTHER_GOOD = "groene-trein-naar-zee"
BASE = "http://r42.test"


def token_of(url: str) -> str:
    return url.split("token=", 1)[1]


@pytest.fixture
def org(admin_pb, seeded) -> Tenant:
    slug = "mensen-" + secrets.token_hex(3)
    return Tenants(admin_pb).create(slug, "Mensen & Co")


@pytest.fixture
def people(admin_pb, smtp_server) -> People:
    return People(admin_pb, Mailer(smtp_server.host, smtp_server.port, tls="none", sender="R42 <r42@test.nl>"), BASE)


@pytest.fixture
def offline(admin_pb) -> People:
    return People(admin_pb, Mailer(), BASE)


def admin_of(people: People, admin_pb, tenant: Tenant, email: str, password: str = GOOD) -> str:
    """An active admin of `tenant` (invited and accepted as a person would); returns their id."""
    link = people.invite(tenant, Actor.cli(), email, "Beheerder " + email.split("@")[0], "admin")
    people.redeem(token_of(link.url), password)
    return link.person.id


def test_an_invitation_is_mailed_and_its_link_sets_a_password_once_and_signs_in(
        pb_server, admin_pb, org, people, smtp_server):
    link = people.invite(org, Actor("", "beheer@mensen.nl", "Bea Beheer"), " Nora@Mensen.NL ", "Nora Nieuw")
    assert link.mailed and link.person.state == "invited" and link.person.email == "nora@mensen.nl"
    mail = smtp_server.to("nora@mensen.nl")[-1]
    assert mail["Subject"] == "Uitnodiging voor R42 van Mensen & Co" and mail["From"] == "R42 <r42@test.nl>"
    text = mail.get_body(preferencelist=("plain",)).get_content()
    assert "Bea Beheer nodigt je uit" in text and "als deelnemer" in text and "7 dagen" in text
    assert smtp_server.link("nora@mensen.nl") == link.url and link.url.startswith(f"{BASE}/welkom?token=")
    assert mail.get_body(preferencelist=("html",)) is not None  # and an HTML part beside the plain text
    stored = admin_pb.first("invitations", f'user = "{link.person.id}"')
    assert token_of(link.url) not in str(stored) and len(stored["hash"]) == 64  # only the hash is kept

    auth = AuthService(pb_server.url, admin=admin_pb)
    with pytest.raises(AuthError):
        auth.sign_in("nora@mensen.nl", GOOD)  # no password yet
    seen = people.peek(token_of(link.url))
    assert (seen.kind, seen.email, seen.name, seen.tenant_name) == ("invite", "nora@mensen.nl", "Nora Nieuw",
                                                                    "Mensen & Co")
    with pytest.raises(PeopleError) as weak:
        people.redeem(token_of(link.url), "kort")
    assert weak.value.code == "people.password_short"
    assert people.redeem(token_of(link.url), GOOD) == "nora@mensen.nl"  # the weak try did not use the link up
    session = auth.sign_in("nora@mensen.nl", GOOD)
    assert session.user.tenant_id == org.id and session.user.role == "learner"
    person = people.get(org, link.person.id)
    assert person.state == "active" and person.last_sign_in  # the sign-in is noted
    with pytest.raises(PeopleError) as reused:
        people.redeem(token_of(link.url), OTHER_GOOD)
    assert reused.value.code == "people.link_unknown" and reused.value.user_message == msg("people.link_unknown")
    assert auth.sign_in("nora@mensen.nl", GOOD)  # the reuse changed nothing


def test_expired_withdrawn_and_replaced_links_are_refused(admin_pb, org, people, smtp_server):
    link = people.invite(org, Actor.cli(), "laat@mensen.nl", "Laat")
    later = People(admin_pb, people.mailer, BASE, clock=lambda: time.time() + 7 * 86400 + 60)
    with pytest.raises(PeopleError) as expired:
        later.redeem(token_of(link.url), GOOD)
    assert expired.value.code == "people.link_expired"

    again = people.resend(org, Actor.cli(), link.person.id)  # a new link: the old one stops working
    with pytest.raises(PeopleError) as replaced:
        people.peek(token_of(link.url))
    assert replaced.value.code == "people.link_unknown"
    assert people.peek(token_of(again.url)).email == "laat@mensen.nl"
    assert len(smtp_server.to("laat@mensen.nl")) >= 2

    people.withdraw(org, Actor.cli(), link.person.id)
    with pytest.raises(PeopleError) as withdrawn:
        people.redeem(token_of(again.url), GOOD)
    assert withdrawn.value.code == "people.link_unknown"
    assert admin_pb.first("users", 'email = "laat@mensen.nl"') is None  # the invited person went with it


def test_inviting_an_invited_address_again_says_so_and_changes_nothing_but_the_link(admin_pb, org, people,
                                                                                    smtp_server):
    first = people.invite(org, Actor.cli(), "twee@mensen.nl", "Twee Keer", "admin")
    assert not first.again
    again = people.invite(org, Actor.cli(), "Twee@Mensen.nl", "Andere Naam", "learner")
    assert again.again and again.person.id == first.person.id and again.mailed
    # the role and name the form happened to hold are not applied unasked: an invited admin stays one
    kept = people.get(org, first.person.id)
    assert (kept.role, kept.name, kept.state) == ("admin", "Twee Keer", "invited")
    assert again.to_json()["again"] is True and first.to_json()["again"] is False
    with pytest.raises(PeopleError) as replaced:
        people.peek(token_of(first.url))  # the first link stopped working
    assert replaced.value.code == "people.link_unknown"
    assert smtp_server.link("twee@mensen.nl") == again.url
    assert len(admin_pb.all("users", filter='email = "twee@mensen.nl"')) == 1
    assert msg("people.invited_again", email="twee@mensen.nl", role="beheerder").startswith(
        "twee@mensen.nl was al uitgenodigd, als beheerder")


@pytest.mark.parametrize("token", ["", "x" * 10, "x" * 500, "a" * 43, "../../etc/passwd-and-more-than-twenty"])
def test_a_made_up_token_is_unknown(people, token):
    with pytest.raises(PeopleError) as refused:
        people.peek(token)
    assert refused.value.code == "people.link_unknown"


def test_a_reset_mail_sets_a_new_password_and_ends_the_old_sessions(pb_server, admin_pb, org, people, smtp_server):
    admin_of(people, admin_pb, org, "herstel@mensen.nl")
    auth = AuthService(pb_server.url, admin=admin_pb)
    old = auth.sign_in("herstel@mensen.nl", GOOD)
    before = len(smtp_server.messages)
    assert people.request_reset("niemand@mensen.nl") is None and len(smtp_server.messages) == before
    assert people.request_reset("HERSTEL@mensen.nl") is not None
    mail = smtp_server.to("herstel@mensen.nl")[-1]
    assert mail["Subject"] == "Nieuw wachtwoord voor R42" and "2 uur" in mail.get_body(("plain",)).get_content()
    url = smtp_server.link("herstel@mensen.nl")
    assert url.startswith(f"{BASE}/nieuw-wachtwoord?token=") and people.peek(token_of(url)).kind == "reset"
    people.redeem(token_of(url), OTHER_GOOD)
    with pytest.raises(AuthError):
        auth.sign_in("herstel@mensen.nl", GOOD)
    assert auth.sign_in("herstel@mensen.nl", OTHER_GOOD)
    assert auth.check(old.token, fresh=True) is None  # the session from before the reset ended
    with pytest.raises(PeopleError):
        people.redeem(token_of(url), "nog-een-ander-wachtwoord")


def test_without_mail_the_link_is_handed_over_and_nothing_is_sent(admin_pb, org, offline, smtp_server):
    before = len(smtp_server.messages)
    link = offline.invite(org, Actor.cli(), "geen-mail@mensen.nl", "", "admin")
    assert not link.mailed and not link.mail_error and link.url.startswith(f"{BASE}/welkom?token=")
    assert link.person.name == "geen-mail" and link.person.role == "admin"
    assert offline.request_reset("geen-mail@mensen.nl") is None  # "Wachtwoord vergeten?" needs mail
    assert len(smtp_server.messages) == before
    offline.redeem(token_of(link.url), GOOD)
    assert offline.reset_link(org, Actor.cli(), link.person.id).url.startswith(f"{BASE}/nieuw-wachtwoord?token=")


def test_a_failing_mail_is_reported_not_swallowed(admin_pb, org):
    from tests.conftest import free_port

    nowhere = People(admin_pb, Mailer("127.0.0.1", free_port(), tls="none", timeout=3), BASE)
    link = nowhere.invite(org, Actor.cli(), "onbereikbaar@mensen.nl", "")
    assert not link.mailed and "Connection" in link.mail_error  # nobody listens there
    assert nowhere.peek(token_of(link.url)).email == "onbereikbaar@mensen.nl"  # the link works, to hand over


@pytest.mark.parametrize("email, name, role, code", [
    ("geen-adres", "", "learner", "people.email_no_at"),
    ("Jan <jan@mensen.nl>", "", "learner", "people.bad_email"),
    ("jan@mensen.nl", "=HYPERLINK(\"http://evil\",\"klik\")", "learner", "people.formula"),
    ("jan@mensen.nl", "Jan\x00", "learner", "people.bad_name"),
    ("jan@mensen.nl", "Jan", "superuser", "people.bad_role"),
    ("learner@example.com", "", "learner", "people.other_tenant"),
])
def test_bad_invitations_are_refused_in_dutch_and_write_nothing(admin_pb, org, people, email, name, role, code):
    before = len(admin_pb.all("users", fields="id")), len(admin_pb.all("invitations", fields="id"))
    with pytest.raises(PeopleError) as refused:
        people.invite(org, Actor.cli(), email, name, role)
    assert refused.value.code == code and refused.value.user_message
    assert (len(admin_pb.all("users", fields="id")), len(admin_pb.all("invitations", fields="id"))) == before


def test_a_csv_is_previewed_row_by_row_then_imported_once(admin_pb, org, people, smtp_server):
    rows = "e-mailadres;naam;rol\n" + "".join(f"cursist{i}@mensen.nl;Cursist {i};deelnemer\n" for i in range(30))
    bad = rows + "kapot;Iemand;deelnemer\ncursist3@mensen.nl;Dubbel;deelnemer\nlearner@example.com;Elders;\n" \
                 "x@mensen.nl;Xander;directeur\n"
    users_before = len(admin_pb.all("users", fields="id"))
    preview = people.import_csv(org, Actor.cli(), bad.encode(), dry_run=False)  # any bad row: nothing is written
    assert preview.invited == 0 and preview.to_invite == 30 and preview.rows == 34
    assert [(b.line, b.code) for b in preview.bad] == [(32, "people.email_no_at"), (33, "people.csv_duplicate"),
                                                       (34, "people.other_tenant"), (35, "people.bad_role")]
    assert len(admin_pb.all("users", fields="id")) == users_before

    dry = people.import_csv(org, Actor.cli(), rows.encode(), dry_run=True)
    assert (dry.to_invite, dry.invited, dry.bad) == (30, 0, [])
    assert len(admin_pb.all("users", fields="id")) == users_before

    mails = len(smtp_server.messages)
    done = people.import_csv(org, Actor.cli(), ("\ufeff" + rows).encode(), dry_run=False)
    assert done.invited == 30 and done.mail_failures == 0 and len(smtp_server.messages) == mails + 30
    assert people.list(org, state="invited")[1] == 30
    url = smtp_server.link("cursist7@mensen.nl")
    people.redeem(token_of(url), GOOD)
    assert people.by_email(org, "cursist7@mensen.nl").state == "active"

    again = people.import_csv(org, Actor.cli(), rows.encode(), dry_run=False)  # the same file: nothing new
    assert (again.invited, again.unchanged, again.to_invite) == (0, 30, 0)
    assert len(smtp_server.messages) == mails + 30 and people.list(org)[1] == 30
    audit = admin_pb.all("audit_log", filter=f'tenant = "{org.id}" && tool = "people"')
    assert [a["arguments"]["what"] for a in audit].count("import") == 1


def test_search_filters_and_paging(admin_pb, org, offline):
    for i in range(12):
        offline.invite(org, Actor.cli(), f"p{i:02d}@mensen.nl", f"Persoon {i:02d}", "admin" if i % 4 == 0 else "")
    page, total = offline.list(org, per_page=5, page=3)
    assert total == 12 and [p.email for p in page] == ["p10@mensen.nl", "p11@mensen.nl"]
    assert offline.list(org, query="persoon 0")[1] == 10 and offline.list(org, role="admin")[1] == 3
    assert offline.list(org, state="active")[1] == 0 and offline.list(org, state="invited")[1] == 12


async def test_roles_deactivation_and_the_last_admin(pb_server, admin_pb, org, offline, redis_url):
    boss = admin_of(offline, admin_pb, org, "baas@mensen.nl")
    learner_link = offline.invite(org, Actor.cli(), "leerling@mensen.nl", "Lies Leerling")
    offline.redeem(token_of(learner_link.url), GOOD)
    learner = learner_link.person.id

    # the last active admin stays one
    for change in (lambda: offline.set_role(org, Actor.cli(), boss, "learner"),
                   lambda: offline.set_state(org, Actor.cli(), boss, "deactivated")):
        with pytest.raises(PeopleError) as last:
            change()
        assert last.value.code == "people.last_admin" and last.value.user_message == msg("people.last_admin")
    assert offline.set_role(org, Actor.cli(), learner, "admin").role == "admin"
    assert offline.set_role(org, Actor.cli(), boss, "learner").role == "learner"  # now there is another
    offline.set_role(org, Actor.cli(), boss, "admin")
    offline.set_role(org, Actor.cli(), learner, "learner")

    # deactivating ends a session at once, on another worker too (two AuthServices sharing one Redis)
    one = AuthService(pb_server.url, admin=admin_pb, shared=RedisSharedState(redis_url))
    other = AuthService(pb_server.url, admin=admin_pb, shared=RedisSharedState(redis_url))
    session = one.sign_in("leerling@mensen.nl", GOOD)
    assert other.check(session.token) is not None  # the other worker has it cached now
    assert offline.set_state(org, Actor.cli(), learner, "deactivated").state == "deactivated"
    await one.sessions_ended(learner)
    assert await other.remembered_now(session.token) is None  # its cache heard it
    assert other.check(session.token) is None  # and PocketBase refuses the token
    with pytest.raises(AuthError) as refused:
        one.sign_in("leerling@mensen.nl", GOOD)
    assert refused.value.user_message == msg("auth.deactivated")
    with pytest.raises(PeopleError) as no_link:
        offline.reset_link(org, Actor.cli(), learner)
    assert no_link.value.code == "people.not_active"
    assert offline.set_state(org, Actor.cli(), learner, "active").state == "active"
    assert one.sign_in("leerling@mensen.nl", GOOD)  # nothing was deleted
    whats = [a["arguments"]["what"] for a in admin_pb.all("audit_log", filter=f'tenant = "{org.id}"', sort="created")]
    assert whats.count("role") == 4 and whats.count("state") == 2


# -- the wall: straight against PocketBase -------------------------------------------------------------------------


def refused(call) -> int:
    with pytest.raises(PBError) as error:
        call()
    return error.value.status


def test_pocketbase_lets_an_admin_manage_their_own_tenants_people_only(pb_server, admin_pb, org, offline, seeded):
    other = Tenants(admin_pb).create("ander-" + secrets.token_hex(3), "Ander BV")
    admin_of(offline, admin_pb, org, "chef@mensen.nl")
    admin_of(offline, admin_pb, other, "chef@ander.nl")
    link = offline.invite(org, Actor.cli(), "lid@mensen.nl", "Lid")
    offline.redeem(token_of(link.url), GOOD)
    member = link.person.id
    chef = PocketBase(pb_server.url, token=user_token(admin_pb, "chef@mensen.nl", GOOD))
    stranger = PocketBase(pb_server.url, token=user_token(admin_pb, "chef@ander.nl", GOOD))
    learner = PocketBase(pb_server.url, token=user_token(admin_pb, "lid@mensen.nl", GOOD))
    before = admin_pb.get("users", member)

    def invite_body(tenant: Tenant, **extra):
        return {"email": f"rest-{secrets.token_hex(3)}@mensen.nl", "name": "Via REST", "role": "learner",
                "tenant": tenant.id, "state": "invited", **extra}

    # a learner writes nobody, not even themselves
    assert refused(lambda: learner.create("users", invite_body(org))) in (400, 403)
    assert refused(lambda: learner.update("users", member, {"role": "admin"})) in (400, 403, 404)
    # another tenant's admin reaches nobody here
    assert refused(lambda: stranger.create("users", invite_body(org))) in (400, 403)
    assert refused(lambda: stranger.update("users", member, {"state": "deactivated"})) in (400, 403, 404)
    # this tenant's admin: invites into their own tenant only, as learner or admin, invited and unverified
    for body in (invite_body(other), invite_body(org, role="superuser"), invite_body(org, state="active"),
                 invite_body(org, verified=True)):
        assert refused(lambda body=body: chef.create("users", body)) in (400, 403)
    made = chef.create("users", invite_body(org, password=GOOD, passwordConfirm=GOOD))
    assert made["tenant"] == org.id and admin_pb.get("users", made["id"])["state"] == "invited"
    with pytest.raises(PBError):
        # an invited person gets no token, whatever password was set (and other users never see their address)
        direct_sign_in(pb_server.url, admin_pb.get("users", made["id"])["email"], GOOD)
    # ... and changes name, role and state only; never tenant, e-mail, password, verified
    for body in ({"tenant": other.id}, {"email": "ander@mensen.nl"}, {"password": OTHER_GOOD, "passwordConfirm":
                 OTHER_GOOD}, {"verified": False}, {"role": "owner"}, {"emailVisibility": True}):
        assert refused(lambda body=body: chef.update("users", member, body)) in (400, 403, 404), body
    assert refused(lambda: chef.update("users", made["id"], {"state": "active"})) in (400, 403, 404)  # no shortcut
    after = admin_pb.get("users", member)
    assert {k: after[k] for k in ("tenant", "email", "role", "state", "verified")} == \
        {k: before[k] for k in ("tenant", "email", "role", "state", "verified")}
    assert chef.update("users", member, {"name": "Lid Hernoemd", "role": "admin"})["role"] == "admin"
    chef.update("users", member, {"role": "learner"})
    # a deactivation through REST ends the person's sessions too (pb_hooks/r42_people.js)
    assert learner.me()["id"] == member
    chef.update("users", member, {"state": "deactivated"})
    assert refused(lambda: learner.me()) in (401, 404)  # the token is nobody's now
    # and the last admin cannot take themselves out
    me = admin_pb.first("users", 'email = "chef@mensen.nl"')["id"]
    assert refused(lambda: chef.update("users", me, {"role": "learner"})) == 400
    assert admin_pb.get("users", me)["role"] == "admin"


def test_the_doctor_says_whether_mail_is_off_working_or_failing(admin_pb, smtp_server, monkeypatch):
    from r42_app.services.runtime.doctor import FAIL, OK, WARN, Doctor
    from r42_app.settings import load_settings
    from tests.conftest import free_port

    for name in ("R42_SMTP_HOST", "R42_SMTP_PORT"):
        monkeypatch.delenv(name, raising=False)
    off = Doctor(load_settings(), admin_pb, None, None).mail()[0]
    assert off.status == WARN and "R42_SMTP_HOST is not set" in off.detail and "R42_SMTP_HOST" in off.fix
    monkeypatch.setenv("R42_SMTP_HOST", smtp_server.host)
    monkeypatch.setenv("R42_SMTP_TLS", "none")
    monkeypatch.setenv("R42_SMTP_PORT", str(smtp_server.port))
    monkeypatch.setenv("R42_PUBLIC_URL", "https://r42.acme.nl/")
    on = Doctor(load_settings(), admin_pb, None, None).mail()[0]
    assert on.status == OK and f"{smtp_server.port} (none)" in on.detail and "https://r42.acme.nl" in on.detail
    monkeypatch.setenv("R42_SMTP_PORT", str(free_port()))
    down = Doctor(load_settings(), admin_pb, None, None).mail()[0]
    assert down.status == FAIL and "R42_SMTP_" in down.fix


def test_an_import_whose_mail_server_is_down_reports_every_invitation_and_keeps_the_links(admin_pb, org):
    from tests.conftest import free_port

    nowhere = People(admin_pb, Mailer("127.0.0.1", free_port(), tls="none", timeout=3), BASE)
    rows = "".join(f"weg{i}@mensen.nl;Weg {i};\n" for i in range(25)).encode()
    done = nowhere.import_csv(org, Actor.cli(), rows, dry_run=False)
    assert done.invited == 25 and done.mail_failures == 25
    assert all(not link.mailed and "cannot be reached" in link.mail_error for link in done.links)
    assert nowhere.peek(token_of(done.links[0].url)).email == "weg0@mensen.nl"  # each link works, to hand over


def test_a_changed_password_follows_the_rule_and_ends_the_other_sessions(pb_server, admin_pb, org, offline):
    """"Wachtwoord wijzigen" (the account menu checks the old password with a sign-in first, state/account.py)."""
    person = admin_of(offline, admin_pb, org, "wissel@mensen.nl")
    auth = AuthService(pb_server.url, admin=admin_pb)
    elsewhere = auth.sign_in("wissel@mensen.nl", GOOD)
    with pytest.raises(PeopleError) as weak:
        offline.set_password(person, "wissel@mensen.nl", "Wim Wissel", "wimwissel2026")
    assert weak.value.code == "people.password_guessable"
    assert auth.check(elsewhere.token, fresh=True) is not None  # a refused change changes nothing
    offline.set_password(person, "wissel@mensen.nl", "Wim Wissel", OTHER_GOOD)
    assert auth.check(elsewhere.token, fresh=True) is None  # the other device is signed out
    with pytest.raises(AuthError):
        auth.sign_in("wissel@mensen.nl", GOOD)
    assert auth.sign_in("wissel@mensen.nl", OTHER_GOOD)
