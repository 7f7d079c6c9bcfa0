"""A topic's headings under its page's h1 (core/passages.py heading_shift): the highest becomes an h2."""

import pytest

from r42_app.core.passages import heading_shift


@pytest.mark.parametrize(("content", "shift"), [
    ("### Aandachtspunten\n\ntekst\n\n#### Details", -1),  # the seed's topics: h3 first
    ("# Titel\n\n## Deel", 1),
    ("## Deel\n\n### Stuk", 0),
    ("Alleen tekst, geen kopjes.", 0),
    ("", 0),
    ("```\n# geen kop: code\n```\n\n#### Kop", -2),  # a # in a code block is no heading
    ("#geen kop zonder spatie\n\n###### Diep", -4),
])
def test_the_highest_heading_becomes_an_h2(content, shift):
    assert heading_shift(content) == shift
