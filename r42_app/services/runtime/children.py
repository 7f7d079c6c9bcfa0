"""Child servers that die with the process that started them, even when it is killed outright (SIGKILL).

A clean stop of `r42 serve` stops its children itself; a SIGKILL (the OOM killer, `kill -9`, a crashed terminal)
runs no code at all, and PocketBase, Redis, Chroma and the web app would go on holding their ports and data.
On Linux the kernel can send the child a signal when its parent dies (`prctl(PR_SET_PDEATHSIG)`), set in the
child between fork and exec. Elsewhere there is no such thing and children outlive a killed parent, as before.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A `preexec_fn` for `subprocess.Popen` that has the kernel send `sig` to the child when this process dies,
    or None where that cannot be had: not Linux, or not the main thread. (The signal follows the *thread* that
    forked: a child spawned from a worker thread would be stopped when that thread ends.)"""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    parent = os.getpid()

    def set_parent_death_signal() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect: the signal will never come
            os._exit(128 + int(sig))

    return set_parent_death_signal
