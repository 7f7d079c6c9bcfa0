"""Forgetting a person (issue 44, `r42 user forget`): what names them, and how a stored value is rid of it. Pure: the
stores (services/store/forget.py) and the files R42 writes (services/adapters/mcp.py) use it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ERASED = "verwijderd"  # what a forgotten user wrote into an external tool call (or a message) becomes this
MIN_NAME = 3  # a shorter name (a nickname of two letters) is not searched for: it would hit every other word


@dataclass(frozen=True)
class Needles:
    """What names the user: their id and e-mail address (anywhere in a text) and their name (as a whole word)."""

    user_id: str
    email: str
    name: str

    def searched(self) -> list[str]:
        """What PocketBase searches for (SQLite's LIKE: ASCII letters in any case), a few spellings of the name."""
        out = {self.user_id, self.email}
        if len(self.name) >= MIN_NAME:
            out |= {self.name, self.name.lower(), self.name.upper(), self.name.title()}
        return sorted(n for n in out if len(n) >= 3)

    def pattern(self) -> re.Pattern[str]:
        parts = [re.escape(n) for n in sorted({self.user_id, self.email} - {""}, key=len, reverse=True)]
        if len(self.name) >= MIN_NAME:
            parts.insert(0, r"(?<!\w)" + re.escape(self.name) + r"(?!\w)")
        return re.compile("|".join(parts), re.IGNORECASE)


def replaced(value: Any, pattern: re.Pattern[str], pseudonym: str) -> Any:
    """`value` (JSON: dicts, lists, strings) with every match of `pattern` replaced by the pseudonym."""
    if isinstance(value, dict):
        return {k: replaced(v, pattern, pseudonym) for k, v in value.items()}
    if isinstance(value, list):
        return [replaced(v, pattern, pseudonym) for v in value]
    if isinstance(value, str):
        return pattern.sub(pseudonym, value)
    return value


def erased(value: Any) -> Any:
    """`value` (JSON) with every text replaced by ERASED: the shape stays, what was written goes."""
    if isinstance(value, dict):
        return {k: erased(v) for k, v in value.items()}
    if isinstance(value, list):
        return [erased(v) for v in value]
    if isinstance(value, str):
        return ERASED if value else value
    return value
