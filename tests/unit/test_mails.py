"""Issue 52: the invitation and the password-reset mails come from the catalogue, in the recipient's language (their
own choice, else the language of the moment: the inviting admin's)."""

from r42_app.core.mails import invitation, password_reset
from r42_app.core.messages import speaking


def test_an_invitation_in_dutch_and_in_english():
    subject, text, html = invitation("Ann", "Acme", "Bert", "admin", "https://r42.example/uitnodiging/abc")
    assert subject == "Uitnodiging voor R42 van Acme"
    assert text.startswith("Hallo Ann,\n\nBert nodigt je uit voor R42, de leeromgeving van Acme, als beheerder.")
    assert '<html lang="nl">' in html and "Wachtwoord kiezen" in html and "https://r42.example/uitnodiging/abc" in text
    subject, text, html = invitation("Ann", "Acme", "", "learner", "https://r42.example/x", language="en")
    assert subject == "Invitation to R42 of Acme"
    assert text.startswith("Hello Ann,\n\nYou are invited to R42, the learning environment of Acme, as learner.")
    assert "works for 7 days" in text and '<html lang="en">' in html and "Choose a password" in html
    assert "nodig" not in text + html and "Werkt de knop" not in html


def test_a_reset_follows_the_language_of_the_moment_unless_the_person_chose():
    with speaking("en"):
        subject, text, _html = password_reset("Ann", "Acme", "https://r42.example/r")
        assert subject == "New password for R42" and "works for 2 hours" in text
        subject, text, _html = password_reset("Ann", "Acme", "https://r42.example/r", language="nl")
        assert subject == "Nieuw wachtwoord voor R42" and "De link werkt 2 uur en één keer." in text


def test_a_name_with_markup_is_text_in_the_html():
    _subject, _text, html = invitation("<b>Ann</b>", "A&B", "Bert", "learner", "https://r42.example/x", "en")
    assert "<b>Ann</b>" not in html and "&lt;b&gt;Ann&lt;/b&gt;" in html and "A&amp;B" in html
