"""Raw HTML in topic content and answers is made inert before React renders it (issue 16, item 12)."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from r42_app.core.markup import defuse_html

CASES = [
    ('<img src="x.png" onerror="alert(1)">', '<img src="x.png">'),
    ("<IMG SRC=x ONERROR=alert(1) />", "<IMG SRC=x />"),
    ("<img/onerror=alert(1) src=x>", "<img src=x>"),
    ('<a title="a>b" onclick=x>t</a>', '<a title="a>b">t</a>'),
    ('<a title="online help" href="javascript:alert(1)">x</a>', '<a title="online help" href="#">x</a>'),
    ('<a href=" JaVaScript:x">y</a>', '<a href="#">y</a>'),
    ("<style>body { display: none }</style>Tekst", "Tekst"),
    ("<script>alert(1)</script>ok", "ok"),
    ('<iframe src="https://example.com"></iframe>', ""),
    ("<scr<scr<script></script>ipt>ipt>alert(1)</script>", "alert(1)"),
    ("<table><tr><td onclick='x'>1</td></tr></table>", "<table><tr><td>1</td></tr></table>"),
]

UNCHANGED = [
    "Gewone **markdown** met een [link](/topics/aow) en een tabel:\n\n| a | b |\n|---|---|\n| 1 | 2 |",
    "Rekenen: 1 < 2 en 3 > 2, ook a<b.",
    "Een regel<br/>en nog een <sub>2</sub>",
    "`<img onerror=x>` in code blijft staan",
    "```html\n<img src=x onerror=alert(1)>\n<script>x()</script>\n```",
    '<a href="https://example.com/online">online</a>',
]


@pytest.mark.parametrize(("raw", "safe"), CASES)
def test_active_html_is_removed(raw, safe):
    assert defuse_html(raw) == safe


@pytest.mark.parametrize("text", UNCHANGED)
def test_markdown_code_and_harmless_html_are_left_as_written(text):
    assert defuse_html(text) == text


_HANDLER_IN_TAG = re.compile(r"<[A-Za-z][^<>]*[\s/]on[a-z]+\s*=", re.I)
pieces = st.sampled_from(["<img", "<a", " ", "/", "onerror", "=", '"', "'", ">", "x", "javascript:", "href",
                          "<script>", "</script>", "<b>", "\n", "on", "click"])


@given(st.lists(pieces, max_size=30).map("".join))
def test_no_event_handler_survives_and_defusing_twice_changes_nothing(text):
    once = defuse_html(text)
    assert defuse_html(once) == once
    assert not re.search(r"<script", once, re.I)
    for tag in re.finditer(r"""<[A-Za-z][\w:-]*(?:"[^"]*"|'[^']*'|[^'"<>])*>""", once):
        assert not _HANDLER_IN_TAG.match(tag.group(0)), tag.group(0)
