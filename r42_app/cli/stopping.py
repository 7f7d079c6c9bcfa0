"""Ctrl-C and SIGTERM while `r42` is still starting: a quiet stop, remembered for `main` and `serve`. Imports nothing
of R42: the package imports it before anything slow, and `serve` reads it without importing the package."""

from __future__ import annotations

import signal

# The stop signals that arrived while the command was starting. Raising from the handler is not enough on its own:
# the signal lands during numpy's and scipy's imports, where C code calling back into Python may clear the exception;
# then the Ctrl-C was lost and `serve` started anyway (seen twice in a dozen runs of the shutdown test). `main` and
# `serve` look here before they start anything.
stop_signals: list[int] = []


def _quiet_exit(signum, frame):  # noqa: ARG001 - signal handler signature
    """Ctrl-C or SIGTERM while the command is still starting (or outside `serve`): stop, without a traceback."""
    stop_signals.append(signum)
    raise SystemExit(128 + signum)


# installed on import: r42_app/cli/__init__.py imports this module first, before its slow imports
signal.signal(signal.SIGINT, _quiet_exit)
signal.signal(signal.SIGTERM, _quiet_exit)
