"""The docs follow the code: the generated references are up to date, and every relative link in a tracked
Markdown file leads to a file in the repo (and to a heading that exists, when it names one)."""

import re
import subprocess
import unicodedata
from pathlib import Path
from urllib.parse import unquote

from r42_app import docsgen

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_SCHEMES = ("http://", "https://", "mailto:")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
                         r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.IGNORECASE)
HTML_ANCHOR = re.compile(r"<[a-z][^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")


def tracked_markdown() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / line for line in out.splitlines() if line]


def prose_lines(text: str, blank_code: bool = True) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked out unless asked not to."""
    lines, fence = [], ""
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence:
            if match and match[1][0] == fence[0] and len(match[1]) >= len(fence):
                fence = ""
            continue
        if match:
            fence = match[1]
            continue
        lines.append((number, re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m[0]), line) if blank_code else line))
    return lines


def heading_text(raw: str) -> str:
    """A heading as GitHub renders it to text: code spans kept, links to their text, markup dropped."""
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("`", "").replace("*", "")


def slug(text: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped (letters, digits, `_` and `-` stay), spaces to -."""
    kept = "".join(c for c in text.lower() if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a link may point at in a Markdown file: heading slugs (repeats get -1, -2 ...) and ids."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    previous, previous_number = "", 0  # a paragraph line right above `===` or `---` is a setext heading
    for number, line in prose_lines(path.read_text(encoding="utf-8"), blank_code=False):
        atx = ATX.match(line)
        title = atx[2] if atx else None
        if not atx and SETEXT.match(line) and previous_number == number - 1 and previous.strip() \
                and not ATX.match(previous) and not previous.lstrip().startswith(("|", "-", "*", ">")):
            title = previous
        if title is not None:
            base = slug(heading_text(title.strip()))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        found.update(HTML_ANCHOR.findall(line))
        previous, previous_number = line, number
    return found


def link_targets(path: Path):
    """(line number, target) of every link and image in the file's prose."""
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        for match in INLINE_LINK.finditer(line):
            yield number, match[1]
        for match in REFERENCE.finditer(line):
            yield number, match[1]
        for match in HTML_LINK.finditer(line):
            yield number, match[1]


def broken_link(source: Path, target: str) -> str | None:
    """Why `target`, linked from `source`, does not resolve inside the repo (None when it does)."""
    target = target.strip().removeprefix("<").removesuffix(">")
    if target.lower().startswith(SKIPPED_SCHEMES):
        return None
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
        return "not a relative link"
    file_part, _, anchor = target.partition("#")
    file_part = unquote(file_part.split("?")[0])
    if not file_part:
        resolved = source
    elif file_part.startswith("/"):
        resolved = (ROOT / file_part.lstrip("/")).resolve()
    else:
        resolved = (source.parent / file_part).resolve()
    if not resolved.is_relative_to(ROOT):
        return "leaves the repo"
    if not resolved.exists():
        return "no such file"
    if anchor and resolved.suffix.lower() == ".md" and unquote(anchor).lower() not in anchors(resolved):
        return f"no heading #{anchor} in {resolved.relative_to(ROOT)}"
    return None


def test_generated_references_are_up_to_date():
    stale = docsgen.stale()
    assert not stale, f"stale: {', '.join(stale)}; run python -m r42_app.docsgen"


def test_every_relative_link_in_the_docs_resolves_inside_the_repo():
    broken = []
    for path in tracked_markdown():
        for number, target in link_targets(path):
            reason = broken_link(path, target)
            if reason:
                broken.append(f"{path.relative_to(ROOT)}:{number}: {target} ({reason})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_link_check_catches_what_it_should(tmp_path):
    doc = ROOT / "README.md"
    assert broken_link(doc, "../shared/DESIGN.md") == "leaves the repo"
    assert broken_link(doc, "docs/NOPE.md") == "no such file"
    assert broken_link(doc, "docs/BENCHMARKS.md#no-such-heading").startswith("no heading")
    assert broken_link(doc, "docs/BENCHMARKS.md#several-backend-workers-benchbench_workerspy") is None
    assert broken_link(doc, "https://example.com/x") is None
    assert slug(heading_text("Several backend workers (`bench/bench_workers.py`)")) == \
        "several-backend-workers-benchbench_workerspy"
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Title\n\nSee [it](#title-1) and [`x`](nope.md).\n\n```\n[not a link](gone.md)\n```\n")
    assert [t for _, t in link_targets(page)] == ["#title-1", "nope.md"]
    assert {"title", "title-1"} <= anchors(page)


def test_the_cli_reference_walks_any_argparse_tree():
    import argparse

    root = argparse.ArgumentParser(prog="tool", description="A tool")
    root.add_argument("--verbose", action="count", default=0, help="say more (default %(default)s)")
    areas = root.add_subparsers(dest="area")
    db = areas.add_parser("db", aliases=["database"], help="the database")
    db.add_argument("--secret", help=argparse.SUPPRESS)
    db_sub = db.add_subparsers(dest="db_command", required=True)
    migrate = db_sub.add_parser("migrate", help="apply migrations")
    group = migrate.add_mutually_exclusive_group()
    group.add_argument("--up", action="store_true", help="forwards | newest")
    group.add_argument("--to", type=int, metavar="N", help="to version N")
    migrate.add_argument("names", nargs="*", default=["all"], choices=["all", "users"])
    areas.add_parser("bare")  # no help at all

    text = docsgen.cli_reference(root)
    assert "## tool db" in text and "### tool db migrate" in text and "## tool bare" in text
    assert "Also: `database`." in text and text.count("## tool db\n") == 1  # an alias is not a second command
    assert "say more (default 0)" in text and "--secret" not in text
    assert "| `--to N` | to version N |" in text and "forwards \\| newest" in text
    assert "[--up | --to N]" in text and "`all`" in text
