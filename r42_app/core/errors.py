"""Errors a user may be told about: each carries a code of the Dutch catalogue (core/messages.py), and the
UI shows `user_message`, never the exception's own text."""

from __future__ import annotations

from typing import ClassVar

from r42_app.core.messages import msg


class UserError(Exception):
    """An error with a catalogue code; `str()` stays the (English) text for logs and the CLI."""

    # A subclass raised with a kind first (ChatRefused("rate_limited")) has the code prefix + kind;
    # tests/unit/test_messages.py reads this to check such literals against the catalogue.
    code_prefix: ClassVar[str] = ""

    def __init__(self, code: str, detail: str = "", **fields: object):
        super().__init__(detail or code)
        self.code = code
        self.fields = fields

    @property
    def user_message(self) -> str:
        return msg(self.code, **self.fields)
