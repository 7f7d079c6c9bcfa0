"""Documents in: the one code path of `r42 kb import FILE...`, `POST /api/kb/documents` and "Documenten toevoegen".

`check` reads a file in the parse sandbox (services/adapters/parse_sandbox.py: its own process, with a time and a
memory limit) and raises DocumentRefused with a Dutch message naming the file; nothing is written for it.
`import_parsed` writes what a checked file changes (services/store/documents.py) and says what happened;
`import_file` does both. The CLI checks every file before it writes any; the UI and the API take the good files
of an upload and refuse the bad ones.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from r42_app.core.documents import MAX_FILE_BYTES, DocumentRefused, ParsedDocument, kind_of
from r42_app.core.identity import Tenant
from r42_app.core.messages import msg, nl_number
from r42_app.services.store.documents import DocumentStore, DocumentWrite

log = logging.getLogger(__name__)

Parser = Callable[[str, bytes], ParsedDocument]


@dataclass
class FileOutcome:
    """What happened to one file: `status` created | updated | unchanged | refused, `message` in Dutch."""

    filename: str
    status: str
    message: str
    code: str = ""  # doc.* of a refused file
    topic: str = ""  # the document's topic
    topics: list[tuple[str, str]] = field(default_factory=list)  # (slug, label) of every topic of the document
    created: int = 0
    updated: int = 0
    deleted: int = 0
    pages: int = 0
    writes: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status != "refused"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.filename, "status": self.status, "message": self.message,
                **({"code": self.code} if self.code else {}),
                "topic": self.topic, "topics": [{"slug": s, "label": label} for s, label in self.topics],
                "created": self.created, "updated": self.updated, "deleted": self.deleted, "pages": self.pages}


def topic_count(n: int) -> str:
    """"1 onderwerp", "3 onderwerpen"."""
    return msg("doc.one_topic") if n == 1 else msg("doc.topics", count=nl_number(n))


def refused(filename: str, exc: DocumentRefused) -> FileOutcome:
    return FileOutcome(filename, "refused", exc.user_message, exc.code)


def _default_parser(filename: str, data: bytes) -> ParsedDocument:
    from r42_app.services.adapters.parse_sandbox import parse_file

    return parse_file(filename, data)


class DocumentImporter:
    def __init__(self, store: DocumentStore, parse: Parser | None = None):
        self.store = store
        self.parse = parse or _default_parser

    def check(self, filename: str, data: bytes) -> ParsedDocument:
        """The file read in the sandbox; DocumentRefused (naming the file) when it cannot be imported."""
        if kind_of(filename) is None:
            raise DocumentRefused("unsupported", filename=filename)
        if len(data) > MAX_FILE_BYTES:
            size = f"{len(data) / 1024 / 1024:.1f}".replace(".", ",")
            raise DocumentRefused("too_large", filename=filename, size=size, maximum=MAX_FILE_BYTES // 1024 // 1024)
        if not data:
            raise DocumentRefused("empty", filename=filename)
        return self.parse(filename, data)

    def plan(self, tenant: Tenant, filename: str, data: bytes, parsed: ParsedDocument,
             topic_type: str | None = None) -> DocumentWrite:
        return self.store.plan_write(tenant, filename, data, parsed, topic_type)

    def import_parsed(self, tenant: Tenant, filename: str, data: bytes, parsed: ParsedDocument,
                      topic_type: str | None = None) -> FileOutcome:
        """Write what the checked file changes. Raises KBError when PocketBase refuses (nothing of the file is
        written when it fits in one batch)."""
        started = time.monotonic()
        write = self.plan(tenant, filename, data, parsed, topic_type)
        self.store.write(write, data)
        topics = [(t.slug, t.label) for t in write.plan.topics]
        status = write.status
        key = {"created": "doc.created", "updated": "doc.updated", "unchanged": "doc.unchanged"}[status]
        changed = len(write.created) + len(write.updated) + len(write.deleted)
        return FileOutcome(filename, status, msg(key, filename=filename, topics=topic_count(len(topics)),
                                                 changed=topic_count(changed)),
                           topic=write.plan.root.slug, topics=topics, created=len(write.created),
                           updated=len(write.updated), deleted=len(write.deleted), pages=write.plan.pages,
                           writes=write.writes, seconds=time.monotonic() - started)

    def import_file(self, tenant: Tenant, filename: str, data: bytes, topic_type: str | None = None) -> FileOutcome:
        """Check, then write one file: a refused file comes back as a `refused` outcome, nothing written."""
        started = time.monotonic()
        try:
            parsed = self.check(filename, data)
        except DocumentRefused as exc:
            log.info("document %s refused: %s", filename, exc)
            return refused(filename, exc)
        outcome = self.import_parsed(tenant, filename, data, parsed, topic_type)
        outcome.seconds = time.monotonic() - started
        return outcome
