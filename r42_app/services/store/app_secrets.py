"""Secrets of the app that must travel with its data, kept in PocketBase (collection `app_secrets`, superuser only;
pb_migrations/1764401400_r42_app_secrets.js), so that `r42 backup` holds them and a restore brings them back.

The question log's key is one: every learner's pseudonymous user key is made from it (core/questions.py), and
without the same key after a restore `r42 user forget` cannot find that user's old questions.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from pathlib import Path

from r42_app.services.store.pb import PBError, PocketBase, quote

log = logging.getLogger(__name__)
COLLECTION = "app_secrets"
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def stored_secret(pb: PocketBase, name: str, legacy_file: Path | None = None, length: int = 32) -> str:
    """The secret `name` from PocketBase. The first time, it is stored there: the one in `legacy_file` if a data dir
    of an older version has it (the keys already made stay valid), else a new random one. Processes that start
    at once agree on one: the name is unique, so a second create fails and that process reads the first one's."""
    found = _read(pb, name)
    if found:
        return found
    value = ""
    if legacy_file is not None and legacy_file.is_file():
        value = legacy_file.read_text(encoding="utf-8").strip()
    if len(value) < 16:
        value = "".join(secrets.choice(_ALPHABET) for _ in range(length))
    try:
        pb.create(COLLECTION, {"name": name, "value": value})
        log.info("secret %s stored in PocketBase%s", name, " (from the data dir's file)" if legacy_file and
                 legacy_file.is_file() else "")
        return value
    except PBError:
        found = _read(pb, name)  # another process stored it first
        if found:
            return found
        raise


def stored_value(pb: PocketBase, name: str, make: Callable[[], str]) -> str:
    """The app secret `name`; the first time, `make()` is stored (processes starting at once agree on the first)."""
    found = _read(pb, name)
    if found:
        return found
    try:
        pb.create(COLLECTION, {"name": name, "value": make()})
    except PBError:
        pass  # another process stored it first
    found = _read(pb, name)
    if not found:
        raise PBError(0, f"the app secret {name} could not be stored")
    return found


def _read(pb: PocketBase, name: str) -> str:
    row = pb.first(COLLECTION, f"name = {quote(name)}")
    value = str((row or {}).get("value") or "").strip()
    return value
