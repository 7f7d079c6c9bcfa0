"""Issue 10, holes 4-6, against the real PocketBase with our migrations and pb_hooks: no bulk writes
with a user token, sign-in brute force throttled (per account for everyone, per IP for direct
clients, signed in or not: issue 21) without the app throttling itself, and the KB rules and outbox
rows hold for every writer."""

import asyncio

import httpx
import pytest

from r42_app.core.messages import msg
from r42_app.services.store.auth import AuthError, AuthService, WrongPassword
from r42_app.services.store.kb_store import OUTBOX_DELETE, OUTBOX_UPSERT
from r42_app.services.store.pb import PBError, quote
from tests.conftest import DEMO_PASSWORD, throwaway_user


def reset_pocketbase_rate_limits(admin_pb):
    """Saving the settings resets PocketBase's rate-limit counters (every test client is 127.0.0.1)."""
    settings = admin_pb.send("GET", "/api/settings")
    admin_pb.send("PATCH", "/api/settings", body={"rateLimits": settings["rateLimits"]})


@pytest.fixture
def reset_rate_limits(admin_pb):
    """A test that exhausts a per-IP bucket starts with empty ones and must not throttle the tests after it."""
    reset_pocketbase_rate_limits(admin_pb)
    yield
    reset_pocketbase_rate_limits(admin_pb)


@pytest.fixture
def temp_user(admin_pb, seeded):
    """A throw-away learner (the sign-in throttle locks an account for a minute)."""
    with throwaway_user(admin_pb, name="Brute Force", prefix="brute") as (email, _row):
        yield email


def sign_in_direct(pb_url, email, password, token=""):
    return httpx.post(f"{pb_url}/api/collections/users/auth-with-password",
                      json={"identity": email, "password": password},
                      headers={"Authorization": token} if token else {}, timeout=10)


# -- 4. bulk writes -----------------------------------------------------------------------------


def test_pocketbase_settings_cap_batches_and_turn_on_rate_limits(admin_pb):
    settings = admin_pb.send("GET", "/api/settings")
    # 80 MB: a document's topics go in one batch with its file (50 MB at most); batches are the server's alone
    assert settings["batch"]["maxRequests"] <= 500 and settings["batch"]["maxBodySize"] <= 80 * 1024 * 1024
    assert settings["rateLimits"]["enabled"]
    labels = {(r["label"], r["audience"]) for r in settings["rateLimits"]["rules"]}
    # the sign-in rules count everyone but superusers ("" = guests and users alike; issue 21)
    assert {("*:authWithPassword", ""), ("*:auth", ""), ("*:create", "@auth"), ("/api/batch", "@auth")} <= labels


def test_a_user_token_cannot_batch_even_one_write(pb_server, seeded, admin_pb):
    admin = pb_server.user("admin@example.com")  # an admin may write topics one by one, but not in bulk
    demo = admin_pb.first("tenants", 'slug = "demo"')
    body = {"tenant": demo["id"], "slug": "batch-by-token", "label": "Batch", "type": "concept", "description": "x"}
    with pytest.raises(PBError) as err:
        admin.send("POST", "/api/batch", body={"requests": [
            {"method": "POST", "url": "/api/collections/topics/records", "body": body}]})
    assert err.value.status == 403
    assert admin_pb.first("topics", 'slug = "batch-by-token"') is None


def test_a_flood_of_creates_with_a_user_token_is_rate_limited(pb_server, seeded, admin_pb, reset_rate_limits):
    learner = pb_server.user("learner@example.com")
    statuses = []
    for _ in range(80):
        try:
            learner.create("topics", {"slug": "flood", "label": "Flood", "type": "concept", "description": "x"})
        except PBError as exc:
            statuses.append(exc.status)
    assert 429 in statuses and set(statuses) <= {400, 403, 429}
    assert admin_pb.first("topics", 'slug = "flood"') is None


# -- 5. sign-in brute force -----------------------------------------------------------------------


def test_wrong_passwords_lock_the_account_for_a_minute_even_for_the_right_one(pb_server, temp_user,
                                                                             reset_rate_limits):
    statuses = [sign_in_direct(pb_server.url, temp_user, f"fout-{i}").status_code for i in range(12)]
    assert statuses[:5] == [400] * 5 and set(statuses[5:]) == {429}
    right = sign_in_direct(pb_server.url, temp_user, DEMO_PASSWORD)
    assert right.status_code == 429 and "Te veel pogingen" in right.json()["message"]
    assert int(right.headers["Retry-After"]) <= 60


def test_the_app_says_too_many_attempts_and_never_throttles_itself(pb_server, admin_pb, temp_user):
    auth = AuthService(pb_server.url, pb_server.admin_client())
    for _ in range(30):  # many sign-ins through the app, all from this one address: never limited
        assert auth.sign_in("learner@example.com", DEMO_PASSWORD).user.email == "learner@example.com"
    for i in range(5):
        with pytest.raises(WrongPassword):
            auth.sign_in(temp_user, f"fout-{i}")
    with pytest.raises(AuthError) as err:  # the account is locked, whoever asks
        auth.sign_in(temp_user, DEMO_PASSWORD)
    assert err.value.user_message == msg("auth.too_many_attempts")


def test_direct_anonymous_sign_ins_are_limited_per_address(pb_server, seeded, reset_rate_limits):
    """Password spraying: one wrong guess at each of many accounts still runs into the per-IP limit."""
    statuses = [sign_in_direct(pb_server.url, f"nobody-{i}@example.com", "raden").status_code for i in range(30)]
    assert 429 in statuses and statuses.index(429) <= 21


def test_a_signed_in_user_sprays_into_the_same_per_address_limit(pb_server, seeded, admin_pb, reset_rate_limits):
    """Issue 21, hole 3: a learner's Bearer header on each sign-in used to skip the per-IP limit (it counted
    guests only). Now the 21st is refused, for the user as for a guest from that address, while the app's
    own requests (superuser sign-ins, and token refreshes carrying users' tokens) are never throttled."""
    learner = pb_server.user("learner@example.com")
    statuses = [sign_in_direct(pb_server.url, f"nobody-{i}@example.com", "raden", learner.token).status_code
                for i in range(30)]
    assert statuses[:20] == [400] * 20 and statuses[20:] == [429] * 10
    assert sign_in_direct(pb_server.url, "nobody@example.com", "raden").status_code == 429  # a guest too
    auth = AuthService(pb_server.url, pb_server.admin_client())
    for _ in range(25):  # the app signs users in over its superuser connection: never limited
        assert auth.sign_in("learner@example.com", DEMO_PASSWORD).user.role == "learner"
    for _ in range(25):  # and checks their tokens with the tokens themselves, from the same address
        assert auth.verify(learner.token) is not None


# -- 6. writes that skip the app ------------------------------------------------------------------


@pytest.fixture
def demo_admin(pb_server, seeded, admin_pb):
    """The demo admin's own token on the REST API, and the demo tenant."""
    demo = admin_pb.first("tenants", 'slug = "demo"')
    yield pb_server.user("admin@example.com"), demo
    for slug in ("rest-topic", "rest-other"):
        row = admin_pb.first("topics", f"tenant = {quote(demo['id'])} && slug = {quote(slug)}")
        if row:
            admin_pb.delete("topics", row["id"])


def outbox(admin_pb, tenant_id, slug):
    rows = admin_pb.all("outbox", filter=f"payload.tenant = {quote(tenant_id)} && payload.topic = {quote(slug)}",
                        sort="created,id")
    return [r["type"] for r in rows]


@pytest.mark.parametrize("source,target", [("bestaat-niet", "bestaat-niet"), ("aow", "bestaat-niet"),
                                           ("aow", "aow")])
def test_relations_written_past_the_app_must_join_existing_topics(demo_admin, admin_pb, source, target):
    admin, demo = demo_admin
    before = len(admin_pb.all("relations", filter=f"tenant = {quote(demo['id'])}"))
    for writer in (admin, admin_pb):  # an admin token, and even the superuser
        with pytest.raises(PBError) as err:
            writer.create("relations", {"tenant": demo["id"], "source": source, "target": target, "type": "part_of"})
        assert err.value.status == 400
    assert len(admin_pb.all("relations", filter=f"tenant = {quote(demo['id'])}")) == before


def test_topic_writes_past_the_app_write_one_outbox_row_each(demo_admin, admin_pb):
    admin, demo = demo_admin
    row = admin.create("topics", {"tenant": demo["id"], "slug": "rest-topic", "label": "REST topic",
                                  "type": "concept", "description": "Buiten de app om geschreven."})
    assert outbox(admin_pb, demo["id"], "rest-topic") == [OUTBOX_UPSERT]
    payload = admin_pb.first("outbox", 'payload.topic = "rest-topic"')["payload"]
    assert payload == {"tenant": demo["id"], "tenant_slug": "demo", "topic": "rest-topic"}
    admin.update("topics", row["id"], {"description": "Aangepast."})
    assert outbox(admin_pb, demo["id"], "rest-topic") == [OUTBOX_UPSERT] * 2
    admin.create("relations", {"tenant": demo["id"], "source": "rest-topic", "target": "aow", "type": "related_to"})
    admin.delete("topics", row["id"])  # its relations go with it, and the index hears of it
    assert outbox(admin_pb, demo["id"], "rest-topic") == [OUTBOX_UPSERT] * 2 + [OUTBOX_DELETE]
    assert admin_pb.all("relations", filter=f'tenant = {quote(demo["id"])} && source = "rest-topic"') == []


def test_a_refused_topic_write_leaves_no_outbox_row(demo_admin, admin_pb):
    admin, demo = demo_admin
    with pytest.raises(PBError):  # the slug exists: refused, and its outbox row with it
        admin.create("topics", {"tenant": demo["id"], "slug": "aow", "label": "AOW bis", "type": "concept",
                                "description": "Dubbel."})
    with pytest.raises(PBError):  # a batch that fails half-way writes neither topics nor outbox rows
        admin_pb.send("POST", "/api/batch", body={"requests": [
            {"method": "POST", "url": "/api/collections/topics/records",
             "body": {"tenant": demo["id"], "slug": "rest-other", "label": "Other", "type": "concept",
                      "description": "x"}},
            {"method": "POST", "url": "/api/collections/relations/records",
             "body": {"tenant": demo["id"], "source": "rest-other", "target": "nergens", "type": "part_of"}}]})
    assert admin_pb.first("topics", f'tenant = {quote(demo["id"])} && slug = "rest-other"') is None
    assert outbox(admin_pb, demo["id"], "rest-other") == []


def test_a_topic_keeps_its_slug(demo_admin, admin_pb):
    admin, demo = demo_admin
    row = admin.create("topics", {"tenant": demo["id"], "slug": "rest-topic", "label": "REST topic",
                                  "type": "concept", "description": "x"})
    with pytest.raises(PBError) as err:
        admin.update("topics", row["id"], {"slug": "rest-other"})
    assert "slug" in str(err.value)
    assert admin_pb.get("topics", row["id"])["slug"] == "rest-topic"


@pytest.mark.anyio
async def test_the_app_limits_wrong_passwords_per_address_across_accounts(pb_server, seeded):
    """One guess at each of many accounts from one browser runs into the app's per-address limit; right
    passwords in between do not count."""
    auth = AuthService(pb_server.url, pb_server.admin_client())
    for i in range(10):
        with pytest.raises(WrongPassword):
            await auth.sign_in_from("203.0.113.7", f"spray-{i}@example.com", "raden")
        if i == 4:
            assert (await auth.sign_in_from("203.0.113.7", "learner@example.com", DEMO_PASSWORD)).user.role == "learner"
    with pytest.raises(AuthError) as err:
        await auth.sign_in_from("203.0.113.7", "learner@example.com", DEMO_PASSWORD)
    assert err.value.user_message == msg("auth.too_many_attempts")
    assert (await auth.sign_in_from("203.0.113.8", "learner@example.com", DEMO_PASSWORD)).user.role == "learner"


@pytest.mark.anyio
async def test_tabs_trying_at_the_same_moment_cannot_all_pass_the_per_address_check(pb_server, seeded):
    """22 wrong passwords sent at once: the check is made before any answer came back, so each attempt is
    counted as it goes out; exactly 10 reach PocketBase."""
    auth = AuthService(pb_server.url, pb_server.admin_client())

    async def attempt(i):
        try:
            await auth.sign_in_from("203.0.113.9", f"tab-{i}@example.com", "raden")
        except AuthError as exc:
            return exc.user_message

    answers = await asyncio.gather(*(attempt(i) for i in range(22)))
    assert answers.count("E-mailadres of wachtwoord klopt niet.") == 10
    assert answers.count(msg("auth.too_many_attempts")) == 12


def test_a_tenant_with_topics_and_relations_can_be_deleted(admin_pb, seeded):
    """The topic hooks must not stand in the way of the cascade when an operator deletes a tenant."""
    from r42_app.services.store.kb_store import KBStore

    kb = KBStore(admin_pb)
    tenant, _ = kb.ensure_tenant("weg-ermee")
    kb.create_topic(tenant, {"id": "a", "label": "A", "type": "concept", "description": "x"})
    kb.create_topic(tenant, {"id": "b", "label": "B", "type": "concept", "description": "y"})
    kb.add_relation(tenant, {"source": "a", "target": "b", "type": "related_to"})
    admin_pb.delete("tenants", tenant.id)
    assert admin_pb.all("topics", filter=f'tenant = "{tenant.id}"') == []
    assert admin_pb.all("relations", filter=f'tenant = "{tenant.id}"') == []
