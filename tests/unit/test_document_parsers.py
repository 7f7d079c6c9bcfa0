"""The document parsers in process (services/adapters/documents/): what a file becomes in markdown, and every
bad file refused with the right reason and its name in the message."""

from __future__ import annotations

import re

import pytest

from r42_app.core.documents import MAX_FILE_BYTES, DocumentRefused, page_mark
from r42_app.services.adapters.documents import parse_bytes
from r42_app.services.adapters.documents.common import ran_out_of_memory
from tests.fakes import documents as fake

PARA = ("Dit is een alinea van het handboek met genoeg woorden om een paar regels te vullen, zodat het "
        "samenvoegen van regels tot alinea's iets te doen heeft. ")


def refused(filename: str, data: bytes) -> DocumentRefused:
    with pytest.raises(DocumentRefused) as caught:
        parse_bytes(filename, data)
    assert filename in caught.value.user_message
    return caught.value


# -- PDF --------------------------------------------------------------------------------------------------


def test_a_pdf_has_a_page_mark_for_every_page_even_an_empty_one():
    doc = parse_bytes("h.pdf", fake.make_pdf(["Eerste pagina tekst.", "", "Derde pagina tekst."]))
    assert doc.kind == "pdf" and doc.pages == 3
    marks = [line for line in doc.markdown.split("\n") if line.startswith("<!-- pagina")]
    assert marks == [page_mark(1), page_mark(2), page_mark(3)]
    assert doc.markdown.index("Eerste") < doc.markdown.index(page_mark(2)) < doc.markdown.index(page_mark(3)) \
        < doc.markdown.index("Derde")


def test_pdf_bookmarks_become_headings_right_after_their_page_mark():
    pages = ["Inleiding\n\nOver het begin.", "Nog meer tekst.", "Methode\n\nHoe we het deden."]
    doc = parse_bytes("h.pdf", fake.make_pdf(pages, outline=[("Inleiding", 1), ("Doel", 1, 1), ("Methode", 3)]))
    md = doc.markdown
    assert f"{page_mark(1)}\n\n## Inleiding\n\n### Doel\n\n" in md
    assert f"{page_mark(3)}\n\n## Methode\n\n" in md
    assert md.count("Inleiding") == 1  # the page's own heading line is not repeated under the heading


BODY = ("Helvetica", 10)


def _paragraphs(markdown: str) -> list[str]:
    return [p for p in markdown.split("\n\n") if not p.startswith("<!--")]


def test_a_pdf_without_bookmarks_gets_its_headings_from_their_larger_font():
    pdf = fake.make_styled_pdf([[
        ("Handboek nieuwe medewerkers", "Helvetica-Bold", 20), ("Welkom bij Acme. " + PARA, *BODY),
        ("Hoofdstuk 1 Het pensioen", "Helvetica", 15), (PARA * 2, *BODY),
        ("Pensioen is uitgesteld loon.", "Helvetica", 15),  # a large sentence: no heading
        ("Zie ook de bijlage", *BODY),  # short, no full stop, but the body's font: no heading
        ("Hoofdstuk 2 Verlof", "Helvetica", 15), (PARA, *BODY),
    ]])
    paragraphs = _paragraphs(parse_bytes("h.pdf", pdf).markdown)
    assert paragraphs[0] == "## Handboek nieuwe medewerkers"
    assert paragraphs[1].startswith("Welkom bij Acme. Dit is een alinea")
    assert paragraphs[2] == "### Hoofdstuk 1 Het pensioen"
    assert "### Hoofdstuk 2 Verlof" in paragraphs
    assert "Pensioen is uitgesteld loon." in paragraphs and "Zie ook de bijlage" in paragraphs
    assert [p for p in paragraphs if p.startswith("#")] == [
        "## Handboek nieuwe medewerkers", "### Hoofdstuk 1 Het pensioen", "### Hoofdstuk 2 Verlof"]


def test_a_bold_line_between_paragraphs_is_a_heading_but_bold_words_in_a_paragraph_are_not():
    pdf = fake.make_styled_pdf([[
        ("Hoofdstuk 1", "Helvetica", 16), (PARA, *BODY),
        ("Let op", "Helvetica-Bold", 10), (PARA, *BODY),
        ("Dit is een zin met een woord dat", *BODY), ("vetgedrukt", "Helvetica-Bold", 10), (PARA, *BODY),
    ]])
    headings = [p for p in _paragraphs(parse_bytes("h.pdf", pdf).markdown) if p.startswith("#")]
    assert headings == ["## Hoofdstuk 1", "### Let op"]


def test_a_heading_wrapped_over_two_lines_is_one_heading():
    pdf = fake.make_styled_pdf([[("Regeling voor het arbeidsongeschiktheidspensioen van deelnemers", "Helvetica", 18),
                                 (PARA, *BODY)]])
    assert _paragraphs(parse_bytes("h.pdf", pdf).markdown)[0] == (
        "## Regeling voor het arbeidsongeschiktheidspensioen van deelnemers")


def test_font_headings_first_on_every_page_are_chapters_but_a_running_title_is_left_out():
    pages = [[("Personeelshandboek Acme", "Helvetica-Bold", 14), (f"Hoofdstuk {n}", "Helvetica-Bold", 16),
              (PARA * 3, *BODY)] for n in range(1, 5)]
    md = parse_bytes("h.pdf", fake.make_styled_pdf(pages)).markdown
    assert [p for p in _paragraphs(md) if p.startswith("#")] == [f"## Hoofdstuk {n}" for n in range(1, 5)]
    assert "Personeelshandboek Acme" not in md


def test_pdf_bookmarks_win_over_fonts():
    pdf = fake.make_styled_pdf([[("Inleiding", "Helvetica-Bold", 18), (PARA, *BODY),
                                 ("Achtergrond", "Helvetica-Bold", 14), (PARA, *BODY)]], outline=[("Inleiding", 1)])
    md = parse_bytes("h.pdf", pdf).markdown
    assert [p for p in _paragraphs(md) if p.startswith("#")] == ["## Inleiding"]
    assert md.count("Inleiding") == 1 and "\n\nAchtergrond\n\n" in md


def test_pdf_lines_become_paragraphs_and_hyphenated_words_are_joined():
    page = (PARA * 3 + "\n\nEen tweede alinea begint hier.\n\nDit woord wordt afge-\nbroken aan het eind van "
            "de regel en gaat door.")
    md = parse_bytes("p.pdf", fake.make_pdf([page])).markdown
    paragraphs = [p for p in md.split("\n\n") if not p.startswith("<!--")]
    assert paragraphs[0] == (PARA * 3).strip()  # three wrapped lines, one paragraph
    assert paragraphs[1] == "Een tweede alinea begint hier."
    assert "afgebroken aan het eind" in paragraphs[2]


def test_pdf_title_from_its_metadata_only_when_it_means_something():
    assert parse_bytes("h.pdf", fake.make_pdf(["Tekst."], title="Personeelshandboek")).title == "Personeelshandboek"
    assert parse_bytes("h.pdf", fake.make_pdf(["Tekst."], title="Microsoft Word - h.docx")).title == ""
    assert parse_bytes("h.pdf", fake.make_pdf(["Tekst."], title="untitled")).title == ""
    assert parse_bytes("h.pdf", fake.make_pdf(["Tekst."])).title == ""


def test_a_200_page_pdf_parses_every_page_with_its_chapters():
    pages = [f"Hoofdstuk {n}\n\n" + PARA * 6 + "\n\n" + PARA * 4 for n in range(1, 201)]
    data = fake.make_pdf(pages, outline=[(f"Hoofdstuk {n}", n) for n in range(1, 201, 10)])
    doc = parse_bytes("groot.pdf", data)  # its time per page is measured in bench/bench_documents.py
    assert doc.pages == 200 and doc.markdown.count("<!-- pagina ") == 200
    assert f"{page_mark(191)}\n\n## Hoofdstuk 191" in doc.markdown


def test_an_owner_password_alone_does_not_lock_a_pdf():
    assert "begroting" in parse_bytes("o.pdf", fake.encrypted_pdf(user_password=False)).markdown


@pytest.mark.parametrize("name, data, kind", [
    ("slot.pdf", fake.encrypted_pdf(), "encrypted"),
    ("kapot.pdf", fake.truncated_pdf(), "corrupt"),
    ("tekst.pdf", fake.fake_pdf(), "mismatch"),
    ("plaatje.pdf", fake.fake_pdf("png"), "mismatch"),
    ("scan.pdf", fake.image_only_pdf(), "no_text_layer"),
])
def test_bad_pdfs_are_refused(name, data, kind):
    e = refused(name, data)
    assert e.kind == kind
    if kind == "mismatch":
        assert "geen PDF" in e.user_message


def test_too_many_pages():
    e = refused("dik.pdf", fake.make_pdf(["x"] * 501))
    assert e.kind == "too_many_pages" and e.fields["pages"] == 501 and e.fields["maximum"] == 500


def test_a_pdf_with_leading_whitespace_is_still_a_pdf():
    assert "Tekst" in parse_bytes("w.pdf", b"\xef\xbb\xbf \n" + fake.make_pdf(["Tekst hier."])).markdown


# -- Word -------------------------------------------------------------------------------------------------


WORD = [
    ("title", "Het Handboek"), ("core_title", "Handboek voor medewerkers"), ("header", "KOPTEKST OP ELKE PAGINA"),
    ("heading", 1, "Eerste hoofdstuk"), ("p", "Gewone alinea."), ("bold", "belangrijk"),
    ("bullets", ["appels", "peren"]),
    ("heading", 2, "Cijfers"), ("table", [["Naam", "Waarde"], ["a|b", "1"]]), ("p", "Na de tabel."),
]


def test_word_headings_lists_tables_in_document_order():
    doc = parse_bytes("h.docx", fake.make_docx(WORD))
    md = doc.markdown
    assert doc.kind == "docx" and doc.title == "Handboek voor medewerkers"
    # the Title paragraph is the level above Heading 1 (issue 49: it was one more `#` among the chapters)
    assert md.startswith("# Het Handboek\n\n## Eerste hoofdstuk\n\nGewone alinea.")
    assert "Dit is **belangrijk** en gewoon." in md
    assert "- appels\n- peren" in md
    assert "### Cijfers\n\n| Naam | Waarde |\n| --- | --- |\n| a\\|b | 1 |\n\nNa de tabel." in md
    assert "KOPTEKST" not in md  # headers and footers are left out


def test_word_dutch_heading_styles():
    import io

    import docx

    d = docx.Document()
    style = d.styles.add_style("Kop 2", 1)
    d.add_paragraph("Nederlandse kop", style=style)
    d.add_paragraph("Tekst.")
    out = io.BytesIO()
    d.save(out)
    assert parse_bytes("nl.docx", out.getvalue()).markdown.startswith("## Nederlandse kop\n\nTekst.")


@pytest.mark.parametrize("name, data, kind", [
    ("bom.docx", lambda: fake.zip_bomb_docx(300), "zip_bomb"),  # made in the test: ~1 s
    ("ratio.docx", lambda: fake.zip_bomb_docx(150), "zip_bomb"),  # under 200 MB, but 1000:1
    ("veel.docx", fake.many_entries_docx(), "zip_bomb"),
    ("kapot.docx", fake.broken_zip_docx(), "corrupt"),
    ("tekst.docx", b"gewoon tekst", "mismatch"),
    ("deck.docx", fake.make_pptx([("Dia", ["punt"])]), "mismatch"),
])
def test_bad_word_files_are_refused(name, data, kind):
    e = refused(name, data() if callable(data) else data)
    assert e.kind == kind
    if kind == "zip_bomb":
        assert e.fields["maximum"] == 200
    if kind == "mismatch":
        assert "geen Word" in e.user_message


# -- PowerPoint -------------------------------------------------------------------------------------------


def test_slides_become_sections_with_bullets_and_notes():
    data = fake.make_pptx([("Welkom", ["punt een", ("detail", 1)]), ("", ["zonder titel"])],
                          notes=["Spreek langzaam."])
    doc = parse_bytes("d.pptx", data)
    assert doc.kind == "pptx" and doc.pages == 2 and doc.title == "Welkom"
    assert doc.markdown == ("## Welkom\n\n- punt een\n  - detail\n\nNotities: Spreek langzaam.\n\n"
                            "## Dia 2\n\n- zonder titel")


def test_slide_tables_are_markdown_tables():
    md = parse_bytes("t.pptx", fake.make_pptx_with_table("Cijfers", [["Jaar", "Omzet"], ["2026", "12"]])).markdown
    assert md == "## Cijfers\n\n| Jaar | Omzet |\n| --- | --- |\n| 2026 | 12 |"


def test_a_deck_without_text_is_empty():
    assert refused("leeg.pptx", fake.make_pptx([("", [])])).kind == "empty"


def test_a_word_file_named_pptx_is_a_mismatch():
    e = refused("w.pptx", fake.make_docx([("p", "x")]))
    assert e.kind == "mismatch" and "geen PowerPoint" in e.user_message


# -- HTML, Markdown, text ---------------------------------------------------------------------------------


ARTICLE = """<h1>Over de cursus</h1>
<p>Deze cursus leert je alles over het onderwerp en nog veel meer dingen die belangrijk zijn voor je werk.</p>
<h2>Onderdelen</h2><ul><li>Eerste onderdeel van de cursus</li><li>Tweede onderdeel</li></ul>
<table><tr><th>Week</th><th>Thema</th></tr><tr><td>1</td><td>Start</td></tr></table>"""


def test_html_main_content_without_navigation_footer_or_scripts():
    doc = parse_bytes("p.html", fake.make_html("Over de cursus", ARTICLE))
    md = doc.markdown
    assert doc.kind == "html" and doc.title == "Over de cursus"
    assert "# Over de cursus" in md and "## Onderdelen" in md
    assert "- Eerste onderdeel van de cursus" in md
    assert re.search(r"\| Week \| Thema \|\n\|-+\|-+\|\n\| 1 \| Start \|", md)
    for noise in ("Over ons", "Contactformulier", "cookies", "Copyright", "SCRIPTTEKST", "Andere artikelen",
                  "color"):
        assert noise not in md, noise


def test_a_tiny_html_page_still_gives_its_text():
    doc = parse_bytes("k.htm", b"<html><body><nav>Menu</nav><p>Kort.</p><footer>Voet</footer></body></html>")
    assert "Kort." in doc.markdown and "Menu" not in doc.markdown and "Voet" not in doc.markdown


def test_markdown_as_is_without_its_front_matter():
    doc = parse_bytes("n.md", b"---\ntitle: \"Mijn notitie\"\ntags: [a]\n---\n# Kop\r\n\r\nTekst *hier*.\n")
    assert doc.title == "Mijn notitie" and doc.markdown == "# Kop\n\nTekst *hier*."
    assert parse_bytes("m.markdown", b"# Alleen een kop\n\nEn tekst.").title == ""


def test_text_keeps_its_paragraphs_and_reads_other_encodings():
    assert parse_bytes("t.txt", b"Eerste alinea.\n\nTweede.").markdown == "Eerste alinea.\n\nTweede."
    assert parse_bytes("t.txt", "\ufeffMet BOM".encode()).markdown == "Met BOM"
    latin = "Café au lait en crème brûlée voor de vergadering van maandag.".encode("cp1252")
    assert parse_bytes("l.txt", latin).markdown == "Café au lait en crème brûlée voor de vergadering van maandag."
    cut = "Een tekst in UTF-8 met één afgebroken tekén".encode()[:-2]  # cut inside the é
    assert parse_bytes("c.txt", cut).markdown.startswith("Een tekst in UTF-8 met één afgebroken tek")
    russian = ("Привет, как дела? Это текст на русском языке для проверки. " * 3).encode("cp1251")
    assert parse_bytes("r.txt", russian).markdown.startswith("Привет, как дела?")


def test_html_in_utf16_is_html():
    page = fake.make_html("Titel", "<p>Een tekst die lang genoeg is om als de hoofdinhoud van de pagina te tellen.</p>")
    assert "hoofdinhoud" in parse_bytes("u.html", page.decode().encode("utf-16")).markdown


def test_page_marks_in_a_text_are_not_pages():
    assert "pagina" not in parse_bytes("t.md", b"# Kop\n\n<!-- pagina 9 -->\n\nTekst.").markdown


@pytest.mark.parametrize("name, data, kind", [
    ("plaatje.txt", fake.PNG_1PX, "not_text"),
    ("plaatje.md", fake.PNG_1PX, "not_text"),
    ("geen.html", b"Gewoon tekst zonder een enkele tag.", "mismatch"),
    ("leeg.txt", b"", "empty"),
    ("spaties.md", b"  \n\n \t\n", "empty"),
    ("programma.exe", b"MZ\x90\x00", "unsupported"),
    ("zonder_punt", b"tekst", "unsupported"),
])
def test_bad_text_files_are_refused(name, data, kind):
    assert refused(name, data).kind == kind


def test_too_large():
    e = refused("groot.txt", b"a" * (MAX_FILE_BYTES + 1))
    assert e.kind == "too_large" and e.fields["maximum"] == 50 and e.fields["size"] == 50.0


def test_a_parser_crash_is_corrupt_never_an_exception(monkeypatch):
    import r42_app.services.adapters.documents as documents

    def boom(_data):
        raise RuntimeError("parser bug")

    monkeypatch.setattr(documents, "_parse_markdown", boom)
    assert refused("x.md", b"# Kop").kind == "corrupt"


def test_running_headers_footers_and_page_numbers_of_a_pdf_are_left_out():
    pages = [f"Handboek deelnemers 2026\n\nOp deze pagina staat inhoud nummer {n} over het pensioen van deelnemers, "
             f"die per pagina anders is.\n\nPagina {n} van 6" for n in range(1, 7)]
    doc = parse_bytes("koppen.pdf", fake.make_pdf(pages))
    assert doc.markdown.count("inhoud nummer") == 6
    assert "Handboek deelnemers 2026" not in doc.markdown and "van 6" not in doc.markdown
    short = parse_bytes("kort.pdf", fake.make_pdf(pages[:2]))  # too few pages to tell: everything stays
    assert "Handboek deelnemers 2026" in short.markdown


def test_plain_text_that_reads_like_markup_stays_text_for_reader_and_model():
    from r42_app.core.visible import visible_markdown

    doc = parse_bytes("les.txt", b"Les 1\n\nZet de naam in <title> in de head.\n\nBelangrijk: de toets is vrijdag.\n")
    shown = visible_markdown(doc.markdown)
    assert "toets is vrijdag" in shown and "title>" in shown
    pdf = parse_bytes("nep.pdf", fake.make_pdf(["Tekst met <!-- pagina\n377 --> erin.", "Tweede pagina."]))
    assert "<!-- pagina 377 -->" not in pdf.markdown.replace("\\<", "")  # not a page of ours
    from r42_app.core.passages import split_passages

    assert {p.page for p in split_passages("x", pdf.markdown, min_words=1)} == {1, 2}


def test_a_parser_error_raised_while_memory_ran_out_counts_as_memory():
    """pypdf catches a MemoryError in places and raises its own error: the file is refused for memory (the sandbox
    says "te veel geheugen"), not called broken (once in a CI run the memory-hungry PDF was called "corrupt")."""
    def parser_error_during(inner: BaseException) -> Exception:
        try:
            try:
                raise inner
            except BaseException:
                raise ValueError("stream ended unexpectedly")  # noqa: B904  (the parser's way, context kept)
        except ValueError as e:
            return e

    assert ran_out_of_memory(parser_error_during(MemoryError()))
    assert not ran_out_of_memory(parser_error_during(KeyError("/Root")))
    looped = ValueError("a")
    looped.__context__ = KeyError("b")
    looped.__context__.__context__ = looped  # a cycle ends the walk
    assert not ran_out_of_memory(looped)
