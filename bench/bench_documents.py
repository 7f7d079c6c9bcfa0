"""Documents in: what importing a PDF costs per page and per MB, step by step, next to the same text imported as
our JSON (the baseline: the path that existed before documents).

A 200-page and a 500-page handbook are generated (reportlab; ~300 words a page, a bookmark per chapter of 20
pages), then each is: parsed in process (`parse_bytes`) and in the sandbox (`parse_file`, a process of its own
with limits: what the app runs), planned and written to a real PocketBase (`DocumentImporter.import_parsed`:
one batch with the file), indexed (`Indexer.drain`: e5 embeddings into Chroma), imported again unchanged (the
writes counted), and imported with one chapter changed (the topics written and the passages embedded again
counted). The baseline imports the same topics as a JSON document (`KBStore.import_document`).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench.common import pocketbase
from r42_app.core.documents import ParsedDocument, plan_document
from r42_app.core.kb import export_document
from r42_app.services.adapters.documents import parse_bytes
from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.parse_sandbox import parse_file
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.document_import import DocumentImporter
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.store.documents import DocumentStore
from r42_app.services.store.kb_store import KBStore
from tests.fakes.documents import make_pdf

RUNS = 3
WORDS = ("deelnemer", "pensioen", "premie", "werkgever", "opbouw", "uitkering", "partner", "fonds", "regeling",
         "dienstjaren", "franchise", "salaris", "indexatie", "dekkingsgraad", "waardeoverdracht", "nabestaanden")


def _page(p: int, changed: bool = False) -> str:
    paragraphs = []
    for k in range(6):
        words = [WORDS[(p * 7 + k * 3 + i) % len(WORDS)] for i in range(48)]
        paragraphs.append(f"Pagina {p}, alinea {k + 1}{' (herzien)' if changed else ''}: " + " ".join(words) + ".")
    return "\n\n".join(paragraphs)


def handbook(pages: int, changed_page: int = 0) -> bytes:
    outline = [(f"Hoofdstuk {c}", (c - 1) * 20 + 1) for c in range(1, pages // 20 + 1)]
    return make_pdf([_page(p, p == changed_page) for p in range(1, pages + 1)], title="Handboek deelnemers",
                    outline=outline)


def _median(fn, runs: int = RUNS):
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def run() -> str:
    embedder = make_embedder()
    rows, steps = [], []
    with pocketbase() as (pb, _), tempfile.TemporaryDirectory() as chroma_dir:
        kb = KBStore(pb)
        docs = DocumentStore(pb)
        importer = DocumentImporter(docs)
        vectors = VectorStore(path=Path(chroma_dir), model_id=embedder.model_id)
        indexer = Indexer(pb, kb, vectors, embedder)
        embedder.encode(["warm"])  # the model's load is not the import's
        for pages in (200, 500):
            data = handbook(pages)
            mb = len(data) / 1024 / 1024
            in_process, parsed = _median(lambda d=data: parse_bytes("handboek.pdf", d))
            sandboxed, _ = _median(lambda d=data: parse_file("handboek.pdf", d))
            tenant, _ = kb.ensure_tenant(f"bench-docs-{pages}")
            start = time.perf_counter()
            first = importer.import_parsed(tenant, "handboek.pdf", data, parsed)
            write_s = time.perf_counter() - start
            start = time.perf_counter()
            stats = indexer.drain(tenant.id)
            index_s = time.perf_counter() - start
            again_s, again = _median(lambda d=data, t=tenant: importer.import_file(t, "handboek.pdf", d))
            changed = handbook(pages, changed_page=pages // 2 + 3)
            start = time.perf_counter()
            edit = importer.import_file(tenant, "handboek.pdf", changed)
            edit_s = time.perf_counter() - start
            edit_stats = indexer.drain(tenant.id)
            # baseline: the same topics as our JSON import, into a tenant of their own
            plan = plan_document(ParsedDocument(parsed.kind, parsed.title, parsed.markdown, parsed.pages),
                                 "handboek.pdf")
            as_json = export_document(plan.topics, plan.relations)
            start = time.perf_counter()
            kb.import_document(f"bench-json-{pages}", as_json)
            json_s = time.perf_counter() - start
            total = sandboxed + write_s
            rows.append(
                f"| {pages} pages, {mb:.1f} MB, {len(first.topics)} topics, {stats.passages} passages "
                f"| {in_process:.2f} s | {sandboxed:.2f} s | {write_s:.2f} s | {json_s:.2f} s "
                f"| {1000 * total / pages:.1f} ms | {total / mb:.2f} s "
                f"| {index_s:.1f} s ({1000 * index_s / pages:.0f} ms) |")
            steps.append(
                f"| {pages} pages | {again.status}, {again.writes} writes, {again_s:.2f} s "
                f"| {edit.status}: {edit.updated} topic(s) updated, {edit.created} created, {edit.deleted} removed, "
                f"{edit.writes} writes; {edit_stats.passages} passage(s) embedded again, {edit_s:.2f} s |")
    return "\n".join([
        f"### Documents in (`bench/bench_documents.py`, median of {RUNS} runs for the parse and the re-import)",
        "",
        ("| document | parse in process | parse in the sandbox | plan + write (one batch with the file) "
         "| baseline: the same topics as JSON import | import per page (sandbox + write) | import per MB "
         "| indexing (e5 + Chroma; per page) |"),
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "| document | the same file again | one page of one chapter changed |",
        "|---|---|---|",
        *steps,
    ])
