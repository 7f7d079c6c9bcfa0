"""PocketBase's recovery point and recovery time (issue 50, item 2): what a lost disk costs, with Litestream
replicating PocketBase's database (R42_REPLICA_URL) and, in the same run, with today's other path: the last
`r42 backup create` (PocketBase's own backup, taken when the load starts).

A real PocketBase with R42's migrations and hooks; a steady write load through its API, as chat turns write it (per
turn a question-log row, and the turn's AI cost events with their daily rollup and the tenant's debit in one
transaction, written by the cost recorder's own `write_events`); after LOAD_S seconds PocketBase (and the
replicator) are SIGKILLed and the database deleted, as a lost disk would. Then it is brought back: from the
replica (`r42 restore --from-replica`'s function) or from the backup (uploaded to a fresh PocketBase, as
`r42 backup restore` does). Recovery point: the acknowledged rows that are gone, and the age at the kill of the
newest one kept. Recovery time: from the start of the restore until PocketBase answers with the data.

A third path replicates to an S3 bucket (`s3://bucket/path?endpoint=…`) when moto's S3 server is at hand
(`make bench` puts the moto wheel, Apache-2.0, in tools/moto; no S3 service on this machine): the same Litestream
over HTTP to a server on loopback, so its figures show the S3 client's way, not a cloud's latency."""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import free_port
from r42_app.core.costs import Round, Usage
from r42_app.core.questions import QuestionEntry
from r42_app.services.runtime.pb_server import PocketBaseServer, ensure_superuser, spawn_and_wait, stop_process
from r42_app.services.runtime.replication import Replicator, restore
from r42_app.services.store.backup import create_backup, restore_backup
from r42_app.services.store.costs import OUTBOX_COST, CostRecorder, PriceTable
from r42_app.services.store.pb import PBError, PocketBase
from r42_app.services.store.tenants import Tenants

LOAD_S = 20.0
ROWS: dict[str, list[tuple[int, int, float, float]]] = {}
REFUSED: list[str] = []  # turns whose direct cost write PocketBase refused (they went through the outbox)
RUNS = 3
MOTO = Path(__file__).resolve().parents[1] / "tools" / "moto"  # moto's S3 server (make bench installs it)


class S3Server:
    """moto's S3 server on loopback, with one bucket; the AWS settings Litestream reads set in this process."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    AWS = {"AWS_ACCESS_KEY_ID": "r42-bench", "AWS_SECRET_ACCESS_KEY": "r42-bench", "AWS_REGION": "us-east-1"}

    def __enter__(self) -> S3Server:
        def answers() -> bool:
            try:
                return httpx.get(self.endpoint, timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        # started and awaited as R42 starts its own children (its log, and gone with this process)
        self.proc = spawn_and_wait([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                   MOTO.parent / "moto-server.log", answers, "moto's S3 server", self.endpoint, 30,
                                   env={**os.environ, "PYTHONPATH": str(MOTO)})
        httpx.put(f"{self.endpoint}/r42-bench", timeout=5).raise_for_status()
        self.saved = {name: os.environ.get(name) for name in self.AWS}
        os.environ.update(self.AWS)
        return self

    def url(self, path: str) -> str:
        return f"s3://r42-bench/{path}?endpoint={self.endpoint}&forcePathStyle=true"

    def __exit__(self, *exc) -> None:
        stop_process(self.proc)
        for name, value in getattr(self, "saved", {}).items():  # the caller's own AWS settings back
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


S3: S3Server | None = None


def load(pb: PocketBase, tenant_id: str, seconds: float) -> list[tuple[str, float]]:
    """What chat turns write, one turn after another for `seconds`: the question-log row, then the turn's cost
    events (the recorder's direct write: event, rollup and debit in one transaction). (turn id, when both were
    acknowledged)."""
    made, began, n = [], time.time(), 0
    recorder = CostRecorder(pb, PriceTable.load())
    model, rounds = "claude-haiku-4-5", [Round(Usage(1200, 80, 0, 1000))]
    while time.time() - began < seconds:
        turn = f"{n:032x}"
        pb.create("question_log", QuestionEntry(tenant_id, "a" * 32, f"Vraag {n} over de AOW?", turn_id=turn,
                                                grounded=True, best_score=0.5).to_row())
        events = recorder.events(turn, tenant_id, "", model, rounds)
        try:
            recorder.write_events([e.as_dict() for e in events])
        except PBError as exc:  # as the recorder does: refused, the turn's events go to the outbox instead
            print(f"  cost events of turn {n} refused ({exc.status} {exc}): into the outbox", file=sys.stderr)
            recorder.record(turn, tenant_id, "", model, rounds)
            REFUSED.append(turn)
        made.append((turn, time.time()))
        n += 1
        time.sleep(0.03)
    return made


def one(kind: str) -> tuple[int, int, float, float]:
    """(rows written, rows lost, age of the newest kept row at the kill in s, recovery time in s) of one run."""
    base = Path(tempfile.mkdtemp(prefix="r42-bench-rep-"))
    try:
        data, pb_dir = base / "data", base / "data" / "pb_data"
        creds = ensure_superuser(pb_dir, data / "superuser.json")
        server = PocketBaseServer(pb_dir, free_port()).start()
        pb = PocketBase(server.url).as_superuser(creds.email, creds.password)
        tenant = Tenants(pb).create("bench-rep", "Bench")
        url = S3.url(base.name) if kind == "s3" and S3 is not None else f"file://{base / 'replica'}"
        replicator = Replicator(pb_dir / "data.db", url, data / "litestream.log").start() \
            if kind in ("replica", "s3") else None
        backup = create_backup(pb, base / "backups") if kind == "backup" else None
        made = load(pb, tenant.id, LOAD_S)
        killed = time.time()
        # the machine dies: the replicator first (it ships nothing after this), then PocketBase
        for proc in (replicator.proc if replicator else None, server.proc):
            if proc is not None:
                proc.kill()
                proc.wait(10)
        server.proc = None
        if replicator:
            replicator.proc = None
        shutil.rmtree(pb_dir)  # the disk is gone
        began = time.monotonic()
        if kind in ("replica", "s3"):
            restore(url, pb_dir / "data.db")
            ensure_superuser(pb_dir, data / "superuser.json")
            server.start()
            pb = PocketBase(server.url).as_superuser(creds.email, creds.password)
        else:
            assert backup is not None
            ensure_superuser(pb_dir, data / "superuser.json")
            server.start()
            pb = PocketBase(server.url).as_superuser(creds.email, creds.password)
            restore_backup(pb, backup)
            pb = PocketBase(server.url).as_superuser(creds.email, creds.password)
        queued = pb.all("outbox", filter=f'type = "{OUTBOX_COST}"')
        costs = ({r["turn_id"] for r in pb.all("ai_cost_events", filter=f'tenant = "{tenant.id}"')}
                 | {(r.get("payload") or {}).get("turn_id") for r in queued})
        kept = {r["turn_id"] for r in pb.all("question_log", filter=f'tenant = "{tenant.id}"')} & costs  # a turn: both
        recovered = time.monotonic() - began
        server.stop()
        newest = max((when for turn, when in made if turn in kept), default=killed - LOAD_S)
        return len(made), sum(1 for turn, _ in made if turn not in kept), killed - newest, recovered
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run() -> str:
    global S3
    paths = [("backup", "today: the last `r42 backup create` (taken as the load starts)"),
             ("replica", "Litestream replica in a folder (`R42_REPLICA_URL=file://…`)")]
    if (MOTO / "moto").is_dir():
        paths.append(("s3", "Litestream replica in an S3 bucket (`s3://…?endpoint=`, moto's server on loopback)"))
    else:
        print("  (no tools/moto: the S3 path is left out; `make bench` installs it)", file=sys.stderr)
    with S3Server() if len(paths) == 3 else contextlib.nullcontext() as S3:
        return _run(paths)


def _run(paths: list[tuple[str, str]]) -> str:
    out = [(f"### PocketBase after a lost disk: recovery point and time ({RUNS} runs each, {LOAD_S:.0f} s of writes, "
           "one writer, a question-log row and a cost event per turn)"), "",
           "| path | run | rows written | rows lost | newest row kept: age at the kill | recovery time |",
           "|---|---|---|---|---|---|"]
    medians = {}
    for kind, label in paths:
        rows = ROWS[kind] = [one(kind) for _ in range(RUNS)]
        for n, (written, lost, age, took) in enumerate(rows, start=1):
            out.append(f"| {label} | {n} | {written} | {lost} | {age:.2f} s | {took:.2f} s |")
        medians[kind] = (statistics.median(r[1] for r in rows), statistics.median(r[2] for r in rows),
                         statistics.median(r[3] for r in rows))
        out.append(f"| {label} | median | | {medians[kind][0]:.0f} | {medians[kind][1]:.2f} s | "
                   f"{medians[kind][2]:.2f} s |")
    out += ["", (f"Turns whose direct cost write PocketBase refused (their events went through the outbox instead, "
                 f"as the recorder does; counted as kept when their outbox row is): {len(REFUSED)} of "
                 f"{sum(r[0] for k in medians for r in ROWS[k])}.")]
    return "\n".join(out)
