"""Documents in, as an operator and an admin use it: `r42 kb import FILES...` and `POST /api/kb/documents`, with
real files (made in tests/fakes/documents.py), the real parsers in their sandbox and a real PocketBase."""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time

import httpx
import pytest

from r42_app.api import api
from r42_app.core.documents import download_url
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.pb import quote
from r42_app.services.store.tenants import Tenants
from tests.fakes import documents as files
from tests.integration.test_cli_kb import run_cli

SENTENCE_150 = "De wachttijd voor het arbeidsongeschiktheidspensioen is precies zevenenveertig dagen"


def handbook(pages: int = 200) -> bytes:
    """A handbook PDF with a chapter bookmark every 20 pages and one findable sentence on page 150."""
    texts = []
    for p in range(1, pages + 1):
        chapter = (p - 1) // 20 + 1
        body = [f"Pagina {p} van het handboek beschrijft de regeling voor deelnemers in hoofdstuk {chapter}.",
                ("Deelnemers bouwen pensioen op zolang zij in dienst zijn en premie betalen aan het fonds. De "
                 "werkgever "
                 "betaalt het grootste deel van de premie en houdt het deel van de werknemer in op het salaris."),
                ("Wie uit dienst gaat, houdt het opgebouwde pensioen. Het fonds stuurt ieder jaar een overzicht van "
                 "wat je hebt opgebouwd en wat je kunt verwachten als je met pensioen gaat.")]
        if p == 150:
            body.append(SENTENCE_150 + ", gerekend vanaf de eerste ziektedag.")
        texts.append("\n\n".join(body))
    outline = [(f"Hoofdstuk {c}", (c - 1) * 20 + 1) for c in range(1, pages // 20 + 1)]
    return files.make_pdf(texts, title="Handboek deelnemers", outline=outline)


def topic_count(admin_pb, tenant_slug: str) -> int | None:
    tenant = KBStore(admin_pb).tenant(tenant_slug)
    return None if tenant is None else len(admin_pb.all("topics", filter=f"tenant = {quote(tenant.id)}",
                                                        fields="id"))


def good_folder(tmp_path):
    folder = tmp_path / "kennis"
    (folder / "sub").mkdir(parents=True)
    (folder / "handboek.pdf").write_bytes(handbook(30))
    (folder / "regels.docx").write_bytes(files.make_docx([
        ("title", "Reglement"), ("heading", 1, "Toetreding"), ("p", "Je treedt toe op de eerste werkdag."),
        ("bullets", ["na de proeftijd", "vanaf 21 jaar"]),
        ("table", [["Leeftijd", "Premie"], ["21-30", "4%"], ["31-67", "6%"]])]))
    (folder / "sub" / "training.pptx").write_bytes(files.make_pptx([
        ("Welkom bij de training", ["Wat is pensioen", ("Drie pijlers", 1)]), ("Afsluiting", ["Vragen?"])]))
    (folder / "sub" / "intranet.html").write_bytes(files.make_html(
        "Partnerpensioen", "<h1>Partnerpensioen</h1><p>Het partnerpensioen gaat naar je partner als je overlijdt. "
        "Het is zeventig procent van je ouderdomspensioen.</p>"))
    (folder / "wiki.md").write_text("# Waardeoverdracht\n\nBij een nieuwe baan kun je je pensioen meenemen.\n")
    (folder / "notitie.txt").write_text("Het pensioenfonds sluit op vrijdag om vijf uur.\n")
    (folder / "logo.png").write_bytes(files.PNG_1PX)  # a folder's other files are skipped
    return folder


def test_cli_imports_a_folder_of_every_kind_then_writes_nothing_the_second_time(pb_server, admin_pb, seeded, tmp_path):
    tenant = f"docs-{secrets.token_hex(3)}"
    Tenants(admin_pb).create(tenant, "Documenten")
    folder = good_folder(tmp_path)
    result = run_cli(pb_server, "kb", "import", "--tenant", tenant, "--no-index", str(folder))
    assert result.returncode == 0, result.stderr
    assert "6 file(s): 6 created, 0 updated, 0 unchanged, 0 refused; 1 skipped" in result.stdout
    assert "skipped" in result.stderr and "logo.png" in result.stderr
    kb = KBStore(admin_pb)
    t = kb.require_tenant(tenant)
    labels = {x.slug: x.label for x in kb.topics(t)}
    assert labels["handboek"] == "Handboek deelnemers" and labels["regels"] == "Reglement"
    assert labels["training"] == "Welkom bij de training" and labels["intranet"] == "Partnerpensioen"
    assert labels["wiki"] == "Waardeoverdracht" and labels["notitie"] == "Notitie"
    regels = kb.topic(t, "regels").content
    assert "| Leeftijd | Premie |" in regels and "- na de proeftijd" in regels
    assert "<!-- pagina 30 -->" in kb.topic(t, "handboek").content
    nav_free = kb.topic(t, "intranet").content
    assert "zeventig procent" in nav_free and "Cookies" not in nav_free
    # the same folder again: nothing written
    before = admin_pb.change_marker("topics", f"tenant = {quote(t.id)}")
    outbox = len(admin_pb.all("outbox", filter=f"payload.tenant = {quote(t.id)}"))
    again = run_cli(pb_server, "kb", "import", "--tenant", tenant, "--no-index", str(folder))
    assert again.returncode == 0, again.stderr
    assert "6 file(s): 0 created, 0 updated, 6 unchanged, 0 refused" in again.stdout
    assert "(0 writes)" in again.stdout
    assert admin_pb.change_marker("topics", f"tenant = {quote(t.id)}") == before
    assert len(admin_pb.all("outbox", filter=f"payload.tenant = {quote(t.id)}")) == outbox


BAD_FILES = {
    "beveiligd.pdf": files.encrypted_pdf,
    "kapot.pdf": files.truncated_pdf,
    "bom.docx": files.zip_bomb_docx,
    "nep.pdf": files.fake_pdf,
    "leeg.txt": lambda: b"",
    "scan.pdf": files.image_only_pdf,
    "oud.docx": files.broken_zip_docx,
}
BAD_KINDS = {"beveiligd.pdf": "encrypted", "kapot.pdf": "corrupt", "bom.docx": "zip_bomb", "nep.pdf": "mismatch",
             "leeg.txt": "empty", "scan.pdf": "no_text_layer", "oud.docx": "corrupt"}


def test_cli_refuses_every_bad_file_by_name_and_writes_nothing(pb_server, admin_pb, seeded, tmp_path):
    folder = good_folder(tmp_path)
    for name, make in BAD_FILES.items():
        (folder / name).write_bytes(make())
    before = topic_count(admin_pb, "demo")
    result = run_cli(pb_server, "kb", "import", "--tenant", "demo", str(folder))
    assert result.returncode == 2, result.stdout
    for name in BAD_FILES:
        assert f"{name}:" in result.stderr, name
    assert "wachtwoord" in result.stderr and "beschadigd" in result.stderr and "pakt uit" in result.stderr
    assert f"{len(BAD_FILES)} of {len(BAD_FILES) + 6} file(s) cannot be imported; nothing was written" in result.stderr
    assert topic_count(admin_pb, "demo") == before
    missing = run_cli(pb_server, "kb", "import", "--tenant", "demo", str(tmp_path / "bestaat-niet.pdf"))
    assert missing.returncode == 2 and "bestaat-niet.pdf: no such file or folder" in missing.stderr
    one_bad = tmp_path / "los.docx"
    one_bad.write_bytes(files.fake_pdf())
    alone = run_cli(pb_server, "kb", "import", "--tenant", "demo", str(one_bad))
    assert alone.returncode == 2 and "los.docx: refused: de inhoud is geen Word" in alone.stderr


# -- the API ----------------------------------------------------------------------------------------------------------

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # slow: real parsers on every kind of file, the CLI


async def upload(token: str | None, named: list[tuple[str, bytes]], **form: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42", timeout=120) as c:
        return await c.post("/api/kb/documents", headers=headers, data=form,
                            files=[("files", (name, data, "application/octet-stream")) for name, data in named])


@pytest.fixture
def admin_token(pb_server, seeded):
    return pb_server.user("admin@example.com").token


async def test_a_learner_may_not_upload_and_nothing_is_read(api_env, pb_server, admin_pb):
    token = pb_server.user("learner@example.com").token
    before = topic_count(admin_pb, "demo")
    resp = await upload(token, [("wiki.md", b"# Geheim\n\nLeerlingen mogen dit niet toevoegen.")])
    assert resp.status_code == 403 and resp.json()["type"] == "forbidden"
    assert "beheerders" in resp.json()["message"]
    assert (await upload(None, [("wiki.md", b"# Niets\n\ntekst")])).status_code == 401
    assert topic_count(admin_pb, "demo") == before


async def test_an_upload_takes_the_good_files_and_refuses_the_bad_ones_by_name(api_env, admin_token, admin_pb):
    before = topic_count(admin_pb, "demo")
    good = files.make_docx([("heading", 1, "Ziekteverzuim"),
                            ("p", "Meld je ziek voor negen uur bij je leidinggevende.")])
    resp = await upload(admin_token, [("verzuim.docx", good), ("nep.pdf", files.fake_pdf()),
                                      ("bom.docx", files.zip_bomb_docx()), ("foto.png", files.PNG_1PX)],
                        type="process")
    assert resp.status_code == 200, resp.text
    by_file = {f["file"]: f for f in resp.json()["files"]}
    assert by_file["verzuim.docx"]["status"] == "created"
    assert by_file["verzuim.docx"]["topics"] == [{"slug": "verzuim", "label": "Ziekteverzuim"}]
    assert {f: by_file[f]["code"] for f in ("nep.pdf", "bom.docx", "foto.png")} == {
        "nep.pdf": "doc.mismatch", "bom.docx": "doc.zip_bomb", "foto.png": "doc.unsupported"}
    assert all(f in by_file[f]["message"] for f in by_file)
    assert topic_count(admin_pb, "demo") == before + 1
    kb = KBStore(admin_pb)
    assert kb.topic(kb.require_tenant("demo"), "verzuim").type == "process"
    # the same file again: unchanged; only bad files: 422
    again = await upload(admin_token, [("verzuim.docx", good)])
    assert again.json()["files"][0]["status"] == "unchanged"
    bad = await upload(admin_token, [("kapot.pdf", files.truncated_pdf())])
    assert bad.status_code == 422 and bad.json()["files"][0]["code"] == "doc.corrupt"
    assert topic_count(admin_pb, "demo") == before + 1
    kb.delete_topic(kb.require_tenant("demo"), "verzuim")


async def test_an_admin_uploads_into_their_own_tenant_whatever_the_form_says(api_env, pb_server, admin_pb):
    token = pb_server.user("admin@acme.example").token
    demo_before, acme_before = topic_count(admin_pb, "demo"), topic_count(admin_pb, "acme")
    resp = await upload(token, [("heftruck.md", b"# Heftruckcertificaat\n\nZonder certificaat rijd je niet.")],
                        tenant="demo")
    assert resp.status_code == 200, resp.text
    assert topic_count(admin_pb, "demo") == demo_before and topic_count(admin_pb, "acme") == acme_before + 1
    made = resp.json()["files"][0]["topic"]
    assert made == "heftruck"  # the slug of the file name (the label is the heading: Heftruckcertificaat)
    kb = KBStore(admin_pb)
    kb.delete_topic(kb.require_tenant("acme"), made)
    assert topic_count(admin_pb, "acme") == acme_before


async def test_bad_requests_get_a_reason(api_env, admin_token):
    headers = {"Authorization": f"Bearer {admin_token}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as c:
        no_files = await c.post("/api/kb/documents", headers=headers, data={"type": "concept"})
        not_multipart = await c.post("/api/kb/documents", headers=headers, json={"files": []})
    assert no_files.status_code == 400 and "files" in no_files.json()["message"]
    assert not_multipart.status_code == 400
    bad_type = await upload(admin_token, [("a.md", b"# A\n\ntekst")], type="person")
    assert bad_type.status_code == 400 and "concept" in bad_type.json()["message"]


async def test_the_original_file_downloads_by_a_signed_link_only(api_env, admin_token, admin_pb):
    from r42_app.container import services

    data = files.make_pdf(["Het origineel van dit bestand is een PDF van een pagina."], title="Origineel")
    resp = await upload(admin_token, [("origineel.pdf", data)])
    assert resp.status_code == 200, resp.text
    kb = KBStore(admin_pb)
    tenant = kb.require_tenant("demo")
    doc = services().documents.of_topic(tenant, "origineel")
    url = download_url(services().download_secret, tenant.id, doc.id, int(time.time()) + 60)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as c:
        ok = await c.get(url)
        forged = await c.get(url.replace(tenant.id, kb.require_tenant("acme").id))
        expired = await c.get(download_url(services().download_secret, tenant.id, doc.id, int(time.time()) - 1))
    assert ok.status_code == 200 and ok.content == data
    assert ok.headers["content-disposition"] == "attachment; filename*=UTF-8''origineel.pdf"
    assert forged.status_code == 403 and expired.status_code == 410
    kb.delete_topic(tenant, "origineel")
    assert services().documents.by_key(tenant, "origineel") is None


async def test_the_app_answers_other_users_while_a_hostile_file_is_read(api_env, admin_token, pb_server, monkeypatch):
    from r42_app.services.adapters import parse_sandbox

    reading = threading.Event()

    def timeout(size, base=20.0):  # asked for the file's time limit as its reading starts
        reading.set()
        return 8.0

    monkeypatch.setattr(parse_sandbox, "default_timeout", timeout)
    learner = pb_server.user("learner@example.com").token
    api_env.reply_text("Het antwoord [ref:1].")
    hostile = asyncio.create_task(upload(admin_token, [("lus.pdf", files.looping_pdf())]))  # minutes without a limit
    assert await asyncio.to_thread(reading.wait, 60), "the hostile file was never read"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as c:
        answer = await c.post("/api/chat", headers={"Authorization": f"Bearer {learner}"},
                              json={"messages": [{"role": "user", "content": "Wat is de AOW?"}], "mode": "fts"})
    assert answer.status_code == 200 and '"type": "done"' in answer.text
    assert not hostile.done()  # the answer came while the file was still being read
    resp = await hostile
    assert resp.status_code == 422
    assert resp.json()["files"][0]["code"] == "doc.timeout" and "lus.pdf" in resp.json()["files"][0]["message"]


async def test_a_question_about_page_150_of_a_200_page_pdf_gets_that_page_with_a_chip_that_says_so(
        api_env, pb_server, admin_pb):
    token = pb_server.user("admin@acme.example").token
    resp = await upload(token, [("handboek.pdf", handbook(200))])
    assert resp.status_code == 200, resp.text
    made = resp.json()["files"][0]
    assert made["status"] == "created" and made["pages"] == 200 and len(made["topics"]) == 11
    kb = KBStore(admin_pb)
    acme = kb.require_tenant("acme")
    text = "\n".join(t.content for t in kb.topics(acme) if t.slug.startswith("handboek"))
    assert all(f"Pagina {p} van het handboek" in text for p in range(1, 201))  # every page's text is there
    api_env.reply_text("Zevenenveertig dagen [ref:1].")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42", timeout=60) as c:
        answer = await c.post("/api/chat", headers={"Authorization": f"Bearer {token}"}, json={
            "messages": [{"role": "user",
                          "content": "Hoe lang is de wachttijd voor het arbeidsongeschiktheidspensioen?"}],
            "mode": "fts"})
    events = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]
    sources = next(e for e in events if e["type"] == "sources")["sources"]
    assert sources[0]["label"] == "Handboek deelnemers: Hoofdstuk 8, p. 150"
    assert sources[0]["url"].startswith("/topics/handboek-hoofdstuk-8#p-")
    prompt = json.dumps(api_env.requests[-1])
    assert SENTENCE_150 in prompt
    kb.delete_topic(acme, "handboek")
    assert not [t for t in kb.topics(acme) if t.slug.startswith("handboek")]


async def test_two_files_of_one_name_in_an_upload_the_second_is_refused(api_env, admin_token, admin_pb):
    resp = await upload(admin_token, [("dubbel.md", b"# Dubbel\n\nDe eerste."),
                                      ("DUBBEL.md", b"# Dubbel\n\nDe tweede.")])
    files_ = resp.json()["files"]
    assert [f["status"] for f in files_] == ["created", "refused"] and files_[1]["code"] == "doc.duplicate"
    kb = KBStore(admin_pb)
    demo = kb.require_tenant("demo")
    assert "De eerste." in kb.topic(demo, "dubbel").content
    kb.delete_topic(demo, "dubbel")


async def test_a_link_with_a_strange_expiry_is_refused_not_an_error(api_env):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://r42") as c:
        for expires in ("²", "9" * 5000, "-1"):
            resp = await c.get(f"/api/kb/documents/abc/file?tenant=t&expires={expires}&sig=x")
            assert resp.status_code == 410, (expires, resp.status_code)


def test_cli_refuses_two_files_of_one_name_in_different_folders(pb_server, admin_pb, seeded, tmp_path):
    for year in ("2025", "2026"):
        (tmp_path / year).mkdir()
        (tmp_path / year / "handboek.md").write_text(f"# Handboek {year}\n\nDe regels van {year}.")
    result = run_cli(pb_server, "kb", "import", "--tenant", "demo", str(tmp_path))
    assert result.returncode == 2 and "handboek.md: er zit al een bestand met deze naam bij" in result.stderr
    assert "nothing was written" in result.stderr
    assert KBStore(admin_pb).topic(KBStore(admin_pb).require_tenant("demo"), "handboek") is None


def test_a_first_import_keeps_headings_and_levels_with_a_summary_and_the_title_once(pb_server, admin_pb, seeded,
                                                                                   tmp_path):
    # issue 49: a PDF without bookmarks lost its headings and described itself by its title; a Word file's title
    # was one more chapter among its Heading 1s
    welcome = "Welkom bij Acme. Dit handboek helpt je op weg in je eerste weken bij ons."
    text = "Deelnemers bouwen pensioen op zolang zij in dienst zijn en premie betalen aan het fonds. "
    (tmp_path / "welkom.pdf").write_bytes(files.make_styled_pdf([[
        ("Handboek voor nieuwe medewerkers", "Helvetica-Bold", 20), (welcome, "Helvetica", 10),
        ("Hoofdstuk 1 Het pensioen", "Helvetica-Bold", 15), (text * 3, "Helvetica", 10),
        ("Hoofdstuk 2 Verlof", "Helvetica-Bold", 15), (text * 2, "Helvetica", 10)]],
        title="Handboek voor nieuwe medewerkers"))
    chapters = [("title", "Reglement")]
    for c in (1, 2):
        chapters += [("heading", 1, f"Hoofdstuk {c}"), ("p", text * 40), ("heading", 2, f"Paragraaf {c}.1"),
                     ("p", text * 40), ("heading", 3, f"Onderdeel {c}.1.1"), ("p", text * 40)]
    (tmp_path / "reglement.docx").write_bytes(files.make_docx(chapters))
    tenant = f"docs-{secrets.token_hex(3)}"
    Tenants(admin_pb).create(tenant, "Documenten")
    result = run_cli(pb_server, "kb", "import", "--tenant", tenant, "--no-index", str(tmp_path))
    assert result.returncode == 0, result.stderr
    kb = KBStore(admin_pb)
    t = kb.require_tenant(tenant)
    pdf = kb.topic(t, "welkom")
    assert pdf.label == "Handboek voor nieuwe medewerkers" and pdf.description == welcome
    assert "Handboek voor nieuwe medewerkers" not in pdf.content  # the label says it, once
    assert [line for line in pdf.content.split("\n") if line.startswith("#")] == [
        "### Hoofdstuk 1 Het pensioen", "### Hoofdstuk 2 Verlof"]  # below the title's `##`, left out as the label
    assert kb.topic(t, "reglement").label == "Reglement"
    assert {x.slug for x in kb.topics(t)} == {"welkom", "reglement", "reglement-hoofdstuk-1", "reglement-hoofdstuk-2"}
    chapter = kb.topic(t, "reglement-hoofdstuk-2").content
    assert [line for line in chapter.split("\n") if line.startswith("#")] == [
        "## Hoofdstuk 2", "### Paragraaf 2.1", "#### Onderdeel 2.1.1"]
