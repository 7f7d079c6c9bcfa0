"""The `r42` command line: serve, seed, kb import/export.

    r42 serve                              # what `make run` runs
    r42 seed demo
    r42 kb import --tenant SLUG FILE
    r42 kb export --tenant SLUG [FILE]

Commands that need PocketBase use the running one (R42_PB_URL or 127.0.0.1:R42_PB_PORT) and
otherwise start the embedded one on the data dir for the duration of the command.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx

from r42_app.services.kb_store import KBError, KBStore
from r42_app.services.pb import PBError, PocketBase
from r42_app.services.pb_server import ROOT, PocketBaseServer, ensure_superuser, load_superuser
from r42_app.services.seed import DEMO_USERS, seed_demo
from r42_app.settings import Settings, load_settings

EXIT_INVALID = 2


def _err(message: str) -> None:
    print(f"r42: {message}", file=sys.stderr)


@contextlib.contextmanager
def admin_connection(cfg: Settings) -> Iterator[PocketBase]:
    """A superuser connection to the running PocketBase, or to one started just for this command."""
    server: PocketBaseServer | None = None
    probe = PocketBase(cfg.pb_url, timeout=2)
    running = probe.health()
    probe.close()
    if not running:
        if cfg.pb_url_override:
            raise SystemExit(f"r42: PocketBase at {cfg.pb_url} is not reachable")
        ensure_superuser(cfg.pb_data_dir, cfg.superuser_file)
        server = PocketBaseServer(cfg.pb_data_dir, cfg.pb_port).start()
    try:
        creds = load_superuser(cfg.superuser_file)
        pb = PocketBase(cfg.pb_url).as_superuser(creds.email, creds.password)
        try:
            yield pb
        finally:
            pb.close()
    finally:
        if server:
            server.stop()


# -- serve ---------------------------------------------------------------------------


def _reflex_env(cfg: Settings) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("REFLEX_TELEMETRY_ENABLED", "false")
    env.setdefault("REFLEX_CHECK_LATEST_VERSION", "false")
    bun = ROOT / "tools" / "bin" / "bun"
    if bun.exists():
        env.setdefault("REFLEX_BUN_PATH", str(bun))
    env["R42_DATA_DIR"] = str(cfg.data_dir)
    env["R42_PORT"] = str(cfg.port)
    env["R42_PB_PORT"] = str(cfg.pb_port)
    return env


def _wait_http(url: str, proc: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if httpx.get(url, timeout=2, follow_redirects=True).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return False


def _stop_group(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """Stop a child and everything it started (it leads its own process group)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    # The leader may be gone while children (bun, workers) linger: sweep the group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


def _banner(cfg: Settings) -> str:
    lines = [
        "",
        "  R42 is running",
        f"  Open        {cfg.app_url}/",
        "  Sign in as",
    ]
    for user in DEMO_USERS:
        lines.append(f"              {user.email:<24} {user.role:<8} tenant {user.tenant}")
    lines.append(f"  Password    {cfg.demo_password}  (R42_DEMO_PASSWORD)")
    lines += ["  Stop        Ctrl-C", ""]
    return "\n".join(lines)


class _Stop(Exception):
    pass


def _raise_stop(signum, frame):  # noqa: ARG001 - signal handler signature
    raise _Stop()


def cmd_serve(args: argparse.Namespace) -> int:
    cfg = load_settings()
    cfg.data_dir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    pb_server: PocketBaseServer | None = None
    reflex: subprocess.Popen | None = None
    try:
        print(f"r42: starting PocketBase on 127.0.0.1:{cfg.pb_port} (data in {cfg.data_dir})", flush=True)
        creds = ensure_superuser(cfg.pb_data_dir, cfg.superuser_file)
        pb_server = PocketBaseServer(cfg.pb_data_dir, cfg.pb_port).start()
        pb = PocketBase(pb_server.url).as_superuser(creds.email, creds.password)
        if not args.no_seed:
            seed_demo(pb, cfg.demo_password, log=lambda m: print(f"r42: {m}", flush=True))
        pb.close()
        print(f"r42: building and starting the web app on 127.0.0.1:{cfg.port} (first build takes a minute)", flush=True)
        reflex = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "reflex"),
                "run",
                "--env",
                "prod",
                "--frontend-port",
                str(cfg.port),
                "--backend-port",
                str(cfg.port),
                "--backend-host",
                "127.0.0.1",
                "--loglevel",
                args.loglevel,
            ],
            cwd=ROOT,
            env=_reflex_env(cfg),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        if not _wait_http(f"{cfg.app_url}/", reflex, timeout=args.start_timeout):
            _err(f"the web app did not come up on {cfg.app_url} (exit status {reflex.poll()})")
            return 1
        print(_banner(cfg), flush=True)
        while reflex.poll() is None:
            time.sleep(0.5)
        _err(f"the web app stopped (exit status {reflex.returncode})")
        return 1
    except _Stop:
        print("\nr42: stopping", flush=True)
        return 0
    except (PBError, RuntimeError, KBError, ValueError) as exc:
        _err(str(exc))
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if reflex is not None:
            _stop_group(reflex)
        if pb_server is not None:
            pb_server.stop()


# -- seed / kb -----------------------------------------------------------------------


def cmd_seed(args: argparse.Namespace) -> int:
    cfg = load_settings()
    try:
        with admin_connection(cfg) as pb:
            seed_demo(pb, cfg.demo_password)
    except (PBError, KBError, ValueError) as exc:
        _err(str(exc))
        return 1
    return 0


def _progress(label: str):
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if total and (done == total or now - last[0] > 0.2):
            last[0] = now
            width = 30
            filled = int(width * done / total)
            end = "\n" if done == total else ""
            print(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end=end, file=sys.stderr, flush=True)

    return report


def cmd_kb_import(args: argparse.Namespace) -> int:
    cfg = load_settings()
    path = Path(args.file)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        _err(f"{path}: no such file")
        return EXIT_INVALID
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        _err(f"{path}: not valid JSON ({exc}); nothing was written")
        return EXIT_INVALID
    try:
        with admin_connection(cfg) as pb:
            store = KBStore(pb)
            plan, issues = store.validate_import(args.tenant, data)
            if plan is None:
                _err(f"{path}: {len(issues)} problem(s); nothing was written")
                for issue in issues[:50]:
                    print(f"  {issue}", file=sys.stderr)
                if len(issues) > 50:
                    print(f"  ... and {len(issues) - 50} more", file=sys.stderr)
                return EXIT_INVALID
            result = store.import_document(args.tenant, data, progress=_progress("writing"), tenant_name=args.name)
    except KBError as exc:
        _err(str(exc))
        return EXIT_INVALID if exc.issues else 1
    except PBError as exc:
        _err(str(exc))
        return 1
    if result.created_tenant:
        print(f"created tenant {result.tenant.slug!r}")
    print(f"imported {result.summary()}")
    return 0


def cmd_kb_export(args: argparse.Namespace) -> int:
    cfg = load_settings()
    try:
        with admin_connection(cfg) as pb:
            doc = KBStore(pb).export_document(args.tenant)
    except KBError as exc:
        _err(str(exc))
        return EXIT_INVALID
    except PBError as exc:
        _err(str(exc))
        return 1
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    if args.file and args.file != "-":
        Path(args.file).write_text(text, encoding="utf-8")
        print(f"exported {len(doc['topics'])} topics and {len(doc['relations'])} relations to {args.file}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="r42", description="R42: the knowledge-base-grounded learning assistant")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="start PocketBase, seed the demo and serve the web app")
    serve.add_argument("--no-seed", action="store_true", help="do not (re)seed the demo tenants")
    serve.add_argument("--start-timeout", type=float, default=600, help="seconds to wait for the web app (default 600)")
    serve.add_argument("--loglevel", default="warning", choices=["debug", "info", "warning", "error"])
    serve.set_defaults(func=cmd_serve)

    seed = sub.add_parser("seed", help="load demo data")
    seed.add_argument("what", choices=["demo"], help="what to seed")
    seed.set_defaults(func=cmd_seed)

    kb = sub.add_parser("kb", help="import or export a tenant's knowledge base")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    imp = kb_sub.add_parser("import", help="validate a JSON file, then upsert its topics and relations")
    imp.add_argument("--tenant", required=True, help="tenant slug (created if missing)")
    imp.add_argument("--name", help="display name when the tenant is created")
    imp.add_argument("file", help='JSON file {"topics": [...], "relations": [...]}')
    imp.set_defaults(func=cmd_kb_import)
    exp = kb_sub.add_parser("export", help="write a tenant's knowledge base as JSON")
    exp.add_argument("--tenant", required=True)
    exp.add_argument("file", nargs="?", help="output file (default: stdout)")
    exp.set_defaults(func=cmd_kb_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
