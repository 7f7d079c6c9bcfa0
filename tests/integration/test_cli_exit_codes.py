"""One set of exit codes for every `r42` command (r42_app/cli/common.py): 2 when the command was wrong (an
unknown tenant), 1 when the world failed (the PocketBase it names does not answer); a line saying which,
never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import free_port
from tests.integration.test_cli_kb import run_cli

UNKNOWN = "bestaat-niet"


@pytest.mark.parametrize("command", [
    ["kb", "export", "--tenant", UNKNOWN],
    ["chatbot", "access", "--tenant", UNKNOWN],
    ["chatbot", "enable", "--tenant", UNKNOWN],
    ["chatbot", "rag-backfill", "--tenant", UNKNOWN],
    ["costs", "report", "--tenant", UNKNOWN],
], ids=lambda c: " ".join(c[:2]))
def test_an_unknown_tenant_exits_2(pb_server, seeded, command):
    out = run_cli(pb_server, *command)
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"unknown tenant {UNKNOWN!r}" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("command", [
    ["seed", "demo"],
    ["kb", "export", "--tenant", "demo"],
    ["search", "--tenant", "demo", "pensioen"],
    ["chatbot", "access", "--tenant", "demo"],
    ["credits", "show", "--tenant", "demo"],
    ["outbox", "retry"],
    ["doctor"],
    ["backup", "create"],
], ids=lambda c: " ".join(c[:2]))
def test_an_unreachable_pocketbase_exits_1(tmp_path, command):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env = {**os.environ, "R42_PB_URL": url, "R42_DATA_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "r42_app.cli", *command], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"PocketBase at {url} is not reachable" in out.stderr and "Traceback" not in out.stderr


def test_an_index_another_process_holds_is_a_failure_not_bad_input(pb_server, seeded, tmp_path):
    """`rag-backfill --rebuild` while the app holds the embedded index: 1, like `r42 worker` in that case
    (it used to be 2, as if the command were wrong; the same command works once the app is stopped)."""
    shutil.copy(pb_server.data_dir / "superuser.json", tmp_path / "superuser.json")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import time; from pathlib import Path; from r42_app.services.adapters.vector_store import writer_lock; "
        f"assert writer_lock(Path({str(tmp_path / 'chroma')!r})); print('held', flush=True); time.sleep(120)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        env = {**os.environ, "R42_PB_URL": pb_server.url, "R42_DATA_DIR": str(tmp_path)}
        out = subprocess.run([sys.executable, "-m", "r42_app.cli", "chatbot", "rag-backfill", "--tenant", "demo",
                              "--rebuild"], env=env, capture_output=True, text=True, timeout=300)
    finally:
        holder.kill()
        holder.wait(10)
    assert out.returncode == 1 and "holds the embedded index" in out.stderr, out.stdout + out.stderr
