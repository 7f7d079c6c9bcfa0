"""`python -m r42_app.reflex_main run ...`: Reflex's own CLI, with one change for several backend workers.

Reflex serves its production backend with Granian, which by default shuts the whole server down when
one worker process dies. With several workers sharing state through Redis, the right answer to a dead
worker is a new one: its websocket clients reconnect to a live worker and find their state in Redis.
So Granian is told to respawn failed workers (it still gives up on a crash loop).
"""

import sys


def main() -> int:
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
