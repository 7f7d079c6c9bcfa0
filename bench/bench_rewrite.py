"""The model's rewrite of follow-up questions (issue 47, item 3; R42_QUESTION_REWRITE): what it adds to a turn's
first event and what it costs, through the real turn (`run_turn` with its guard, real PocketBase, Chroma and e5, the
`anthropic` SDK against the fake Messages API on loopback), rewrite off and on, interleaved per conversation.

What cannot be measured here is a real model: its response time (the fake answers at once, so the figures are R42's
own part of the added latency; a real fast-tier call adds its own, cut off at R42_QUESTION_REWRITE_TIMEOUT) and the
quality of its rewrites. The fake answers each rewrite with the set's hand-written standalone question, so the
"on" sources show what the turn does with a rewrite as good as a person's (they should equal the standalone column
of `python -m bench conversation`: a check of the path, not of a model). Only the development sets are run.
The earlier answers in the conversations are R42's offline answers to the earlier questions (the KB's own
sentences). The cost is estimated from the rewrite request's measured size (characters, at 3 characters a token,
which overcounts Dutch and English text) and the fast tier's price in r42_app/config/model_prices.json; with the
largest request there can be (every message it reads at its limit) as the bound.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from bench.bench_conversation import SETS, earlier_answer, hit_at, mean, rows, seeded_retriever
from bench.common import ms, p50, p95
from r42_app.chat import events
from r42_app.chat.rewrite import QuestionRewriter
from r42_app.chat.turn import ChatDeps, run_turn
from r42_app.core.conversation import REWRITE_MAX_TOKENS, REWRITE_TURNS, rewrite_request
from r42_app.core.identity import SignedInUser, Tenant
from r42_app.core.metrics import ndcg_at_k
from r42_app.services.adapters.llm import AnthropicLLM
from r42_app.services.store.access import AccessStore
from r42_app.services.store.pb import PocketBase
from r42_app.settings import DEFAULT_MODEL
from tests.fakes.anthropic_api import FakeAnthropic

PRICES = Path(__file__).resolve().parents[1] / "r42_app" / "config" / "model_prices.json"
CHARS_PER_TOKEN = 3.0
SLOW = 12  # conversations whose rewrite is slower than the timeout (the fallback's cost)
TIMEOUT_S = 1.0
ANSWER = "Een kort antwoord [ref:1]."


def messages_of(row: dict, answer: Callable[[list[str]], str]) -> list[dict]:
    """The conversation as the window sends it: each earlier question and R42's answer to it (`answer`, from the
    questions so far: the offline answer, the KB's own sentences), then the question."""
    out: list[dict] = []
    for n, turn in enumerate(row["turns"]):
        out += [{"role": "user", "content": turn}, {"role": "assistant", "content": answer(row["turns"][:n + 1])}]
    return [*out, {"role": "user", "content": row["question"]}]


def longest_request() -> int:
    """The characters of the largest rewrite request there can be: every message it reads at its limit."""
    earlier = [("user" if i % 2 else "assistant", "woord " * 2000) for i in range(REWRITE_TURNS)]
    request = rewrite_request([*earlier, ("user", "vraag " * 2000)])
    return len(json.dumps(request["system"], ensure_ascii=False)) + len(request["messages"][0]["content"])


def bench_user(pb: PocketBase, tenant: Tenant) -> SignedInUser:
    """A learner of `tenant` in PocketBase (the turn's guard checks the person is there), on an unlimited plan."""
    pb.update("tenants", tenant.id, {"credits_unlimited": True})
    email = f"bench-{tenant.slug}@example.com"
    row = pb.create("users", {"email": email, "password": "bench-password-1", "passwordConfirm": "bench-password-1",
                              "name": "Bench", "role": "learner", "tenant": tenant.id})
    return SignedInUser(row["id"], email, "Bench", "learner", tenant.id, tenant.slug, tenant.name)


async def timed_turn(user: SignedInUser, messages: list[dict], deps: ChatDeps) -> tuple[float, float, list[str]]:
    """(seconds to the turn's first event, to its first text, the sources' slugs)."""
    start = time.perf_counter()
    first = text = 0.0
    slugs: list[str] = []
    async for event in run_turn(user, messages, deps, "hybrid"):
        now = time.perf_counter() - start
        first = first or now
        if isinstance(event, events.Sources):
            slugs = [s.slug for s in event.sources]
        elif isinstance(event, events.Text) and not text:
            text = now
    return first, text, slugs


async def measure() -> dict:
    fake = FakeAnthropic().start()
    out: dict = {"off": [], "on": [], "slow": [], "chars": [], "parts": {}}
    try:
        with seeded_retriever() as (retriever, kb, tenants):
            llm = AnthropicLLM("bench", "claude-bench", base_url=fake.url, max_retries=0)
            fast = AnthropicLLM("bench", DEFAULT_MODEL, base_url=fake.url, max_retries=0)
            guards = AccessStore(kb.pb)  # the guard as the app runs it: beside the grounding, or before the rewrite
            off = ChatDeps(retriever=retriever, kb=kb, llm=llm, guards=guards)
            on = ChatDeps(retriever=retriever, kb=kb, llm=llm, guards=guards,
                          rewriter=QuestionRewriter(fast, None, 2.0))
            slow = ChatDeps(retriever=retriever, kb=kb, llm=llm, guards=guards,
                            rewriter=QuestionRewriter(fast, None, TIMEOUT_S))
            users = {slug: bench_user(kb.pb, t) for slug, t in tenants.items()}
            dev = [(title, name, slug) for title, name, slug in SETS if "held out" not in title]
            for title, name, slug in dev:
                for row in rows(name):
                    messages = messages_of(row, lambda qs, t=tenants[slug]: earlier_answer(retriever, t, qs))
                    fake.reset()
                    fake.reply_text(ANSWER)
                    t_off = await timed_turn(users[slug], messages, off)
                    fake.reset()
                    fake.reply_text(row["standalone"], usage={"input_tokens": 0, "output_tokens": 0})
                    fake.reply_text(ANSWER)
                    t_on = await timed_turn(users[slug], messages, on)
                    rewrite = fake.requests[0]["body"]
                    assert rewrite["max_tokens"] == REWRITE_MAX_TOKENS, "the first request is not the rewrite"
                    out["chars"].append((len(json.dumps(rewrite["system"], ensure_ascii=False))
                                         + len(rewrite["messages"][0]["content"]), len(row["standalone"])))
                    out["off"].append(t_off[:2])
                    out["on"].append(t_on[:2])
                    part = out["parts"].setdefault((title, row["kind"]), {"off": [], "on": []})
                    part["off"].append((t_off[2], row["rel"]))
                    part["on"].append((t_on[2], row["rel"]))
            for row in rows(dev[0][1])[:SLOW]:
                fake.reset()
                fake.reply_text(row["standalone"], delay=TIMEOUT_S + 1.0)
                fake.reply_text(ANSWER)
                messages = messages_of(row, lambda qs: earlier_answer(retriever, tenants[dev[0][2]], qs))
                out["slow"].append((await timed_turn(users[dev[0][2]], messages, slow))[:2])
            await llm.aclose()
            await fast.aclose()
    finally:
        fake.stop()
    return out


def run() -> str:
    got = asyncio.run(measure())
    price = json.loads(PRICES.read_text())["models"][DEFAULT_MODEL]
    first_off, text_off = [f for f, _ in got["off"]], [t for _, t in got["off"]]
    first_on, text_on = [f for f, _ in got["on"]], [t for _, t in got["on"]]
    added = [b - a for a, b in zip(first_off, first_on)]
    tokens_in = [c / CHARS_PER_TOKEN for c, _ in got["chars"]]
    tokens_out = [o / CHARS_PER_TOKEN + 2 for _, o in got["chars"]]  # the question and its end
    usd = [(i * price["input"] + o * price["output"]) / 1_000_000 for i, o in zip(tokens_in, tokens_out)]
    bound = (longest_request() / CHARS_PER_TOKEN * price["input"] + max(tokens_out) * price["output"]) / 1_000_000
    slow_first, slow_text = [f for f, _ in got["slow"]], [t for _, t in got["slow"]]

    def row(label: str, *cells: str) -> str:
        return "| " + " | ".join((label, *cells)) + " |"

    lines = [
        (f"### The rewrite's latency, through the turn ({len(got['on'])} follow-ups and switches of the development "
         "sets; fake model answering at once; ms)"), "",
        "| | first event p50 | first event p95 | first text p50 | first text p95 |", "|---|---|---|---|---|",
        row("rewrite off (the offline understanding)", *map(ms, (p50(first_off), p95(first_off), p50(text_off),
                                                                 p95(text_off)))),
        row("rewrite on (`R42_QUESTION_REWRITE=true`)", *map(ms, (p50(first_on), p95(first_on), p50(text_on),
                                                                  p95(text_on)))),
        row("**added by the rewrite** (paired, R42's part)", ms(p50(added)), ms(p95(added)), "", ""),
        row(f"a rewrite slower than its timeout ({TIMEOUT_S:.0f} s; {len(got['slow'])} turns)",
            *map(ms, (p50(slow_first), p95(slow_first), p50(slow_text), p95(slow_text)))), "",
        (f"The rewrite request: {statistics.median(c for c, _ in got['chars']):.0f} characters at the median "
         f"({max(c for c, _ in got['chars'])} at most), so about {statistics.median(tokens_in):.0f} input tokens and "
         f"{statistics.median(tokens_out):.0f} output tokens at {CHARS_PER_TOKEN:.0f} characters a token: "
         f"${statistics.median(usd):.6f} a follow-up at the median ({1000 * statistics.median(usd):.2f} credits), "
         f"${max(usd):.6f} at most, at {DEFAULT_MODEL}'s price (${price['input']}/${price['output']} per million). "
         f"The earlier answers are R42's offline answers; a model's are longer, up to the "
         f"{REWRITE_TURNS} messages' limit: the largest request there can be is {longest_request()} characters, "
         f"${bound:.6f} ({1000 * bound:.2f} credits)."),
        "", "### The turn's sources with the rewrite (the fake rewriting as the sets' authors did)", "",
        "Each cell hit@3 / nDCG@5 of the `sources` event.", "",
        "| set | part | rewrite off | rewrite on |", "|---|---|---|---|"]
    for (title, kind), part in got["parts"].items():
        cells = [f"{mean([hit_at(s, r) for s, r in part[k]]):.2f} / "
                 f"{mean([ndcg_at_k(s, r, 5) for s, r in part[k]]):.3f}" for k in ("off", "on")]
        label = "follow-ups" if kind == "followup" else "topic switches"
        lines.append(f"| {title} | {label} ({len(part['on'])}) | " + " | ".join(cells) + " |")
    return "\n".join([*lines, ""])


if __name__ == "__main__":
    print(run())
