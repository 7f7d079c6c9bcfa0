"""`r42 serve` (what `make run` runs: services/runtime/supervisor.py does the running), `r42 build` and
`r42 seed demo`."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable

from r42_app.cli.common import EXIT_FAILURE, EXIT_OK, _err, _fail
from r42_app.cli.stopping import stop_signals
from r42_app.container import Services, connected
from r42_app.services.runtime import supervisor
from r42_app.services.store.kb_store import KBError
from r42_app.services.store.pb import PBError
from r42_app.services.store.seed import ensure_mcp_config, seed_demo
from r42_app.settings import MAX_BACKEND_WORKERS, Settings, load_settings


def _seed_the_demo(cfg: Settings) -> Callable[[str, Callable[[str], None]], None]:
    """What `serve` does once PocketBase answers: (re)seed the demo tenants and write the demo MCP servers."""
    def seed(pb_url: str, say: Callable[[str], None]) -> None:
        seeding = Services(dataclasses.replace(cfg, pb_url_override=pb_url))
        try:
            seed_demo(seeding.admin_pb, cfg.demo_password, log=say)
            if not cfg.mcp_config and ensure_mcp_config(cfg.mcp_config_file, cfg.mcp_demo_messages):
                say(f"wrote the demo MCP servers to {cfg.mcp_config_file}")
        finally:
            seeding.close()
    return seed


def cmd_serve(args: argparse.Namespace) -> int:
    cfg = load_settings()
    workers = args.workers or cfg.backend_workers
    if not 1 <= workers <= MAX_BACKEND_WORKERS:
        return _fail(f"--workers must be from 1 to {MAX_BACKEND_WORKERS}, got {workers}")

    role = "web" if args.web_only else "data" if args.data_only else "all"
    seed = None if args.no_seed or role == "web" else _seed_the_demo(cfg)  # the data machine seeds, once
    stopped_cleanly = supervisor.serve(cfg, workers=workers, chroma_server=args.chroma_server, loglevel=args.loglevel,
                                       start_timeout=args.start_timeout, prepare=seed,
                                       stopped_early=lambda: bool(stop_signals), role=role)
    return EXIT_OK if stopped_cleanly else EXIT_FAILURE


def cmd_build(args: argparse.Namespace) -> int:
    return EXIT_OK if supervisor.build(load_settings(), loglevel=args.loglevel) else EXIT_FAILURE


def cmd_seed(args: argparse.Namespace) -> int:
    cfg = load_settings()
    try:
        with connected(cfg) as svc:
            seed_demo(svc.admin_pb, cfg.demo_password)
    except (PBError, KBError, ValueError) as exc:
        _err(str(exc))
        return EXIT_FAILURE
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """`serve`, `build` and `seed`."""
    serve = sub.add_parser("serve", help="start PocketBase, seed the demo and serve the web app")
    serve.add_argument("--no-seed", action="store_true", help="do not (re)seed the demo tenants")
    serve.add_argument("--start-timeout", type=float, default=600, help="seconds to wait for the web app (default 600)")
    serve.add_argument("--loglevel", default="warning", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--workers", type=int, default=0,
                       help="backend worker processes sharing state through Redis (default R42_BACKEND_WORKERS or 1)")
    serve.add_argument("--chroma-server", action="store_true",
                       help="serve the search index from a Chroma server process (always, with several workers)")
    where = serve.add_mutually_exclusive_group()
    where.add_argument("--web-only", action="store_true",
                       help="one of several web machines: the web app on R42_BIND, against the data machine's "
                            "R42_PB_URL, REFLEX_REDIS_URL and CHROMA_URL (docs/DEPLOY.md)")
    where.add_argument("--data-only", action="store_true",
                       help="the data machine of several: PocketBase (with Litestream when R42_REPLICA_URL is set), "
                            "Redis (R42_REDIS_PORT) and the Chroma server (R42_CHROMA_PORT) on R42_BIND, no web app")
    serve.set_defaults(func=cmd_serve)

    build = sub.add_parser("build", help="build the web app for these settings and stop: the next `serve` with the "
                                         "same settings (or a web machine given its build folder) starts without "
                                         "building")
    build.add_argument("--loglevel", default="warning", choices=["debug", "info", "warning", "error"])
    build.set_defaults(func=cmd_build)

    seed = sub.add_parser("seed", help="load demo data")
    seed.add_argument("what", choices=["demo"], help="what to seed")
    seed.set_defaults(func=cmd_seed)
