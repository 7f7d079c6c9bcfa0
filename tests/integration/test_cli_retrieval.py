"""The operator commands: r42 search / context / eval retrieval / worker / chatbot rag-backfill,
as subprocesses against the real PocketBase, with their own Chroma directory."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.tenants import Tenants

# Every test runs the CLI in processes of their own, each loading the embedding model: a minute on a 2-core machine.
pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def cli_data_dir(pb_server, tmp_path_factory):
    """A data dir of its own (so its Chroma is used by one process at a time), with the superuser file."""
    data = tmp_path_factory.mktemp("cli-data")
    shutil.copy(pb_server.data_dir / "superuser.json", data / "superuser.json")
    return data


def r42(pb_server, data_dir, *args, timeout=300):
    env = {**os.environ, "R42_PB_URL": pb_server.url, "R42_DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, "-m", "r42_app.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


# Writes passage vectors into an embedded store from a process of its own: the store's single-writer lock is held
# for a process's life, and the CLI under test must write that store after it.
WRITE_VECTORS = """
import sys
from pathlib import Path
import numpy as np
from r42_app.services.adapters.vector_store import VectorStore
path, tenant, model, saved = sys.argv[1:5]
data = np.load(saved)
rows = list(zip(data["keys"].tolist(), data["slugs"].tolist(), data["vectors"]))
VectorStore(path=Path(path), model_id=model).write(tenant, rows)
"""


@pytest.fixture(scope="module")
def backfilled(pb_server, admin_pb, seeded, cli_data_dir, indexed, tmp_path_factory):
    """The demo KB in the CLI's own index, through `r42 chatbot rag-backfill --now`. The session's index (embedded
    once, tests/integration/conftest.py) is copied in first without one topic: the backfill queues every topic,
    embeds exactly the passages the copy lacks and leaves the rest as they are."""
    from r42_app.core.retrieval import embedding_inputs
    from r42_app.services.adapters.e5 import MODEL_ID

    kb = KBStore(admin_pb)
    demo = kb.require_tenant("demo")
    stored = indexed[1].vectors(demo.id)
    left_out = "dekkingsgraad"
    copied = [i for i, slug in enumerate(stored.slugs) if slug != left_out]
    assert len(copied) < len(stored.keys)
    saved = tmp_path_factory.mktemp("copied") / "demo.npz"
    np.savez(saved, keys=np.array(stored.keys)[copied], slugs=np.array(stored.slugs)[copied],
             vectors=stored.vectors[copied])
    chroma = cli_data_dir / "chroma"
    made = subprocess.run([sys.executable, "-c", WRITE_VECTORS, str(chroma), demo.id, MODEL_ID, str(saved)],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    wanted = {key for t in kb.topics(demo) for key, _ in embedding_inputs(t)}
    missing = wanted - {stored.keys[i] for i in copied}  # the left-out topic's (and any edited since the copy)

    result = r42(pb_server, cli_data_dir, "chatbot", "rag-backfill", "--tenant", "demo", "--now")
    assert result.returncode == 0, result.stderr
    assert "queued 50 topic(s) of 1 tenant(s)" in result.stdout
    assert f"indexed 50 topics ({len(missing)} new passages embedded)" in result.stdout
    keys = VectorStore(path=chroma, model_id=MODEL_ID).keys(demo.id)
    assert set(keys) == wanted and left_out in keys.values()  # every passage of every topic, the new ones too
    return cli_data_dir


def test_search_json(pb_server, backfilled):
    out = r42(pb_server, backfilled, "search", "--tenant", "demo", "--mode", "fts", "--top-k", "3", "--json",
              "pensioen overdragen")
    data = json.loads(out.stdout)
    assert data["mode_used"] == "fts" and len(data["results"]) == 3
    assert "waardeoverdracht" in [r["id"] for r in data["results"]]


def test_search_batch_keeps_order_and_reports_mode(pb_server, backfilled, tmp_path):
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"qid": "b", "query": "dekkingsgraad"}\n{"qid": "a", "query": "wat doet een actuaris"}\n')
    out = r42(pb_server, backfilled, "search", "--tenant", "demo", "--top-k", "2", "--batch", str(batch))
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [line["qid"] for line in lines] == ["b", "a"]
    assert all(line["mode_used"] == "hybrid" and len(line["results"]) == 2 for line in lines)
    assert lines[0]["results"][0]["id"] == "dekkingsgraad" and isinstance(lines[0]["results"][0]["score"], float)


def test_search_rejects_bad_input(pb_server, backfilled, tmp_path):
    assert r42(pb_server, backfilled, "search", "--tenant", "demo", "  ").returncode == 2
    unknown = r42(pb_server, backfilled, "search", "--tenant", "nope", "aow")
    assert unknown.returncode == 2 and "unknown tenant 'nope'" in unknown.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": 1, "query": "x"}\n{"query": "geen qid"}\n')
    out = r42(pb_server, backfilled, "search", "--tenant", "demo", "--batch", str(bad))
    assert out.returncode == 2 and ":2: missing qid" in out.stderr and "Traceback" not in out.stderr
    stop = r42(pb_server, backfilled, "search", "--tenant", "demo", "--mode", "fts", "de het een")
    assert stop.returncode == 0 and "no topic matches" in stop.stdout


def test_context_prints_context_and_snippets(pb_server, backfilled):
    out = r42(pb_server, backfilled, "context", "--tenant", "demo", "Wat doet de actuaris?")
    assert out.returncode == 0, out.stderr
    assert "actuaris · Actuaris · role" in out.stdout and "KB hash:" in out.stdout
    assert "---SNIPPET START---" in out.stdout and "[ref:1]" in out.stdout


def test_context_and_search_read_the_conversation_before_the_question(pb_server, backfilled, tmp_path):
    """`--history FILE` (issue 47): the chat API's messages, or one earlier question a line; what a turn with that
    conversation would be grounded on, said first; a file that is neither is refused before anything runs."""
    history = tmp_path / "history.json"
    history.write_text(json.dumps([{"role": "user", "content": "Hoe werkt waardeoverdracht?"},
                                   {"role": "assistant", "content": "Je neemt je pensioen mee [ref:1]."}]))
    out = r42(pb_server, backfilled, "context", "--tenant", "demo", "--history", str(history), "Hoe lang duurt dat?")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("understood in its conversation (leaning ")
    assert "Hoe werkt waardeoverdracht? … Hoe lang duurt dat?" in out.stdout.splitlines()[0]
    assert "- waardeoverdracht · Waardeoverdracht" in out.stdout and out.stdout.splitlines()[2] == "grounded: yes"
    lines = tmp_path / "history.txt"
    lines.write_text("Hoe werkt waardeoverdracht?\n")
    found = r42(pb_server, backfilled, "search", "--tenant", "demo", "--json", "--history", str(lines),
                "Hoe lang duurt dat?")
    data = json.loads(found.stdout)
    assert data["understood"] == "Hoe werkt waardeoverdracht? … Hoe lang duurt dat?"
    assert {"waardeoverdracht", "waardeoverdracht-uitvoeren"} & {r["id"] for r in data["results"][:2]}
    assert data["grounded"] is True
    # a new subject the KB knows nothing of, asked as a follow-up: its sources are the earlier topic's, and the
    # operator sees that a turn would say the KB has nothing on it
    elsewhere = r42(pb_server, backfilled, "search", "--tenant", "demo", "--history", str(lines),
                    "En wat is de hoofdstad van Frankrijk?")
    assert elsewhere.returncode == 0 and "grounded: no (nothing relevant" in elsewhere.stdout, elsewhere.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "system", "content": "x"}]')
    refused = r42(pb_server, backfilled, "search", "--tenant", "demo", "--history", str(bad), "Hoe lang duurt dat?")
    assert refused.returncode == 2 and "item 0 is neither a question nor a message" in refused.stderr


def test_eval_retrieval_prints_metrics_per_mode(pb_server, backfilled, tmp_path):
    out = r42(pb_server, backfilled, "eval", "retrieval", "--tenant", "demo", "--queries",
              str(DATA / "eval_nl.jsonl"), "--json")
    data = json.loads(out.stdout)
    assert set(data["modes"]) == {"fts", "semantic", "hybrid"} and data["queries"] >= 30
    modes = data["modes"]
    assert all(0 < m["ndcg"] <= 1 and 0 < m["recall"] <= 1 and 0 < m["mrr"] <= 1 for m in modes.values())
    assert modes["hybrid"]["ndcg"] >= max(modes["fts"]["ndcg"], modes["semantic"]["ndcg"])
    assert [m["fallbacks"] for m in modes.values()] == [0, 0, 0]  # every query ran in the mode asked for
    few = tmp_path / "few.jsonl"  # the table's form; the figures are the JSON's above
    few.write_text("".join((DATA / "eval_nl.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:3]))
    table = r42(pb_server, backfilled, "eval", "retrieval", "--tenant", "demo", "--queries", str(few))
    assert "| fell back |" in table.stdout and "| hybrid | " in table.stdout


def test_import_indexes_before_it_returns(pb_server, admin_pb, backfilled, tmp_path):
    doc = {"topics": [{"id": f"index-{i}", "label": f"Kwartel {i}", "type": "concept",
                       "description": "Een onderwerp over kwartels.", "content": "Kwartels " * 10} for i in range(8)],
           "relations": []}
    path = tmp_path / "kb.json"
    path.write_text(json.dumps(doc))
    Tenants(admin_pb).create("index-test", "Index Test")
    out = r42(pb_server, backfilled, "kb", "import", "--tenant", "index-test", str(path))
    assert out.returncode == 0, out.stderr
    assert "indexed 8 topics" in out.stdout and "indexing [" in out.stderr
    found = r42(pb_server, backfilled, "search", "--tenant", "index-test", "--mode", "semantic", "--json", "kwartels")
    assert len(json.loads(found.stdout)["results"]) == 5


def test_worker_killed_mid_batch_indexes_every_topic_exactly_once(pb_server, admin_pb, seeded, tmp_path):
    data = tmp_path / "worker-data"
    data.mkdir()
    shutil.copy(pb_server.data_dir / "superuser.json", data / "superuser.json")
    n = 60  # six batches of ten: the kill lands in the second or a later one
    content = [" ".join(f"woord{j}" for j in range(20 + i % 20)) for i in range(n)]
    doc = {"topics": [{"id": f"kill-{i}", "label": f"Onderwerp {i}", "type": "process",
                       "description": "Voor de kill-test.", "content": content[i]} for i in range(n)], "relations": []}
    path = tmp_path / "kill.json"
    path.write_text(json.dumps(doc))
    Tenants(admin_pb).create("kill-test", "Kill Test")
    assert r42(pb_server, data, "kb", "import", "--no-index", "--tenant", "kill-test", str(path)).returncode == 0
    tenant = KBStore(admin_pb).require_tenant("kill-test")
    flt = f'payload.tenant = "{tenant.id}"'

    # A short lease: the rows the killed worker held come back to the rerun after 3 s (a live worker renews it).
    # Both workers take this tenant's rows only: other tests' tenants are none of their business (a worker with an
    # empty index would queue and embed every tenant of the shared PocketBase).
    env = {**os.environ, "R42_PB_URL": pb_server.url, "R42_DATA_DIR": str(data), "R42_OUTBOX_LEASE_S": "3"}
    only_this = ["--once", "--role", "index", "--tenant", "kill-test"]
    worker = subprocess.Popen([sys.executable, "-m", "r42_app.cli", "worker", *only_this, "--batch-size", "10"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:  # kill it mid-batch: some rows done and a claimed batch in its hands
        done = len(admin_pb.all("outbox", filter=flt + ' && status = "done"', fields="id"))
        if done > 0 and admin_pb.all("outbox", filter=flt + ' && status = "pending" && claimed_by != ""', fields="id"):
            break
        time.sleep(0.05)
    worker.send_signal(signal.SIGKILL)
    worker.wait(10)
    assert 0 < done < n, f"kill did not land mid-run ({done} of {n} done)"

    held = admin_pb.all("outbox", filter=flt + ' && status = "pending" && claimed_by != ""', fields="id")
    assert held, "the killed worker held no rows: the lease is not exercised"
    rerun = r42(pb_server, data, "worker", *only_this)  # waits for the dead worker's lease, then takes its rows
    assert rerun.returncode == 0, rerun.stderr
    assert len(admin_pb.all("outbox", filter=flt + ' && status = "done"', fields="id")) == n

    from r42_app.core.retrieval import embedding_inputs
    from r42_app.services.adapters.e5 import MODEL_ID
    from r42_app.services.store.kb_store import KBStore as Store

    expected = {key for t in Store(admin_pb).topics(tenant) for key, _ in embedding_inputs(t)}
    stored = VectorStore(path=data / "chroma", model_id=MODEL_ID).keys(tenant.id)
    assert set(stored) == expected  # every passage once: none lost with the killed worker, none twice
