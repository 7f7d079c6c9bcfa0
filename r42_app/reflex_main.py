"""`python -m r42_app.reflex_main run ...`: Reflex's own CLI, with one change for several backend workers.

Reflex serves its production backend with Granian, which by default shuts the whole server down when
one worker process dies. With several workers sharing state through Redis, the right answer to a dead
worker is a new one: its websocket clients reconnect to a live worker and find their state in Redis.
So Granian is told to respawn failed workers (it still gives up on a crash loop).

When `r42 serve` dies, only this process hears of it (its parent-death signal, SIGTERM): until Granian
serves (and stops its workers on that signal itself), SIGTERM takes the whole process group down, so the
frontend build (bun and its children) stops too, as on a normal stop.
"""

import hashlib
import json
import os
import signal
import sys
from pathlib import Path

from r42_app.paths import ROOT

BUILT_NAME = "r42-build.json"  # in the build folder: what its frontend was built from (written after the build)
BUILD_INPUTS = ("r42_app", "assets", "frontend", "rxconfig.py", "requirements.txt")
# where it is built, the URL's password (its presence counts: bool above), and where bun is (a copy of the tree
# links the same tools under another path: its build is the same)
NOT_IN_THE_BUILD = ("REFLEX_WEB_WORKDIR", "REFLEX_REDIS_URL", "REFLEX_BUN_PATH")
GENERATED = "external"  # assets/external: what Reflex copies there from the components' own files as it compiles


def _stop_the_group(signum, frame):  # noqa: ARG001 - signal handler signature
    """SIGTERM while Reflex builds: pass it to every process of the group, this one included."""
    signal.signal(signum, signal.SIG_DFL)
    os.killpg(os.getpgrp(), signum)


def stop_the_group_on_sigterm() -> None:
    """Until Granian installs its own handler: SIGTERM stops this process and every one it started."""
    if os.getpgrp() == os.getpid():  # it leads its group (`r42 serve` starts it so): the group is all ours
        signal.signal(signal.SIGTERM, _stop_the_group)


def build_fingerprint(root: Path = ROOT) -> str:
    """What the production frontend is made of: the app's source, assets and frontend packages, Reflex's version,
    and the settings rxconfig.py gives the built pages (the address they talk to: R42_PUBLIC_URL, else the app's own,
    port included). Equal fingerprints, equal builds. Not where the build folder is, nor the machine's own address
    and port, nor the backend's allowed origins: web machines behind one public address serve one build (issue 50)."""
    from importlib.metadata import version

    from r42_app.settings import load_settings

    digest = hashlib.sha256()
    cfg = load_settings()
    digest.update(json.dumps([version("reflex"), sys.version, cfg.frontend_url, bool(cfg.redis_url),
                              {k: v for k, v in sorted(os.environ.items())
                               if (k.startswith("REFLEX_") and k not in NOT_IN_THE_BUILD)
                               or k in ("API_URL", "DEPLOY_URL")}],
                             default=str).encode())
    for name in BUILD_INPUTS:
        base = root / name
        # not assets/external: Reflex writes it while it compiles, from the sources counted here (in a fresh clone
        # the first build made it, and the next start saw a changed tree and built again)
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file()
                                                     and "__pycache__" not in p.parts
                                                     and p.relative_to(root).parts[:2] != ("assets", GENERATED))
        for path in files:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def reuse_the_build() -> None:
    """A second start of an unchanged app serves the frontend it built last time: Reflex would compile every page
    and build the bundle again (~20 s of a ~30 s restart, issue 49). Anything changed (a source file, an asset, the
    port or URL, Reflex's version), an unfinished last build, or R42_FRONTEND_REBUILD=1: it builds as always, and
    records what it built from once the build has succeeded."""
    import reflex.reflex as reflex_cli
    from reflex.utils import build

    from r42_app.services.runtime.web_lock import web_dir

    fingerprint = build_fingerprint()
    folder = web_dir()
    marker = folder / BUILT_NAME
    try:
        same = json.loads(marker.read_text()).get("fingerprint") == fingerprint
    except (OSError, ValueError, AttributeError):
        same = False
    built = (folder / "build" / "client" / "404.html").exists()
    if same and built and os.environ.get("R42_FRONTEND_REBUILD", "") not in ("1", "true", "yes"):
        print("r42: the web app is unchanged since its last build: serving that build", flush=True)
        reflex_cli._compile_app = lambda **_kw: None
        build.setup_frontend_prod = lambda root: None  # noqa: ARG005 - its signature
        return
    marker.unlink(missing_ok=True)  # a build stopped halfway is no build to reuse
    setup = build.setup_frontend_prod

    def setup_and_record(root):
        setup(root)
        marker.write_text(json.dumps({"fingerprint": fingerprint}))

    build.setup_frontend_prod = setup_and_record


def stop_after_the_build() -> None:
    """`build` (what `r42 build` runs): Reflex's own production run, the same compile and build as a start, that
    stops where it would start serving. The build is recorded (reuse_the_build), so the next start serves it."""
    from reflex.utils import exec as reflex_exec

    reflex_exec.notify_app_running = lambda: None
    reflex_exec.notify_frontend = lambda url, backend_present: print(  # noqa: ARG005 - its signature
        f"r42: the web app is built in {_web_dir()} for {url.rstrip('/')}/", flush=True)
    reflex_exec.run_backend_prod = lambda *args, **kwargs: None


def _web_dir() -> Path:
    from r42_app.services.runtime.web_lock import web_dir

    return web_dir()


def main() -> int:
    stop_the_group_on_sigterm()
    build_only = sys.argv[1:2] == ["build"]
    if build_only:
        sys.argv[1:2] = ["run"]
    if sys.argv[1:2] == ["run"] and "prod" in sys.argv:
        reuse_the_build()
    if build_only:
        stop_after_the_build()
    import granian.server

    base = granian.server.Server

    class RespawningServer(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("respawn_failed_workers", True)
            super().__init__(*args, **kwargs)

    granian.server.Server = RespawningServer
    from reflex.reflex import cli

    return cli()


if __name__ == "__main__":
    sys.exit(main())
