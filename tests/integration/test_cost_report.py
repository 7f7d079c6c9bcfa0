"""The cost report (issue 12): events persisted over several days build the daily rollup in the same
transaction, and the report and `r42 costs report` read totals that equal the events exactly."""

import csv
import io
import json
from datetime import date, datetime, timezone

import pytest

from r42_app.core.costs import AICostEvent, Usage, event_id
from r42_app.services.outbox.costs import CostPersister
from r42_app.services.store.costs import CostReports
from r42_app.services.store.kb_store import KBStore
from tests.conftest import throwaway_user
from tests.integration.test_cli_kb import run_cli


@pytest.fixture
def tenant(admin_pb, seeded):
    """A tenant of its own (so other tests' chats do not add to its report), removed afterwards."""
    store = KBStore(admin_pb)
    t, _ = store.ensure_tenant("kosten-test", "Kosten Test")
    yield t
    admin_pb.delete("tenants", t.id)


def event(tenant, user_id, turn, source, usage, usd):
    capability = source.split(":")[1]
    return AICostEvent(event_id(turn, capability), tenant.id, user_id, turn,
                       "chat-stream" if capability == "chat_general" else "tool-call", source, "claude-haiku-4-5",
                       usage, usd, round(usd / 0.001, 6))


def at(day):
    return lambda: datetime.fromisoformat(day + "T12:00:00").replace(tzinfo=timezone.utc)


@pytest.fixture
def persisted(admin_pb, tenant):
    """Six events over three days and two users, persisted as the outbox consumer does."""
    with throwaway_user(admin_pb, name="Anna Kost", prefix="kost", tenant_slug="kosten-test") as (_e1, anna), \
            throwaway_user(admin_pb, name="Bas Kost", prefix="kost", tenant_slug="kosten-test") as (_e2, bas):
        plan = [("2026-11-03", anna, "t1", "chatbot:kb_search", Usage(1200, 40, 1000, 0), 0.00265),
                ("2026-11-03", anna, "t1", "chatbot:chat_general", Usage(1500, 200, 0, 1000), 0.0026),
                ("2026-11-03", bas, "t2", "chatbot:chat_general", Usage(800, 100, 0, 0), 0.0013),
                ("2026-11-04", bas, "t3", "chatbot:data_write", Usage(600, 60, 0, 0), 0.0009),
                ("2026-11-05", anna, "t4", "chatbot:chat_general", Usage(1000, 100, 0, 2000), 0.0017),
                ("2026-11-05", anna, "t4", "chatbot:kb_search", Usage(100, 10, 0, 0), 0.00015)]
        events = []
        for day, user, turn, source, usage, usd in plan:
            e = event(tenant, user["id"], f"{tenant.id}-{turn}", source, usage, usd)
            assert CostPersister(admin_pb, clock=at(day)).persist(e, unlimited=False)
            events.append(e)
        yield events


def test_the_rollup_and_the_report_equal_the_events(admin_pb, tenant, persisted):
    report = CostReports(admin_pb).report(tenant, date(2026, 11, 1), date(2026, 11, 30))
    assert report.total.events == 6
    assert report.total.usage == sum((e.usage for e in persisted), Usage())
    assert report.total.cost_usd == pytest.approx(sum(e.cost_usd for e in persisted))
    assert report.total.credits == pytest.approx(sum(e.credits for e in persisted))
    assert report.total.cache_read_share == pytest.approx(3000 / (5200 + 1000 + 3000))
    assert [line.key for line in report.by_capability] == ["chat_general", "kb_search", "data_write"]
    assert {line.key: line.events for line in report.by_user} == {"Anna Kost": 4, "Bas Kost": 2}
    assert len(report.days) == 30 and report.by_day["2026-11-04"] == {"data_write": pytest.approx(0.0009)}
    assert report.by_day["2026-11-10"] == {}  # days without cost are in the chart too
    assert admin_pb.get("tenants", tenant.id)["credits"] == pytest.approx(1000 - sum(e.credits for e in persisted))


def test_persisting_an_event_again_changes_nothing(admin_pb, tenant, persisted):
    before = CostReports(admin_pb).report(tenant, date(2026, 11, 1), date(2026, 11, 30)).total
    assert CostPersister(admin_pb, clock=at("2026-11-06")).persist(persisted[0], unlimited=False) is False
    after = CostReports(admin_pb).report(tenant, date(2026, 11, 1), date(2026, 11, 30)).total
    assert after == before


def test_a_narrower_range_and_the_csv_export(admin_pb, tenant, persisted):
    reports = CostReports(admin_pb)
    assert reports.report(tenant, date(2026, 11, 4), date(2026, 11, 5)).total.events == 3
    rows = list(csv.DictReader(io.StringIO(reports.events_csv(tenant, date(2026, 11, 1), date(2026, 12, 31)))))
    assert len(rows) == 6 and {r["source"] for r in rows} == {"chatbot:kb_search", "chatbot:chat_general",
                                                              "chatbot:data_write"}
    with pytest.raises(ValueError, match="before the start"):
        reports.report(tenant, date(2026, 11, 5), date(2026, 11, 4))


def test_the_cli_report(pb_server, tenant, persisted):
    out = run_cli(pb_server, "costs", "report", "--tenant", "kosten-test", "--since", "2026-11-01", "--until",
                  "2026-11-30", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["total"]["events"] == 6 and data["total"]["cost_usd"] == pytest.approx(0.0093)
    assert [r["capability"] for r in data["rows"]] == ["chat_general", "kb_search", "data_write"]
    by_user = run_cli(pb_server, "costs", "report", "--tenant", "kosten-test", "--since", "2026-11-01", "--until",
                      "2026-11-30", "--by", "user", "--csv")
    assert by_user.stdout.splitlines()[0].startswith("user,events") and "Anna Kost" in by_user.stdout
    table = run_cli(pb_server, "costs", "report", "--tenant", "kosten-test", "--since", "2026-11-03", "--until",
                    "2026-11-05", "--by", "day")
    assert "2026-11-04" in table.stdout and "6 events" in table.stdout
    bad = run_cli(pb_server, "costs", "report", "--tenant", "kosten-test", "--since", "gisteren")
    assert bad.returncode == 2 and "not a date" in bad.stderr


def test_a_drain_of_many_rows_writes_each_event_once_even_with_one_replayed_among_them(admin_pb, tenant):
    from r42_app.services.store.costs import OUTBOX_COST

    with throwaway_user(admin_pb, name="Cas Kost", prefix="kost", tenant_slug="kosten-test") as (_e, cas):
        events = [event(tenant, cas["id"], f"{tenant.id}-many{i}", "chatbot:chat_general", Usage(1000, 100), 0.0015)
                  for i in range(5)]
        assert CostPersister(admin_pb).persist(events[2], unlimited=False)  # already written before the drain
        rows = [admin_pb.create("outbox", {"type": OUTBOX_COST, "status": "pending", "attempts": 0,
                                           "payload": {"turn_id": e.turn_id, "tenant": e.tenant,
                                                       "events": [e.as_dict()]}})["id"] for e in events]
        stats = CostPersister(admin_pb).drain()  # (rows other tests left pending are drained too)
        assert stats.events >= 4 and stats.duplicates >= 1
        assert all(admin_pb.get("outbox", r)["status"] == "done" for r in rows)
        stored = admin_pb.all("ai_cost_events", filter=f'tenant = "{tenant.id}"')
        assert len(stored) == 5
        assert admin_pb.get("tenants", tenant.id)["credits"] == pytest.approx(1000 - 5 * 1.5)
        report = CostReports(admin_pb).report(tenant, date(2020, 1, 1), date(2020, 12, 31))
        assert report.total.events == 0  # other days: nothing


def test_an_event_of_a_user_deleted_since_is_kept_without_the_user(admin_pb, tenant):
    with throwaway_user(admin_pb, name="Dirk Weg", prefix="kost", tenant_slug="kosten-test") as (_e, dirk):
        gone = event(tenant, dirk["id"], f"{tenant.id}-gone", "chatbot:chat_general", Usage(500, 50), 0.00075)
    assert CostPersister(admin_pb).persist(gone, unlimited=False)  # the user was deleted meanwhile
    stored = admin_pb.get("ai_cost_events", gone.id)
    assert stored["user"] == "" and stored["input_tokens"] == 500


def test_a_row_of_a_tenant_deleted_since_is_dropped_not_failed(pb_server, admin_pb):
    """Its costs went with the tenant: the row is done, and `r42 worker --once --role cost` does not report a failure
    (exit 0) for something no retry can change."""
    from r42_app.services.store.costs import OUTBOX_COST

    row = admin_pb.create("outbox", {"type": OUTBOX_COST, "status": "pending", "attempts": 0, "payload": {
        "turn_id": "gone-tenant", "tenant": "nosuchtenant123", "events": [
            {"id": "gonetenant00001", "tenant": "nosuchtenant123", "user": "", "turn_id": "gone-tenant",
             "capability": "chat-stream", "source": "chatbot:chat_general", "model": "m", "credits": 1.0}]}})
    done = run_cli(pb_server, "worker", "--once", "--role", "cost")
    assert done.returncode == 0, done.stdout + done.stderr
    assert admin_pb.get("outbox", row["id"])["status"] == "done"
