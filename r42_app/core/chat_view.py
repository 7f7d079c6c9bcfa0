"""What the chat window shows, as plain values: its messages, how an answer's [ref:N] become source chips,
which messages of the thread go to the model, and the conversions to and from the stored thread.

A chip is made only from a citation of R42's own (a topic slug of core/kb.py's shape, a passage anchor of
core/passages.py's or none, a label of plain text): `display` writes it as a markdown link and `chips` lists it,
and the renderer (components/r42_sanitize.js) makes a chip of a link only when its href and text are on that list.
Nothing in the text itself (a title, an attribute) makes a chip."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from r42_app.core.chat import REF_RE
from r42_app.core.delta import describe_delta
from r42_app.core.kb import MAX_SLUG, SLUG_RE
from r42_app.core.messages import msg
from r42_app.core.passages import ANCHOR_RE
from r42_app.core.retrieval import topic_url
from r42_app.core.thread import ThreadCitation, ThreadMessage

MAX_CITATION_LABEL = 200  # characters (the thread keeps 200; the feedback store cuts to 120); r42_sanitize.js too
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PARTIAL_REF = re.compile(r"\[(?:r(?:e(?:f(?::\d*)?)?)?)?$")
# Statuses of answers that never reach the model again: failed, cut off, or the upsell note of a tenant without credits.
NOT_FOR_THE_MODEL = ("error", "incomplete", "quota")


@dataclasses.dataclass
class UICitation:
    ref: int = 0
    slug: str = ""
    label: str = ""
    anchor: str = ""
    href: str = ""  # set for the sources list under an answer (distinct_sources)


@dataclasses.dataclass
class UIMessage:
    id: str = ""
    role: str = "assistant"
    content: str = ""
    status: str = "ok"
    citations: list[UICitation] = dataclasses.field(default_factory=list)
    display: str = ""
    delta: dict = dataclasses.field(default_factory=dict)
    delta_state: str = ""
    delta_lines: list[str] = dataclasses.field(default_factory=list)
    confirm_id: str = ""  # a high-risk external tool waiting for the user's yes (not kept in the thread)
    confirm_tool: str = ""
    confirm_lines: list[str] = dataclasses.field(default_factory=list)
    confirm_state: str = ""  # pending | allowed | denied | failed
    rating: str = ""  # up | down: the user's thumbs on this answer (stored for the admins)
    sources: list[UICitation] = dataclasses.field(default_factory=list)  # "Bronnen" under the answer: once each
    grounded: bool = True  # false: "niets gevonden"; its chips are the closest topics, not sources (no "Bronnen")
    chips: list[UICitation] = dataclasses.field(default_factory=list)  # the chips `display` made (with their href)


def valid_citation(slug: Any, anchor: Any, label: Any) -> bool:
    """Whether a citation has the shape of one R42 makes: a topic slug, a passage anchor or none, and a label of
    plain text (no control characters) of at most MAX_CITATION_LABEL characters. pb_hooks/r42_rules.js holds
    ratings to the same shape."""
    return (isinstance(slug, str) and len(slug) <= MAX_SLUG and bool(SLUG_RE.fullmatch(slug))
            and isinstance(anchor, str) and (anchor == "" or bool(ANCHOR_RE.fullmatch(anchor)))
            and isinstance(label, str) and 0 < len(label.strip()) and len(label) <= MAX_CITATION_LABEL
            and not _CONTROL.search(label))


def chips(citations: list[UICitation]) -> list[UICitation]:
    """The citations that may be chips, each with its href: what the renderer gets beside `display`."""
    return [dataclasses.replace(c, href=topic_url(c.slug, c.anchor)) for c in citations
            if valid_citation(c.slug, c.anchor, c.label)]


def link_text(label: str) -> str:
    """A topic label as the text of a markdown link, read back exactly as the label: every ASCII punctuation
    character escaped, so it cannot close the link, open a tag, an entity or emphasis."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", label)


def display(content: str, citations: list[UICitation], streaming: bool = False) -> str:
    """Markdown with each [ref:N] of this turn as a link to its topic (`chips(citations)` makes it a chip); other
    refs, and those of a citation without R42's shape, stay plain text. A source (a topic, or a document's page: one
    chip label) is a chip once, where the answer first cites it: a later [ref:N] of it adds nothing (the chip and
    the sources list under the answer already name it). While streaming, a reference still arriving (`[ref:` at
    the very end) is held back."""
    by_ref = {c.ref: c for c in citations if valid_citation(c.slug, c.anchor, c.label)}
    shown: set[tuple[str, str]] = set()

    def link(match: re.Match[str]) -> str:
        c = by_ref.get(int(match.group(1)))
        if c is None:
            return match.group(0)
        if (c.slug, c.label) in shown:
            return ""
        shown.add((c.slug, c.label))
        return f" [{link_text(c.label)}]({topic_url(c.slug, c.anchor)})"

    if streaming:
        content = _PARTIAL_REF.sub("", content)
    return REF_RE.sub(link, content)


def cited(content: str, sources: list[UICitation]) -> list[UICitation]:
    """The sources an answer cites, in order of first use (for an answer that ended before its citations)."""
    by_ref = {c.ref: c for c in sources}
    refs = dict.fromkeys(int(m.group(1)) for m in REF_RE.finditer(content))
    return [by_ref[r] for r in refs if r in by_ref]


def distinct_sources(content: str, citations: list[UICitation]) -> list[UICitation]:
    """The sources an answer cites (a topic, or a document's page), once each, in order of first use (its
    "Bronnen" list)."""
    first: dict[tuple[str, str], UICitation] = {}
    for c in chips(cited(content, citations) or citations):
        first.setdefault((c.slug, c.label), c)
    return list(first.values())


def stored_citations(content: str, stored: list[dict[str, Any]]) -> list[UICitation]:
    """The citations of a stored answer (feedback). One stored without its number gets the number it has in the
    answer: citations are stored in the order of first use (core.chat.resolve_citations). One without R42's shape
    (a row written before PocketBase checked them) is left out: its [ref:N] stays plain text."""
    refs = list(dict.fromkeys(int(m.group(1)) for m in REF_RE.finditer(content)))
    out = []
    for i, c in enumerate(stored):
        if not isinstance(c, dict):
            continue
        stored_ref = c.get("ref")
        ref = stored_ref if isinstance(stored_ref, int) and not isinstance(stored_ref, bool) else (
            refs[i] if i < len(refs) else 0)
        slug, label, anchor = c.get("slug") or "", c.get("label") or c.get("slug") or "", c.get("anchor") or ""
        if valid_citation(slug, anchor, label):
            out.append(UICitation(ref, slug, label, anchor))
    return out


def copy_text(content: str) -> str:
    """An answer's text for the clipboard, its [ref:N] markers left out."""
    return re.sub(r"[ \t]+", " ", REF_RE.sub("", content)).replace(" .", ".").strip()


def confirm_lines(arguments: Any) -> list[str]:
    """A tool's arguments as readable lines for the confirmation card."""
    if not isinstance(arguments, dict) or not arguments:
        return [msg("confirm.no_arguments")]
    return [f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"[:300]
            for k, v in arguments.items()]


def plain(value: Any) -> Any:
    """A plain copy of a value held in UI state (Reflex wraps dicts and lists in proxies)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def from_thread(m: ThreadMessage, labels: dict[str, str] | None = None) -> UIMessage:
    """A stored message as the window shows it; `labels` (topic slug to label) name the topics of a proposal."""
    cites = [UICitation(c.ref, c.slug, c.label, c.anchor) for c in m.citations]
    return UIMessage(m.id, m.role, m.content, m.status, cites, display(m.content, cites), m.delta, m.delta_state,
                     describe_delta(m.delta, labels), grounded=m.grounded,
                     sources=distinct_sources(m.content, cites) if m.grounded else [], chips=chips(cites))


def to_thread(m: UIMessage) -> ThreadMessage:
    status = "incomplete" if m.status == "streaming" else m.status  # a reload mid-answer finds it unfinished
    return ThreadMessage(m.id, m.role, m.content, status,
                         [ThreadCitation(c.ref, c.slug, c.label, c.anchor) for c in m.citations],
                         plain(m.delta), m.delta_state, bool(m.grounded))


def model_history(messages: list[UIMessage]) -> list[dict[str, str]]:
    """The messages of the window that go to the model: questions and answers with text, not the greeting,
    not notices, and no answer that failed, was cut off or was the upsell note."""
    return [{"role": m.role, "content": m.content} for m in messages
            if m.role in ("user", "assistant") and m.content.strip() and m.id != "greeting"
            and m.status not in NOT_FOR_THE_MODEL]


def latest_question(messages: list[UIMessage]) -> UIMessage:
    """The last question asked (an empty message when there is none)."""
    return next((m for m in reversed(messages) if m.role == "user"), UIMessage(role="user"))


def answer_and_question(messages: list[UIMessage], answer_id: str) -> tuple[UIMessage, str] | None:
    """R42's answer with this id and the question it answered (for thumbs up or down), or None."""
    index = next((i for i, m in enumerate(messages) if m.id == answer_id and m.role == "assistant"), None)
    if index is None:
        return None
    return messages[index], next((m.content for m in reversed(messages[:index]) if m.role == "user"), "")
