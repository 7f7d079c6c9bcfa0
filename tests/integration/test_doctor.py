"""`r42 doctor` (issue 14): every check with OK / WARN / FAIL and the command that fixes it; a broken
index is a FAIL with its fix and exit status 1."""

import json

from r42_app.services.kb_store import KBStore
from tests.integration.test_cli_kb import run_cli


def test_the_doctor_reports_a_broken_index_as_fail_with_the_fix(pb_server, admin_pb, seeded):
    kb = KBStore(admin_pb)
    tenant, _ = kb.ensure_tenant("dokter")
    kb.create_topic(tenant, {"id": "ziekte", "label": "Ziekte", "type": "concept", "description": "Niet geïndexeerd."})
    admin_pb.update("tenants", tenant.id, {"credits": 0})
    try:
        out = run_cli(pb_server, "doctor", "--tenant", "dokter", "--json")
        assert out.returncode == 1, out.stderr  # a FAIL
        checks = {c["name"]: c for c in json.loads(out.stdout)}
        index = checks["index dokter"]
        assert index["status"] == "FAIL" and index["fix"] == "r42 chatbot rag-backfill --tenant dokter --now"
        assert checks["pocketbase"]["status"] == "OK" and "pocketbase version" in checks["pocketbase"]["detail"]
        assert checks["embedding model"]["status"] == "OK" and "384 dimensions" in checks["embedding model"]["detail"]
        assert checks["credits dokter"]["status"] == "WARN" and "r42 credits add" in checks["credits dokter"]["fix"]
        assert {"outbox backlog", "outbox failures", "cost tracking", "mcp"} <= set(checks)
        assert "leased by a worker right now" in checks["outbox backlog"]["detail"]
        assert checks["rag snippets"]["status"] == "OK" and checks["injection model"]["status"] == "OK"
        text = run_cli(pb_server, "doctor", "--tenant", "dokter")
        assert "FAIL  index dokter" in text.stdout and "fix: r42 chatbot rag-backfill --tenant dokter --now" in text.stdout
        unknown = run_cli(pb_server, "doctor", "--tenant", "nergens")
        assert unknown.returncode == 2 and "unknown tenant" in unknown.stderr
    finally:
        admin_pb.delete("tenants", tenant.id)


def test_the_doctor_says_when_rag_snippets_are_switched_off(pb_server, seeded, monkeypatch):
    monkeypatch.setenv("R42_RAG_SNIPPETS_ENABLED", "false")
    checks = {c["name"]: c for c in json.loads(run_cli(pb_server, "doctor", "--tenant", "demo", "--json").stdout)}
    assert checks["rag snippets"]["status"] == "WARN" and "R42_RAG_SNIPPETS_ENABLED=false" in checks["rag snippets"]["detail"]
