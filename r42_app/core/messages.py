"""Every message R42 shows its users, in Dutch, keyed by a stable code.

Code speaks in codes (`msg("chat.failed")`, an exception's `code`); only this catalogue holds the words. An
English message or an exception's own text never reaches the UI: `tests/unit/test_messages.py` checks that
every code used in the package is here, that every entry is Dutch, and that the window shows no raw
exception text.

Templates use `str.format` fields (`{seconds}`); `msg()` fills them and refuses unknown codes loudly in
tests (KeyError) rather than showing a code to a user.
"""

from __future__ import annotations

CATALOGUE: dict[str, str] = {
    # -- the chat turn's guard (chat/turn.py REFUSALS; the API returns the same text with its status)
    "chat.unauthenticated": "Meld je aan om R42 te gebruiken.",
    "chat.forbidden": "Je account hoort bij geen organisatie.",
    "chat.chatbot_disabled": "R42 staat uit voor je organisatie. Je beheerder kan R42 weer aanzetten.",
    "chat.capability_denied": "Je beheerder heeft R42 voor jou uitgezet.",
    "chat.data_write_denied": "Je mag geen aanvullingen op de kennisbank doen; vraag je beheerder.",
    "chat.rate_limited": "Je stelt veel vragen vlak na elkaar. Wacht even en probeer het dan opnieuw.",
    "chat.unavailable": "R42 kan nu niet controleren wat je mag. Probeer het zo opnieuw.",
    "chat.quiz_active": "Je bent bezig met een toets. R42 is weer beschikbaar zodra je de toets afrondt of verlaat.",
    # -- the window
    "chat.failed": "Er ging iets mis bij het beantwoorden van je vraag. Probeer het opnieuw.",
    "chat.cut_off": "De verbinding met de server werd onderbroken; dit antwoord is niet afgemaakt. Probeer het opnieuw.",
    "chat.thread_unreadable": "Je eerdere gesprek kon niet worden gelezen en is opnieuw begonnen.",
    "chat.history_dropped": "Oudere berichten zijn niet meegestuurd; R42 kijkt naar de laatste 12 vragen.",
    "chat.too_long": "Je bericht is {length} tekens; het maximum is {maximum}. Maak het korter en verstuur opnieuw.",
    "chat.quiz_locked": "R42 is vergrendeld zolang je toets loopt. Rond de toets af of stop ermee.",
    "chat.copied": "Antwoord gekopieerd",
    "chat.rated": "Bedankt! Je beoordeling helpt de beheerders R42 te verbeteren.",
    "chat.rating_not_stored": "Je beoordeling is niet opgeslagen; probeer het later opnieuw.",
    "chat.rating_refused": "Je beoordeling is niet opgeslagen. {reason}",
    "chat.bad_input": "R42 kon je bericht niet lezen. Vernieuw de pagina en probeer het opnieuw.",
    # -- thumbs on answers
    "feedback.bad_rating": "Een beoordeling is duim omhoog of duim omlaag.",
    "feedback.no_answer": "Er is geen antwoord om te beoordelen.",
    "feedback.too_fast": "Je hebt veel beoordelingen vlak na elkaar gegeven. Wacht een minuut en probeer het dan opnieuw.",
    # -- proposed edits of the knowledge base
    "delta.unusable": "R42 stelde een wijziging van de kennisbank voor die niet bruikbaar was; er is niets veranderd.",
    # -- high-risk external tools
    "confirm.failed": "Je antwoord kon niet worden verwerkt.",
}


def msg(code: str, **fields: object) -> str:
    """The Dutch message for `code`, its fields filled in."""
    template = CATALOGUE[code]
    return template.format(**fields) if fields else template


def nl_number(n: int) -> str:
    """A whole number the Dutch way (12.345)."""
    return f"{n:,}".replace(",", ".")
