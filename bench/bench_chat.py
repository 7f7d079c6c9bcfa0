"""Chat benchmarks: the turn's own overhead at 10k topics with an instant fake model, next to the
bare model call; and how soon a token the fake model emits shows in the browser (and in the API)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from pathlib import Path

import httpx

from bench.bench_hybrid import big_kb
from bench.common import CHROMIUM_ARGS, ms, p50, p95, served_app
from r42_app.chat.turn import ChatDeps, run_turn
from r42_app.core.chat import system_blocks
from r42_app.core.identity import SignedInUser
from r42_app.core.tools import BUILTIN_TOOLS
from r42_app.services.adapters.embeddings import SentenceEmbedder
from r42_app.services.adapters.llm import AnthropicLLM
from r42_app.services.retrieval import Retriever
from r42_app.services.store.access import AccessStore
from tests.fakes.anthropic_api import FakeAnthropic

ROOT = Path(__file__).resolve().parents[1]
TURNS = 60
TOKENS = 12


async def _turn_overhead(fake: FakeAnthropic) -> dict[str, tuple[list[float], list[float]]]:
    """Per variant, the whole turn and a bare SDK call with a prompt of similar size, interleaved per
    question: `quiz` (no guard: the turn alone; the name is the older table's) and `capabilities` (the turn's guard,
    one PocketBase request for the tenant, the access row, the quiz and the session, as the app runs it)."""
    with big_kb() as (kb, tenant, vectors, raw):
        retriever = Retriever(kb, vectors, SentenceEmbedder())
        llm = AnthropicLLM("bench", "claude-bench", base_url=fake.url, max_retries=0)
        variants = {
            "quiz": ChatDeps(retriever=retriever, kb=kb, llm=llm),
            "capabilities": ChatDeps(retriever=retriever, kb=kb, llm=llm, guards=AccessStore(kb.pb)),  # as the app
        }
        user = SignedInUser("bench-user", "b@example.com", "Bench", "learner", tenant.id, tenant.slug, tenant.name)
        rng = random.Random(5)
        questions = [" ".join(rng.choice(raw)["description"].split()[:6]) + "?" for _ in range(TURNS + 5)]
        system = system_blocks("context " * 300, "snippet " * 400, "Bench", False, [t.name for t in BUILTIN_TOOLS])
        tools = [t.definition() for t in BUILTIN_TOOLS]
        out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in variants}
        for i, q in enumerate(questions):
            for name, deps in variants.items():
                fake.reply_text("Een kort antwoord [ref:1].")
                start = time.perf_counter()
                async for _ in run_turn(user, [{"role": "user", "content": q}], deps):
                    pass
                t_turn = time.perf_counter() - start
                fake.reply_text("Een kort antwoord [ref:1].")
                start = time.perf_counter()
                async for _ in llm.stream(system, [{"role": "user", "content": q}], tools):
                    pass
                t_bare = time.perf_counter() - start
                if i >= 5:  # warm-up: model load, index build
                    out[name][0].append(t_turn)
                    out[name][1].append(t_bare)
        await llm.aclose()
    return out


def _token_latency(fake: FakeAnthropic) -> tuple[list[float], list[float]]:
    """Serve the app, then time fake-first-delta -> visible in the browser, and -> received by an API client."""
    from playwright.sync_api import sync_playwright

    browser_ms, api_ms = [], []
    # one learner asks many questions in a row: the per-user chat limit (window and API) is raised
    with served_app(ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=fake.url, R42_CHAT_PER_MINUTE="600",
                    R42_CHAT_BURST="50") as (url, pb, _data):
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(url + "/")
            page.fill("#email", "learner@example.com")
            page.fill("#password", os.environ.get("R42_DEMO_PASSWORD", "r42-demo-2026"))
            page.click("#sign-in")
            page.click("#r42-launcher")
            page.wait_for_selector("#r42-input")
            for i in range(TOKENS + 2):
                marker = f"Tok{i}x"
                fake.reset()
                fake.reply_text(f"{marker} en dan de rest van het antwoord", chunk_delay=0.3)
                page.evaluate("""m => { window.__seen = 0; const box = document.querySelector('#r42-messages');
                    const obs = new MutationObserver(() => { if (!window.__seen && box.textContent.includes(m)) {
                        window.__seen = Date.now(); obs.disconnect(); } });
                    obs.observe(box, {subtree: true, childList: true, characterData: true}); }""", marker)
                page.fill("#r42-input", f"Vraag {i}")
                page.keyboard.press("Enter")
                page.wait_for_function("window.__seen > 0", timeout=60_000)
                page.wait_for_selector("#r42-send", timeout=60_000)
                if i >= 2:
                    browser_ms.append(page.evaluate("window.__seen") / 1000 - fake.first_delta_at[0])
            browser.close()
        token = httpx.post(f"{pb.base_url}/api/collections/users/auth-with-password",
                           json={"identity": "learner@example.com",
                                 "password": os.environ.get("R42_DEMO_PASSWORD", "r42-demo-2026")}).json()["token"]
        for i in range(TOKENS + 2):
            fake.reset()
            fake.reply_text(f"Api{i} en dan de rest", chunk_delay=0.3)
            with httpx.stream("POST", f"{url}/api/chat", headers={"Authorization": f"Bearer {token}"},
                              json={"messages": [{"role": "user", "content": f"Vraag {i}"}]}, timeout=60) as resp:
                seen = 0.0
                for line in resp.iter_lines():
                    if not seen and line.startswith("data: ") and json.loads(line[6:]).get("type") == "text":
                        seen = time.time()
            if i >= 2:
                api_ms.append(seen - fake.first_delta_at[0])
    return browser_ms, api_ms


def run() -> str:
    fake = FakeAnthropic().start()
    try:
        variants = asyncio.run(_turn_overhead(fake))
        browser, api = _token_latency(fake)
    finally:
        fake.stop()
    turns = len(variants["quiz"][0])
    rows = []
    for name, label in (("quiz", "no guard (the turn alone)"),
                        ("capabilities", "the turn's guard: R42 on, capabilities, credit, quiz, session (as the app)")):
        turn, bare = variants[name]
        overhead = [t - b for t, b in zip(turn, bare)]
        rows += [f"| {label}: whole turn | {ms(p50(turn))} | {ms(p95(turn))} |",
                 f"| {label}: bare model call | {ms(p50(bare))} | {ms(p95(bare))} |",
                 f"| {label}: **turn overhead** | {ms(p50(overhead))} | {ms(p95(overhead))} |"]
    return "\n".join([
        f"### Chat turn at 10,000 topics ({turns} turns per variant, interleaved, fake model answering at once)",
        "",
        "| measure | p50 | p95 |",
        "|---|---|---|",
        *rows,
        "",
        f"### First token latency ({len(browser)} answers, from the fake model sending it)",
        "",
        "| to | p50 | p95 |",
        "|---|---|---|",
        f"| visible in the chat window (browser) | {ms(p50(browser))} | {ms(p95(browser))} |",
        f"| received by an API client (`POST /api/chat`) | {ms(p50(api))} | {ms(p95(api))} |",
    ])
