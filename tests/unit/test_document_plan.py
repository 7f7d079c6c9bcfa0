"""A parsed document becomes topics (core/documents.py), and its page marks give every passage its page."""

from __future__ import annotations

import time

import pytest

from r42_app.core.documents import (
    MAX_SECTIONS,
    DocumentRefused,
    ParsedDocument,
    chip_label,
    document_key,
    download_signature,
    download_url,
    kind_of,
    page_mark,
    plan_document,
    rejection,
)
from r42_app.core.kb import MAX_CONTENT, MAX_DESCRIPTION, MAX_LABEL, SLUG_RE, parse_import
from r42_app.core.passages import split_passages
from r42_app.core.retrieval import TenantIndex


def _pdf_text(pages: int, per_page: int = 8) -> str:
    return "\n".join(
        page_mark(p) + "\n" + "\n\n".join(f"Op pagina {p} staat alinea {i}: de regeling van het fonds geldt voor "
                                            f"iedere deelnemer die premie betaalt en pensioen opbouwt."
                                            for i in range(per_page))
        for p in range(1, pages + 1))


def _chapters(n: int, words: int = 1600) -> str:
    body = []
    for h in range(1, n + 1):
        body.append(f"## Hoofdstuk {h}")
        body.append(" ".join(f"Woord{h} over hoofdstuk {h} en de regels." for _ in range(words // 7)))
    return "# Regeling 2026\n\nDeze regeling beschrijft de pensioenopbouw.\n\n" + "\n\n".join(body)


def _valid_as_import(plan) -> None:
    """Every planned topic and relation passes the rules every KB write path uses."""
    doc = {"topics": [{"id": t.slug, "label": t.label, "type": t.type, "description": t.description,
                       "content": t.content} for t in plan.topics],
           "relations": [{"source": r.source, "target": r.target, "type": r.type} for r in plan.relations]}
    checked, issues = parse_import(doc)
    assert checked is not None, issues


def test_a_short_document_is_one_topic_labelled_by_its_title():
    parsed = ParsedDocument("docx", "", "# Partnerpensioen\n\nHet partnerpensioen is een uitkering voor je partner. "
                                        "Meer tekst volgt hier.")
    plan = plan_document(parsed, "Partner Pensioen.docx")
    assert plan.root.slug == "partner-pensioen" and plan.root.label == "Partnerpensioen"
    assert plan.root.type == "concept" and not plan.sections and not plan.relations
    assert plan.root.description == "Het partnerpensioen is een uitkering voor je partner."
    _valid_as_import(plan)


def test_without_title_or_heading_the_file_name_is_the_label():
    plan = plan_document(ParsedDocument("txt", "", "gewoon wat tekst zonder kop erboven, een paar woorden"),
                         "notities_team.txt", "process")
    assert plan.root.label == "Notities team" and plan.root.type == "process"


def test_a_long_pdf_becomes_a_document_topic_and_sections_by_pages_that_cite_their_pages():
    parsed = ParsedDocument("pdf", "Handboek deelnemers", _pdf_text(200), 200)
    plan = plan_document(parsed, "handboek.pdf")
    assert len(plan.sections) > 5
    assert all(len(t.content) <= MAX_CONTENT and len(t.label) <= MAX_LABEL and len(t.description) <= MAX_DESCRIPTION
               and SLUG_RE.match(t.slug) for t in plan.topics)
    assert {r.type for r in plan.relations} == {"part_of"}
    assert all(r.target == "handboek" for r in plan.relations)
    _valid_as_import(plan)
    # every page's text is in exactly one section, and every passage knows its page
    pages_seen = []
    for section in plan.sections:
        for passage in split_passages(section.slug, section.content):
            assert passage.page >= 1
            assert f"Op pagina {passage.page} " in passage.text
            pages_seen.append(passage.page)
            assert "<!--" not in passage.text
    assert sorted(set(pages_seen)) == list(range(1, 201))
    page_150 = next(s for s in plan.sections if "Op pagina 150 staat" in s.content)
    assert page_150.label.startswith("Handboek deelnemers (p. ")
    assert chip_label(page_150.label, 150) == "Handboek deelnemers, p. 150"
    # the document topic lists its parts, linked
    assert plan.root.content.count("](/topics/handboek-p-") == len(plan.sections)


def test_a_long_document_with_chapters_is_cut_at_its_chapters_and_the_title_stays_with_the_document():
    parsed = ParsedDocument("docx", "", _chapters(5))
    plan = plan_document(parsed, "regeling.docx")
    assert plan.root.label == "Regeling 2026"
    assert [s.label for s in plan.sections] == [f"Regeling 2026: Hoofdstuk {h}" for h in range(1, 6)]
    assert [s.slug for s in plan.sections] == [f"regeling-hoofdstuk-{h}" for h in range(1, 6)]
    assert "Deze regeling beschrijft de pensioenopbouw." in plan.root.content
    assert all(s.content.startswith(f"## Hoofdstuk {k}") for k, s in enumerate(plan.sections, start=1))
    _valid_as_import(plan)


def test_changing_one_chapter_changes_only_that_section_topic():
    before = plan_document(ParsedDocument("docx", "", _chapters(5)), "regeling.docx")
    text = _chapters(5).replace("Woord3 over hoofdstuk 3", "Nieuw3 over hoofdstuk 3", 1)
    after = plan_document(ParsedDocument("docx", "", text), "regeling.docx")
    changed = [a.slug for a, b in zip(after.topics, before.topics, strict=True) if a != b]
    assert changed == ["regeling-hoofdstuk-3"]


def test_a_chapter_longer_than_a_topic_is_split_into_parts():
    parsed = ParsedDocument("md", "", _chapters(2, words=5000))
    plan = plan_document(parsed, "lang.md")
    labels = [s.label for s in plan.sections]
    assert "Regeling 2026: Hoofdstuk 1 (deel 1)" in labels and "Regeling 2026: Hoofdstuk 1 (deel 2)" in labels
    assert len({s.slug for s in plan.sections}) == len(plan.sections)
    assert all(len(s.content) <= MAX_CONTENT for s in plan.sections)
    _valid_as_import(plan)


def test_slugs_avoid_the_tenants_other_topics_and_keep_a_known_root():
    parsed = ParsedDocument("docx", "", _chapters(3))
    plan = plan_document(parsed, "regeling.docx", taken_slugs={"regeling", "regeling-hoofdstuk-1"})
    assert plan.root.slug == "regeling-2" and "regeling-hoofdstuk-1" not in {s.slug for s in plan.sections}
    again = plan_document(parsed, "regeling.docx", root_slug="regeling-2")
    assert again.root.slug == "regeling-2"


def test_a_document_of_too_many_sections_is_refused_naming_the_file():
    text = "\n\n".join(f"## Kop {k}\n\n" + "tekst " * 700 for k in range(MAX_SECTIONS + 5))
    with pytest.raises(DocumentRefused) as err:
        plan_document(ParsedDocument("md", "", text), "enorm.md")
    assert "enorm.md" in err.value.user_message


def test_page_marks_give_passages_their_pages_and_never_reach_the_text():
    content = page_mark(4) + "\nEerste alinea op pagina vier.\n" + page_mark(5) + "\nTweede alinea op pagina vijf."
    passages = split_passages("x", content, min_words=2, max_words=6)
    assert [(p.page, p.text) for p in passages] == [(4, "Eerste alinea op pagina vier."),
                                                    (5, "Tweede alinea op pagina vijf.")]
    assert split_passages("y", "Geen pagina's hier.")[0].page == 0


def test_a_snippet_of_a_pdf_passage_names_its_page():
    from r42_app.core.kb import Topic

    content = "\n".join(page_mark(p) + "\n" + f"Op pagina {p} staat het antwoord over onderwerp{p} en meer woorden "
                        "die de alinea lang genoeg maken om alleen te staan in een passage van de tekst." * 4
                        for p in (7, 8))
    topic = Topic("handboek-p-7-8", "Handboek (p. 7–8)", "concept", "Pagina's 7 en 8.", content)
    index = TenantIndex.build([topic], [])
    from r42_app.services.retrieval import SearchHit, SearchResult

    p8 = next(k for k, p in enumerate(index.passages) if p.page == 8)
    hit = SearchHit(topic.slug, topic.label, topic.type, 1.0, index.passages[p8].text, index.passages[p8].anchor, [p8])
    (snippet,) = SearchResult("fts", "fts", [hit]).snippets(index)
    assert snippet.label == "Handboek, p. 8"
    assert snippet.url == f"/topics/handboek-p-7-8#{index.passages[p8].anchor}"


def test_kinds_and_keys_come_from_the_file_name():
    assert kind_of("Handboek.PDF") == "pdf" and kind_of("site.htm") == "html" and kind_of("foto.png") is None
    assert kind_of("geen-extensie") is None
    assert document_key("Handboek Deelnemers 2026.pdf") == "handboek-deelnemers-2026"
    assert document_key("../../etc/Één ding.docx") == "een-ding"
    assert document_key(".pdf") == "pdf"


def test_download_links_are_bound_to_tenant_document_and_time():
    exp = int(time.time()) + 60
    sig = download_signature("geheim", "t1", "d1", exp)
    assert sig == download_signature("geheim", "t1", "d1", exp)
    assert sig not in {download_signature("geheim", "t2", "d1", exp), download_signature("geheim", "t1", "d2", exp),
                       download_signature("geheim", "t1", "d1", exp + 1), download_signature("ander", "t1", "d1", exp)}
    assert download_url("geheim", "t1", "d1", exp).endswith(f"&sig={sig}")


def test_page_marks_survive_what_the_reader_sees_but_comments_that_hide_text_do_not():
    from r42_app.core.visible import visible_markdown

    text = f"{page_mark(3)}\nZichtbaar.\n<!-- pagina 4 -->verborgen\nx <!-- pagina 5 -->\n<!-- geheim -->"
    shown = visible_markdown(text)
    assert shown.startswith(page_mark(3) + "\nZichtbaar.")
    assert "verborgen" in shown and "pagina 4" not in shown and "pagina 5" not in shown and "geheim" not in shown


def test_a_pdf_whose_first_chapter_starts_on_page_one_gives_its_document_topic_no_page():
    text = "\n\n".join(f"{page_mark(p)}\n\n" + (f"## Hoofdstuk {p // 10 + 1}\n\n" if p % 10 == 1 else "")
                       + "Een alinea over de regeling van het pensioenfonds voor iedere deelnemer. " * 15
                       for p in range(1, 21))
    plan = plan_document(ParsedDocument("pdf", "Gids", text, 20), "gids.pdf")
    assert [s.label for s in plan.sections][:2] == ["Gids: Hoofdstuk 1", "Gids: Hoofdstuk 2"]
    assert plan.root.content.startswith("## Inhoud")
    assert all(p.page == 0 for p in split_passages(plan.root.slug, plan.root.content))


def test_a_heading_of_many_spaces_is_read_at_once():
    # the old heading pattern backtracked in cubic time here: a 2 KB file held a worker for 14 s, this for hours
    text = "# Titel" + " " * 20_000 + "van het document\n\nTekst onder de kop."
    # (a heading over 200 characters names its passages by its start, blanks run together: core/passages.py)
    assert split_passages("x", text)[0].heading == ("Titel van het document",)
    assert plan_document(ParsedDocument("md", "", text * 3), "k.md").root.label.startswith("Titel")


def test_nothing_of_a_long_text_is_lost_when_it_is_cut():
    intro = "\n\n".join(f"Alinea {i} van de lange inleiding over het pensioen." for i in range(900))
    plan = plan_document(ParsedDocument("md", "", intro + "\n\n## Een\n\nTekst.\n\n## Twee\n\nMeer."), "lang.md")
    stored = "\n".join(t.content for t in plan.topics)
    assert all(f"Alinea {i} van" in stored for i in range(900))
    assert plan.root.label == "Lang" and plan.sections[0].label.startswith("Lang: Inleiding (deel 1)")
    one_line = "Eerst dit.\n\n" + "Dit is een zin van een alinea zonder einde. " * 1700  # a Word file of soft breaks
    plan = plan_document(ParsedDocument("docx", "", one_line), "een-regel.docx")
    assert sum(t.content.count("Dit is een zin") for t in plan.topics) == 1700
    assert all(t.content.strip() and len(t.content) <= MAX_CONTENT for t in plan.topics)


# -- issue 49: what a first import looked like ---------------------------------------------------------------------

WELCOME = ("Welkom bij Acme. Dit handboek helpt je in je eerste weken op weg met alles wat je moet weten over je "
           "werk, je rechten en je pensioen.")


def test_a_pdf_title_line_is_not_its_description():
    from r42_app.services.adapters.documents import parse_bytes
    from tests.fakes.documents import make_pdf

    pdf = make_pdf(["Handboek voor nieuwe medewerkers\n\n" + WELCOME], title="Handboek voor nieuwe medewerkers")
    plan = plan_document(parse_bytes("handboek.pdf", pdf), "handboek.pdf")
    assert plan.root.label == "Handboek voor nieuwe medewerkers"
    assert plan.root.description == WELCOME
    assert plan.root.content == f"{page_mark(1)}\n\n{WELCOME}"  # the title once on its page: as the label


@pytest.mark.parametrize("kind", ["pdf", "docx", "pptx", "md", "html", "txt"])
def test_a_description_is_the_first_sentence_never_the_title_again(kind):
    mark = page_mark(1) + "\n\n" if kind == "pdf" else ""
    by_title = plan_document(ParsedDocument(kind, "Verlofregeling 2026", f"{mark}Verlofregeling 2026\n\n{WELCOME}"),
                             f"verlof.{kind}")
    assert by_title.root.description == WELCOME
    # a title line that is not the label (the label is the file's name) is no summary either: a sentence is
    by_file = plan_document(ParsedDocument(kind, "", f"{mark}Handboek voor nieuwe medewerkers\n\n{WELCOME}"),
                            f"verlofregeling_2026.{kind}")
    assert by_file.root.label == "Verlofregeling 2026" and by_file.root.description == WELCOME
    # and a label that is the file's name, repeated as the text's first line
    plain = plan_document(ParsedDocument(kind, "", f"{mark}Verlofregeling 2026 van Acme BV\n\n{WELCOME}"),
                          f"Verlofregeling 2026 van Acme BV.{kind}")
    assert plain.root.description == WELCOME


def test_a_chapters_description_is_not_its_title_again():
    body = " ".join(["De premie wordt elke maand ingehouden op het salaris van de deelnemer."] * 200)
    text = "\n\n".join(f"## Premie in deel {h}\n\nPremie in deel {h}\n\n{body}" for h in range(1, 4))
    plan = plan_document(ParsedDocument("md", "Regeling", text), "regeling.md")
    assert [s.description for s in plan.sections] == [
        "De premie wordt elke maand ingehouden op het salaris van de deelnemer."] * 3


def test_the_topic_page_labels_a_passage_across_two_pages_as_its_chip_does():
    from r42_app.state.learn import passage_views

    words = "de regeling geldt voor iedere deelnemer die premie betaalt en pensioen opbouwt bij het fonds"
    content = (f"{page_mark(1)}\n\nKort begin: {words}.\n\n{page_mark(2)}\n\n" + f"Vervolg: {words}. " * 4
               + f"\n\n{page_mark(2)}\n\n" + f"Nog meer: {words}. " * 5 + f"\n\n{page_mark(3)}\n\n"
               + f"Pagina drie: {words}. " * 5)
    passages = split_passages("handboek", content)
    assert [(p.page, p.last_page) for p in passages] == [(1, 2), (2, 2), (3, 3)]
    views = passage_views(passages)
    assert [v.page for v in views] == ["p. 1–2", "", "p. 3"]
    first = passages[0]
    assert chip_label("Handboek", first.page, first.last_page) == f"Handboek, {views[0].page}"


def test_a_word_title_that_is_the_label_is_not_repeated_in_the_body():
    from r42_app.services.adapters.documents import parse_bytes
    from tests.fakes.documents import make_docx

    blocks = [("title", "Reglement"), ("heading", 1, "Toetreding"), ("p", "Je treedt toe op de eerste werkdag.")]
    plan = plan_document(parse_bytes("regels.docx", make_docx(blocks)), "regels.docx")
    assert plan.root.label == "Reglement"
    assert plan.root.content == "## Toetreding\n\nJe treedt toe op de eerste werkdag."
    with_core = plan_document(parse_bytes("r.docx", make_docx([("core_title", "Reglement"), *blocks])), "r.docx")
    assert with_core.root.label == "Reglement" and "Reglement" not in with_core.root.content
    # a title that is not the label stays: it says something the label does not
    other = plan_document(parse_bytes("r.docx", make_docx([("core_title", "Reglement 2026"), *blocks])), "r.docx")
    assert other.root.label == "Reglement 2026" and other.root.content.startswith("# Reglement\n\n## Toetreding")


def _word_chapters(title: str, styles: tuple[str, str, str]) -> bytes:
    """A Word file of three chapters, each with sections and subsections in the styles named, made by python-docx;
    long enough to be cut into a topic per chapter."""
    import io

    import docx

    d = docx.Document()
    for name in styles:
        if name not in [s.name for s in d.styles]:
            d.styles.add_style(name, 1)  # a paragraph style of that name: Word in Dutch names them "Kop 1", ...
    if title:
        d.add_paragraph(title, style="Title")
    text = "Deelnemers bouwen pensioen op zolang zij in dienst zijn en premie betalen aan het fonds. " * 12
    for c in range(1, 4):
        d.add_paragraph(f"Hoofdstuk {c}", style=styles[0])
        d.add_paragraph(text)
        for p in range(1, 3):
            d.add_paragraph(f"Paragraaf {c}.{p}", style=styles[1])
            d.add_paragraph(text)
            d.add_paragraph(f"Onderdeel {c}.{p}.1", style=styles[2])
            d.add_paragraph(text)
            d.add_paragraph(text)
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


@pytest.mark.parametrize("styles", [("Heading 1", "Heading 2", "Heading 3"), ("Kop 1", "Kop 2", "Kop 3")])
@pytest.mark.parametrize("title", ["Reglement", ""])
def test_word_heading_levels_stay_relative_in_each_chapter_topic(styles, title):
    from r42_app.core.passages import read_heading
    from r42_app.services.adapters.documents import parse_bytes

    plan = plan_document(parse_bytes("regels.docx", _word_chapters(title, styles)), "regels.docx")
    assert plan.root.label == (title or "Regels")
    assert [s.label for s in plan.sections] == [f"{plan.root.label}: Hoofdstuk {c}" for c in range(1, 4)]
    assert title not in plan.root.content.split("## Inhoud")[0] if title else True
    for c, section in enumerate(plan.sections, start=1):
        headings = [h for line in section.content.split("\n") if (h := read_heading(line))]
        top = headings[0][0]
        assert headings == [(top, f"Hoofdstuk {c}"), (top + 1, f"Paragraaf {c}.1"), (top + 2, f"Onderdeel {c}.1.1"),
                            (top + 1, f"Paragraaf {c}.2"), (top + 2, f"Onderdeel {c}.2.1")]


@pytest.mark.parametrize("item, name, codes", [
    ({"name": "C:\\fotos\\foto.png", "codes": ["file-invalid-type"]}, "foto.png", {"file-invalid-type"}),
    ({"name": "lijst.csv", "codes": ["file-too-large", "too-many-files"]}, "lijst.csv", {"file-too-large",
                                                                                       "too-many-files"}),
    ({"name": "  ", "codes": "file-too-large"}, "", set()),  # no name, codes not a list
    ({"name": 7, "codes": [1]}, "", {"1"}),
    ("foto.png", "", set()),  # not what the page sends
    (None, "", set()),
])
def test_a_turned_away_file_is_read_from_what_the_page_sends_whatever_it_sends(item, name, codes):
    assert rejection(item) == (name, frozenset(codes))
