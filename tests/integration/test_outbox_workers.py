"""Issue 17: outbox rows are leased, so several consumers never work on the same row at once.

The claim is a PocketBase route (pb_hooks) that selects and leases rows in one transaction; these tests
race real claimers on it, and two real `r42 worker --role index` processes on 300 rows."""

import json
import os
import shutil
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone

import pytest

from r42_app.services.adapters.e5 import MODEL_ID as E5_MODEL
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.outbox import claim
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.pb import PBError
from r42_app.services.store.tenants import Tenants
from tests.integration.test_chroma_server import chroma_url  # noqa: F401  (the `chroma run` fixture)

TYPE = "rag.index.kbarticle.upsert"


def make_rows(admin_pb, tenant_id: str, n: int, prefix: str) -> list[str]:
    from r42_app.services.store.pb import BULK_BATCH, BatchRequest

    requests = [BatchRequest.create("outbox", {"type": TYPE, "status": "pending", "attempts": 0,
                                               "payload": {"tenant": tenant_id, "tenant_slug": "x",
                                                           "topic": f"{prefix}-{i}"}}) for i in range(n)]
    ids = []
    for start in range(0, n, BULK_BATCH):
        ids += [r["id"] for r in admin_pb.batch(requests[start:start + BULK_BATCH])]
    return ids


@pytest.fixture
def fake_tenant(admin_pb):
    """Rows of a tenant id of their own (claimed by tenant), deleted afterwards so no worker meets them."""
    name = "claimtest" + os.urandom(3).hex()
    yield name
    for row in admin_pb.all("outbox", filter=f'payload.tenant = "{name}"', fields="id"):
        admin_pb.delete("outbox", row["id"])


def test_racing_claimers_never_get_the_same_row(admin_pb, fake_tenant):
    ids = set(make_rows(admin_pb, fake_tenant, 300, "race"))
    got: dict[str, list[str]] = {}

    def grab(name: str) -> None:
        mine = []
        while True:
            rows = claim(admin_pb, name, (TYPE,), 7, tenant_id=fake_tenant)
            if not rows:
                break
            mine += [r["id"] for r in rows]
            assert all(r["claimed_by"] == name for r in rows)
        got[name] = mine

    threads = [threading.Thread(target=grab, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    every = [i for mine in got.values() for i in mine]
    assert len(every) == len(set(every)) == len(ids) and set(every) == ids  # each row to exactly one claimer
    assert sum(1 for mine in got.values() if mine) >= 2  # they really raced


def test_a_lease_holds_until_it_ends_and_bad_claims_are_refused(pb_server, admin_pb, seeded, fake_tenant):
    (row,) = make_rows(admin_pb, fake_tenant, 1, "lease")
    now = datetime.now(timezone.utc)
    assert [r["id"] for r in claim(admin_pb, "a", (TYPE,), 5, lease_s=60, tenant_id=fake_tenant, now=now)] == [row]
    assert claim(admin_pb, "b", (TYPE,), 5, tenant_id=fake_tenant, now=now + timedelta(seconds=59)) == []
    later = claim(admin_pb, "b", (TYPE,), 5, tenant_id=fake_tenant, now=now + timedelta(seconds=61))
    assert [(r["id"], r["claimed_by"]) for r in later] == [(row, "b")]  # a holder that died: taken over
    for body in ({"worker": "", "types": [TYPE], "limit": 1, "lease_seconds": 5},
                 {"worker": "a", "types": [], "limit": 1, "lease_seconds": 5},
                 {"worker": "a", "types": [TYPE], "limit": 0, "lease_seconds": 5},
                 {"worker": "a", "types": [TYPE], "limit": 1, "lease_seconds": 99999},
                 {"worker": "a", "types": [TYPE], "limit": 1, "lease_seconds": 5, "now": "gisteren"}):
        with pytest.raises(PBError) as bad:
            admin_pb.send("POST", "/api/r42/outbox/claim", body=body)
        assert bad.value.status == 400
    learner = pb_server.user("learner@example.com")
    with pytest.raises(PBError) as refused:  # only the server's superuser may claim
        learner.send("POST", "/api/r42/outbox/claim", body={"worker": "x", "types": [TYPE], "limit": 1,
                                                            "lease_seconds": 5})
    assert refused.value.status in (401, 403)
    assert admin_pb.get("outbox", row)["claimed_by"] == "b"  # untouched by the refused claims


@pytest.mark.slow  # two CLI workers, each loading the embedding model, over 300 topics
def test_two_index_workers_racing_on_300_rows_index_every_topic_exactly_once(pb_server, admin_pb, seeded,
                                                                              tmp_path, chroma_url):  # noqa: F811
    n = 300  # 15 batches of 20: each worker claims its first before it has loaded the model, then they race
    doc = {"topics": [{"id": f"race-{i}", "label": f"Racetopic {i}", "type": "concept",
                       "description": "Voor de race tussen twee workers.", "content": f"Tekst nummer {i}."}
                      for i in range(n)], "relations": []}
    path = tmp_path / "race.json"
    path.write_text(json.dumps(doc))
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(pb_server.data_dir / "superuser.json", data / "superuser.json")
    env = {**os.environ, "R42_PB_URL": pb_server.url, "R42_DATA_DIR": str(data), "CHROMA_URL": chroma_url}
    Tenants(admin_pb).create("race-test", "Race Test")
    imported = subprocess.run([sys.executable, "-m", "r42_app.cli", "kb", "import", "--no-index", "--tenant",
                               "race-test", str(path)], env=env, capture_output=True, text=True, timeout=300)
    assert imported.returncode == 0, imported.stderr
    tenant = KBStore(admin_pb).require_tenant("race-test")
    flt = f'payload.tenant = "{tenant.id}"'
    assert len(admin_pb.all("outbox", filter=flt + ' && status = "pending"', fields="id")) == n

    workers = [subprocess.Popen([sys.executable, "-m", "r42_app.cli", "worker", "--role", "index", "--once", "--json",
                                 "--tenant", "race-test", "--batch-size", "20"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = []
    for w in workers:
        out, err = w.communicate(timeout=600)
        assert w.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))

    upserts = [r["topics_indexed"] for r in results]
    assert sum(upserts) == n, upserts  # every topic upserted once: none twice, none left out
    assert all(u > 0 for u in upserts), upserts  # both workers took part
    rows = admin_pb.all("outbox", filter=flt, fields="id,status,attempts,claimed_by")
    assert len(rows) == n and all(r["status"] == "done" and r["attempts"] == 1 for r in rows)
    assert {r["claimed_by"] for r in rows} == {r["worker"] for r in results}
    keys = VectorStore(url=chroma_url, model_id=E5_MODEL).keys(tenant.id)
    assert len(keys) == n and len(set(keys.values())) == n  # one passage each, every topic once


def test_a_second_process_may_not_write_the_embedded_index_and_is_told_why(tmp_path):
    """Issue 22: two writers on one embedded store corrupted it and filled the disk; a warning was no fix."""
    import numpy as np

    from r42_app.services.adapters import vector_store

    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from r42_app.services.adapters.vector_store import writer_lock; "
        f"assert writer_lock(Path({str(tmp_path)!r})); print('held', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    store = VectorStore(path=tmp_path, model_id="test")
    try:
        assert holder.stdout.readline().strip() == "held"
        assert vector_store.held_elsewhere(tmp_path) and not store.can_write()
        with pytest.raises(vector_store.IndexBusy, match="CHROMA_URL"):
            store.write("t", [("x#card", "x", np.ones(384, dtype=np.float32) / 384 ** 0.5)])
        assert store.count("t") == 0  # nothing was written
    finally:
        holder.kill()
        holder.wait(10)
    assert store.can_write() and not vector_store.held_elsewhere(tmp_path)  # the holder is gone: this one may


def test_a_topic_another_worker_holds_is_not_handed_out_twice(admin_pb, fake_tenant):
    """Two edits of one topic: while worker a holds the first row, worker b may not take the second (it
    could finish first, and a's older version of the topic would then win in the index)."""
    import time

    def row(topic):
        time.sleep(0.01)  # distinct `created` times: claims go oldest first
        return admin_pb.create("outbox", {"type": TYPE, "status": "pending", "attempts": 0,
                                          "payload": {"tenant": fake_tenant, "tenant_slug": "x", "topic": topic}})["id"]

    first, second, other = row("same"), row("same"), row("other")
    assert [r["id"] for r in claim(admin_pb, "a", (TYPE,), 1, tenant_id=fake_tenant)] == [first]
    assert [r["id"] for r in claim(admin_pb, "b", (TYPE,), 5, tenant_id=fake_tenant)] == [other]
    admin_pb.update("outbox", first, {"status": "done"})  # a is done with it: the later edit is free
    assert [r["id"] for r in claim(admin_pb, "b", (TYPE,), 5, tenant_id=fake_tenant)] == [second]
