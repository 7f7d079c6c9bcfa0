"""Secrets out of what is logged or raised (issue 21): command lines, messages and URLs.

Pure string work: services/ passes the secrets it knows (a password, a token) and gets back text that can go
to a log, a terminal or an exception message.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence

MASK = "***"
# scheme://user:PASSWORD@host: the password part of any URL in a text
_URL_PASSWORD = re.compile(r"([a-z][a-z0-9+.-]*://[^\s:/@]*:)[^\s@/]+@", re.IGNORECASE)


def masked(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with each secret, and the password of any URL in it, replaced by ***."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _URL_PASSWORD.sub(rf"\1{MASK}@", text)


def redacted_url(url: str) -> str:
    """A URL without its password, for the log."""
    return masked(url)


def shown(command: Sequence[str], secrets: Iterable[str] = ()) -> str:
    """A command line as a shell would read it, for a log line or an error, with its secrets masked."""
    secrets = list(secrets)
    return shlex.join(masked(str(part), secrets) for part in command)
