"""Running R42 from the command line: `mcp status|demo-server` (issue 13), `outbox retry`, `doctor`,
`backup create|restore`."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from r42_app.cli.common import EXIT_FAILURE, EXIT_OK, _fail
from r42_app.container import Services, connected, pocketbase_running
from r42_app.services.outbox.consumer import requeue_failed
from r42_app.services.store.costs import OUTBOX_COST
from r42_app.services.store.kb_store import OUTBOX_DELETE, OUTBOX_UPSERT, KBError
from r42_app.settings import load_settings


def cmd_mcp_demo_server(_args: argparse.Namespace) -> int:
    """R42's demo MCP server on stdio (configured for the demo in mcp.json)."""
    from r42_app.mcp_demo_server import main as demo_main

    return demo_main()


def cmd_mcp_status(args: argparse.Namespace) -> int:
    """Connect to every configured MCP server once and list it with its tools and their risk."""
    import asyncio

    from r42_app.services.adapters.mcp import DEFAULT_REGISTRY

    cfg = load_settings()
    hub = Services(cfg).mcp_hub  # this process's own: nothing else here uses the registry it fills
    registry = DEFAULT_REGISTRY
    if hub.config_error:
        return _fail(hub.config_error)

    async def check() -> tuple[float, list]:
        try:
            took = await hub.start(wait=args.wait)
            return took, [dataclasses.replace(s, tools=list(s.tools)) for s in hub.statuses()]
        finally:
            await hub.stop()

    if not hub.connections:
        off = "" if cfg.mcp_enabled else "; R42_MCP_ENABLED=false"
        print(f"no MCP servers configured ({cfg.mcp_config_file}{off})")
        return EXIT_OK
    took, statuses = asyncio.run(check())
    print(f"{cfg.mcp_config_file}: {len(statuses)} server(s), checked in {took:.1f} s")
    failed = 0
    for status in statuses:
        ok = status.state == "connected"
        failed += 0 if ok else 1
        print(f"  {status.name} ({status.transport}): {'connected' if ok else 'FAILED: ' + status.last_error}")
        for name in status.tools:
            entry = registry.get(name)
            print(f"    {name}  risk {entry.risk if entry else '?'}")
    return EXIT_FAILURE if failed else EXIT_OK


def cmd_outbox_retry(args: argparse.Namespace) -> int:
    """Re-queue `failed` outbox rows now (they are retried hourly anyway)."""
    kinds = {"index": (OUTBOX_UPSERT, OUTBOX_DELETE), "cost": (OUTBOX_COST,)}
    types = kinds.get(args.kind, kinds["index"] + kinds["cost"])
    cfg = load_settings()
    with connected(cfg) as svc:
        count = requeue_failed(svc.admin_pb, types)
    print(f"{count} failed outbox row(s) queued again; the app or `r42 worker` picks them up")
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check everything R42 needs; exit status 1 when anything FAILs."""
    from r42_app.services.runtime.doctor import FAIL, Doctor

    cfg = load_settings()
    with connected(cfg) as svc:
        services = svc
        try:
            checks = Doctor(cfg, svc.admin_pb, services.embedder, services.vectors).run(args.tenant)
        except KBError as exc:
            return _fail(str(exc))
    if args.json:
        print(json.dumps([c.as_dict() for c in checks], ensure_ascii=False, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            print(f"{c.status:<4}  {c.name:<{width}}  {c.detail}")
            if c.fix and c.status != "OK":
                print(f"{'':<4}  {'':<{width}}  fix: {c.fix}")
    return EXIT_FAILURE if any(c.status == FAIL for c in checks) else EXIT_OK


def cmd_backup(args: argparse.Namespace) -> int:
    """create: PocketBase's own backup, downloaded to FILE; restore: put one back (PocketBase restarts)."""
    from r42_app.services.store.backup import BackupError, create_backup, restore_backup

    cfg = load_settings()
    if args.backup_command == "restore":
        source = Path(args.file)
        if not source.is_file():
            return _fail(f"{source} is not a file")
        running = pocketbase_running(cfg)
        if running and not args.force:
            return _fail(f"PocketBase at {cfg.pb_url} is running: restoring replaces all of its data. Stop R42 "
                         "first, or add --force to restore into the running instance.")
    with connected(cfg) as svc:
        try:
            if args.backup_command == "create":
                target = create_backup(svc.admin_pb, Path(args.file) if args.file else cfg.data_dir / "backups")
                print(f"backup written to {target} ({target.stat().st_size / 1_000_000:.1f} MB); the search index "
                      "is not in it: `r42 chatbot rag-backfill --tenant '*' --now` rebuilds it after a restore")
            else:
                restore_backup(svc.admin_pb, Path(args.file))
                print(f"restored {args.file}; now rebuild the search index: "
                      "r42 chatbot rag-backfill --tenant '*' --now")
        except BackupError as exc:
            return _fail(str(exc), EXIT_FAILURE)
    return EXIT_OK


def cmd_restore(args: argparse.Namespace) -> int:
    """`restore --from-replica [--at TIME]`: PocketBase's database back from its Litestream replica, into the data
    dir of a stopped R42 (the database that was there is kept aside)."""
    from r42_app.services.runtime.replication import ReplicationError, restore

    cfg = load_settings()
    url = args.replica or cfg.replica_url
    if not url:
        return _fail("no replica: set R42_REPLICA_URL (or pass --replica URL) to where PocketBase was replicated")
    if pocketbase_running(cfg):
        return _fail(f"PocketBase at {cfg.pb_url} is running: stop R42 first (a restore replaces its database)")
    from r42_app.services.runtime.private import private_data_dir

    try:
        private_data_dir(cfg.data_dir)  # after a lost disk it is made here: its owner's, as `r42 serve` makes it
        done = restore(url, cfg.pb_data_dir / "data.db", args.at or "")
    except ReplicationError as exc:
        return _fail(str(exc), EXIT_FAILURE)
    if args.json:
        print(json.dumps(done, ensure_ascii=False))
        return EXIT_OK
    print(f"restored PocketBase's database from {done['from']} ({done['at']}) in {done['seconds']} s")
    if done["kept_aside"]:
        print(f"the database that was there is kept as {done['kept_aside']}")
    print("start R42 again (make run or r42 serve); if the search index is older than the database: "
          "r42 chatbot rag-backfill --tenant '*' --now")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """`backup`, `restore --from-replica`, `doctor`, `outbox retry` and `mcp`."""
    again = sub.add_parser("restore", help="bring PocketBase's database back from its replica (R42_REPLICA_URL)")
    again.add_argument("--from-replica", action="store_true", required=True,
                       help="from the Litestream replica (the only source there is; say it to be sure)")
    again.add_argument("--at", help="a moment to go back to, UTC: 2026-12-06T01:30:00Z (default: the latest)")
    again.add_argument("--replica", help="the replica URL, when it is not R42_REPLICA_URL")
    again.add_argument("--json", action="store_true")
    again.set_defaults(func=cmd_restore)

    backup = sub.add_parser("backup", help="back up or restore PocketBase's data (its own backup API)")
    backup_sub = backup.add_subparsers(dest="backup_command", required=True)
    create = backup_sub.add_parser("create", help="make a backup and save it to FILE (default data/backups/)")
    create.add_argument("file", nargs="?")
    create.set_defaults(func=cmd_backup)
    restore = backup_sub.add_parser("restore", help="restore FILE (all current data is replaced)")
    restore.add_argument("file")
    restore.add_argument("--force", action="store_true", help="also into a running instance")
    restore.set_defaults(func=cmd_backup)

    doctor = sub.add_parser("doctor", help="check PocketBase, the model, the index, the outbox, costs, MCP")
    doctor.add_argument("--tenant", help="only this tenant's index, capabilities and credits")
    doctor.add_argument("--json", action="store_true")
    doctor.set_defaults(func=cmd_doctor)

    outbox = sub.add_parser("outbox", help="the work queue of indexing and AI cost events")
    outbox_sub = outbox.add_subparsers(dest="outbox_command", required=True)
    retry = outbox_sub.add_parser("retry", help="queue failed rows again now")
    retry.add_argument("--kind", choices=["index", "cost", "all"], default="all")
    retry.set_defaults(func=cmd_outbox_retry)

    mcp = sub.add_parser("mcp", help="external tools over the Model Context Protocol")
    mcp_sub = mcp.add_subparsers(dest="mcp_command", required=True)
    demo = mcp_sub.add_parser("demo-server", help="run R42's demo MCP server on stdio")
    demo.set_defaults(func=cmd_mcp_demo_server)
    status = mcp_sub.add_parser("status", help="connect to the configured MCP servers once and list their tools")
    status.add_argument("--wait", type=float, default=20.0, help="seconds to wait for the servers (default 20)")
    status.set_defaults(func=cmd_mcp_status)
