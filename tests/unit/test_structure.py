"""The structure of DESIGN.md that the layer rule does not cover: no import cycles, and services built in one
place (r42_app/container.py), never by a state, the HTTP API or the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "r42_app"
# Classes under services/ that run a process or a check rather than hold a connection: `r42 serve` and
# `r42 doctor` start them where they are needed.
NOT_SERVICES = {"PocketBaseServer", "RedisServer", "ChromaServer", "Doctor", "Sidecar"}
CLIENT_CALLS = {("httpx", "Client"), ("httpx", "AsyncClient"), ("anthropic", "Anthropic"),
                ("anthropic", "AsyncAnthropic"), ("redis", "Redis"), ("chromadb", "PersistentClient"),
                ("chromadb", "HttpClient")}


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def imports(path: Path, known: set[str]) -> set[str]:
    """r42_app modules a module imports anywhere: at module level, in TYPE_CHECKING blocks, and inside functions
    (an import put inside a function to dodge a circle still closes the circle when the function runs)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {name for name in found if name in known}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), plus modules importing themselves."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def test_no_import_cycle_in_the_package():
    mods = all_modules()
    graph = {name: imports(path, set(mods)) - {name} for name, path in mods.items()}
    assert cycles(graph) == [], "import cycles (imports inside functions included):\n" + "\n".join(
        " <-> ".join(c) for c in cycles(graph))


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_an_import_inside_a_function_counts(tmp_path):
    hidden = tmp_path / "m.py"
    hidden.write_text("import os\n\ndef f():\n    from r42_app.state.chat import ChatState\n    return ChatState\n")
    assert imports(hidden, {"r42_app.state.chat", "r42_app.state.auth"}) == {"r42_app.state.chat"}


def service_classes() -> set[str]:
    """Every class defined under services/ that is a service: not a value (dataclass, NamedTuple, enum), not an
    exception, not a process runner."""
    names: set[str] = set()
    for path in (PKG / "services").rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_") or node.name in NOT_SERVICES:
                continue
            bases = {ast.unparse(b) for b in node.bases}
            decorators = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
            if decorators & {"dataclass", "dataclasses.dataclass"} or bases & {"NamedTuple", "Enum", "TypedDict"}:
                continue
            if any(b.endswith(("Error", "Exception", "Refused", "Unavailable", "Warning")) for b in bases):
                continue
            names.add(node.name)
    return names


def constructions(path: Path, classes: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        if name in classes or owner in classes or (owner, name) in CLIENT_CALLS or name == "make_embedder":
            found.append(f"{path.relative_to(PKG)}:{node.lineno} {ast.unparse(func)}(...)")
    return found


def test_states_the_api_and_the_cli_never_build_a_service_themselves():
    classes = service_classes()
    assert {"KBStore", "AccessStore", "PocketBase", "Retriever", "VectorStore", "AnthropicLLM"} <= classes
    paths = [*(PKG / "state").rglob("*.py"), PKG / "api.py", *(PKG / "cli").rglob("*.py")]
    offenders = [hit for path in paths for hit in constructions(path, classes)]
    assert offenders == [], "build these in r42_app/container.py and ask `services()`:\n" + "\n".join(offenders)


def test_the_construction_rule_catches_one(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from x import KBStore\nimport httpx\n\ndef f(pb):\n    return KBStore(pb), httpx.AsyncClient()\n")
    hits = [h.split(" ", 1)[1] for h in constructions_outside(bad, {"KBStore"})]
    assert hits == ["KBStore(...)", "httpx.AsyncClient(...)"]


def constructions_outside(path: Path, classes: set[str]) -> list[str]:
    """constructions() for a file outside the package (the rule's own test)."""
    global PKG
    saved, PKG = PKG, path.parent
    try:
        return constructions(path, classes)
    finally:
        PKG = saved


def test_mypy_checks_every_package_of_the_app():
    """`make check` runs mypy on its configured files: they must cover every package and module of r42_app/ (Reflex's
    typing gap is handled by error codes in pyproject's overrides, not by leaving a package out)."""
    import tomllib

    config = tomllib.loads((PKG.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    covered = [PKG.parent / f for f in config["files"]]
    left_out = [p.relative_to(PKG.parent) for p in PKG.rglob("*.py")
                if not any(p == c or c in p.parents for c in covered)]
    assert not left_out, f"mypy does not check {left_out}"


def test_the_chat_turn_deps_are_typed_without_any():
    """ChatDeps names what a turn needs (protocols the production services and the tests' fakes both implement):
    no field typed Any, so the turn's tests run the production guard path, not a branch of their own."""
    import dataclasses
    import typing

    from r42_app.chat.turn import ChatDeps

    hints = typing.get_type_hints(ChatDeps)
    untyped = [f.name for f in dataclasses.fields(ChatDeps) if hints[f.name] is typing.Any
               or typing.Any in typing.get_args(hints[f.name])]
    assert untyped == [], f"ChatDeps fields typed Any: {untyped}"
    source = (PKG / "chat" / "turn.py").read_text(encoding="utf-8")
    assert "getattr(deps" not in source and "isawaitable" not in source  # no path chosen by probing the deps
