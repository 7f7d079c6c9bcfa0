"""/admin/feedback shows a rated answer as the chat did: its [ref:N] as the labels of the cited topics."""

from markdown_it import MarkdownIt

from r42_app.core.chat_view import chips, display, stored_citations

ANSWER = "De AOW begint op de AOW-leeftijd [ref:2]. Daarna komt het pensioen [ref:5], zie ook [ref:2]."


def test_a_stored_answer_shows_its_sources_by_label_not_as_ref_numbers():
    stored = [{"slug": "aow", "label": "AOW"}, {"slug": "pensioendatum", "label": "Pensioendatum"}]
    shown = display(ANSWER, stored_citations(ANSWER, stored))
    assert "[ref:" not in shown
    assert "[AOW](/topics/aow)" in shown
    assert "[Pensioendatum](/topics/pensioendatum)" in shown


def test_a_stored_ref_number_wins_over_the_order_of_first_use():
    stored = [{"slug": "pensioendatum", "label": "Pensioendatum", "ref": 5},
              {"slug": "aow", "label": "AOW", "ref": 2, "anchor": "p-0123456789"}]
    cites = stored_citations(ANSWER, stored)
    assert [(c.ref, c.slug, c.anchor) for c in cites] == [(5, "pensioendatum", ""), (2, "aow", "p-0123456789")]
    assert "(/topics/aow#p-0123456789)" in display(ANSWER, cites)


def test_a_source_the_answer_no_longer_cites_stays_listed_without_a_chip():
    cites = stored_citations("Geen verwijzing.", [{"slug": "aow", "label": "AOW"}])
    assert [(c.ref, c.label) for c in cites] == [(0, "AOW")]
    assert display("Geen verwijzing.", cites) == "Geen verwijzing."


def test_a_stored_citation_without_r42s_shape_makes_no_link_and_no_chip():
    """Rows stored before PocketBase checked citations (issue 44, finding 6): a slug holding markdown, a label with a
    line break, an anchor of another shape, a value that is no object. They are left out; their [ref:N] stays
    text, and the page's chips are made of the good ones only."""
    stored = [{"slug": 'x) [Officiële bron: log opnieuw in](https://evil.example/login "r42:bron") (', "label": "x",
               "ref": 2},
              {"slug": "aow", "label": "AOW\n\n[Log in](https://evil.example)", "ref": 5},
              {"slug": "aow", "label": "AOW", "anchor": "x) [a](https://evil.example", "ref": 7},
              "aow", None, {"slug": ["aow"], "label": "AOW"}, {"slug": "aow\n", "label": "AOW"},
              {"slug": "aow", "label": "AOW", "anchor": "p-0123456789\n"},
              {"slug": "pensioendatum", "label": "Pensioendatum", "ref": 9}]
    answer = ANSWER + " Ook [ref:7] en [ref:9]."
    cites = stored_citations(answer, stored)
    assert [(c.ref, c.slug) for c in cites] == [(9, "pensioendatum")]
    shown = display(answer, cites)
    assert "evil" not in shown and "[ref:2]" in shown and "[ref:5]" in shown and "[ref:7]" in shown
    assert [(c.label, c.href) for c in chips(cites)] == [("Pensioendatum", "/topics/pensioendatum")]


def test_a_label_reads_back_exactly_as_the_text_of_its_link():
    """The renderer makes a chip of a link only when its text is the chip's label: every markdown character in a
    label is escaped, so `&amp;`, `~~`, `*` or `<b>` in a label come back as written (parsed here by CommonMark's
    reference parser for Python, as react-markdown parses it in the browser)."""
    label = "Regels &amp; <b>uitzonderingen</b> ~~oud~~ *nu* `code` [1] (2024) www.voorbeeld.nl, p. 5\u20136"
    shown = display("Zie [ref:1].", stored_citations("Zie [ref:1].", [{"slug": "regels", "label": label, "ref": 1}]))
    inline = MarkdownIt("commonmark").enable("strikethrough").parseInline(shown)[0].children
    opened = [i for i, t in enumerate(inline) if t.type == "link_open"]
    assert len(opened) == 1 and inline[opened[0]].attrGet("href") == "/topics/regels"
    assert inline[opened[0] + 1].type == "text" and inline[opened[0] + 1].content == label
    assert inline[opened[0] + 2].type == "link_close"
