"""The question log (issue 28), through the real HTTP API, PocketBase and the anthropic SDK against the fake
Messages API: a turn leaves its row with the right fields and a pseudonymous user key; a tenant that switched
the log off leaves nothing; only the tenant's admins read it; retention and `forget` delete what they should."""

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from r42_app.api import api
from r42_app.core.questions import QuestionEntry
from r42_app.services.store.pb import PBError
from tests.integration.conftest import rebuild_services

pytestmark = pytest.mark.anyio


async def ask(token, question, mode="fts"):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as client:
        resp = await client.post("/api/chat", headers={"Authorization": f"Bearer {token}"},
                                 json={"messages": [{"role": "user", "content": question}], "mode": mode})
    events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
    assert resp.status_code == 200 and events[-1]["type"] == "done", resp.text
    from r42_app.container import services

    await services().questions.flush()
    return events


def rows_of(admin_pb, question):
    return admin_pb.all("question_log", filter=f'question = "{question}"')


@pytest.fixture
def log_on(admin_pb, seeded):
    """Both demo tenants keep the log (as by default); switched back on after a test that turned one off."""
    yield
    for slug in ("demo", "acme"):
        tenant = admin_pb.first("tenants", f'slug = "{slug}"')
        admin_pb.update("tenants", tenant["id"], {"question_log_off": False})


async def test_a_turn_leaves_its_question_with_what_retrieval_found(api_env, pb_server, admin_pb, log_on):
    learner = pb_server.user("learner@example.com")
    api_env.reply_text("De dekkingsgraad is de verhouding tussen vermogen en verplichtingen [ref:1].")
    events = await ask(learner.token, "Wat is de dekkingsgraad?")
    api_env.reply_text("Daarover staat niets in de kennisbank.")
    missed = await ask(learner.token, "Hoe laat vertrekt de trein naar Zwolle?")
    [hit] = admin_pb.all("question_log", filter=f'turn_id = "{events[-1]["turn_id"]}"')  # other tests ask it too
    [miss] = admin_pb.all("question_log", filter=f'turn_id = "{missed[-1]["turn_id"]}"')
    assert hit["question"] == "Wat is de dekkingsgraad?" and miss["question"].startswith("Hoe laat")
    demo = admin_pb.first("tenants", 'slug = "demo"')
    assert hit["tenant"] == demo["id"] and hit["channel"] == "api" and hit["mode"] == "fts"
    assert hit["mode_used"] == "fts" and hit["offline"] is False and hit["turn_id"] == events[-1]["turn_id"]
    assert hit["grounded"] is True and hit["sources"][0] == "dekkingsgraad" and hit["cited"] == ["dekkingsgraad"]
    assert hit["best_score"] > 0
    assert miss["grounded"] is False and miss["cited"] == []
    # pseudonymous: not the user's id, the same key for the same learner, nothing in the row names them
    learner_id = learner.me()["id"]
    assert hit["user_key"] == miss["user_key"] and len(hit["user_key"]) == 32
    assert learner_id not in json.dumps(hit) and "learner@example.com" not in json.dumps(hit)


async def test_another_tenant_gives_the_same_learner_no_common_key(api_env, pb_server, admin_pb, log_on):
    api_env.reply_text("Antwoord.")
    await ask(pb_server.user("learner@example.com").token, "Vraag uit demo over de AOW")
    api_env.reply_text("Antwoord.")
    await ask(pb_server.user("learner@acme.example").token, "Vraag uit acme over de AOW")
    [demo_row] = rows_of(admin_pb, "Vraag uit demo over de AOW")
    [acme_row] = rows_of(admin_pb, "Vraag uit acme over de AOW")
    assert demo_row["tenant"] != acme_row["tenant"] and demo_row["user_key"] != acme_row["user_key"]


async def test_a_tenant_that_switched_the_log_off_leaves_nothing(api_env, pb_server, admin_pb, log_on):
    from r42_app.container import services
    from r42_app.core.identity import Tenant

    demo = admin_pb.first("tenants", 'slug = "demo"')
    assert services().access.set_question_log(Tenant(demo["id"], "demo", demo["name"]), False, "", "test") is True
    api_env.reply_text("Antwoord.")
    await ask(pb_server.user("learner@example.com").token, "Een vraag terwijl de log uit staat")
    assert rows_of(admin_pb, "Een vraag terwijl de log uit staat") == []
    audit = admin_pb.first("audit_log", f'tenant = "{demo["id"]}" && tool ~ "question_log"', sort="-created")
    assert audit is not None  # who switched it, audited as every chatbot setting is
    services().access.set_question_log(Tenant(demo["id"], "demo", demo["name"]), True, "", "test")
    api_env.reply_text("Antwoord.")
    await ask(pb_server.user("learner@example.com").token, "Een vraag nu de log weer aan staat")
    assert len(rows_of(admin_pb, "Een vraag nu de log weer aan staat")) == 1


async def test_only_the_app_reads_the_log_and_nobody_writes_it(api_env, pb_server, admin_pb, log_on):
    api_env.reply_text("Antwoord.")
    await ask(pb_server.user("learner@example.com").token, "Wie mag deze vraag lezen?")
    [row] = rows_of(admin_pb, "Wie mag deze vraag lezen?")
    assert row["question"] == "Wie mag deze vraag lezen?" and len(row["user_key"]) == 32  # the app reads it all
    # (issue 44) not even the tenant's admins read the raw log: its order and times tie one person's questions
    # together; they see what was asked through /admin/gaps
    for email in ("admin@example.com", "learner@example.com", "admin@acme.example", "learner@acme.example"):
        client = pb_server.user(email)
        with pytest.raises(PBError) as refused:
            client.all("question_log", filter=f'id = "{row["id"]}"')
        assert refused.value.status == 403, email
        with pytest.raises(PBError):
            client.get("question_log", row["id"])
    for email in ("learner@example.com", "admin@example.com"):
        client = pb_server.user(email)
        with pytest.raises(PBError) as refused:
            client.create("question_log", {"tenant": row["tenant"], "user_key": "0" * 32, "question": "nep",
                                           "channel": "api"})
        assert refused.value.status in (400, 403, 404), refused.value
        with pytest.raises(PBError):
            client.update("question_log", row["id"], {"question": "veranderd"})
        with pytest.raises(PBError):
            client.delete("question_log", row["id"])
    assert admin_pb.get("question_log", row["id"])["question"] == "Wie mag deze vraag lezen?"


async def test_retention_deletes_only_rows_past_it_and_forget_only_that_users(api_env, pb_server, admin_pb, log_on):
    from r42_app.container import services

    log = services().questions
    demo = admin_pb.first("tenants", 'slug = "demo"')
    ids = {e: pb_server.user(e).me()["id"] for e in ("learner@example.com", "sanne@example.com")}
    for email, user_id in ids.items():
        log.record(QuestionEntry(demo["id"], log.user_key(demo["id"], user_id), f"Bewaarvraag van {email}"))
    now = datetime.now(UTC)
    mine = lambda: {r["question"] for r in admin_pb.all("question_log", filter='question ~ "Bewaarvraag van"')}  # noqa: E731
    assert log.prune(90, now=now + timedelta(days=89)) >= 0 and len(mine()) == 2  # not yet 90 days old
    assert log.forget(demo["id"], ids["learner@example.com"]) >= 1
    assert mine() == {"Bewaarvraag van sanne@example.com"}  # only that learner's rows went
    assert log.prune(90, now=now + timedelta(days=91)) >= 1
    assert mine() == set()
    await rebuild_services()


async def test_a_thumbs_down_reaches_the_questions_row(api_env, pb_server, admin_pb, log_on):
    from r42_app.container import services

    learner = pb_server.user("learner@example.com")
    api_env.reply_text("Een antwoord dat niet hielp.")
    events = await ask(learner.token, "Welke vraag kreeg een duim omlaag?")
    log = services().questions
    assert log.set_feedback(learner.me()["tenant"], learner.me()["id"], "Welke vraag kreeg een duim omlaag?", "down")
    [row] = admin_pb.all("question_log", filter=f'turn_id = "{events[-1]["turn_id"]}"')
    assert row["feedback"] == "down"
    assert log.set_feedback(learner.me()["tenant"], learner.me()["id"], "Nooit gesteld", "down") is False
    api_env.reply_text("Een antwoord.")  # letters outside ASCII: the filter must still find the written row
    events = await ask(learner.token, "Wat is een één-op-één gesprek … precies?")
    assert log.set_feedback(learner.me()["tenant"], learner.me()["id"], "Wat is een één-op-één gesprek … precies?", "up")
    [row] = admin_pb.all("question_log", filter=f'turn_id = "{events[-1]["turn_id"]}"')
    assert row["feedback"] == "up"
    with pytest.raises(ValueError):
        log.set_feedback(learner.me()["tenant"], learner.me()["id"], "x", "meh")


def test_the_question_log_key_lives_in_pocketbase_taking_over_an_older_data_dirs_file(admin_pb, tmp_path):
    """Kept in PocketBase (so backups hold it; superuser only); an older data dir's `question-log.secret` is taken
    over once, so the keys already in the log stay valid; later the file no longer matters."""
    import httpx

    from r42_app.services.store.app_secrets import stored_secret

    name = f"test_key_{tmp_path.name[-8:].lower().replace('-', '_')}"
    legacy = tmp_path / "question-log.secret"
    legacy.write_text("an-older-secret-of-32-characters\n")
    try:
        assert stored_secret(admin_pb, name, legacy) == "an-older-secret-of-32-characters"
        legacy.write_text("another-one-written-later-000000\n")
        assert stored_secret(admin_pb, name, legacy) == "an-older-secret-of-32-characters"
        fresh = stored_secret(admin_pb, name + "_new", tmp_path / "missing")
        assert len(fresh) == 32 and fresh == stored_secret(admin_pb, name + "_new")
        for rule in ("", "Bearer nobody"):  # nobody but the superuser reads it
            resp = httpx.get(f"{admin_pb.base_url}/api/collections/app_secrets/records", headers={"Authorization": rule})
            assert resp.status_code in (401, 403) or resp.json().get("items") == []
    finally:
        for row in admin_pb.all("app_secrets", filter=f'name ~ "{name}"'):
            admin_pb.delete("app_secrets", row["id"])
