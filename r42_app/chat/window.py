"""One answer as the chat window shows it while it streams: the turn's typed events (chat/events.py) in, the
changes to the answer being written out. ChatState only applies those changes; all the rules are here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from r42_app.chat import events
from r42_app.core.chat_view import UICitation, chips, cited, confirm_lines, display, distinct_sources
from r42_app.core.delta import describe_delta
from r42_app.core.messages import msg


@dataclass
class AnswerView:
    """The answer of one turn, built up event by event."""

    text: str = ""
    status: str = "ok"  # ok | offline | incomplete | error | quota
    sources: list[UICitation] = field(default_factory=list)  # this turn's snippets: [ref:N] become chips at once
    citations: list[UICitation] = field(default_factory=list)
    delta: dict = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)  # notices: proposed edits that could not be used
    error: str = ""  # shown under the thread, with "Opnieuw"
    dropped: int = 0  # older questions left out of the model's history
    grounded: bool = True  # the knowledge base had something on the question (the turn's `done` says)

    def apply(self, event: events.ChatEvent) -> dict[str, Any]:
        """Take one event in; returns the fields of the streaming message that change now (maybe none)."""
        match event:
            case events.Sources(sources=sources):
                self.sources = [UICitation(s.ref, s.slug, s.label, s.passage) for s in sources]
            case events.Text(text=text):
                self.text += text
                return {"content": self.text, "display": display(self.text, self.sources, streaming=True),
                        "chips": chips(self.sources)}
            case events.Citation():
                self.citations.append(UICitation(event.ref, event.slug, event.label, event.passage))
            case events.DeltaProposed(delta=delta):
                self.delta = dict(delta)
            case events.DeltaRejected(message=message):
                self.rejected.append(message)
            case events.ConfirmRequired():
                return {"confirm_id": event.id, "confirm_tool": event.tool, "confirm_lines": confirm_lines(event.input),
                        "confirm_state": "pending"}
            case events.Error(message=message):
                self.fail(message)
            case events.Done():
                self.dropped = event.dropped
                self.status = "offline" if event.offline else "ok"
                self.grounded = event.grounded
        return {}

    def fail(self, message: str) -> None:
        """The turn failed: what was written stays, marked unfinished."""
        self.status = "incomplete" if self.text else "error"
        self.error = message

    def stopped(self) -> None:
        self.status = "incomplete"

    def refused(self, kind: str, message: str) -> None:
        """The guard said no. Out of credits is an upsell note in the thread, not an error."""
        if kind == "quota_exceeded":
            self.status, self.text = "quota", message
        else:
            self.status, self.error = "error", message

    def final(self, labels: dict[str, str] | None = None) -> dict[str, Any]:
        """The fields of the answer once the turn has ended (however it ended); `labels` (slug to label) name
        the existing topics a proposal links to. An answer that found nothing lists no "Bronnen": the topics
        it names are only the closest ones (its chips show them)."""
        citations = self.citations or cited(self.text, self.sources)  # ended before the citations came
        return {"content": self.text, "status": self.status, "citations": citations,
                "display": display(self.text, citations), "chips": chips(citations), "grounded": self.grounded,
                "sources": distinct_sources(self.text, citations) if self.grounded else [],
                "delta": self.delta, "delta_state": "pending" if self.delta else "",
                "delta_lines": describe_delta(self.delta, labels)}

    def announcement(self) -> str:
        """The one thing a screen reader hears when the answer has ended: done, stopped, or why it failed."""
        if self.error:
            return self.error
        if self.status == "quota":
            return self.text
        return msg("chat.stopped") if self.status == "incomplete" else msg("chat.answered")
