"""What the `r42` commands share: one set of exit codes, the error line, and the tenant a command names.

Exit codes: EXIT_OK, done; EXIT_FAILURE, the world failed (PocketBase unreachable, a write refused, a check
FAILed, another process in the way); EXIT_BAD_INPUT, the command was wrong (an unknown tenant or user, a bad
file, options that do not go together), as argparse's own usage errors are.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date

from r42_app.container import Services
from r42_app.core.identity import Tenant
from r42_app.services.store.pb import PBError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2


def _err(message: str) -> None:
    print(f"r42: {message}", file=sys.stderr)


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> int:
    """Print the error line and give the exit code to return (bad input unless told otherwise)."""
    _err(message)
    return code


def exit_code_of(exc: Exception) -> int:
    """A store's error as an exit code: PocketBase refusing the write is a failure, anything else was bad input."""
    return EXIT_FAILURE if isinstance(exc.__cause__, PBError) else EXIT_BAD_INPUT


def tenants_named(svc: Services, slug: str) -> list[Tenant]:
    """The tenant named by slug (or every tenant for *); an unknown slug exits with EXIT_BAD_INPUT."""
    kb, pb = svc.kb, svc.admin_pb
    if slug == "*":
        return [kb.require_tenant(row["slug"]) for row in pb.all("tenants", fields="slug", sort="slug")]
    tenant = kb.tenant(slug)
    if tenant is None:
        known = ", ".join(row["slug"] for row in pb.all("tenants", fields="slug", sort="slug"))
        raise SystemExit(_fail(f"unknown tenant {slug!r}; tenants: {known or '(none)'}"))
    return [tenant]


def day(value: str) -> date:
    """An argparse type: a day like 2026-12-01 (`--since`, `--until`)."""
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date like 2026-12-01") from exc
