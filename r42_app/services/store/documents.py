"""Imported documents in PocketBase: the file, its hash, and the topics it became.

One file is one `documents` row (key: the slug of its file name) and the topics whose `document` field holds the
row's id: the document's topic and, for a long document, one topic per section, each `part_of` the document
topic (core/documents.py plans them). Importing writes only the difference with what is stored: the same file
again writes nothing; a changed file updates the topics that changed, creates new sections and deletes the ones
that are gone (PocketBase deletes their relations and writes the outbox rows that re-index them, pb_hooks/).

A document's writes go in one batch request with the file, all or nothing. A document too large for one batch is
written in several, the `documents` row last with the file: an import cut off half-way leaves topics with a
document id that has no row yet, and the next import of the file adopts them (`_stored`).
"""

from __future__ import annotations

import hashlib
import secrets
import string
from dataclasses import dataclass, field
from typing import Any

from r42_app.core.documents import DocumentPlan, ParsedDocument, document_key, name_key, plan_document
from r42_app.core.identity import Tenant
from r42_app.core.kb import MAX_SLUG, Topic
from r42_app.services.store.kb_store import BATCH_BYTES, BATCH_SIZE, KBError, _chunks, _topic_body, _topic_from
from r42_app.services.store.pb import BatchRequest, PBError, PocketBase, quote

_ID_ALPHABET = string.ascii_lowercase + string.digits


def new_record_id() -> str:
    """A PocketBase record id (15 characters a-z0-9), made here so a batch can refer to the row it creates."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(15))


def same_name(a: str, b: str) -> bool:
    """Whether two file names name the same document: equal but for case and Unicode normal form."""
    return name_key(a) == name_key(b)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class StoredDocument:
    """A document as stored: what the topic page shows ("Origineel: handboek.pdf") and the download needs."""

    id: str
    key: str
    topic: str
    filename: str
    kind: str
    sha256: str
    size: int
    pages: int
    stored_name: str  # the file's name in PocketBase's storage


@dataclass
class DocumentWrite:
    """What importing one file changes: topics created, updated and deleted (by slug) and the writes it took."""

    plan: DocumentPlan
    document_id: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    new_document: bool = False
    file_changed: bool = False
    writes: int = 0  # PocketBase record writes (creates, updates, deletes)
    requests: list[BatchRequest] = field(default_factory=list, repr=False)

    @property
    def status(self) -> str:
        if self.new_document:
            return "created"
        return "updated" if self.requests else "unchanged"


def _stored(row: dict[str, Any]) -> StoredDocument:
    return StoredDocument(row["id"], row["key"], row["topic"], row["filename"], row["kind"], row["sha256"],
                          int(row.get("size") or 0), int(row.get("pages") or 0), row.get("file") or "")


class DocumentStore:
    """Reads and writes a tenant's documents with the superuser connection."""

    def __init__(self, pb: PocketBase):
        self.pb = pb

    # -- reads --------------------------------------------------------------------

    def by_key(self, tenant: Tenant, key: str) -> StoredDocument | None:
        row = self.pb.first("documents", f"tenant = {quote(tenant.id)} && key = {quote(key)}")
        return _stored(row) if row else None

    def get(self, tenant: Tenant, document_id: str) -> StoredDocument | None:
        """The tenant's document with this id (None for another tenant's)."""
        row = self.pb.first("documents", f"tenant = {quote(tenant.id)} && id = {quote(document_id)}")
        return _stored(row) if row else None

    def of_topic(self, tenant: Tenant, slug: str) -> StoredDocument | None:
        """The document a topic was made from (the document's own topic or one of its sections)."""
        row = self.pb.first("topics", f"tenant = {quote(tenant.id)} && slug = {quote(slug)}", fields="document")
        doc_id = (row or {}).get("document") or ""
        return self.get(tenant, doc_id) if doc_id else None

    def documents(self, tenant: Tenant) -> list[StoredDocument]:
        return [_stored(r) for r in self.pb.all("documents", filter=f"tenant = {quote(tenant.id)}", sort="filename")]

    def roots(self, tenant: Tenant) -> dict[str, tuple[str, int]]:
        """{document topic's slug: (file name, number of its section topics)} of the tenant's documents."""
        docs = self.documents(tenant)
        if not docs:
            return {}
        counts: dict[str, int] = {}
        for row in self.pb.all_by_id("topics", filter=f"tenant = {quote(tenant.id)} && document != ''",
                                     fields="document"):
            counts[row["document"]] = counts.get(row["document"], 0) + 1
        return {d.topic: (d.filename, max(0, counts.get(d.id, 1) - 1)) for d in docs}

    def file_bytes(self, doc: StoredDocument) -> bytes:
        return self.pb.file_bytes("documents", doc.id, doc.stored_name)

    def _topic_rows(self, tenant: Tenant, document_id: str) -> list[dict[str, Any]]:
        return self.pb.all("topics", filter=f"tenant = {quote(tenant.id)} && document = {quote(document_id)}")

    # -- the difference -------------------------------------------------------------

    def _key_for(self, tenant: Tenant, filename: str) -> tuple[str, StoredDocument | None]:
        """The document key of `filename` and the stored document it updates, if any. A key is the slug of the
        name, so "Résumé.md" and "resume.txt" share one: a stored document is updated only by a file of its own
        name (case and accents aside); another file gets the next free key ("resume-2")."""
        base = document_key(filename)
        key, n = base, 1
        while True:
            doc = self.by_key(tenant, key)
            if doc is None or same_name(doc.filename, filename):
                return key, doc
            n += 1
            key = f"{base[:MAX_SLUG - len(str(n)) - 1].rstrip('-')}-{n}"

    def plan_write(self, tenant: Tenant, filename: str, data: bytes, parsed: ParsedDocument,
                   topic_type: str | None = None) -> DocumentWrite:
        """What importing this file would write (nothing is written yet). `topic_type` None keeps the type the
        document's topic has now (`concept` for a new document)."""
        key, doc = self._key_for(tenant, filename)
        digest = sha256(data)
        if doc is not None and doc.sha256 == digest and doc.filename == filename:
            # the same file again: nothing to write, and hand edits of its topics since are left as they are
            write = DocumentWrite(plan_document(parsed, filename, topic_type or "concept", root_slug=doc.topic),
                                  doc.id)
            return write
        doc_id = doc.id if doc else ""
        if not doc:  # an import cut off before its last batch left topics behind: adopt them
            orphan = self.pb.first("topics", f"tenant = {quote(tenant.id)} && slug = {quote(key)} && document != ''",
                                   fields="document")
            if orphan and not self.pb.first("documents", f"tenant = {quote(tenant.id)} && id = "
                                                         f"{quote(orphan['document'])}"):
                doc_id = orphan["document"]
        rows = self._topic_rows(tenant, doc_id) if doc_id else []
        mine = {r["slug"]: r for r in rows}
        root_row = mine.get(doc.topic) if doc else mine.get(key)
        if topic_type is None:
            topic_type = root_row["type"] if root_row else "concept"
        others = {r["slug"] for r in self.pb.all_by_id("topics", filter=f"tenant = {quote(tenant.id)}",
                                                      fields="slug")} - set(mine)
        plan = plan_document(parsed, filename, topic_type, root_slug=doc.topic if doc else (key if root_row else None),
                             taken_slugs=others)
        write = DocumentWrite(plan, doc_id or new_record_id(), new_document=doc is None)
        write.file_changed = doc is None or doc.sha256 != digest or doc.filename != filename
        requests = write.requests
        for topic in plan.topics:
            row = mine.get(topic.slug)
            body = {**_topic_body(topic), "document": write.document_id}
            if row is None:
                requests.append(BatchRequest.create("topics", {"tenant": tenant.id, **body}))
                write.created.append(topic.slug)
            elif _topic_from(row) != topic:
                requests.append(BatchRequest.update("topics", row["id"], body))
                write.updated.append(topic.slug)
            else:
                write.unchanged.append(topic.slug)
        planned = {t.slug for t in plan.topics}
        for slug, row in mine.items():
            if slug not in planned:  # a section that is gone (PocketBase deletes its relations)
                requests.append(BatchRequest.delete("topics", row["id"]))
                write.deleted.append(slug)
        have = {(r["source"], r["target"], r["type"]) for r in self.pb.all(
            "relations", filter=f"tenant = {quote(tenant.id)} && target = {quote(plan.root.slug)} && type = 'part_of'",
            fields="source,target,type")}
        for rel in plan.relations:
            if rel.key not in have:
                requests.append(BatchRequest.create("relations", {"tenant": tenant.id, "source": rel.source,
                                                                  "target": rel.target, "type": rel.type}))
        if write.file_changed or requests:
            body = {"key": key, "topic": plan.root.slug, "filename": filename, "kind": plan.kind, "sha256": digest,
                    "size": len(data), "pages": plan.pages}
            requests.append(BatchRequest.create("documents", {"id": write.document_id, "tenant": tenant.id, **body})
                            if doc is None else BatchRequest.update("documents", write.document_id, body))
        write.writes = len(requests)
        return write

    # -- writes ---------------------------------------------------------------------

    def write(self, write: DocumentWrite, data: bytes) -> None:
        """Send the planned writes: one batch with the file when it fits, else topics first and the document row
        (with the file) last. Raises KBError when PocketBase refuses."""
        requests = write.requests
        if not requests:
            return
        doc_request, topic_requests = requests[-1], requests[:-1]
        upload = {"file": (write.plan.filename, data)} if write.file_changed else None
        try:
            if len(list(_chunks(topic_requests, BATCH_SIZE))) <= 1 and len(requests) <= BATCH_SIZE and \
                    sum(len(str(r.to_json())) for r in requests) < BATCH_BYTES:
                self.pb.batch(requests, {len(requests) - 1: upload} if upload else None)
                return
            for chunk in _chunks(topic_requests):
                self.pb.batch(chunk)
            self.pb.batch([doc_request], {0: upload} if upload else None)
        except PBError as exc:
            raise KBError("kb.write_failed", f"PocketBase refused the write: {exc}") from exc


def topics_of(write: DocumentWrite) -> list[Topic]:
    return write.plan.topics
