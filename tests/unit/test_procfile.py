"""The Procfile stays in step with the CLI and the settings (issue 50): every line runs a command `r42` accepts, with
environment variables R42 reads; the roles are the ones docs/DEPLOY.md names."""

import dataclasses
import re
import shlex
from pathlib import Path

from r42_app.cli import build_parser
from r42_app.settings import Settings

PROCFILE = Path(__file__).resolve().parents[2] / "Procfile"
KNOWN = {name for f in dataclasses.fields(Settings) for name in f.metadata["env"]}


def lines() -> dict[str, str]:
    return dict(line.split(": ", 1) for line in PROCFILE.read_text().splitlines()
                if line.strip() and not line.startswith("#"))


def test_every_process_is_a_command_r42_accepts_with_settings_r42_reads():
    procs = lines()
    assert set(procs) == {"data", "web", "indexer", "costs"}
    for name, command in procs.items():
        words = shlex.split(re.sub(r"\$\([^)]*\)", "SECRET", command))
        assigned = [w.split("=", 1)[0] for w in words[:words.index("exec")]]
        assert set(assigned) <= KNOWN, (name, set(assigned) - KNOWN)
        program, *args = words[words.index("exec") + 1:]
        assert program == ".venv/bin/r42", name
        build_parser().parse_args(args)  # exits (SystemExit) on an option the CLI does not have


def test_the_web_process_is_a_web_machine_against_the_data_process():
    procs = lines()
    assert "serve --data-only" in procs["data"]
    web = procs["web"]
    assert "serve --web-only" in web
    for setting in ("R42_PB_URL=", "REFLEX_REDIS_URL=", "CHROMA_URL=", "R42_CHROMA_TOKEN="):
        assert setting in web, setting
