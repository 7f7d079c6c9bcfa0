"""Backups (issue 14): `r42 backup create` and `restore` round-trip every topic, relation, suggestion and
user through PocketBase's own backup API, on a PocketBase of this test (a restore replaces all data);
a restore into a running instance needs --force."""

import os
import subprocess
import sys

import pytest

from r42_app.services.runtime.pb_server import PocketBaseServer, ensure_superuser
from r42_app.services.store.app_secrets import stored_secret
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.seed import seed_demo
from tests.conftest import DEMO_PASSWORD, free_port


def cli(data_dir, url, *args):
    env = {**os.environ, "R42_PB_URL": url, "R42_DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, "-m", "r42_app.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300, umask=0o022)  # an operator's usual umask: files 0644 unless made private


@pytest.fixture
def own_pocketbase(tmp_path):
    data = tmp_path / "data"
    creds = ensure_superuser(data / "pb_data", data / "superuser.json")
    server = PocketBaseServer(data / "pb_data", free_port()).start()
    from r42_app.services.store.pb import PocketBase

    pb = PocketBase(server.url).as_superuser(creds.email, creds.password)
    seed_demo(pb, DEMO_PASSWORD, log=lambda _m: None)
    yield data, server, pb
    pb.close()
    server.stop()


def snapshot(pb):
    return {name: sorted(str(r.get("slug") or r.get("email") or r.get("source", "") + r.get("target", "") or r["id"])
                         for r in pb.all(name))
            for name in ("tenants", "topics", "relations", "suggestions", "users")}


def test_a_backup_round_trip_brings_everything_back(own_pocketbase, tmp_path):
    data, server, pb = own_pocketbase
    secret = stored_secret(pb, "question_log", data / "question-log.secret")  # the learners' pseudonym key
    kb = KBStore(pb)
    demo = kb.require_tenant("demo")
    learner = pb.first("users", 'email = "learner@example.com"')
    pb.create("suggestions", {"tenant": demo.id, "user": learner["id"], "status": "pending", "reason": "r",
                              "delta": {"reason": "r", "topics": [{"id": "backup-x", "label": "X", "type": "concept",
                                                                   "description": "d"}], "relations": []}})
    before = snapshot(pb)
    target = tmp_path / "r42-backup.zip"
    made = cli(data, server.url, "backup", "create", str(target))
    assert made.returncode == 0, made.stderr
    assert target.stat().st_size > 10_000 and "rag-backfill" in made.stdout
    # it holds password hashes and the keys that sign sessions: its owner's only, and nothing half-written beside it
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []
    assert pb.send("GET", "/api/backups") == []  # PocketBase's own copy is gone

    for row in pb.all("suggestions"):  # lose data
        pb.delete("suggestions", row["id"])
    kb.delete_topic(demo, "aow")
    pb.delete("users", learner["id"])
    for row in pb.all("app_secrets"):  # as on another machine: no secret, or a new one
        pb.delete("app_secrets", row["id"])
    assert stored_secret(pb, "question_log") != secret
    assert snapshot(pb) != before

    refused = cli(data, server.url, "backup", "restore", str(target))
    assert refused.returncode == 2 and "--force" in refused.stderr
    restored = cli(data, server.url, "backup", "restore", str(target), "--force")
    assert restored.returncode == 0, restored.stderr
    pb.as_superuser(*pb._superuser)  # PocketBase restarted: sign in again
    assert snapshot(pb) == before
    # the question log's key came back with the data: `r42 user forget` still finds a user's old questions
    assert stored_secret(pb, "question_log", tmp_path / "no-such-file") == secret



def test_a_download_that_breaks_leaves_the_older_backup_and_no_half_file(tmp_path):
    """The connection drops a tenth of the way through the zip: the operator gets a BackupError saying so (not a
    traceback), the backup that was at the target before is as it was, no partial file is left, and PocketBase is
    asked to delete its copy. (The peer is a socket that stops mid-answer, as a broken network does.)"""
    import http.server
    import threading

    from r42_app.services.store.backup import BackupError, create_backup
    from r42_app.services.store.pb import PocketBase

    deleted: list[str] = []

    class Breaking(http.server.BaseHTTPRequestHandler):
        def log_message(self, *_args):
            pass

        def _json(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):  # noqa: N802 (the handler's names)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._json(b'{"token": "t"}' if self.path.startswith("/api/files/token") else b"{}")

        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(1_000_000))
            self.end_headers()
            self.wfile.write(b"PK" + b"x" * 99_998)
            self.wfile.flush()
            self.connection.close()

        def do_DELETE(self):  # noqa: N802
            deleted.append(self.path)
            self.send_response(204)
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Breaking)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        target = tmp_path / "nightly.zip"
        target.write_bytes(b"the backup of last night")
        with pytest.raises(BackupError, match="downloading the backup failed"):
            create_backup(PocketBase(f"http://127.0.0.1:{server.server_address[1]}"), target)
        assert target.read_bytes() == b"the backup of last night"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["nightly.zip"]
        assert len(deleted) == 1 and deleted[0].startswith("/api/backups/r42-")
    finally:
        server.shutdown()
        server.server_close()
