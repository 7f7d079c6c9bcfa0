"""/admin/feedback shows a rated answer as the chat did: its [ref:N] as the labels of the cited topics."""

from r42_app.core.chat_view import CITATION_MARK, display, stored_citations

ANSWER = "De AOW begint op de AOW-leeftijd [ref:2]. Daarna komt het pensioen [ref:5], zie ook [ref:2]."


def test_a_stored_answer_shows_its_sources_by_label_not_as_ref_numbers():
    stored = [{"slug": "aow", "label": "AOW"}, {"slug": "pensioendatum", "label": "Pensioendatum"}]
    shown = display(ANSWER, stored_citations(ANSWER, stored))
    assert "[ref:" not in shown
    assert f'[AOW](/topics/aow "{CITATION_MARK}")' in shown
    assert f'[Pensioendatum](/topics/pensioendatum "{CITATION_MARK}")' in shown


def test_a_stored_ref_number_wins_over_the_order_of_first_use():
    stored = [{"slug": "pensioendatum", "label": "Pensioendatum", "ref": 5},
              {"slug": "aow", "label": "AOW", "ref": 2, "anchor": "p-3"}]
    cites = stored_citations(ANSWER, stored)
    assert [(c.ref, c.slug, c.anchor) for c in cites] == [(5, "pensioendatum", ""), (2, "aow", "p-3")]
    assert "(/topics/aow#p-3" in display(ANSWER, cites)


def test_a_source_the_answer_no_longer_cites_stays_listed_without_a_chip():
    cites = stored_citations("Geen verwijzing.", [{"slug": "aow", "label": "AOW"}])
    assert [(c.ref, c.label) for c in cites] == [(0, "AOW")]
    assert display("Geen verwijzing.", cites) == "Geen verwijzing."
