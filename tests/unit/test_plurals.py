"""Dutch plurals in the catalogue's messages (issue 49): "1 relatie", "2 relaties", never "relatie(s)"."""

from r42_app.core.messages import CATALOGUE, msg, plural


def test_a_count_takes_its_noun_in_the_singular_only_for_one():
    assert msg("delta.applied", topics=1, relations=1) == "Toegevoegd: 1 onderwerp, 1 relatie."
    assert msg("delta.applied", topics=2, relations=0) == "Toegevoegd: 2 onderwerpen, 0 relaties."
    assert msg("access.saved", count=1).startswith("Opgeslagen: de rechten van 1 gebruiker.")
    assert msg("people.imported_mail_failed", failed=1) == "1 mail kon niet worden verstuurd; de link staat hieronder."
    assert msg("people.imported_mail_failed", failed=3).startswith("3 mails konden niet worden verstuurd; hun links")
    assert msg("kb.import_invalid", count=1) == "Het importbestand heeft 1 fout; er is niets geschreven."
    assert plural(1, "relatie", "relaties") == "1 relatie" and plural(12345, "relatie", "relaties") == "12.345 relaties"


def test_no_message_writes_a_plural_in_brackets():
    assert [code for code, text in CATALOGUE.items() if "(s)" in text or "(en)" in text] == []
