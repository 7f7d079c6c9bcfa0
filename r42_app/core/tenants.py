"""Organisations (tenants) as operators make them (issue 46): what a slug and a name may be, and the states.

Pure: the store (services/store/tenants.py) writes what these checks let through, and PocketBase's field rules
(pb_migrations) refuse the rest whoever writes.
"""

from __future__ import annotations

import unicodedata

from r42_app.core.kb import check_slug

STATES = ("active", "disabled")
MAX_NAME = 200  # tenants.name's max in PocketBase
DEFAULT_CREDITS = 1000  # what a new tenant starts with (`r42 credits` changes it)


def name_problem(name: object) -> str:
    """Why `name` cannot be an organisation's name ("" when it can): text of 1 to MAX_NAME characters after trimming,
    with nothing invisible or a control character in it (a name is shown on every page and in every mail)."""
    if not isinstance(name, str) or not name.strip():
        return "a name is required"
    text = name.strip()
    if len(text) > MAX_NAME:
        return f"a name is at most {MAX_NAME} characters ({len(text)} given)"
    odd = [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp")]
    if odd:
        return f"a name cannot hold control or invisible characters (U+{ord(odd[0]):04X})"
    return ""


def slug_problem(slug: object) -> str:
    """Why `slug` cannot name a new organisation ("" when it can): kebab-case, as topic ids are."""
    issues = check_slug(slug, "slug")
    return issues[0].message if issues else ""
