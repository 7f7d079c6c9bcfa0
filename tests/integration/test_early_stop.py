"""A Ctrl-C (or SIGTERM) while `r42 serve` is still importing stops it, even when the exception the signal raised
was swallowed on the way: C code that calls back into Python during an import (numpy's, scipy's) may clear it.
Before, such a stop was lost and R42 went on to start PocketBase, seed the demo and serve the app."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import DEMO_PASSWORD, free_port

# r42's own startup, with a library between the signal and r42 that eats the exception it raised
SWALLOWED = """
import os, signal, sys
import r42_app.cli as cli
try:
    os.kill(os.getpid(), signal.{sig})
    for _ in range(1000):
        pass
except SystemExit:
    pass
print("swallowed", flush=True)
sys.argv = ["r42", "serve"]
sys.exit(cli.main())
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_stop_swallowed_during_the_imports_still_stops_serve(tmp_path, sig):
    data = tmp_path / "data"
    env = {**os.environ, "R42_DATA_DIR": str(data), "R42_PORT": str(free_port()), "R42_PB_PORT": str(free_port()),
           "R42_DEMO_PASSWORD": DEMO_PASSWORD, "R42_MCP_ENABLED": "false"}
    env.pop("R42_PB_URL", None)
    proc = subprocess.Popen([sys.executable, "-c", SWALLOWED.format(sig=sig)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"`r42 serve` did not stop after a {sig} during its start:\n{output}")
    assert proc.returncode == 128 + getattr(signal, sig), output
    assert output.strip() == "swallowed"  # nothing started: no PocketBase, no seed, no traceback
    assert not (data / "pb_data").exists()
