"""Issue 50, item 4: R42 as it runs on several machines, on this one (r42_app/services/runtime/cluster.py, the same
layout `make demo-cluster` starts): the data machine (PocketBase with Litestream, Redis, the Chroma server) on
127.0.0.2, two `r42 serve --web-only` web machines on 127.0.0.3 and 127.0.0.4, each with its own data and build
folders, and Debian's HAProxy on 127.0.0.1 in front of them.

Through the load balancer: sign in and chat in a browser, a graph edit and a document import through the API, both
found by search on either machine; a web machine SIGKILLed in the middle of a streamed answer, and the next
question answered by the other; the data machine SIGKILLed, its database deleted, restored from the replica, and
nothing lost that the replica had."""

import json
import sqlite3
import time
import uuid
from pathlib import Path

import httpx
import psutil
import pytest
from playwright.sync_api import expect

from r42_app.services.runtime.cluster import Cluster, _copy_build_folder
from r42_app.services.runtime.liveness import worker_tag
from r42_app.services.runtime.replication import restore
from r42_app.services.store.pb import PocketBase
from tests.conftest import DEMO_PASSWORD, free_port
from tests.e2e.conftest import prebuilt, sign_in, tree_copy
from tests.e2e.test_chat import ask, open_chat

pytestmark = pytest.mark.slow

UID = uuid.uuid4().hex[:6]


class Site:
    """What the e2e helpers need of an app: its address (here the load balancer's)."""

    def __init__(self, url: str, pb_url: str):
        self.url, self.pb_url = url, pb_url


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, fake_claude):
    base = tmp_path_factory.mktemp("cluster")
    env = {"R42_DEMO_PASSWORD": DEMO_PASSWORD, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_claude.url,
           "R42_MODEL": "claude-test", "R42_MODEL_TIMEOUT": "10", "R42_CHAT_PER_MINUTE": "600",
           "R42_CHAT_BURST": "50", "R42_MCP_ENABLED": "false"}
    lines: list[str] = []
    root = tree_copy(base, reuse_frontend=True)  # not this tree: its `assets/` is the session's app's to write
    built = prebuilt("cluster")  # built for the load balancer's port while the unit tests ran (`make test`)
    if built:  # the first web machine's build folder: its `r42 build` finds the app unchanged
        _copy_build_folder(built[1], base / "machines" / "web-a" / ".web", with_build=True)
    prebuild_log = built[1].parent / f"{built[1].name}.log" if built else None
    front = built[0] if built else free_port()
    cluster = Cluster(base / "machines", front, env=env, pb_port=free_port(front),
                      redis_port=free_port(front), chroma_port=free_port(front),
                      web_ports=(free_port(front), free_port(front)),
                      say=lines.append, start_timeout=600, root=root)
    try:
        cluster.start()
    except RuntimeError as exc:
        cluster.stop()
        pytest.fail(f"the cluster did not start: {exc}\n" + "\n".join(lines))
    cluster.prebuild_log = prebuild_log  # type: ignore[attr-defined]
    yield cluster
    cluster.stop()
    for machine in [cluster.data, *cluster.webs]:
        assert machine.proc is None or machine.proc.poll() is not None, f"{machine.name} still runs after the stop"


def site(cluster: Cluster) -> Site:
    return Site(cluster.public_url, f"http://{cluster.data.host}:{cluster.data.port}")


def token_of(cluster: Cluster, email: str) -> str:
    resp = httpx.post(f"{site(cluster).pb_url}/api/collections/users/auth-with-password",
                      json={"identity": email, "password": DEMO_PASSWORD}, timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()["token"]


def superuser(cluster: Cluster) -> PocketBase:
    creds = json.loads((cluster.data.data_dir / "superuser.json").read_text())
    return PocketBase(site(cluster).pb_url).as_superuser(creds["email"], creds["password"])


def chat_sources(url: str, token: str, question: str) -> list[str]:
    """The slugs of the sources a turn on `url` is grounded on (the fake model answers)."""
    resp = httpx.post(f"{url}/api/chat", headers={"Authorization": f"Bearer {token}"}, timeout=60,
                      json={"messages": [{"role": "user", "content": question}]})
    assert resp.status_code == 200, resp.text
    events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
    assert events and events[-1]["type"] == "done", resp.text
    return [s["slug"] for e in events if e["type"] == "sources" for s in e["sources"]]


def found_on_every_machine(cluster: Cluster, claude, token: str, question: str, slug: str, timeout: float = 120):
    """Ask each web machine itself (not through the balancer) until its search grounds `question` on `slug`."""
    for web in cluster.webs:
        deadline = time.monotonic() + timeout
        while True:
            claude.reply_text("Zie de bron.")
            if slug in chat_sources(web.url, token, question):
                break
            assert time.monotonic() < deadline, f"{web.name} never found {slug} for {question!r}"
            time.sleep(1)


def backends_of(cluster: Cluster) -> dict[str, str]:
    """Worker tag (the page's `data-r42-worker`) -> the web machine whose backend worker it is."""
    tags = {}
    for web in cluster.webs:
        if web.proc is None or web.proc.poll() is not None:
            continue
        for proc in psutil.Process(web.proc.pid).children(recursive=True):
            tags[worker_tag(proc.pid)] = web.name
    return tags


def test_the_web_app_is_built_once_and_both_web_machines_serve_that_build(cluster):
    """Issue 49's build reuse, across machines (issue 50): the pages talk to the public address, not to the machine,
    so the operator builds once (`r42 build`, in the first machine's build folder) and every web machine, given that
    folder, serves it as it is; neither compiles nor bundles. The same fingerprint lets a second `make run` of an
    unchanged tree skip Reflex's compile and bundle (~20 s of a restart)."""
    first, second = (web.log_tail(200_000) for web in cluster.webs)
    built, served = first.split("r42: the web app is built in", 1)
    if cluster.prebuild_log is None:
        assert "Creating Production Build" in built
    else:  # built while the unit tests ran, in a folder of its own (tests/prebuild.py), and copied in as it was:
        # the first machine's `r42 build` found it current and built nothing
        assert "Creating Production Build" in cluster.prebuild_log.read_text(errors="replace")
        assert "the web app is unchanged since its last build" in built and "Creating Production Build" not in built
    for log in (served, second):
        assert "the web app is unchanged since its last build" in log and "Creating Production Build" not in log
    for web in cluster.webs:  # each serves the built pages itself, wired to the balancer's address
        events = httpx.get(f"{web.url}/", timeout=10)
        assert events.status_code == 200 and "<html" in events.text.lower()
        env = json.loads((Path(web.env["REFLEX_WEB_WORKDIR"]) / "env.json").read_text())
        assert env["EVENT"] == f"ws://127.0.0.1:{cluster.port}/_event"


def test_a_learner_signs_in_and_chats_through_the_load_balancer(cluster, browser, claude):
    ctx = browser.new_context(locale="nl-NL")
    page = ctx.new_page()
    sign_in(page, site(cluster), "learner@example.com", fresh=True)
    open_chat(page)
    claude.reply_text("De AOW is het basispensioen van de overheid.")
    ask(page, "Wat is de AOW?")
    expect(page.locator(".r42-assistant").last).to_contain_text("basispensioen van de overheid", timeout=30_000)
    tag = page.locator("#r42-chat").get_attribute("data-r42-worker")
    assert backends_of(cluster).get(tag) in {w.name for w in cluster.webs}  # a web machine's worker answered
    ctx.close()
    served = cluster.lb_log.read_text(errors="replace")
    assert all(f"web/{w.name}" in served for w in cluster.webs), "the balancer sent requests to both machines"


def test_a_graph_edit_and_a_document_import_are_found_on_either_machine(cluster, claude):
    admin, learner = token_of(cluster, "admin@example.com"), token_of(cluster, "learner@example.com")
    slug = f"fietsplan-{UID}"
    delta = {"reason": "Het fietsplan ontbreekt.",
             "topics": [{"id": slug, "label": f"Fietsplan {UID}", "type": "concept",
                         "description": f"Met het fietsplan {UID} koop je belastingvrij een fiets van de zaak."}],
             "relations": [{"source": slug, "target": "aow", "type": "related_to"}]}
    edit = httpx.post(f"{cluster.public_url}/api/chat/delta", headers={"Authorization": f"Bearer {admin}"},
                      json={"delta": delta}, timeout=60)
    assert edit.status_code == 200, edit.text
    document = f"# Thuiswerkregeling {UID}\n\nWie thuiswerkt ({UID}) krijgt een vergoeding van twee euro per dag.\n"
    imported = httpx.post(f"{cluster.public_url}/api/kb/documents", headers={"Authorization": f"Bearer {admin}"},
                          files=[("files", (f"thuiswerk-{UID}.md", document.encode(), "text/markdown"))],
                          data={"type": "process"}, timeout=120)
    assert imported.status_code == 200, imported.text
    [made] = imported.json()["files"]
    assert made["status"] == "created", made
    [topic] = made["topics"]

    found_on_every_machine(cluster, claude, learner, f"Hoe werkt het fietsplan {UID}?", slug)
    found_on_every_machine(cluster, claude, learner, f"Welke vergoeding geeft de thuiswerkregeling {UID}?",
                           topic["slug"])


def test_a_web_machine_lost_mid_answer_the_next_question_is_answered_by_the_other(cluster, browser, claude):
    ctx = browser.new_context(locale="nl-NL")
    page = ctx.new_page()
    sign_in(page, site(cluster), "learner@example.com", fresh=True)
    open_chat(page)
    answers = page.locator(".r42-assistant")
    claude.reply_text(*["woord "] * 300, chunk_delay=0.1)  # still streaming when its machine goes
    ask(page, "Vertel me alles over het pensioen.")
    expect(answers.last).to_contain_text("woord woord", timeout=30_000)
    lost = backends_of(cluster)[page.locator("#r42-chat").get_attribute("data-r42-worker")]
    cluster.kill_web(next(w for w in cluster.webs if w.name == lost))

    # the tab reconnects through the balancer to the machine that is left, with its session (in Redis): the window
    # stays open and the cut-off answer says so
    expect(answers.last.locator(".r42-incomplete")).to_be_visible(timeout=60_000)
    expect(page.locator("#r42-error")).to_contain_text("onderbroken")
    expect(page.locator("#r42-window")).to_be_visible()
    claude.reply_text("Het antwoord van de andere machine.")
    ask(page, "En nu?")
    expect(answers.last).to_contain_text("Het antwoord van de andere machine.", timeout=60_000)
    now = backends_of(cluster)[page.locator("#r42-chat").get_attribute("data-r42-worker")]
    assert now != lost
    expect(page.locator(".r42-user")).to_have_count(2)  # the conversation came along (the session is in Redis)
    ctx.close()


def in_the_replica(cluster: Cluster, marker: str, probe: Path) -> int:
    """How many of the marked rows the replica holds now (restored into a file of the test's own)."""
    restore(cluster.replica.as_uri(), probe)
    with sqlite3.connect(probe) as db:
        return db.execute("SELECT count(*) FROM question_log WHERE question LIKE ?", (f"{marker}%",)).fetchone()[0]


def test_the_data_machine_lost_with_its_database_comes_back_from_the_replica(cluster, claude, tmp_path):
    pb = superuser(cluster)
    tenant = pb.list("tenants", filter='slug = "demo"', per_page=1)["items"][0]["id"]
    marker = f"replica-{UID}"
    for i in range(20):  # rows a user saw written: questions in the gaps log
        pb.create("question_log", {"tenant": tenant, "user_key": "a" * 32, "question": f"{marker} vraag {i}",
                                   "channel": "api"})
    pb.close()
    deadline = time.monotonic() + 60
    while (replicated := in_the_replica(cluster, marker, tmp_path / "probe.db")) < 20:
        assert time.monotonic() < deadline, f"the replica holds {replicated} of 20 rows after a minute"
        time.sleep(0.5)

    cluster.kill_data()  # PocketBase, Litestream, Redis and Chroma SIGKILLed at once
    cluster.lose_database()
    restored = cluster.restore_from_replica()
    assert restored["kept_aside"] in ("", None)  # there was nothing left to keep aside
    cluster.start_data()

    pb = superuser(cluster)
    kept = pb.list("question_log", filter=f'question ~ "{marker}"', per_page=50, total=True)["totalItems"]
    assert kept == 20, f"{20 - kept} of 20 replicated rows lost"
    # and the machines that are left work through the balancer again: sign in, ask
    learner = token_of(cluster, "learner@example.com")
    deadline = time.monotonic() + 60
    while True:  # until the web machines' connections to PocketBase and Redis are back
        claude.reset()
        claude.reply_text("Weer bereikbaar.")
        resp = httpx.post(f"{cluster.public_url}/api/chat", headers={"Authorization": f"Bearer {learner}"},
                          json={"messages": [{"role": "user", "content": "Wat is de AOW?"}]}, timeout=60)
        events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
        if resp.status_code == 200 and "".join(e.get("text", "") for e in events if e["type"] == "text") == \
                "Weer bereikbaar.":
            break
        assert time.monotonic() < deadline, resp.text
        time.sleep(1)
