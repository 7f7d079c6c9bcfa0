"""The model's standalone rewrite of a follow-up question (issue 47, item 3; `R42_QUESTION_REWRITE=true`).

"Wat is partnerpensioen?" … "En voor de kinderen?": before such a turn is grounded, the fast tier
(`R42_QUESTION_REWRITE_MODEL`) may rewrite the last question so that it stands on its own ("Welk pensioen krijgen
de kinderen als een deelnemer overlijdt?"), and the turn's search, KB context and question log take that rewrite
(core/conversation.py `Understood.rewritten`). Only a question with earlier ones in its conversation is sent, only
after the turn's guard has passed (no model call in a quiz, without the capability or without credit), and the
call is paid as the turn's `chatbot:question_rewrite` cost event ("Vervolgvragen begrijpen" on /admin/costs).
Whatever goes wrong (the model fails, is slower than `R42_QUESTION_REWRITE_TIMEOUT`, answers something that is not
one question, or is cut off) the turn goes on with the offline understanding, as without a rewrite: the rewrite
can make a turn's grounding better, never stop it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from r42_app.core.capabilities import QUESTION_REWRITE
from r42_app.core.conversation import REWRITE_MAX_TOKENS, parse_rewrite, rewrite_request
from r42_app.core.costs import Round, Usage

log = logging.getLogger(__name__)


@dataclass
class QuestionRewriter:
    """The rewrite call: `llm` (AnthropicLLM of the fast tier: its `model` and `stream`), where its cost goes
    (CostRecorder's `publish`, None: not recorded) and how long it may take."""

    llm: Any
    costs: Any = None
    timeout_s: float = 2.0

    async def standalone(self, conversation: Sequence[tuple[str, str]], turn_id: str, tenant_id: str,
                         user_id: str) -> str:
        """The last question of `conversation` ((role, text) pairs, oldest first, ending with the question; the
        caller sends only a question that has earlier ones) as a standalone question, or "" (the call failed or timed
        out, the model was cut off, or the reply is not one question). `turn_id` is the turn's: the call's cost event
        is the turn's `question_rewrite` event."""
        request = rewrite_request(conversation)
        pieces: list[str] = []
        usage: dict[str, int] = {}
        stop_reason = ""
        try:
            async with asyncio.timeout(self.timeout_s):
                async for event in self.llm.stream(request["system"], request["messages"], [],
                                                   max_tokens=REWRITE_MAX_TOKENS):
                    if event.kind == "text":
                        pieces.append(event.text)
                    elif event.kind in ("usage", "stop"):
                        usage = event.usage or usage
                        stop_reason = event.stop_reason or stop_reason
        except TimeoutError:
            log.warning("question rewrite took over %.0f s: grounded without it", self.timeout_s)
            return ""
        except Exception as exc:  # noqa: BLE001 - LLMError or anything else: the offline understanding goes on
            log.warning("question rewrite failed (%s): grounded without it", getattr(exc, "kind", type(exc).__name__))
            return ""
        finally:  # what the call used is paid, whatever came of it (also when the turn is stopped meanwhile)
            if usage and self.costs is not None:
                self.costs.publish(turn_id, tenant_id, user_id, self.llm.model,
                                   [Round(Usage.from_sdk(usage), accounted=QUESTION_REWRITE)])
        reply = "".join(pieces)
        rewritten = parse_rewrite(reply, conversation[-1][1]) if stop_reason == "end_turn" else ""
        if not rewritten:
            log.warning("question rewrite unusable (stop %s, %d characters): grounded without it",
                        stop_reason or "none", len(reply))
        return rewritten
