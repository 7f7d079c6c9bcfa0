"""`r42 chatbot` capability commands as an operator runs them, against a real PocketBase: grant, deny,
inherit, access, enable/disable and migrate-legacy; bad input exits 2 and writes nothing; every
change is audited as the CLI."""

import json

import pytest

from r42_app.core.capabilities import CAPABILITIES
from tests.conftest import throwaway_user
from tests.integration.test_cli_kb import run_cli

pytestmark = pytest.mark.slow  # heavy: the CLI as a subprocess, many times (~15 s)


@pytest.fixture(autouse=True)
def new_tenant_default(admin_pb, seeded):
    """Demo with the default of a new tenant (the seeded demo also has external_tools), restored afterwards."""
    demo = admin_pb.first("tenants", 'slug = "demo"')
    admin_pb.update("tenants", demo["id"], {"chatbot_default_capabilities": ["qa_help", "kb_search", "data_write"]})
    yield
    admin_pb.update("tenants", demo["id"], {"chatbot_default_capabilities": demo["chatbot_default_capabilities"]})


@pytest.fixture
def someone(admin_pb, seeded):
    """A throw-away learner of tenant demo, with its access row and audit rows removed afterwards."""
    with throwaway_user(admin_pb, name="Cli Test", prefix="cli") as (email, row):
        yield email, row["id"]


def access_of(pb_server, email):
    out = run_cli(pb_server, "chatbot", "access", "--tenant", "demo", "--email", email, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_deny_grant_and_inherit_change_the_effective_set_and_are_audited(pb_server, admin_pb, someone):
    email, user_id = someone
    assert access_of(pb_server, email)["users"][0]["effective"] == ["qa_help", "kb_search", "data_write"]
    out = run_cli(pb_server, "chatbot", "user-deny", "--tenant", "demo", "--email", email, "--capability", "kb_search")
    assert out.returncode == 0 and "qa_help,kb_search,data_write -> qa_help,data_write" in out.stdout
    run_cli(pb_server, "chatbot", "user-grant", "--tenant", "demo", "--email", email, "--capability", "external_tools")
    user = access_of(pb_server, email)["users"][0]
    assert user["effective"] == ["qa_help", "data_write", "external_tools"]
    assert user["overrides"]["kb_search"] == "deny" and user["overrides"]["external_tools"] == "grant"
    run_cli(pb_server, "chatbot", "user-inherit", "--tenant", "demo", "--email", email, "--capability", "kb_search")
    assert access_of(pb_server, email)["users"][0]["effective"] == ["qa_help", "kb_search", "data_write",
                                                                     "external_tools"]
    audit = admin_pb.all("audit_log", filter=f'tool = "chatbot.access" && arguments.target = "{email}"')
    assert len(audit) == 3 and all(a["arguments"]["actor"] == "cli" for a in audit)
    row = admin_pb.first("chatbot_access", f'user = "{user_id}"')
    assert row["capability_scopes"] == ["qa_help", "kb_search", "data_write", "external_tools"]  # the projection


@pytest.mark.parametrize("args,message", [
    (["--tenant", "nergens", "--email", "x@example.com", "--capability", "kb_search"], "unknown tenant 'nergens'"),
    (["--tenant", "demo", "--email", "niemand@example.com", "--capability", "kb_search"], "no user"),
    (["--tenant", "demo", "--email", "learner@example.com", "--capability", "vliegen"], "invalid choice"),
])
def test_bad_input_exits_2_lists_what_is_valid_and_writes_nothing(pb_server, admin_pb, seeded, args, message):
    rows, audits = len(admin_pb.all("chatbot_access")), len(admin_pb.all("audit_log"))
    out = run_cli(pb_server, "chatbot", "user-deny", *args)
    assert out.returncode == 2 and message in out.stderr
    if "vliegen" in args:
        assert all(c in out.stderr for c in CAPABILITIES)
    assert len(admin_pb.all("chatbot_access")) == rows and len(admin_pb.all("audit_log")) == audits


def test_disable_and_enable_the_tenant(pb_server, admin_pb, seeded):
    try:
        out = run_cli(pb_server, "chatbot", "disable", "--tenant", "acme")
        assert out.returncode == 0 and "R42 is off for acme" in out.stdout
        assert admin_pb.first("tenants", 'slug = "acme"')["chatbot_enabled"] is False
        assert "R42 OFF" in run_cli(pb_server, "chatbot", "access", "--tenant", "acme").stdout
    finally:
        out = run_cli(pb_server, "chatbot", "enable", "--tenant", "acme")
    assert out.returncode == 0 and admin_pb.first("tenants", 'slug = "acme"')["chatbot_enabled"] is True


@pytest.fixture
def access_rows_restored(admin_pb):
    """`migrate-legacy --tenant *` converts the seeded legacy row too: put every row back afterwards."""
    before = {r["id"]: r for r in admin_pb.all("chatbot_access")}
    yield
    for row_id, row in before.items():
        admin_pb.update("chatbot_access", row_id, {"capability_scopes": row["capability_scopes"],
                                                   "overrides": row["overrides"]})


def test_migrate_legacy_keeps_each_effective_set(pb_server, admin_pb, someone, access_rows_restored):
    email, user_id = someone
    demo = admin_pb.first("tenants", 'slug = "demo"')
    admin_pb.create("chatbot_access", {"tenant": demo["id"], "user": user_id,
                                       "capability_scopes": ["qa_help", "external_tools"], "overrides": None})
    before = access_of(pb_server, email)["users"][0]
    assert before["source"] == "legacy" and before["effective"] == ["qa_help", "external_tools"]

    dry = run_cli(pb_server, "chatbot", "migrate-legacy", "--tenant", "demo", "--dry-run")
    assert f"{email}: qa_help,external_tools -> qa_help,external_tools" in dry.stdout and "dry run" in dry.stdout
    assert access_of(pb_server, email)["users"][0]["source"] == "legacy"

    out = run_cli(pb_server, "chatbot", "migrate-legacy", "--tenant", "*")
    assert out.returncode == 0, out.stderr
    after = access_of(pb_server, email)["users"][0]
    assert after["source"] == "overrides" and after["effective"] == before["effective"]
    assert after["overrides"] == {"qa_help": "inherit", "kb_search": "deny", "data_write": "deny",
                                  "external_tools": "grant"}
