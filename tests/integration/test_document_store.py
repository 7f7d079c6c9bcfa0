"""Imported documents against a real PocketBase: the file kept, only differences written, deletes that cascade.

The parsed text is made here (the parsers have their own tests); what is tested is what the store writes.
"""

from __future__ import annotations

import secrets

import pytest

from r42_app.core.documents import ParsedDocument
from r42_app.services.document_import import DocumentImporter
from r42_app.services.store.documents import DocumentStore
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.pb import quote


def _chapters(texts: dict[str, str]) -> str:
    parts = ["# Regeling deelnemers", "Deze regeling beschrijft hoe je pensioen opbouwt."]
    for title, word in texts.items():
        parts += [f"## {title}",
                  " ".join(f"{word} is wat hoofdstuk {title} uitlegt over de regeling." for _ in range(300))]
    return "\n\n".join(parts)


CHAPTERS = {"Opbouw": "Opbouw", "Premie": "Premie", "Uitkering": "Uitkering"}


@pytest.fixture
def tenant(admin_pb, seeded):
    kb = KBStore(admin_pb)
    tenant, _ = kb.ensure_tenant(f"docs-{secrets.token_hex(3)}")
    return tenant


@pytest.fixture
def importer(admin_pb):
    return DocumentImporter(DocumentStore(admin_pb), parse=lambda name, data, **_: ParsedDocument(
        "md", "", data.decode()))


def _outbox(admin_pb, tenant) -> list[tuple[str, str]]:
    rows = admin_pb.all("outbox", filter=f"payload.tenant = {quote(tenant.id)}", sort="created")
    return [(r["type"].rsplit(".", 1)[-1], r["payload"]["topic"]) for r in rows]


def _slugs(admin_pb, tenant) -> set[str]:
    return {r["slug"] for r in admin_pb.all("topics", filter=f"tenant = {quote(tenant.id)}", fields="slug")}


def test_a_document_becomes_linked_topics_and_keeps_its_file(admin_pb, tenant, importer):
    data = _chapters(CHAPTERS).encode()
    outcome = importer.import_file(tenant, "regeling.md", data)
    assert outcome.status == "created" and outcome.topic == "regeling"
    assert _slugs(admin_pb, tenant) == {"regeling", "regeling-opbouw", "regeling-premie", "regeling-uitkering"}
    rels = admin_pb.all("relations", filter=f"tenant = {quote(tenant.id)}")
    assert {(r["source"], r["target"], r["type"]) for r in rels} == {
        (f"regeling-{c}", "regeling", "part_of") for c in ("opbouw", "premie", "uitkering")}
    store = DocumentStore(admin_pb)
    doc = store.of_topic(tenant, "regeling-premie")
    assert doc is not None and doc.filename == "regeling.md" and doc.topic == "regeling"
    assert store.file_bytes(doc) == data
    assert sorted(_outbox(admin_pb, tenant)) == sorted(("upsert", s) for s in _slugs(admin_pb, tenant))


def test_the_same_file_again_writes_nothing(admin_pb, tenant, importer):
    data = _chapters(CHAPTERS).encode()
    importer.import_file(tenant, "regeling.md", data)
    before = (_outbox(admin_pb, tenant), admin_pb.change_marker("topics", f"tenant = {quote(tenant.id)}"),
              admin_pb.change_marker("documents", f"tenant = {quote(tenant.id)}"))
    again = importer.import_file(tenant, "regeling.md", data)
    assert again.status == "unchanged" and again.writes == 0
    assert (_outbox(admin_pb, tenant), admin_pb.change_marker("topics", f"tenant = {quote(tenant.id)}"),
            admin_pb.change_marker("documents", f"tenant = {quote(tenant.id)}")) == before


def test_a_changed_file_updates_only_the_changed_section_and_removes_a_gone_one(admin_pb, tenant, importer):
    importer.import_file(tenant, "regeling.md", _chapters(CHAPTERS).encode())
    before = len(_outbox(admin_pb, tenant))
    changed = {"Opbouw": "Opbouw", "Premie": "Bijdrage"}  # Premie rewritten, Uitkering gone
    outcome = importer.import_file(tenant, "regeling.md", _chapters(changed).encode())
    assert outcome.status == "updated"
    assert (outcome.created, outcome.updated, outcome.deleted) == (0, 2, 1)  # the section and the contents list
    assert _slugs(admin_pb, tenant) == {"regeling", "regeling-opbouw", "regeling-premie"}
    assert sorted(_outbox(admin_pb, tenant)[before:]) == [("delete", "regeling-uitkering"), ("upsert", "regeling"),
                                                          ("upsert", "regeling-premie")]
    assert not admin_pb.all("relations", filter=f"tenant = {quote(tenant.id)} && source = 'regeling-uitkering'")
    doc = DocumentStore(admin_pb).by_key(tenant, "regeling")
    assert DocumentStore(admin_pb).file_bytes(doc) == _chapters(changed).encode()


def test_deleting_the_document_topic_removes_its_sections_and_its_file(admin_pb, tenant, importer):
    importer.import_file(tenant, "regeling.md", _chapters(CHAPTERS).encode())
    KBStore(admin_pb).create_topic(tenant, {"id": "los", "label": "Los", "type": "concept", "description": "Los."})
    KBStore(admin_pb).delete_topic(tenant, "regeling")
    assert _slugs(admin_pb, tenant) == {"los"}
    assert not admin_pb.all("documents", filter=f"tenant = {quote(tenant.id)}")
    assert not admin_pb.all("relations", filter=f"tenant = {quote(tenant.id)}")


def test_documents_are_the_servers_to_write_and_the_tenants_to_read(admin_pb, tenant, importer, pb_server):
    from r42_app.services.store.pb import PBError, PocketBase

    importer.import_file(tenant, "regeling.md", _chapters(CHAPTERS).encode())
    anonymous = PocketBase(pb_server.url)
    assert anonymous.list("documents").get("items") == []
    with pytest.raises(PBError):
        anonymous.create("documents", {"tenant": tenant.id, "key": "x", "topic": "x", "filename": "x.md",
                                       "kind": "md", "sha256": "0" * 64})


def test_files_of_another_name_with_the_same_slug_are_documents_of_their_own(admin_pb, tenant, importer):
    first = importer.import_file(tenant, "Résumé.md", b"# Samenvatting\n\nDe eerste samenvatting.")
    second = importer.import_file(tenant, "resume.txt", b"De tweede samenvatting, een ander bestand.")
    assert (first.status, second.status) == ("created", "created")
    assert first.topic == "resume" and second.topic == "resume-2"
    store = DocumentStore(admin_pb)
    assert store.by_key(tenant, "resume").filename == "Résumé.md"
    assert store.by_key(tenant, "resume-2").filename == "resume.txt"
    again = importer.import_file(tenant, "RÉSUMÉ.md", b"# Samenvatting\n\nDe eerste, bijgewerkt.")
    assert again.status == "updated" and again.topic == "resume"  # its own name (case aside) updates it


def test_the_same_file_again_leaves_hand_edits_alone(admin_pb, tenant, importer):
    data = b"# Regeling\n\nDe regeling zoals het bestand haar beschrijft."
    importer.import_file(tenant, "regeling.md", data)
    kb = KBStore(admin_pb)
    kb.update_topic(tenant, "regeling", {"label": "Regeling", "type": "concept", "description": "Met de hand.",
                                         "content": "Met de hand herschreven."})
    again = importer.import_file(tenant, "regeling.md", data)
    assert again.status == "unchanged" and again.writes == 0
    assert kb.topic(tenant, "regeling").description == "Met de hand."


def test_an_admin_token_cannot_tie_a_topic_to_a_document(admin_pb, tenant, importer, pb_server):
    from r42_app.services.store.pb import PBError

    importer.import_file(tenant, "regeling.md", _chapters(CHAPTERS).encode())
    doc = DocumentStore(admin_pb).by_key(tenant, "regeling")
    demo = KBStore(admin_pb).require_tenant("demo")
    admin = pb_server.user("admin@example.com")
    with pytest.raises(PBError):
        admin.create("topics", {"tenant": demo.id, "slug": "vastgeknoopt", "label": "Vastgeknoopt", "type": "concept",
                                "description": "Een poging.", "document": doc.id})
    row = admin_pb.first("topics", f"tenant = {quote(demo.id)} && slug = 'aow'")
    with pytest.raises(PBError):
        admin.update("topics", row["id"], {"document": doc.id})
    assert admin_pb.first("topics", f"tenant = {quote(demo.id)} && slug = 'aow'")["document"] == ""
    assert admin_pb.first("topics", "slug = 'vastgeknoopt'") is None
