"""The model's draft of a topic for a knowledge gap (issue 28, "Onderwerp aanmaken" on /admin/gaps).

The group's questions and its closest topics (fenced as data, with their injection markers) go to the model,
which hands in a description and content through one tool call (core/gaps.py `draft_request`). The editor shows
them marked as a draft, naming the topics they came from; the admin reviews and saves. The call is paid like a
chat turn: the tenant's credits are checked first (402's `QuotaExceeded`), and its cost is recorded
(`chatbot:chat_general`, "Antwoorden" on /admin/costs). Without a model (offline) there is no call: the editor
keeps the draft from the questions alone.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from r42_app.core.costs import Round, Usage, assert_tenant_ai_credit_access
from r42_app.core.gaps import DRAFT_TOOL, DraftRefused, draft_request, parse_draft
from r42_app.core.identity import Tenant
from r42_app.core.injection import detect_injection_markers
from r42_app.core.visible import visible_markdown

log = logging.getLogger(__name__)
MAX_TOKENS = 2048


@dataclass
class DraftDeps:
    gaps: Any  # services/gaps.py GapsReport
    kb: Any  # KBStore
    llm: Any  # AnthropicLLM (its `stream`)
    credits: Any  # CreditStore
    costs: Any = None  # CostRecorder (None: not recorded)
    upgrade_url: str = "/admin/costs"


def _inputs(deps: DraftDeps, tenant: Tenant, gap_id: str) -> tuple[list[str], list[tuple[str, str, str, list[str]]]]:
    """(the gap's questions, its closest topics as (slug, label, text, markers)); blocking: call it in a thread."""
    gap = deps.gaps.gap(tenant.id, gap_id)
    if gap is None:
        raise LookupError(gap_id)
    found = deps.kb.topics_by_slug(tenant, gap.closest)
    topics = []
    for slug in gap.closest:
        topic = found.get(slug)
        if topic is None:
            continue
        text = visible_markdown(f"{topic.description}\n\n{topic.content}".strip())
        topics.append((topic.slug, topic.label, text, detect_injection_markers(text)))
    return gap.examples(), topics


async def model_draft(deps: DraftDeps, tenant: Tenant, user_id: str, gap_id: str) -> dict[str, str]:
    """The model's description and content for the gap `gap_id`, marked as a draft. Raises LookupError (no such
    gap), QuotaExceeded (no credits), LLMError (the model call failed) or DraftRefused (no usable draft)."""
    credits = await asyncio.to_thread(deps.credits.show, tenant)
    assert_tenant_ai_credit_access(credits, minimum_credits=1, upgrade_url=deps.upgrade_url)
    questions, topics = await asyncio.to_thread(_inputs, deps, tenant, gap_id)
    request = draft_request(questions, topics)
    arguments: Any = None
    usage: dict[str, int] = {}
    try:
        async for event in deps.llm.stream(request["system"], request["messages"], request["tools"],
                                           max_tokens=MAX_TOKENS):
            if event.kind == "tool_use" and event.tool_name == DRAFT_TOOL and arguments is None:
                arguments = event.tool_input
            elif event.kind in ("usage", "stop") and event.usage:
                usage = event.usage
    finally:
        if usage and deps.costs is not None:  # what the call used is paid, whatever came of it
            rounds = [Round(Usage.from_sdk(usage))]
            await asyncio.to_thread(deps.costs.record, f"gap-draft-{uuid.uuid4().hex}", tenant.id, user_id,
                                    deps.llm.model, rounds)
    if arguments is None:
        raise DraftRefused("the model called no draft tool")
    return parse_draft(arguments, [(slug, label) for slug, label, _text, _markers in topics])
