"""`r42 kb import` / `export` as an operator runs them, against a real PocketBase."""

import json
import os
import subprocess
import sys

import pytest

from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.pb import BULK_BATCH
from r42_app.services.store.tenants import Tenants


def run_cli(pb_server, *args, input_text=None):
    env = {**os.environ, "R42_PB_URL": pb_server.url, "R42_DATA_DIR": str(pb_server.data_dir)}
    return subprocess.run([sys.executable, "-m", "r42_app.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120, input=input_text)


def topic(i, **extra):
    return {"id": f"onderwerp-{i}", "label": f"Onderwerp {i}", "type": "concept", "description": "Een test.", **extra}


def counts(admin_pb, tenant_slug):
    tenant = KBStore(admin_pb).tenant(tenant_slug)
    if tenant is None:
        return None
    flt = f'tenant = "{tenant.id}"'
    return len(admin_pb.all("topics", filter=flt)), len(admin_pb.all("relations", filter=flt))


def test_bad_import_file_names_item_and_field_exits_2_and_writes_nothing(pb_server, admin_pb, seeded, tmp_path):
    before_demo = counts(admin_pb, "demo")
    outbox_before = len(admin_pb.all("outbox"))
    bad = {
        "topics": [topic(1), topic(2, type="person"), {**topic(3), "id": "Geen Slug"}],
        "relations": [{"source": "onderwerp-1", "target": "nergens", "type": "related_to"}],
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    result = run_cli(pb_server, "kb", "import", "--tenant", "demo", str(path))
    assert result.returncode == 2, result.stderr
    assert "nothing was written" in result.stderr
    assert "topics[1].type: 'person' is not one of concept, role, process" in result.stderr
    assert "topics[2].id" in result.stderr and "relations[0].target: unknown topic 'nergens'" in result.stderr
    assert counts(admin_pb, "demo") == before_demo
    assert len(admin_pb.all("outbox")) == outbox_before


def test_not_json_is_refused(pb_server, seeded, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"topics": [')
    result = run_cli(pb_server, "kb", "import", "--tenant", "demo", str(path))
    assert result.returncode == 2 and "not valid JSON" in result.stderr


def test_import_wants_a_made_tenant_then_upserts_and_exports_back(pb_server, admin_pb, seeded, tmp_path):
    """Issue 46: `kb import` creates no tenant; it names the missing one and the command that makes it."""
    doc = {"topics": [topic(1), topic(2, content="## Kop\n\nTekst.")],
           "relations": [{"source": "onderwerp-1", "target": "onderwerp-2", "type": "part_of"}]}
    path = tmp_path / "kb.json"
    path.write_text(json.dumps(doc))
    refused = run_cli(pb_server, "kb", "import", "--no-index", "--tenant", "cli-test", "--name", "CLI Test", str(path))
    assert refused.returncode == 2
    assert ("unknown tenant 'cli-test': create it first with `r42 tenant create --slug cli-test --name 'CLI Test'`"
            in refused.stderr) and "nothing was written" in refused.stderr
    assert counts(admin_pb, "cli-test") is None  # no tenant, no topic
    made = run_cli(pb_server, "tenant", "create", "--slug", "cli-test", "--name", "CLI Test")
    assert made.returncode == 0, made.stderr
    first = run_cli(pb_server, "kb", "import", "--no-index", "--tenant", "cli-test", str(path))
    assert first.returncode == 0, first.stderr
    assert "2 topics created" in first.stdout
    doc["topics"][0]["label"] = "Onderwerp één"
    path.write_text(json.dumps(doc))
    second = run_cli(pb_server, "kb", "import", "--no-index", "--tenant", "cli-test", str(path))
    assert "0 topics created, 1 updated, 1 unchanged" in second.stdout
    assert counts(admin_pb, "cli-test") == (2, 1)
    exported = run_cli(pb_server, "kb", "export", "--tenant", "cli-test")
    assert exported.returncode == 0
    back = json.loads(exported.stdout)
    assert back["relations"] == doc["relations"]
    assert {t["id"]: t["label"] for t in back["topics"]} == {"onderwerp-1": "Onderwerp één", "onderwerp-2": "Onderwerp 2"}


def test_export_of_unknown_tenant_is_a_clear_error(pb_server, seeded):
    result = run_cli(pb_server, "kb", "export", "--tenant", "bestaat-niet")
    assert result.returncode == 2 and "unknown tenant 'bestaat-niet'" in result.stderr


@pytest.mark.slow  # 1,000 topics
@pytest.mark.timeout(300)
def test_import_of_1000_topics_lands_completely(pb_server, admin_pb, seeded, tmp_path):
    """1,000 topics and 500 relations are 1,500 writes: 32 batch requests of at most BULK_BATCH (48), the
    relations in the last twelve pointing at topics that earlier batches wrote; every one lands."""
    doc = {"topics": [topic(i) for i in range(1000)],
           "relations": [{"source": f"onderwerp-{i}", "target": f"onderwerp-{i + 1}", "type": "related_to"}
                         for i in range(0, 999, 2)]}
    assert len(doc["topics"]) + len(doc["relations"]) > 30 * BULK_BATCH
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    Tenants(admin_pb).create("groot", "Groot")
    result = run_cli(pb_server, "kb", "import", "--no-index", "--tenant", "groot", str(path))
    assert result.returncode == 0, result.stderr
    assert counts(admin_pb, "groot") == (1000, 500)
