"""LTI 1.3 registrations and the people who come in from an LMS (issue 48, part 2: services/store/lti.py and
`r42 lti add|list|remove`), against the real PocketBase: what is stored, who is made or found, and what an admin's
own token can never do."""

import json
import secrets

import httpx
import pytest

from r42_app.core.lti import CLAIM, RESOURCE_LINK, LtiError, launch_of
from r42_app.services.adapters.mailer import Mailer
from r42_app.services.store.lti import LtiStore
from r42_app.services.store.people import Actor, People
from r42_app.services.store.tenants import Tenants
from tests.conftest import user_token
from tests.integration.test_cli_kb import run_cli

GOOD = "paarse-fiets-op-dinsdag"
ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#"


@pytest.fixture
def school(admin_pb, seeded):
    tag = secrets.token_hex(3)
    tenant = Tenants(admin_pb).create("lti-" + tag, f"School {tag}")
    issuer = f"https://moodle-{tag}.school.nl"
    reg = LtiStore(admin_pb).add(tenant, "", "cli", issuer, "client-1", ["dep-1"], f"{issuer}/certs",
                                 f"{issuer}/auth", instructor_role="admin")
    return tenant, reg


def launch(reg, sub="s-1", email="", roles=("Learner",), name="Lotte"):
    claims = {"sub": sub, "name": name, CLAIM + "message_type": RESOURCE_LINK, CLAIM + "version": "1.3.0",
              CLAIM + "deployment_id": "dep-1", CLAIM + "resource_link": {"id": "rl"},
              CLAIM + "roles": [ROLE + r for r in roles]}
    if email:
        claims["email"] = email
    return launch_of(claims, reg, ("https://r42.example",))


def test_registrations_are_checked_merged_and_belong_to_one_tenant(admin_pb, school):
    tenant, reg = school
    store = LtiStore(admin_pb)
    again = store.add(tenant, "", "cli", reg.issuer, reg.client_id, ["dep-2", "dep-1"], reg.jwks_url, reg.auth_url)
    assert again.deployment_ids == ("dep-1", "dep-2")  # a second add adds deployments
    assert [r.deployment_ids for r in store.list(tenant)] == [("dep-1", "dep-2")]
    assert store.find(reg.issuer) == store.find(reg.issuer, "client-1") != None  # noqa: E711
    other = Tenants(admin_pb).create("lti-ander-" + secrets.token_hex(3), "Ander")
    with pytest.raises(LtiError) as caught:
        store.add(other, "", "cli", reg.issuer, reg.client_id, ["dep-9"], reg.jwks_url, reg.auth_url)
    assert caught.value.code == "lti.registered_elsewhere"
    with pytest.raises(LtiError) as caught:  # http only on loopback, and only while the app runs there itself
        store.add(other, "", "cli", "http://127.0.0.1:9000", "c", ["d"], "http://127.0.0.1:9000/jwks",
                  "http://127.0.0.1:9000/auth")
    assert caught.value.code == "lti.issuer_invalid"
    assert LtiStore(admin_pb, loopback_ok=True).add(other, "", "cli", "http://127.0.0.1:9000", "c", ["d"],
                                                    "http://127.0.0.1:9000/jwks", "http://127.0.0.1:9000/auth")
    assert store.remove(tenant, "", "cli", reg.issuer, reg.client_id) is True
    assert store.remove(tenant, "", "cli", reg.issuer, reg.client_id) is False
    assert store.list(tenant) == []


def test_a_launch_finds_or_makes_its_person_by_the_lms_subject(admin_pb, school):
    tenant, reg = school
    store = LtiStore(admin_pb)
    teacher = store.person(reg, tenant, launch(reg, "t-1", "Docent@School.nl", roles=("Instructor",), name="Dora"))
    row = admin_pb.get("users", teacher)
    assert (row["email"], row["role"], row["signs_in_with"], row["state"]) == ("docent@school.nl", "admin", "lti",
                                                                               "active")
    # the same LMS person again, whatever the LMS now says of their e-mail and role: the same account and role
    assert store.person(reg, tenant, launch(reg, "t-1", "ander@school.nl", roles=("Learner",))) == teacher
    assert admin_pb.get("users", teacher)["role"] == "admin"
    anonymous = store.person(reg, tenant, launch(reg, "s-2"))  # an LMS that shares no e-mail
    assert admin_pb.get("users", anonymous)["email"].endswith("@lti.invalid")

    # an invited person of the tenant is found by e-mail and linked
    people = People(admin_pb, Mailer(), "http://x")
    invited = people.invite(tenant, Actor.cli(), "nieuw@school.nl", "Nieuw", "learner").person
    assert store.person(reg, tenant, launch(reg, "n-1", "nieuw@school.nl")) == invited.id
    assert admin_pb.get("users", invited.id)["state"] == "active"
    # a person of another tenant is never taken over, a deactivated one is refused
    for sub, email, code in (("x-1", "learner@example.com", "lti.other_tenant"),):
        with pytest.raises(LtiError) as caught:
            store.person(reg, tenant, launch(reg, sub, email))
        assert caught.value.code == code
    link = people.invite(tenant, Actor.cli(), "baas@school.nl", "Baas", "admin")  # someone stays admin
    people.redeem(link.url.split("token=")[1], GOOD)
    people.set_state(tenant, Actor.cli(), teacher, "deactivated")
    with pytest.raises(LtiError) as caught:
        store.person(reg, tenant, launch(reg, "t-1"))
    assert caught.value.code == "lti.deactivated"


def test_an_admin_token_cannot_read_registrations_or_set_an_lms_identity(admin_pb, pb_server, school):
    tenant, reg = school
    people = People(admin_pb, Mailer(), "http://x")
    link = people.invite(tenant, Actor.cli(), "beheer@school.nl", "Beheer", "admin")
    people.redeem(link.url.split("token=")[1], GOOD)
    learner = people.invite(tenant, Actor.cli(), "leer@school.nl", "L", "learner").person
    with httpx.Client(base_url=pb_server.url, headers={"Authorization": user_token(admin_pb, "beheer@school.nl",
                                                                                   GOOD)}) as pb:
        assert pb.get("/api/collections/lti_platforms/records").status_code == 403
        pb.patch(f"/api/collections/users/records/{learner.id}", json={"lti_id": f"{reg.issuer}|overgenomen"})
    assert admin_pb.get("users", learner.id).get("lti_id") in ("", None)


@pytest.mark.slow  # a CLI process per command
def test_an_operator_adds_lists_and_removes_an_lms(pb_server, admin_pb, seeded):
    slug = "lti-cli-" + secrets.token_hex(3)
    Tenants(admin_pb).create(slug, "CLI School")
    base = ["lti", "add", "--tenant", slug, "--issuer", "https://canvas.school.nl", "--client-id", "10000000001",
            "--jwks-url", "https://canvas.school.nl/api/lti/security/jwks",
            "--auth-url", "https://canvas.school.nl/api/lti/authorize_redirect"]
    bad = run_cli(pb_server, *base[:-2], "--auth-url", "http://canvas.school.nl/x", "--deployment-id", "1:abc")
    assert bad.returncode != 0 and "auth_url" in bad.stderr
    done = run_cli(pb_server, *base, "--deployment-id", "1:abc", "--deployment-id", "2:def",
                   "--instructor-role", "learner")
    assert done.returncode == 0, done.stderr
    assert "/lti/login" in done.stdout and "/lti/launch" in done.stdout and "/lti/jwks" in done.stdout
    listed = json.loads(run_cli(pb_server, "lti", "list", "--tenant", slug, "--json").stdout)
    assert [(r["client_id"], r["deployment_ids"], r["instructor_role"]) for r in listed] == [
        ("10000000001", ["1:abc", "2:def"], "learner")]
    gone = run_cli(pb_server, "lti", "remove", "--tenant", slug, "--issuer", "https://canvas.school.nl",
                   "--client-id", "10000000001")
    assert gone.returncode == 0 and "removed" in gone.stdout
    assert json.loads(run_cli(pb_server, "lti", "list", "--tenant", slug, "--json").stdout) == []
    url = run_cli(pb_server, "lti", "registration-url", "--tenant", slug)
    assert url.returncode == 0 and "works once, for 7 days" in url.stdout, url.stderr
    token = url.stdout.splitlines()[0].split("/lti/register?r42_invite=")[1]
    from r42_app.services.lti_registration import _name
    assert admin_pb.first("app_secrets", f'name = "{_name(token)}"') is not None  # only its hash is kept
    assert admin_pb.first("app_secrets", f'value ~ "{token}"') is None
