"""`r42 doctor` (issue 14): every check with OK / WARN / FAIL and the command that fixes it; a broken
index is a FAIL with its fix and exit status 1."""

import json

import pytest

from r42_app.services.store.kb_store import KBStore
from tests.integration.test_cli_kb import run_cli


@pytest.mark.slow  # the CLI as a subprocess, an index broken on purpose
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


# Random vectors for a tenant, written until Chroma has persisted the HNSW segment to disk: it does that every
# `hnsw:sync_threshold` adds (10,000 in the store's settings), here set to 1,000 so that 1,200 vectors do.
WRITE_VECTORS = """
import sys
import numpy as np
from r42_app.services.adapters import vector_store
from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.vector_store import VectorStore
vector_store.HNSW = {**vector_store.HNSW, "hnsw:batch_size": 100, "hnsw:sync_threshold": 1000}
path, tenant, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = VectorStore(path=__import__("pathlib").Path(path), model_id=make_embedder().model_id)
rng = np.random.default_rng(7)
v = rng.standard_normal((n, 384)).astype(np.float32)
v /= np.linalg.norm(v, axis=1, keepdims=True)
store.write(tenant, [(f"oud-{i // 3}#p-{i:010x}", f"oud-{i // 3}", v[i]) for i in range(n)])
print(store._segment_dirs()[__import__("r42_app.services.adapters.vector_store", fromlist=["x"]).collection_name(tenant, store.model_id)])
"""


@pytest.mark.slow  # a tenant indexed, damaged and rebuilt through the CLI
def test_a_damaged_segment_is_a_fail_whose_fix_rebuilds_it(pb_server, admin_pb, seeded):
    """A tenant's vector segment on disk is damaged (here: overwritten, as a full disk or a killed writer leaves
    it): `r42 doctor` FAILs that index with the command that rebuilds it, and that command brings it back."""
    import subprocess
    import sys

    kb = KBStore(admin_pb)
    tenant, _ = kb.ensure_tenant("kapot")
    for slug, text in (("hooiland", "De kwartelkoning roept 's nachts in het hooiland."),
                       ("weide", "Een weidevogel broedt in het voorjaar in natte graslanden.")):
        kb.create_topic(tenant, {"id": slug, "label": slug.title(), "type": "concept", "description": "Vogels.",
                                 "content": text})
    chroma = pb_server.data_dir / "chroma"
    try:
        # 1,200 vectors: above the sync threshold, so the HNSW segment is on disk (in another process: the
        # store's single-writer lock is held for a process's life)
        made = subprocess.run([sys.executable, "-c", WRITE_VECTORS, str(chroma), tenant.id, "1200"],
                              capture_output=True, text=True, timeout=300)
        assert made.returncode == 0, made.stderr
        segment = chroma / made.stdout.strip().splitlines()[-1]
        damaged = [f for f in segment.iterdir() if f.suffix == ".bin"]
        assert damaged, list(segment.iterdir())
        for f in damaged:
            f.write_bytes(b"\x00\xff" * 2048)

        out = run_cli(pb_server, "doctor", "--tenant", "kapot", "--json")
        assert out.returncode == 1, out.stdout + out.stderr
        index = {c["name"]: c for c in json.loads(out.stdout)}["index kapot"]
        assert index["status"] == "FAIL" and "cannot be read" in index["detail"], index
        assert index["fix"] == "r42 chatbot rag-backfill --tenant kapot --now --rebuild"

        fixed = run_cli(pb_server, "chatbot", "rag-backfill", "--tenant", "kapot", "--now", "--rebuild")
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        out = run_cli(pb_server, "doctor", "--tenant", "kapot", "--json")
        index = {c["name"]: c for c in json.loads(out.stdout)}["index kapot"]
        assert index["status"] == "OK" and "all 2 passages" in index["detail"], index
    finally:
        admin_pb.delete("tenants", tenant.id)
