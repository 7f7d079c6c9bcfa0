"""The generated parts of the reference docs, so they cannot drift from the code:

- docs/CONFIGURATION.md: the table of settings, from the metadata of the `Settings` fields;
- docs/CLI.md: the command reference, from `r42_app.cli.build_parser()`;
- pb_hooks/r42_tool_shapes.js: the input schemas of the tools whose calls PocketBase stores, from core/tools.py.

The docs' parts are written between `<!-- generated: NAME -->` and `<!-- /generated -->` (the prose around them is
kept); the hooks file is written whole.

    python -m r42_app.docsgen          # rewrite the generated parts
    python -m r42_app.docsgen --check  # exit 1 and name every stale file (tests/unit/test_docs.py runs it)
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from r42_app.core.tools import pocketbase_shapes
from r42_app.paths import ROOT
from r42_app.settings import Settings

END = "<!-- /generated -->"


def begin(name: str) -> str:
    return f"<!-- generated: {name} -->"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (one line, no column breaks)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: str) -> str:
    """An inline code span that survives backticks in the text."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# --- settings -------------------------------------------------------------------------------------------------


def _shown_default(f: dataclasses.Field) -> str:
    if f.metadata.get("shown"):
        return _code(f.metadata["shown"]) if not f.metadata["shown"].startswith("(") else f.metadata["shown"]
    if f.default is not dataclasses.MISSING:
        value: Any = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "(required)"
    if isinstance(value, bool):
        return _code("true" if value else "false")
    if value in ("", (), [], None):
        return "(empty)"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, tuple | list):
        value = ",".join(map(str, value))
    return _code(str(value))


def settings_table() -> str:
    """Every setting: its variable(s), default and description, in the order of the `Settings` fields."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for f in dataclasses.fields(Settings):
        names = f.metadata.get("env")
        if not names:
            continue
        variable = " or ".join(_code(n) for n in names)
        rows.append(f"| {_cell(variable)} | {_cell(_shown_default(f))} | {_cell(f.metadata.get('doc', ''))} |")
    return "\n".join(rows)


# --- command line ---------------------------------------------------------------------------------------------


def _cli_parser() -> argparse.ArgumentParser:
    # importing the CLI installs its quiet Ctrl-C handlers; the caller (a test session) keeps its own
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        from r42_app.cli import build_parser
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    return build_parser()


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=10_000)  # one line, whatever the terminal
    formatter.add_usage(parser.usage, getattr(parser, "_actions", []),
                        getattr(parser, "_mutually_exclusive_groups", []), prefix="")
    return " ".join(formatter.format_help().split())


def _help(action: argparse.Action, prog: str) -> str:
    """The action's help with argparse's %(default)s-style fields filled in, as `--help` prints it."""
    text = action.help or ""
    if "%" not in text:
        return text
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    params["prog"] = prog
    for key in ("choices",):
        if params.get(key) is not None:
            params[key] = ", ".join(map(str, params[key]))
    try:
        return text % params
    except (KeyError, TypeError, ValueError):
        return text


def _invocation(action: argparse.Action) -> str:
    """How the argument is written: `--role {index,cost,all}`, `--tenant TENANT`, `--json`, `file`."""
    metavar = action.metavar
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction) and not metavar:
        metavar = "{" + ",".join(map(str, action.choices)) + "}"
    if not action.option_strings:
        return metavar or action.dest
    names = ", ".join(action.option_strings)
    return names if action.nargs == 0 else f"{names} {metavar or action.dest.upper()}"


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS, [], ""):
        return ""
    value = action.default
    if isinstance(value, list | tuple):
        value = " ".join(map(str, value))
    return _code(str(value))


def _is_help(action: argparse.Action) -> bool:
    return isinstance(action, (argparse._HelpAction, argparse._VersionAction)) or action.help == argparse.SUPPRESS


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, list[str], str, argparse.ArgumentParser]]:
    """(name, aliases, help, parser) of every subcommand, in the order they were added."""
    for action in getattr(parser, "_actions", []):
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help or "" for a in getattr(action, "_choices_actions", [])}
        seen: dict[int, tuple[str, list[str]]] = {}
        for name, sub in (action.choices or {}).items():
            if id(sub) in seen:
                seen[id(sub)][1].append(name)
            else:
                seen[id(sub)] = (name, [])
        for name, sub in (action.choices or {}).items():
            first, aliases = seen.get(id(sub), ("", []))
            if first == name:
                yield name, aliases, helps.get(name, "") or sub.description or "", sub


def _command(parser: argparse.ArgumentParser, help_text: str, depth: int, aliases: list[str]) -> list[str]:
    """A command's heading (none for the root, depth 1), help, aliases, usage and arguments."""
    lines = [f"{'#' * min(depth, 6)} {parser.prog}", ""] if depth > 1 else []
    if help_text:
        lines += [help_text[0].upper() + help_text[1:] + ("" if help_text.endswith(".") else "."), ""]
    if aliases:
        lines += ["Also: " + ", ".join(_code(a) for a in aliases) + ".", ""]
    lines += ["```", _usage(parser), "```", ""]
    options = [a for a in getattr(parser, "_actions", [])
               if not _is_help(a) and not isinstance(a, argparse._SubParsersAction)]
    if options:
        lines += ["| argument | help | default |", "|---|---|---|"]
        lines += [f"| {_cell(_code(_invocation(a)))} | {_cell(_help(a, parser.prog))} | {_cell(_default(a))} |"
                  for a in options]
        lines.append("")
    return lines


def cli_reference(parser: argparse.ArgumentParser | None = None) -> str:
    """Every command and subcommand of the parser (any argparse tree), depth first, with its options."""
    root = parser or _cli_parser()
    lines = _command(root, root.description or "", 1, [])
    visited: set[int] = set()

    def walk(p: argparse.ArgumentParser, depth: int) -> None:
        for _name, aliases, help_text, sub in _subcommands(p):
            if id(sub) in visited:  # a parser reachable twice is described once
                continue
            visited.add(id(sub))
            lines.extend(_command(sub, help_text, depth, aliases))
            walk(sub, depth + 1)

    visited.add(id(root))
    walk(root, 2)
    return "\n".join(lines).rstrip()


# --- the files ------------------------------------------------------------------------------------------------

GENERATED: dict[str, tuple[str, str, Callable[[], str]]] = {
    # file: (section name, title of a new file, generator)
    "docs/CONFIGURATION.md": ("settings", "Configuration", settings_table),
    "docs/CLI.md": ("cli", "Command line", cli_reference),
}


# files written whole from code (not a section of a document)
WHOLE: dict[str, Callable[[], str]] = {
    "pb_hooks/r42_tool_shapes.js": pocketbase_shapes,  # the tools' input limits, for PocketBase's rules
}


def splice(text: str, name: str, body: str) -> str:
    """`text` with the section `name` replaced by `body` (appended at the end when it has no markers yet)."""
    section = f"{begin(name)}\n{body}\n{END}"
    pattern = re.compile(re.escape(begin(name)) + r".*?" + re.escape(END), re.DOTALL)
    if pattern.search(text):
        return pattern.sub(lambda _: section, text, count=1)
    return text.rstrip("\n") + ("\n\n" if text.strip() else "") + section + "\n"


def expected(path: str) -> str:
    """What the file should hold: as it is, with its generated section brought up to date (or all of it)."""
    if path in WHOLE:
        return WHOLE[path]()
    name, title, generate = GENERATED[path]
    file = ROOT / path
    text = file.read_text(encoding="utf-8") if file.exists() else f"# {title}\n"
    return splice(text, name, generate())


def stale() -> list[str]:
    """The generated files whose generated section is out of date (or missing)."""
    return [path for path in (*GENERATED, *WHOLE)
            if not (ROOT / path).exists() or (ROOT / path).read_text(encoding="utf-8") != expected(path)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m r42_app.docsgen", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is stale")
    args = parser.parse_args(argv)
    if args.check:
        out_of_date = stale()
        for path in out_of_date:
            print(f"{path} is stale: run python -m r42_app.docsgen", file=sys.stderr)
        return 1 if out_of_date else 0
    for path in (*GENERATED, *WHOLE):
        text = expected(path)
        file = ROOT / path
        if not file.exists() or file.read_text(encoding="utf-8") != text:
            file.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
