"""An English knowledge base we did not write: the docstrings of Python's standard library.

Every public function, class and method of a fixed list of modules with a docstring of at least
MIN_WORDS words becomes one topic: id from its qualified name (`shutil.copy2` -> `shutil-copy2`),
label the qualified name, description the docstring's first sentence, content the rest. The text
is the interpreter's own (no download, no file in the repo), so the set is as large as we like and
nobody here wrote it; it depends on the Python version, which the report names.

The graded questions for it are in tests/data/eval_en_stdlib.jsonl: written as a user would ask,
graded 3 (the answer), 2 (a close alternative) and 1 (related). `python -m bench.en_stdlib_kb`
prints the size and checks that every graded id exists.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path

MIN_WORDS = 5
MAX_CONTENT_WORDS = 400
QUESTIONS = Path(__file__).resolve().parents[1] / "tests" / "data" / "eval_en_stdlib.jsonl"

MODULES = (
    "abc argparse array ast asyncio base64 bdb binascii bisect builtins bz2 calendar cmath cmd code codecs "
    "collections collections.abc colorsys concurrent.futures configparser contextlib copy csv dataclasses datetime "
    "decimal difflib dis doctest email email.headerregistry email.message email.policy email.utils enum filecmp fileinput fnmatch fractions ftplib "
    "functools gc getopt getpass gettext glob graphlib gzip hashlib heapq hmac html html.parser http.client "
    "http.cookiejar http.cookies http.server imaplib importlib inspect io ipaddress itertools json keyword linecache locale logging "
    "logging.handlers lzma mailbox math mimetypes multiprocessing multiprocessing.managers multiprocessing.pool netrc numbers operator optparse os os.path pathlib "
    "pdb pickle pkgutil platform plistlib poplib pprint profile pstats queue quopri random re reprlib sched secrets "
    "select selectors shelve shlex shutil signal smtplib socket socketserver sqlite3 ssl stat statistics string "
    "struct subprocess sys sysconfig tarfile tempfile textwrap threading time timeit tokenize tomllib trace "
    "traceback types typing unicodedata unittest unittest.mock urllib.parse urllib.request uuid warnings wave "
    "weakref webbrowser urllib.robotparser xml.dom.minidom xml.etree.ElementTree xml.sax zipfile zlib zoneinfo"
).split()


def slug_of(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:80].strip("-")


def _split(doc: str) -> tuple[str, str]:
    """(first sentence, the rest), whitespace collapsed; a signature line of a C function is dropped."""
    lines = doc.strip().splitlines()
    if lines and re.match(r"^[\w.]+\(.*\)( -> .*)?$", lines[0].strip()):
        lines = lines[1:]
    text = " ".join(" ".join(lines).split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    first = match.group(1) if match else text
    return first[:300], text[len(first):].strip()


def _members(module) -> list[tuple[str, object]]:
    out = []
    for name, obj in sorted(vars(module).items()):
        if name.startswith("_"):
            continue
        home = getattr(obj, "__module__", None) or module.__name__
        same_package = home.split(".")[0] == module.__name__.split(".")[0]
        if not (home == module.__name__ or home.startswith("_") or same_package or module.__name__ == "builtins"
                or home in ("posix", "posixpath", "genericpath")):
            continue  # imported from another public module: described there (C accelerators such as _pickle count)
        if inspect.isclass(obj):
            out.append((name, obj))
            for attr, member in sorted(vars(obj).items()):
                if not attr.startswith("_") and callable(member):
                    out.append((f"{name}.{attr}", member))
        elif callable(obj):
            out.append((name, obj))
    return out


def build(limit: int | None = None, around: Iterable[str] | None = None, neighbours: int = 0,
          max_words: int = MAX_CONTENT_WORDS) -> dict:
    """The KB document ({"topics": [...], "relations": []}) in a fixed order. With `around`, only those topics and
    the `neighbours` on either side of each in that order (the same module's nearest names: `shutil-copy2`
    brings `shutil-copy` and `shutil-copyfile`), for a small KB that still holds what the questions grade."""
    topics: dict[str, dict] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module_name in MODULES:
            try:
                module = importlib.import_module(module_name)
            except Exception:  # noqa: BLE001 - a module this platform lacks
                continue
            for name, obj in _members(module):
                doc = inspect.getdoc(obj) if not isinstance(obj, type) or obj.__doc__ else None
                if not doc or len(doc.split()) < MIN_WORDS:
                    continue
                qualified = name if module_name == "builtins" else f"{module_name}.{name}"
                slug = slug_of(qualified)
                if slug in topics or not slug:
                    continue
                first, rest = _split(doc)
                if len(first.split()) + len(rest.split()) < MIN_WORDS:
                    continue  # only a signature
                words = rest.split()
                topics[slug] = {"id": slug, "label": qualified, "type": "concept", "description": first,
                                "content": " ".join(words[:max_words]) or first}
    ordered = [topics[s] for s in sorted(topics)]
    if around is not None:
        wanted = set(around)
        at = [i for i, t in enumerate(ordered) if t["id"] in wanted]
        keep = {j for i in at for j in range(max(0, i - neighbours), min(len(ordered), i + neighbours + 1))}
        ordered = [t for j, t in enumerate(ordered) if j in keep]
    return {"topics": ordered[:limit] if limit else ordered, "relations": []}


def questions() -> list[dict]:
    return [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]


def main() -> int:
    doc = build()
    ids = {t["id"] for t in doc["topics"]}
    missing = sorted({(q["qid"], slug) for q in questions() for slug in q["rel"] if slug not in ids})
    print(f"Python {sys.version.split()[0]}: {len(doc['topics'])} topics, {len(questions())} questions")
    for qid, slug in missing:
        print(f"  {qid}: {slug} is not in the KB")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
