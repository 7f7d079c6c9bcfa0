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
from r42_app.core.messages import msg, number
from r42_app.services.store.documents import DocumentStore, DocumentWrite

log = logging.getLogger(__name__)

Parser = Callable[..., ParsedDocument]  # (filename, data, *, tenant="", on_wait=None): parse_sandbox.parse_file
WaitHook = Callable[[str], None]  # "queued" when a file waits for a parse slot, "reading" once it may start


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
    queued_seconds: float = 0.0  # how long the file waited for a parse slot (other files were being read)

    @property
    def ok(self) -> bool:
        return self.status != "refused"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.filename, "status": self.status, "message": self.message,
                **({"code": self.code} if self.code else {}),
                "topic": self.topic, "topics": [{"slug": s, "label": label} for s, label in self.topics],
                "created": self.created, "updated": self.updated, "deleted": self.deleted, "pages": self.pages,
                "queued_seconds": round(self.queued_seconds, 1)}


def topic_count(n: int) -> str:
    """"1 onderwerp", "3 onderwerpen"."""
    return msg("doc.one_topic") if n == 1 else msg("doc.topics", count=number(n))


def refused(filename: str, exc: DocumentRefused) -> FileOutcome:
    return FileOutcome(filename, "refused", exc.user_message, exc.code)


def _default_parser(filename: str, data: bytes, *, tenant: str = "", on_wait: WaitHook | None = None) -> ParsedDocument:
    from r42_app.services.adapters.parse_sandbox import parse_file

    return parse_file(filename, data, tenant=tenant, on_wait=on_wait)


class _Waited:
    """An on_wait hook that also measures how long the file waited for its parse slot."""

    def __init__(self, tell: WaitHook | None):
        self.tell = tell
        self.since = 0.0
        self.seconds = 0.0

    def __call__(self, status: str) -> None:
        if status == "queued":
            self.since = time.monotonic()
        elif self.since:
            self.seconds += time.monotonic() - self.since
            self.since = 0.0
        if self.tell is not None:
            self.tell(status)


class DocumentImporter:
    def __init__(self, store: DocumentStore, parse: Parser | None = None):
        self.store = store
        self.parse = parse or _default_parser

    def check(self, filename: str, data: bytes, tenant: str = "", on_wait: WaitHook | None = None) -> ParsedDocument:
        """The file read in the sandbox (in `tenant`'s queue for a parse slot, see parse_sandbox.ParseSlots);
        DocumentRefused (naming the file) when it cannot be imported."""
        if kind_of(filename) is None:
            raise DocumentRefused("unsupported", filename=filename)
        if len(data) > MAX_FILE_BYTES:
            size = f"{len(data) / 1024 / 1024:.1f}".replace(".", ",")
            raise DocumentRefused("too_large", filename=filename, size=size, maximum=MAX_FILE_BYTES // 1024 // 1024)
        if not data:
            raise DocumentRefused("empty", filename=filename)
        return self.parse(filename, data, tenant=tenant, on_wait=on_wait)

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

    def import_file(self, tenant: Tenant, filename: str, data: bytes, topic_type: str | None = None,
                    on_wait: WaitHook | None = None) -> FileOutcome:
        """Check, then write one file: a refused file comes back as a `refused` outcome, nothing written.
        `on_wait` hears "queued" when the file must wait for a parse slot and "reading" when it starts."""
        started = time.monotonic()
        waited = _Waited(on_wait)
        try:
            parsed = self.check(filename, data, tenant.id, waited)
        except DocumentRefused as exc:
            log.info("document %s refused: %s", filename, exc)
            outcome = refused(filename, exc)
        else:
            outcome = self.import_parsed(tenant, filename, data, parsed, topic_type)
        outcome.seconds = time.monotonic() - started
        outcome.queued_seconds = waited.seconds
        return outcome
