"""`python -m r42_app.reflex_main run ...`: Reflex's own CLI, with one change for several backend workers.

Reflex serves its production backend with Granian, which by default shuts the whole server down when
one worker process dies. With several workers sharing state through Redis, the right answer to a dead
worker is a new one: its websocket clients reconnect to a live worker and find their state in Redis.
So Granian is told to respawn failed workers (it still gives up on a crash loop).

When `r42 serve` dies, only this process hears of it (its parent-death signal, SIGTERM): until Granian
serves (and stops its workers on that signal itself), SIGTERM takes the whole process group down, so the
frontend build (bun and its children) stops too, as on a normal stop.
"""

import os
import signal
import sys


def _stop_the_group(signum, frame):  # noqa: ARG001 - signal handler signature
    """SIGTERM while Reflex builds: pass it to every process of the group, this one included."""
    signal.signal(signum, signal.SIG_DFL)
    os.killpg(os.getpgrp(), signum)


def stop_the_group_on_sigterm() -> None:
    """Until Granian installs its own handler: SIGTERM stops this process and every one it started."""
    if os.getpgrp() == os.getpid():  # it leads its group (`r42 serve` starts it so): the group is all ours
        signal.signal(signal.SIGTERM, _stop_the_group)


def main() -> int:
    stop_the_group_on_sigterm()
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
