"""What the window shows of a turn (chat/window.py, core/chat_view.py) and the events' wire format (chat/events.py)."""

import json

from r42_app.chat import events
from r42_app.chat.window import AnswerView
from r42_app.core.chat_view import UICitation, UIMessage, chips, copy_text, display, model_history
from r42_app.core.messages import msg

SOURCES = events.Sources((events.Source(1, "aow", "AOW", "p-0123456789", "/topics/aow#p-0123456789"),
                          events.Source(2, "anw", "Anw [nabestaanden]", "", "/topics/anw")))


def test_every_event_has_one_json_shape_with_its_type():
    assert events.Text("Hoi").to_json() == {"type": "text", "text": "Hoi"}
    assert SOURCES.to_json()["sources"][0] == {"ref": 1, "slug": "aow", "label": "AOW", "passage": "p-0123456789",
                                               "url": "/topics/aow#p-0123456789"}
    done = events.Done(offline=False, mode_used="hybrid", dropped=2, stale_refs=[7], usage={"input_tokens": 3})
    assert json.loads(json.dumps(done.to_json())) == {
        "type": "done", "offline": False, "mode_used": "hybrid", "rag_snippets": True, "dropped": 2,
        "stale_refs": [7], "usage": {"input_tokens": 3}, "turn_id": "", "grounded": True}
    assert set(events.EVENT_TYPES) == {"text", "tool", "sources", "citation", "delta", "delta_rejected",
                                       "confirm_required", "error", "done"}


def test_refs_become_chips_as_the_text_streams_and_a_half_ref_is_held_back():
    view = AnswerView()
    assert view.apply(SOURCES) == {}
    shown = view.apply(events.Text("De AOW [ref:1] en [re"))
    assert shown["content"] == "De AOW [ref:1] en [re"
    assert "[AOW](/topics/aow#p-0123456789)" in shown["display"] and not shown["display"].endswith("[re")
    assert [(c.label, c.href) for c in shown["chips"]] == [("AOW", "/topics/aow#p-0123456789"),
                                                           ("Anw [nabestaanden]", "/topics/anw")]
    view.apply(events.Text("f:2]."))
    view.apply(events.Done(offline=False, mode_used="fts"))
    final = view.final()  # no citation events came: the answer's own refs decide, in order of use
    assert [c.slug for c in final["citations"]] == ["aow", "anw"] and final["status"] == "ok"
    assert r"[Anw \[nabestaanden\]](/topics/anw" in final["display"]  # a label cannot break out of its link


def test_an_error_keeps_the_text_so_far_as_unfinished():
    view = AnswerView()
    view.apply(events.Text("Half"))
    view.apply(events.Error("overloaded", "De AI-dienst is even te druk.", True))
    assert view.final()["status"] == "incomplete" and view.error == "De AI-dienst is even te druk."
    empty = AnswerView()
    empty.apply(events.Error("timeout", "Te laat.", True))
    assert empty.final()["status"] == "error"


def test_a_proposal_a_rejection_a_confirmation_and_offline_answers():
    view = AnswerView()
    card = view.apply(events.ConfirmRequired("c1", "crm__delete", {"id": 7, "why": "test"}))
    assert card == {"confirm_id": "c1", "confirm_tool": "crm__delete", "confirm_lines": ["id: 7", "why: test"],
                    "confirm_state": "pending"}
    view.apply(events.DeltaProposed({"reason": "r", "topics": [{"id": "x", "label": "X", "type": "concept"}],
                                     "relations": []}))
    view.apply(events.DeltaRejected(msg("delta.unusable")))
    view.apply(events.Done(offline=True, mode_used="fts"))
    final = view.final()
    assert final["delta_state"] == "pending" and final["delta_lines"] and final["status"] == "offline"
    assert view.rejected == [msg("delta.unusable")]


def test_out_of_credits_is_a_note_in_the_thread_and_other_refusals_are_errors():
    quota = AnswerView()
    quota.refused("quota_exceeded", "Je organisatie heeft geen tegoed meer.")
    assert quota.final()["status"] == "quota" and quota.final()["content"].startswith("Je organisatie") and not quota.error
    limited = AnswerView()
    limited.refused("rate_limited", msg("chat.rate_limited"))
    assert limited.final()["status"] == "error" and limited.error == msg("chat.rate_limited")


def test_only_real_questions_and_answers_go_to_the_model():
    thread = [UIMessage("greeting", "assistant", "Hallo!"), UIMessage("a", "user", "Wat is de AOW?"),
              UIMessage("b", "assistant", "Het basispensioen.", "ok"), UIMessage("c", "notice", "Let op."),
              UIMessage("d", "user", "En de Anw?"), UIMessage("e", "assistant", "Half", "incomplete"),
              UIMessage("f", "assistant", "Geen tegoed", "quota"), UIMessage("g", "user", "   "),
              UIMessage("h", "assistant", "Offline antwoord", "offline")]
    assert model_history(thread) == [{"role": "user", "content": "Wat is de AOW?"},
                                     {"role": "assistant", "content": "Het basispensioen."},
                                     {"role": "user", "content": "En de Anw?"},
                                     {"role": "assistant", "content": "Offline antwoord"}]


def test_only_citations_of_r42s_shape_are_chips_and_copies_leave_refs_out():
    forged = display('[klik](https://evil.example "r42:bron") [ref:9]', [UICitation(1, "aow", "AOW")])
    assert "[ref:9]" in forged  # an unknown ref stays plain text
    markup = [UICitation(1, 'x) [Officiële bron](https://evil.example/login "r42:bron") (', "Bron"),
              UICitation(2, "aow", "AOW", "p-3\"><img src=x>"), UICitation(3, "aow", "AOW\n[x](https://evil)"),
              UICitation(4, "anw", "Anw", "p-0123456789")]
    shown = display("Een [ref:1], [ref:2], [ref:3] en [ref:4].", markup)
    assert "evil" not in shown and "<img" not in shown and "[ref:1], [ref:2], [ref:3]" in shown
    assert [(c.ref, c.href) for c in chips(markup)] == [(4, "/topics/anw#p-0123456789")]
    assert copy_text("De AOW [ref:1] is  het basispensioen [ref:2].") == "De AOW is het basispensioen."


def test_a_topic_cited_three_times_is_one_chip_and_one_entry_under_bronnen():
    view = AnswerView()
    view.apply(events.Sources((*SOURCES.sources, events.Source(3, "aow", "AOW", "p-9999999999", "/topics/aow"))))
    view.apply(events.Text("De AOW [ref:1] is een basis [ref:1]; zie ook [ref:3] en de Anw [ref:2]."))
    view.apply(events.Done(offline=False, mode_used="fts"))
    final = view.final()
    assert final["display"].count("](/topics/") == 2  # AOW once (refs 1, 1 and 3 are the same topic), Anw once
    assert "[ref:" not in final["display"]
    assert [(c.label, c.href) for c in final["sources"]] == [("AOW", "/topics/aow#p-0123456789"),
                                                             ("Anw [nabestaanden]", "/topics/anw")]


def test_two_pages_of_one_document_are_two_sources():
    pages = events.Sources((events.Source(1, "reisboek", "Reisboek, p. 60", "p-0000000060", "/topics/reisboek"),
                            events.Source(2, "reisboek", "Reisboek, p. 61", "p-0000000061", "/topics/reisboek")))
    view = AnswerView()
    view.apply(pages)
    view.apply(events.Text("Binnen dertig dagen [ref:1], ook voor een verhuizing [ref:2] of een tweede [ref:1]."))
    view.apply(events.Done(offline=False, mode_used="fts"))
    final = view.final()
    assert final["display"].count("](/topics/") == 2
    assert [c.label for c in final["sources"]] == ["Reisboek, p. 60", "Reisboek, p. 61"]


def test_the_announcement_says_done_stopped_or_why_it_failed():
    done = AnswerView()
    done.apply(events.Text("Klaar."))
    done.apply(events.Done(offline=False, mode_used="fts"))
    assert done.announcement() == msg("chat.answered") == "R42 heeft geantwoord"
    stopped = AnswerView(text="Half")
    stopped.stopped()
    assert stopped.announcement() == msg("chat.stopped")
    failed = AnswerView()
    failed.apply(events.Error("timeout", "Het model antwoordde niet."))
    assert failed.announcement() == "Het model antwoordde niet."


def test_a_proposal_names_existing_topics_by_their_label():
    delta = {"reason": "Ontbreekt.", "topics": [{"id": "wezenpensioen", "label": "Wezenpensioen", "type": "concept",
                                                "description": "Voor kinderen."}],
             "relations": [{"source": "wezenpensioen", "target": "partnerpensioen", "type": "part_of"}]}
    view = AnswerView()
    view.apply(events.DeltaProposed(delta))
    lines = view.final({"partnerpensioen": "Partnerpensioen", "wezenpensioen": "Oud"})["delta_lines"]
    assert lines[-1] == "Wezenpensioen → is onderdeel van → Partnerpensioen"  # the proposal's own label wins
    assert view.final()["delta_lines"][-1].endswith("→ partnerpensioen")  # no labels known: the id


def test_an_answer_that_found_nothing_lists_no_sources_also_after_a_reload():
    """"Niets gevonden ... deze onderwerpen kwamen het dichtst bij [chips]": the chips stay, but a "Bronnen" list
    under it would say the answer came from those topics."""
    from r42_app.core.chat_view import from_thread, to_thread
    from r42_app.core.thread import parse, serialise

    view = AnswerView()
    view.apply(SOURCES)
    view.apply(events.Text(msg("chat.offline_not_found") + " [ref:1] [ref:2]"))
    view.apply(events.Done(offline=True, mode_used="fts", grounded=False))
    final = view.final()
    assert final["sources"] == [] and final["grounded"] is False
    assert "[AOW](/topics/aow#p-0123456789)" in final["display"]  # the closest topics, as chips
    assert [c.slug for c in final["chips"]] == ["aow", "anw"]
    shown = UIMessage("a1", "assistant", final["content"], final["status"], final["citations"], final["display"],
                      grounded=final["grounded"], sources=final["sources"])
    stored, problem = parse(serialise([to_thread(shown)]))
    again = from_thread(stored[0])
    assert problem == "" and again.grounded is False and again.sources == [] and again.display == final["display"]
    assert again.chips == final["chips"]

    found = AnswerView()
    found.apply(SOURCES)
    found.apply(events.Text("De AOW [ref:1]."))
    found.apply(events.Done(offline=True, mode_used="fts"))
    assert [c.label for c in found.final()["sources"]] == ["AOW"]


def test_a_stored_thread_without_the_grounded_key_reads_as_grounded_and_a_bad_one_is_replaced():
    from r42_app.core.chat_view import from_thread
    from r42_app.core.thread import parse

    old = {"id": "a1", "role": "assistant", "content": "De AOW [ref:1].", "status": "ok",
           "citations": [{"ref": 1, "slug": "aow", "label": "AOW"}]}
    stored, problem = parse(json.dumps({"version": 1, "messages": [old]}))
    assert problem == "" and [c.label for c in from_thread(stored[0]).sources] == ["AOW"]
    assert parse(json.dumps({"version": 1, "messages": [{**old, "grounded": "nee"}]})) == (None, "corrupt")
