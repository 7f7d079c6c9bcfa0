"""`r42 user forget` leaves nobody behind (issue 44, finding 5). A learner does everything a learner can: asks
questions, rates an answer, proposes an edit, gets an access row and a quiz session, and confirms a high-risk tool call
of R42's own MCP demo server that leaves a message with her full name and phone number. After the forget, every row of
every PocketBase collection (listed by the superuser API, system collections included) and every file of the data dir
(recursively, PocketBase's databases included: the forget compacts them, so no deleted text lingers in free pages or
the write-ahead log) is searched for her e-mail address and her name. Real PocketBase, real MCP servers over stdio,
the fake model through the real SDK."""

import json
import sys
import uuid
from pathlib import Path

import pytest

from r42_app.chat.external import create_mcp_external_tools_provider
from r42_app.chat.external_runtime import ExternalRuntime
from r42_app.chat.tools import builtin_registry
from r42_app.chat.turn import ChatDeps, run_turn
from r42_app.core.delta import DeltaTopic, ValidDelta
from r42_app.core.mcp import McpConfig, McpServerSpec
from r42_app.core.questions import QuestionEntry
from r42_app.services.adapters.llm import AnthropicLLM
from r42_app.services.adapters.mcp import McpHub, McpRegistry
from r42_app.services.runtime.shared_state import MemorySharedState, SharedRateLimiter
from r42_app.services.store.access import AccessStore
from r42_app.services.store.app_secrets import stored_secret
from r42_app.services.store.audit import ToolAudit
from r42_app.services.store.auth import AuthService
from r42_app.services.store.feedback import FeedbackStore
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.questions import QuestionLog
from r42_app.services.store.quiz_store import QuizStore
from r42_app.services.store.suggestions import SuggestionStore
from tests.conftest import DEMO_PASSWORD
from tests.integration.test_cli_kb import run_cli

pytestmark = pytest.mark.anyio
R42 = str(Path(sys.executable).parent / "r42")
PHONE = "06-48151623"


def collections(admin_pb) -> list[str]:
    return [c["name"] for c in admin_pb.send("GET", "/api/collections", params={"perPage": 500})["items"]]


def rows_naming(admin_pb, *needles: str) -> dict[str, list[str]]:
    """Every collection's every row (every field, hidden ones too: the superuser reads them), as JSON: the ids of the
    rows that hold a needle, ignoring case."""
    hits: dict[str, list[str]] = {}
    for name in collections(admin_pb):
        for row in admin_pb.iter_all(name):
            text = json.dumps(row, ensure_ascii=False).lower()
            if any(n.lower() in text for n in needles):
                hits.setdefault(name, []).append(row["id"])
    return hits


def files_naming(data_dir: Path, *needles: str) -> dict[str, list[str]]:
    """Every file under the data dir, as bytes: the needles it holds, ignoring case."""
    hits = {}
    for path in sorted(data_dir.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        try:
            data = path.read_bytes().lower()
        except OSError:  # gone meanwhile (a journal)
            continue
        found = [n for n in needles if n.lower().encode() in data]
        if found:
            hits[str(path.relative_to(data_dir))] = found
    return hits


@pytest.fixture
def vera(admin_pb, seeded):
    """A learner of demo, named uniquely (the session's PocketBase and data dir are shared with other tests)."""
    tag = uuid.uuid4().hex[:6]
    email, name = f"vera.vergeten.{tag}@example.com", f"Vera Vergeten-{tag}"
    demo = admin_pb.first("tenants", 'slug = "demo"')
    row = admin_pb.create("users", {"email": email, "password": DEMO_PASSWORD, "passwordConfirm": DEMO_PASSWORD,
                                    "name": name, "role": "learner", "tenant": demo["id"], "verified": True})
    yield email, name, row
    if admin_pb.first("users", f'id = "{row["id"]}"') is not None:  # the test failed before the forget
        admin_pb.delete("users", row["id"])
    # her suggestion stays after a forget (anonymous, pending): other tests count the demo tenant's pending ones
    for left in admin_pb.all("suggestions", filter=f'delta ~ "verlof-voor-vera-{tag}"'):
        admin_pb.delete("suggestions", left["id"])


@pytest.fixture
async def demo_server(pb_server):
    """R42's MCP demo server, writing its messages where `r42 serve` has it write them (the data dir's file, the one
    /admin/tools shows)."""
    messages = pb_server.data_dir / "mcp-demo-messages.jsonl"
    registry = McpRegistry()
    config = McpConfig(servers=(McpServerSpec("r42demo", R42, ("mcp", "demo-server"),
                                              {"R42_MCP_DEMO_MESSAGES": str(messages)}),),
                       high_risk=frozenset({"r42demo__send_message"}), calls_per_minute=5)
    hub = McpHub(config, registry)
    await hub.start(wait=30)
    assert [s.state for s in hub.statuses()] == ["connected"], hub.statuses()
    yield registry, messages
    await hub.stop()


async def confirmed_tool_call(user, indexed, claude, admin_pb, registry, text):
    """The learner asks R42 to leave the admins a message; the model calls the high-risk tool; she allows it."""
    kb, _, _, retriever = indexed
    tools = builtin_registry()
    tools.add_provider(create_mcp_external_tools_provider(registry))
    llm = AnthropicLLM("test-key", "claude-test", base_url=claude.url, max_retries=0)
    tool_limit = SharedRateLimiter(MemorySharedState(), "tool", per_minute=5, burst=5)
    deps = ChatDeps(retriever=retriever, kb=kb, llm=llm, guards=AccessStore(admin_pb), tools=tools,
                    external=ExternalRuntime(ToolAudit(admin_pb), tool_limit))
    claude.reply_tool("r42demo__send_message", {"subject": "Graag terugbellen", "text": text})
    claude.reply_text("Je bericht is verstuurd.")
    try:
        turn = run_turn(user, [{"role": "user", "content": "Laat de beheerders weten dat ze me moeten bellen"}],
                        deps, "fts")
        async for event in turn:
            if event.type == "confirm_required":
                await deps.external.broker.answer(event.to_json()["id"], user.id, "allow")
        return [r for r in admin_pb.all("audit_log", filter=f'user = "{user.id}"') if r["tool"].startswith("mcp:")]
    finally:
        await llm.aclose()


async def test_forget_leaves_her_in_no_collection_and_no_file(vera, pb_server, admin_pb, indexed, claude,
                                                               demo_server):
    email, name, row = vera
    uid = row["id"]
    registry, messages = demo_server
    tenant = KBStore(admin_pb).require_tenant("demo")
    admin = admin_pb.first("users", 'email = "admin@example.com"')
    user = AuthService(pb_server.url, pb_server.admin_client()).sign_in(email, DEMO_PASSWORD).user

    # everything a learner does
    access = AccessStore(admin_pb)
    assert access.user_by_email(tenant, email)["id"] == uid  # (an admin's lookup: her address in a URL)
    access.set_override(tenant, uid, "external_tools", "grant", admin["id"], admin["email"])  # audited
    calls = await confirmed_tool_call(user, indexed, claude, admin_pb, registry,
                                      f"Dit is {name} ({email}). Bel me op {PHONE} over mijn verlof.")
    assert [c["status"] for c in calls] == ["ok"] and calls[0]["confirmed_by"] == email
    log = QuestionLog(admin_pb, stored_secret(admin_pb, "question_log"))
    log.record(QuestionEntry(tenant.id, log.user_key(tenant.id, uid), f"Ik ben {name}, hoe vraag ik verlof aan?"))
    log.record(QuestionEntry(tenant.id, log.user_key(tenant.id, uid), "Hoeveel verlofdagen heb ik?"))
    someone = log.user_key(tenant.id, "someone-else")  # another learner's question that names her
    log.record(QuestionEntry(tenant.id, someone, f"Waarom krijgt {name.upper()} meer verlof dan ik?"))
    FeedbackStore(admin_pb).record(tenant.id, uid, "down", "Hoeveel verlofdagen heb ik?", "Twintig.", [], "m-vera")
    slug = f"verlof-voor-vera-{email.split('@')[0].rsplit('.', 1)[1]}"  # the fixture removes it afterwards
    SuggestionStore(admin_pb, KBStore(admin_pb)).append_suggestion(tenant, uid, ValidDelta(
        f"{name} ({email}) vraagt om een onderwerp over verlof",
        (DeltaTopic(slug, "Verlof", "concept", f"Aangevraagd door {name}, {email}"),), ()))
    QuizStore(admin_pb).start(tenant, uid)
    admin_pb.create("ai_cost_events", {"tenant": tenant.id, "user": uid, "capability": "qa_help",
                                       "source": f"turn-{uid}", "model": "claude-test", "credits": 1.0})
    with messages.open("a", encoding="utf-8") as fh:  # another learner's message that names her
        fh.write(json.dumps({"at": "2026-12-04T10:00:00+00:00", "tenant": "demo", "user": "sanne@example.com",
                             "subject": "Collega", "text": f"Kan {name} mij terugbellen?"}) + "\n")

    before = rows_naming(admin_pb, email, name)
    assert {"users", "audit_log", "question_log", "suggestions"} <= set(before), before  # the search finds her
    assert "mcp-demo-messages.jsonl" in files_naming(pb_server.data_dir, email, name)

    out = run_cli(pb_server, "user", "forget", "--tenant", "demo", "--email", email, "--json")
    assert out.returncode == 0, out.stderr
    pseudonym = json.loads(out.stdout)["pseudonym"]

    assert rows_naming(admin_pb, email, name, uid) == {}
    assert files_naming(pb_server.data_dir, email, name, PHONE) == {}
    # what stays, stays: her tool call (who and what she wrote gone), the other learner's question and message
    [call] = [admin_pb.get("audit_log", c["id"]) for c in calls]
    assert call["status"] == "ok" and call["tool"] == "mcp:r42demo__send_message"
    assert call["user"] == "" and call["confirmed_by"] == pseudonym and PHONE not in json.dumps(call)
    assert admin_pb.all("question_log", filter=f'user_key = "{someone}"')[0]["question"] == \
        f"Waarom krijgt {pseudonym} meer verlof dan ik?"
    kept = [json.loads(line) for line in messages.read_text(encoding="utf-8").splitlines()]
    assert not [m for m in kept if m["user"] == email]
    assert {"user": "sanne@example.com", "text": f"Kan {pseudonym} mij terugbellen?"}.items() <= kept[-1].items()
