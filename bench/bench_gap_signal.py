"""Which questions the gaps report calls a gap (issue 49), measured as a classifier on a labelled set of our own,
the rule before issue 49 and the rule now side by side in one run.

A question is a gap when the knowledge base really had nothing for it. The labelled scenarios, each a learner's
question-log rows as the app writes them (grounded and best score from the real retrieval on the demo KB, real
e5 vectors, one learner per scenario, minutes apart unless said):

- the 50 on-topic questions of tests/data/abstain_nl.jsonl: answered from the KB, **not** gaps;
- its 55 off-topic questions (weather, sports, recipes, chit-chat, other domains, near-domain work questions the
  KB does not cover): gaps;
- 12 junk inputs (a letter over and over, key mashing, no letters, an 8,000-character paste): **not** gaps (no topic
  could answer them, and they must not name a group);
- 10 pastes: an on-topic question, then within a minute the same learner pasting that topic's text (over 1,000
  characters); neither is a gap (before, the paste counted as "asked again in other words" and made the answered
  question a gap, as "Wat is partnerpensioen?" was on the walkthrough's page).

Positive class: gap. Precision: of the questions called a gap, the share that are; recall: of the gaps, the share
called one. Per retrieval mode: hybrid (the default) and fts (no usable embeddings: the lexical rule of
core/relevance.py decides `grounded`).
"""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from bench.common import pocketbase
from r42_app.core.gaps import LOW_SCORE, REPHRASE_SIMILARITY, REPHRASE_WINDOW_S, Asked, centred, language, misses
from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.gaps import background
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import Retriever
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.seed import SEED_DIR

SET = Path(__file__).resolve().parents[1] / "tests" / "data" / "abstain_nl.jsonl"
JUNK = ["x" * 300, "xxxxxxxxxxxx", "asasasasasas", "hmmmmmmmmmmm?", "???", "!!!!!!!!", "👍👍👍", "jjjjjjjjjjjjjjjjjj",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaa", "qqqqqqqqqqqqqqqqqqqqqq", "1234567890",
        "Hoe werkt mijn pensioen? " * 330]
PASTES = 10
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def before_issue_49(rows: list[Asked], unit: np.ndarray) -> list[int]:
    """The rule until issue 49 (core/gaps.py `misses` at caa3f5f): every row counted, junk and pastes included."""
    out = {i for i, r in enumerate(rows) if not r.grounded or r.best_score <= LOW_SCORE or r.feedback == "down"}
    by_user: dict[str, list[int]] = {}
    for i in sorted(range(len(rows)), key=lambda i: rows[i].created):
        by_user.setdefault(rows[i].user_key, []).append(i)
    for asked in by_user.values():
        for a, b in zip(asked, asked[1:]):
            gap = (rows[b].created - rows[a].created).total_seconds()
            if 0 <= gap <= REPHRASE_WINDOW_S and rows[a].question != rows[b].question and not rows[b].follow_up \
                    and float(unit[a] @ unit[b]) >= REPHRASE_SIMILARITY:
                out.add(a)
    return sorted(out)


def scores(called: set[int], truth: list[bool]) -> tuple[float, float]:
    gaps = {i for i, t in enumerate(truth) if t}
    precision = len(called & gaps) / len(called) if called else 1.0
    recall = len(called & gaps) / len(gaps) if gaps else 1.0
    return precision, recall


def run() -> str:
    questions = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.startswith("{")]
    out = ["### Which questions are a gap: the rule before issue 49 and now (labelled scenarios, demo KB)", "",
           "| mode | rule | precision | recall | answered called a gap | junk called a gap | pastes that made a gap |",
           "|---|---|---|---|---|---|---|"]
    with pocketbase() as (pb, _), tempfile.TemporaryDirectory() as chroma_dir:
        kb = KBStore(pb)
        data = json.loads((SEED_DIR / "demo.json").read_text(encoding="utf-8"))
        kb.import_document("demo", data)
        embedder = make_embedder("")
        vectors = VectorStore(path=Path(chroma_dir), model_id=embedder.model_id)
        indexer = Indexer(pb, kb, vectors, embedder)
        tenant = kb.require_tenant("demo")
        kb.emit_reindex(tenant)
        indexer.drain()
        retriever = Retriever(kb, vectors, embedder)
        contents = [t.get("content", "") for t in data["topics"] if len(t.get("content", "")) > 300][:PASTES]
        on_topic = [q["query"] for q in questions if q["on_topic"]]
        # (question, learner, minutes after T0, truly a gap, kind)
        script: list[tuple[str, str, float, bool, str]] = []
        for n, q in enumerate(questions):
            script.append((q["query"], f"u{n}", 10.0 * n, not q["on_topic"], "answered" if q["on_topic"] else "off"))
        for n, junk in enumerate(JUNK):
            script.append((junk, f"j{n}", 2000.0 + 10 * n, False, "junk"))
        for n, content in enumerate(contents):
            paste = (content + "\n\n") * (1 + 1100 // max(1, len(content)))
            script.append((on_topic[n], f"p{n}", 3000.0 + 10 * n, False, "paste-question"))
            script.append((paste, f"p{n}", 3000.0 + 10 * n + 0.5, False, "paste"))
        encode = embedder.encode_queries
        vecs = np.asarray(encode([q for q, *_ in script]))
        means, _pool = background(encode)
        unit = centred(vecs, [language(q) for q, *_ in script], means)
        truth = [t for *_, t, _k in script]
        for mode in ("hybrid", "fts"):
            rows = []
            for n, (q, user, minutes, _t, _k) in enumerate(script):
                res = retriever.kb_search(tenant, q, mode, 5)
                rows.append(Asked(f"r{n}", q, user, T0 + timedelta(minutes=minutes), res.relevance.grounded,
                                  res.hits[0].score if res.hits else 0.0))
            for label, rule in (("before issue 49", before_issue_49), ("now", misses)):
                called = set(rule(rows, unit))
                precision, recall = scores(called, truth)
                kinds = [k for *_, k in script]
                answered = sum(1 for i in called if kinds[i] == "answered")
                junk = sum(1 for i in called if kinds[i] == "junk")
                pasted = sum(1 for i in called if kinds[i] in ("paste", "paste-question"))
                out.append(f"| {mode} | {label} | {precision:.3f} | {recall:.3f} | {answered}/{len(on_topic)} | "
                           f"{junk}/{len(JUNK)} | {pasted}/{2 * len(contents)} |")
    return "\n".join(out)
