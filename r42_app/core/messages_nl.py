"""Dutch wording for the knowledge-base validation messages (the rules and the CLI speak English)."""

from __future__ import annotations

import re

_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"is required$"), "Dit veld is verplicht."),
    (re.compile(r"is (\d+) characters, the maximum is (\d+)$"), r"Te lang: \1 tekens (maximaal \2)."),
    (re.compile(r"is longer than (\d+) characters$"), r"Te lang (maximaal \1 tekens)."),
    (re.compile(r"is not kebab-case"), "Gebruik kleine letters, cijfers en enkele koppeltekens, bijvoorbeeld partner-pensioen."),
    (re.compile(r"'(.+)' already exists in this tenant$"), r"Het id '\1' bestaat al in je organisatie."),
    (re.compile(r"is not one of"), "Kies een van de toegestane waarden."),
    (re.compile(r"unknown topic '(.+)'$"), r"Onbekend onderwerp '\1'."),
    (re.compile(r"this relation already exists$"), "Deze relatie bestaat al."),
    (re.compile(r"cannot relate to itself"), "Een onderwerp kan geen relatie met zichzelf hebben."),
    (re.compile(r"must be text$"), "Vul tekst in."),
]


def to_dutch(message: str) -> str:
    """The Dutch version of a validation message, or the message itself when no rule matches."""
    for pattern, replacement in _RULES:
        match = pattern.search(message)
        if match:
            return match.expand(replacement)
    return message
