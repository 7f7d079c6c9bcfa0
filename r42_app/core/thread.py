"""The chat thread as kept in the browser (localStorage `chat:thread:{userId}`): parse, cap, serialise.

Everything from the browser is untrusted: a corrupt, oversized or foreign-version value is replaced
by a fresh thread and a notice, never a crash.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from r42_app.core.messages import msg

THREAD_VERSION = 1
MAX_THREAD_MESSAGES = 50
MAX_STORED_CHARS = 400_000
ROLES = ("user", "assistant", "notice")
STATUSES = ("ok", "incomplete", "error", "offline", "quota")  # quota: refused, the tenant has no AI credit
DELTA_STATES = ("", "pending", "applied", "suggested", "declined", "failed")
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_ANCHOR = re.compile(r"^(?:p-[0-9a-f]{10}(?:-\d{1,4})?)?$")


def storage_key(user_id: str) -> str:
    return f"chat:thread:{user_id}"


@dataclass
class ThreadCitation:
    ref: int = 0
    slug: str = ""
    label: str = ""
    anchor: str = ""  # the cited passage (core/passages.py anchors: "p-" and hex)


@dataclass
class ThreadMessage:
    id: str = ""
    role: str = "assistant"
    content: str = ""
    status: str = "ok"
    citations: list[ThreadCitation] = field(default_factory=list)
    delta: dict = field(default_factory=dict)  # a proposed graph edit (see core.delta), if any
    delta_state: str = ""  # pending | applied | suggested | declined | failed
    grounded: bool = True  # false: the knowledge base had nothing on the question (its chips are the closest topics)


def greeting(name: str, tenant: str) -> ThreadMessage:
    first = (name or "").split(" ")[0]
    hello = msg("chat.hello_name", name=first) if first else msg("chat.hello")
    body = msg("chat.greeting_tenant", tenant=tenant) if tenant else msg("chat.greeting")
    return ThreadMessage(id="greeting", role="assistant", content=f"{hello} {body}")


def cap(messages: list[ThreadMessage]) -> list[ThreadMessage]:
    """At most MAX_THREAD_MESSAGES, the oldest dropped first."""
    return messages[-MAX_THREAD_MESSAGES:]


MAX_REMOVED = 200


def serialise(messages: list[ThreadMessage], cleared: float = 0.0, removed: list[str] | None = None) -> str:
    """The stored form; `cleared` is when the thread was last cleared and `removed` the ids of messages taken
    out (a regenerated answer, an edited question), so other tabs drop them instead of bringing them back."""
    data: dict[str, Any] = {"version": THREAD_VERSION, "messages": [asdict(m) for m in cap(messages)]}
    if cleared > 0:
        data["cleared"] = cleared
    if removed:
        data["removed"] = list(dict.fromkeys(removed))[-MAX_REMOVED:]
    return json.dumps(data, ensure_ascii=False)


def removed_ids(raw: Any) -> list[str]:
    """The ids a stored thread says were taken out (empty when none, or when the value is not a thread)."""
    try:
        value = json.loads(raw).get("removed", []) if isinstance(raw, str) and len(raw) <= MAX_STORED_CHARS else []
    except (ValueError, AttributeError):
        return []
    return [str(v)[:64] for v in value[:MAX_REMOVED] if isinstance(v, str)] if isinstance(value, list) else []


def cleared_at(raw: Any) -> float:
    """When a stored thread was last cleared (0 when never, or when the value is not a thread)."""
    try:
        value = json.loads(raw).get("cleared", 0) if isinstance(raw, str) and len(raw) <= MAX_STORED_CHARS else 0
        return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0
    except (ValueError, AttributeError):
        return 0.0


def _finished(m: ThreadMessage) -> int:
    return (0 if m.status == "incomplete" else 1_000_000_000) + len(m.content)


def merge(mine: list[ThreadMessage], stored: list[ThreadMessage], removed: set[str] | frozenset = frozenset()
          ) -> list[ThreadMessage]:
    """Two tabs' threads as one: the stored order, then this tab's new messages; a message both have is
    taken in its more finished form (an answer beats its placeholder), else as this tab has it. The same
    rule as the browser's `r42SaveThread` (assets/r42.js), so every tab ends with the union."""
    latest = {m.id: m for m in mine}
    out: list[ThreadMessage] = []
    seen: set[str] = set()
    for m in stored:
        if m.id in seen:
            continue
        theirs, own = m, latest.get(m.id)
        out.append(own if own is not None and _finished(own) >= _finished(theirs) else theirs)
        seen.add(m.id)
    out += [m for m in mine if m.id not in seen]
    return cap([m for m in out if m.id not in removed])


def _message(raw: Any) -> ThreadMessage:
    if not isinstance(raw, dict):
        raise ValueError("message is not an object")
    role, content, status = raw.get("role"), raw.get("content"), raw.get("status", "ok")
    if role not in ROLES or not isinstance(content, str) or status not in STATUSES:
        raise ValueError("bad message")
    cites = []
    for c in raw.get("citations") or []:
        if not isinstance(c, dict) or not isinstance(c.get("ref"), int) or not _SLUG.match(str(c.get("slug", ""))):
            raise ValueError("bad citation")
        anchor = c.get("anchor", "")
        if not isinstance(anchor, str) or not _ANCHOR.match(anchor):
            raise ValueError("bad citation")
        cites.append(ThreadCitation(c["ref"], c["slug"], str(c.get("label", ""))[:200], anchor))
    delta, delta_state = raw.get("delta") or {}, raw.get("delta_state", "")
    if not isinstance(delta, dict) or delta_state not in DELTA_STATES or len(json.dumps(delta)) > 20_000:
        raise ValueError("bad delta")
    grounded = raw.get("grounded", True)  # absent in threads stored before it was kept
    if not isinstance(grounded, bool):
        raise ValueError("bad message")
    return ThreadMessage(str(raw.get("id", ""))[:64], role, content[:20_000], status, cites, delta, delta_state,
                         grounded)


def parse(raw: Any) -> tuple[list[ThreadMessage] | None, str]:
    """(messages, "") for a valid stored thread; (None, reason) when it must be replaced; ([], "") when absent."""
    if raw is None or raw == "":
        return [], ""
    if not isinstance(raw, str):
        return None, "unreadable"
    if len(raw) > MAX_STORED_CHARS:
        return None, "too large"
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None, "corrupt"
    version = data.get("version") if isinstance(data, dict) else None
    if type(version) is not int or version != THREAD_VERSION:  # (true == 1 in Python: a bool is no version)
        return None, "another version"
    stored = data.get("messages") or []
    if not isinstance(stored, list):
        return None, "corrupt"
    try:
        messages = [_message(m) for m in stored]
    except ValueError:
        return None, "corrupt"
    return cap(messages), ""
