"""Issue 21, hole 6: `data_write` denied means no suggestion either, for every writer. PocketBase's hook
resolves the user's capabilities as core/capabilities.py does (tenant switch, default, legacy list,
overrides, the rollback switch): a table of stored rows, written into the real PocketBase, must get the
same answer from the hook as from the app's own resolver."""

from contextlib import ExitStack

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from r42_app.api import api
from r42_app.core.capabilities import CAPABILITIES, DATA_WRITE, DEFAULT_CAPABILITIES
from r42_app.core.delta import GraphSnapshot, ValidDelta, validate_delta
from r42_app.services.runtime.pb_server import PocketBaseServer, ensure_superuser
from r42_app.services.store.access import AccessStore
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.pb import PBError, PocketBase, quote
from r42_app.services.store.suggestions import SuggestionStore
from tests.conftest import examples, free_port, throwaway_user, user_token

DENIED = "Je mag geen aanvullingen op de kennisbank doen; vraag je beheerder."
DELTA = {"reason": "Het wezenpensioen ontbreekt.",
         "topics": [{"id": "dw-wezenpensioen", "label": "DW wezenpensioen", "type": "concept",
                     "description": "Uitkering aan kinderen."}],
         "relations": [{"source": "dw-wezenpensioen", "target": "nabestaandenpensioen", "type": "part_of"}]}


@pytest.fixture
def daan(pb_server, seeded, admin_pb):
    """The demo user whose `data_write` is denied (an override), with their token; their suggestions go after."""
    demo = KBStore(admin_pb).require_tenant("demo")
    row = admin_pb.first("users", 'email = "daan@example.com"')
    yield demo, row, pb_server.user("daan@example.com")
    for r in admin_pb.all("suggestions", filter=f"user = {quote(row['id'])}"):
        admin_pb.delete("suggestions", r["id"])


def suggestions_of(admin_pb, user_id):
    return admin_pb.all("suggestions", filter=f"user = {quote(user_id)}")


def test_daan_files_no_suggestion_straight_through_the_rest_api(daan, admin_pb):
    demo, me, client = daan
    with pytest.raises(PBError) as err:
        client.create("suggestions", {"tenant": demo.id, "user": me["id"], "delta": DELTA,
                                      "reason": DELTA["reason"], "status": "pending"})
    assert err.value.status == 403 and err.value.message == DENIED
    assert suggestions_of(admin_pb, me["id"]) == []


@pytest.mark.anyio
async def test_the_app_is_refused_the_same_for_daan_on_every_path(daan, admin_pb, app_env):
    demo, me, client = daan
    kb = KBStore(admin_pb)
    graph = kb.load(demo)
    checked = validate_delta(DELTA, GraphSnapshot(graph.topics, graph.relations))
    assert isinstance(checked, ValidDelta)
    with pytest.raises(PBError) as err:  # the app's superuser connection, filing for daan: refused as well
        SuggestionStore(admin_pb, kb).append_suggestion(demo, me["id"], checked)
    assert err.value.status == 403 and err.value.message == DENIED
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as http:
        resp = await http.post("/api/chat/delta", json={"delta": DELTA},
                               headers={"Authorization": f"Bearer {client.token}"})
    assert resp.status_code == 403 and resp.json()["type"] == "capability_denied"
    assert suggestions_of(admin_pb, me["id"]) == []


# -- the hook and the Python resolver agree ------------------------------------------------------------

NO_ROW = None
TABLE = [  # (name, chatbot_enabled, chatbot_default_capabilities, chatbot_access row or NO_ROW)
    ("default, no row", True, ["qa_help", "kb_search", "data_write"], NO_ROW),
    ("default without data_write", True, ["qa_help", "kb_search"], NO_ROW),
    ("empty default", True, [], NO_ROW),
    ("no default stored: the built-in one", True, None, NO_ROW),
    ("default not a list", True, "data_write", NO_ROW),
    ("default with unknown ids", True, ["data_write", "foo", 7], NO_ROW),
    ("R42 off for the tenant", False, ["qa_help", "data_write"], NO_ROW),
    ("R42 off, grant", False, ["qa_help"], {"capability_scopes": [], "overrides": {"data_write": "grant"}}),
    ("empty row", True, ["data_write"], {"capability_scopes": [], "overrides": {}}),
    ("legacy list with data_write", True, ["qa_help"],
     {"capability_scopes": ["qa_help", "data_write"], "overrides": {}}),
    ("legacy list without data_write", True, ["data_write"], {"capability_scopes": ["qa_help"], "overrides": {}}),
    ("legacy list of unknown ids", True, ["data_write"], {"capability_scopes": ["foo"], "overrides": {}}),
    ("override deny", True, ["qa_help", "data_write"], {"capability_scopes": [], "overrides": {"data_write": "deny"}}),
    ("override grant", True, ["qa_help"], {"capability_scopes": [], "overrides": {"data_write": "grant"}}),
    ("override inherit", True, ["data_write"], {"capability_scopes": [], "overrides": {"data_write": "inherit"}}),
    ("deny elsewhere", True, ["data_write"], {"capability_scopes": [], "overrides": {"qa_help": "deny"}}),
    ("V2 row: overrides win over its projection", True, ["qa_help"],
     {"capability_scopes": ["qa_help", "data_write"], "overrides": {"data_write": "deny"}}),
    ("V2 row, projection without data_write", True, ["data_write"],
     {"capability_scopes": ["qa_help"], "overrides": {"kb_search": "grant"}}),
    ("unknown override values only: a legacy list", True, ["data_write"],
     {"capability_scopes": ["qa_help"], "overrides": {"data_write": "DENY", "foo": "grant"}}),
    ("unknown override values, no list: the default", True, ["data_write"],
     {"capability_scopes": [], "overrides": {"data_write": "weg"}}),
    ("overrides not an object", True, ["data_write"], {"capability_scopes": [], "overrides": ["data_write", "deny"]}),
    ("scopes not a list", True, ["qa_help"], {"capability_scopes": "data_write", "overrides": {}}),
    ("scopes with odd items", True, ["qa_help"], {"capability_scopes": [1, None, "data_write"], "overrides": {}}),
]


class Bench:
    """A tenant and a learner of it in one PocketBase; `allowed` writes a case and asks both sides."""

    def __init__(self, admin: PocketBase, overrides_enabled: bool, stack: ExitStack):
        self.admin = admin
        self.tenant, _ = KBStore(admin).ensure_tenant("dw-table")
        stack.callback(lambda: admin.delete("tenants", self.tenant.id))
        _email, self.user = stack.enter_context(throwaway_user(admin, tenant_slug="dw-table", prefix="dw"))
        self.access = AccessStore(admin, overrides_enabled=overrides_enabled)

    def write(self, enabled, default, row) -> None:
        self.admin.update("tenants", self.tenant.id,
                          {"chatbot_enabled": enabled, "chatbot_default_capabilities": default})
        stored = self.admin.first("chatbot_access", f"user = {quote(self.user['id'])}")
        if row is None and stored:
            self.admin.delete("chatbot_access", stored["id"])
        elif row is not None and stored:
            self.admin.update("chatbot_access", stored["id"], row)
        elif row is not None:
            self.admin.create("chatbot_access", {"tenant": self.tenant.id, "user": self.user["id"], **row})

    def python_says(self) -> bool:
        chatbot, resolution = self.access.effective(self.tenant.id, self.user["id"])
        return chatbot.enabled and DATA_WRITE in resolution.effective

    def pocketbase_says(self) -> bool:
        try:
            row = self.admin.create("suggestions", {"tenant": self.tenant.id, "user": self.user["id"], "delta": DELTA,
                                                    "reason": "tabel", "status": "pending"})
        except PBError as exc:
            assert exc.status == 403, exc
            return False
        self.admin.delete("suggestions", row["id"])
        return True


@pytest.fixture(scope="module")
def bench(pb_server, admin_pb):
    with ExitStack() as stack:
        yield Bench(admin_pb, True, stack)


@pytest.fixture(scope="module")
def rollback_bench(tmp_path_factory):
    """A second PocketBase started with the app's rollback switch (R42_CAPABILITY_OVERRIDES_ENABLED=false)."""
    data = tmp_path_factory.mktemp("rollback")
    creds = ensure_superuser(data / "pb_data", data / "superuser.json")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("R42_CAPABILITY_OVERRIDES_ENABLED", "false")
        server = PocketBaseServer(data / "pb_data", free_port()).start()
    admin = PocketBase(server.url).as_superuser(creds.email, creds.password)
    try:
        with ExitStack() as stack:
            yield Bench(admin, False, stack)
    finally:
        admin.close()
        server.stop()


@pytest.mark.parametrize("overrides_enabled", [True, False], ids=["overrides", "rollback-switch"])
def test_the_hook_and_the_python_resolver_agree_on_a_table_of_rows(request, overrides_enabled):
    bench = request.getfixturevalue("bench" if overrides_enabled else "rollback_bench")
    answers = []
    for name, enabled, default, row in TABLE:
        bench.write(enabled, default, row)
        answers.append((name, bench.python_says(), bench.pocketbase_says()))
    assert [a for a in answers if a[1] != a[2]] == []
    assert {a[1] for a in answers} == {True, False}  # the table has both outcomes


IDS = st.sampled_from([*CAPABILITIES, "foo"])
stored_default = st.one_of(st.none(), st.lists(st.one_of(IDS, st.integers(0, 3)), max_size=5), st.just("data_write"))
stored_row = st.one_of(st.none(), st.fixed_dictionaries({
    "capability_scopes": st.one_of(st.lists(IDS, max_size=4), st.just("data_write"), st.none()),
    "overrides": st.one_of(st.dictionaries(IDS, st.sampled_from(["inherit", "grant", "deny", "DENY", 1]), max_size=4),
                           st.just(["data_write"]), st.none()),
}))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from([True, True, True, False]), stored_default, stored_row)
def test_the_hook_and_the_python_resolver_agree_on_any_stored_row(bench, enabled, default, row):
    bench.write(enabled, default, row)
    assert bench.pocketbase_says() == bench.python_says()


def test_a_learner_with_data_write_still_files_through_the_rest_api(pb_server, admin_pb, seeded):
    """The control: the same create by someone who may (the demo default has data_write) goes through."""
    with throwaway_user(admin_pb, prefix="dw-ok") as (email, me):
        client = PocketBase(pb_server.url, token=user_token(admin_pb, email))
        demo = admin_pb.first("tenants", 'slug = "demo"')
        assert DATA_WRITE in DEFAULT_CAPABILITIES
        client.create("suggestions", {"tenant": demo["id"], "user": me["id"], "delta": DELTA,
                                      "reason": DELTA["reason"], "status": "pending"})
        assert len(suggestions_of(admin_pb, me["id"])) == 1
