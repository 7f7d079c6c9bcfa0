"""Files to import, made in memory: good ones (PDF with bookmarks, Word, PowerPoint, HTML with page noise) and bad
ones (locked, truncated, a zip bomb, a PDF that is not one, a PDF that takes exponential time to read).

Pure functions returning bytes; reportlab, python-docx and python-pptx make the good ones.
"""

from __future__ import annotations

import io
import textwrap
import zipfile
from collections.abc import Sequence

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d"
    "0000000049454e44ae426082")


def make_pdf(pages: Sequence[str], title: str = "",
             outline: Sequence[tuple[str, int] | tuple[str, int, int]] = (), *, wrap: int = 90) -> bytes:
    """A PDF with a text layer: one page per string (paragraphs separated by blank lines; a single newline is a
    line break of its own; lines longer than `wrap` characters wrapped). `outline` entries are (title, 1-based
    page) or (title, page, level) bookmarks, in order."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    c = canvas.Canvas(out, pagesize=A4, invariant=1)
    if title:
        c.setTitle(title)
    marks: dict[int, list[tuple[str, int, int]]] = {}
    for k, entry in enumerate(outline):
        name, page = entry[0], entry[1]
        level = entry[2] if len(entry) > 2 else 0  # type: ignore[misc]
        marks.setdefault(page, []).append((name, level, k))
    width, height = A4
    for n, text in enumerate(pages, start=1):
        for name, level, k in marks.get(n, []):
            key = f"b{k}"
            c.bookmarkPage(key)
            c.addOutlineEntry(name, key, level=level)
        y = height - 72
        t = c.beginText(72, y)
        t.setFont("Helvetica", 10)
        for paragraph in text.split("\n\n"):
            lines = [w for given in paragraph.split("\n") for w in textwrap.wrap(given, wrap) or [""]]
            for line in lines:
                t.textLine(line)
                y -= 12
                if y < 72:  # keep it on the page; the tests' pages are short
                    break
            t.textLine("")
            y -= 12
        c.drawText(t)
        c.showPage()
    c.save()
    return out.getvalue()


def make_styled_pdf(pages: Sequence[Sequence[tuple[str, str, float]]], title: str = "",
                    outline: Sequence[tuple[str, int]] = ()) -> bytes:
    """A PDF whose text is printed in the fonts a test names: per page its paragraphs as (text, font, size), e.g.
    ("Hoofdstuk 1", "Helvetica-Bold", 16), each wrapped to the page's width and started on a line of its own.
    `outline` entries are (title, 1-based page) bookmarks."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    c = canvas.Canvas(out, pagesize=A4, invariant=1)
    if title:
        c.setTitle(title)
    width, height = A4
    for n, paragraphs in enumerate(pages, start=1):
        for k, (name, page) in enumerate(outline):
            if page == n:
                c.bookmarkPage(f"b{k}")
                c.addOutlineEntry(name, f"b{k}", level=0)
        y = height - 72
        for text, font, size in paragraphs:
            for line in textwrap.wrap(text, int(950 / size)):  # about 450 pt of Helvetica at any size
                c.setFont(font, size)
                c.drawString(72, y, line)
                y -= size * 1.4
            y -= size * 0.6
        c.showPage()
    c.save()
    return out.getvalue()


def make_docx(blocks: Sequence[tuple]) -> bytes:
    """A Word file from blocks: ("title", text), ("heading", level, text), ("p", text), ("bold", text),
    ("bullets", [items]), ("numbers", [items]), ("table", [[header...], [row...], ...]); `core_title` via
    ("core_title", text)."""
    import docx

    d = docx.Document()
    for block in blocks:
        what = block[0]
        if what == "title":
            d.add_heading(block[1], level=0)
        elif what == "heading":
            d.add_heading(block[2], level=block[1])
        elif what == "p":
            d.add_paragraph(block[1])
        elif what == "bold":
            p = d.add_paragraph("Dit is ")
            p.add_run(block[1]).bold = True
            p.add_run(" en gewoon.")
        elif what in ("bullets", "numbers"):
            for item in block[1]:
                d.add_paragraph(item, style="List Bullet" if what == "bullets" else "List Number")
        elif what == "table":
            rows = block[1]
            table = d.add_table(rows=len(rows), cols=len(rows[0]))
            for r, row in enumerate(rows):
                for col, value in enumerate(row):
                    table.cell(r, col).text = value
        elif what == "core_title":
            d.core_properties.title = block[1]
        elif what == "header":
            d.sections[0].header.paragraphs[0].text = block[1]
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def make_pptx(slides: Sequence[tuple[str, Sequence[str | tuple[str, int]]]], notes: Sequence[str] = ()) -> bytes:
    """A deck: per slide (title, bullets), a bullet either a text or (text, level); notes per slide by index."""
    from pptx import Presentation

    deck = Presentation()
    layout = deck.slide_layouts[1]  # title and content
    for k, (title, bullets) in enumerate(slides):
        slide = deck.slides.add_slide(layout)
        if title:
            slide.shapes.title.text = title
        else:
            slide.shapes.title.element.getparent().remove(slide.shapes.title.element)
        body = slide.placeholders[1].text_frame
        for j, bullet in enumerate(bullets):
            text, level = (bullet, 0) if isinstance(bullet, str) else bullet
            p = body.paragraphs[0] if j == 0 else body.add_paragraph()
            p.text = text
            p.level = level
        if k < len(notes) and notes[k]:
            slide.notes_slide.notes_text_frame.text = notes[k]
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_pptx_with_table(title: str, rows: Sequence[Sequence[str]]) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = title
    shape = slide.shapes.add_table(len(rows), len(rows[0]), Inches(1), Inches(2), Inches(6), Inches(2))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_html(title: str, body_html: str, nav: bool = True) -> bytes:
    """A web page: `body_html` as its article, with navigation, a cookie banner, a footer and scripts around it
    when `nav`."""
    noise_top = """
      <header><div class="logo">Acme Intranet</div>
        <nav><ul><li><a href="/">Home</a></li><li><a href="/over">Over ons</a></li>
        <li><a href="/contact">Contactformulier</a></li></ul></nav></header>
      <div id="cookie">Wij gebruiken cookies om de site te verbeteren. <button>Akkoord</button></div>
    """ if nav else ""
    noise_bottom = """
      <aside><h3>Gerelateerd</h3><ul><li><a href="/x">Andere artikelen lezen</a></li></ul></aside>
      <footer><p>Copyright 2026 Acme BV. Alle rechten voorbehouden. Privacyverklaring.</p></footer>
      <script>var tracking = "SCRIPTTEKST"; console.log(tracking);</script>
      <style>.logo { color: red; }</style>
    """ if nav else ""
    page = f"""<!DOCTYPE html>
<html lang="nl"><head><meta charset="utf-8"><title>{title}</title>
<meta property="og:title" content="{title}">
<script>window.analytics = "SCRIPTTEKST";</script></head>
<body>{noise_top}
  <main><article>{body_html}</article></main>
{noise_bottom}</body></html>"""
    return page.encode("utf-8")


# -- bad files ---------------------------------------------------------------------------------------------


def encrypted_pdf(password: str = "geheim", user_password: bool = True) -> bytes:
    """A PDF locked with a user password; with `user_password=False` only an owner password (it opens with "")."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(["Geheime tekst over de begroting van 2026."]))))
    writer.encrypt(password if user_password else "", owner_password="eigenaar")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def truncated_pdf() -> bytes:
    """The first bytes of a PDF: the header and the start of the first object, nothing more."""
    return make_pdf(["Een pagina die nooit aankomt."])[:200]


def zip_bomb_docx(megabytes: int = 300) -> bytes:
    """A .docx-looking zip ([Content_Types].xml, word/document.xml) with one entry of `megabytes` MB of zeros,
    written in chunks (the zeros are never in memory at once); a few hundred KB compressed."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/'
                                            'package/2006/content-types"/>')
        zf.writestr("word/document.xml", "<w:document/>")
        chunk = bytes(1024 * 1024)
        with zf.open("word/media/zeros.bin", "w", force_zip64=True) as f:
            for _ in range(megabytes):
                f.write(chunk)
    return out.getvalue()


def many_entries_docx(entries: int = 6000) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", "<w:document/>")
        for k in range(entries):
            zf.writestr(f"word/x{k}.xml", "")
    return out.getvalue()


def broken_zip_docx() -> bytes:
    """A real .docx whose central directory is overwritten: starts like a zip, cannot be opened as one."""
    data = bytearray(make_docx([("p", "Tekst.")]))
    at = data.rfind(b"PK\x01\x02")
    data[at:at + 200] = b"\x00" * min(200, len(data) - at)
    return bytes(data)


def fake_pdf(content: str = "text") -> bytes:
    """A file named .pdf that is not one: plain text, or (content="png") a PNG picture."""
    if content == "png":
        return PNG_1PX
    return b"Dit is gewoon tekst, geen PDF.\nTweede regel.\n"


def _raw_pdf(objects: Sequence[bytes]) -> bytes:
    """A PDF from its objects (1-based, object 1 the catalog), with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _stream(content: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s >>\nstream\n" % (len(content), extra) + content + b"\nendstream"


def looping_pdf() -> bytes:
    """A PDF of ~60 KB that keeps a parser busy for minutes: 15 MB of text operators in one compressed content
    stream, and pypdf's time grows faster than the size (5 MB: ~12 s, 15 MB: over 100 s on 2 cores). What a
    hostile upload does to a parser without a time limit. (A form XObject drawing itself 10 times over, 12 levels
    deep, looks worse but pypdf reads it in ~2 s: it does not expand forms that way.)"""
    return memory_hungry_pdf(15)


def image_only_pdf(pages: int = 2) -> bytes:
    """A PDF whose pages have a drawing but no text (what a scan without OCR looks like to a parser)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    c = canvas.Canvas(out, pagesize=A4, invariant=1)
    for _ in range(pages):
        c.rect(72, 72, 300, 300, fill=1)
        c.showPage()
    c.save()
    return out.getvalue()


def memory_hungry_pdf(megabytes: int = 60) -> bytes:
    """A small PDF (its content stream compresses ~1000:1) whose page holds `megabytes` MB of text operators:
    reading it needs several times that in memory."""
    import zlib

    line = b"BT /F1 10 Tf 72 700 Td (" + b"woord " * 20 + b") Tj ET\n"
    content = zlib.compress(line * (megabytes * 1024 * 1024 // len(line)), 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
         b"/Resources << /Font << /F1 4 0 R >> >> >>"),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        _stream(content, b"/Filter /FlateDecode"),
    ]
    return _raw_pdf(objects)
