"""The import rule of DESIGN.md: core is pure, and arrows only point down the layers."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "r42_app"
CORE_FORBIDDEN = {"reflex", "chromadb", "pocketbase", "anthropic", "httpx", "requests", "sentence_transformers",
                  "mcp", "starlette", "socket", "subprocess", "urllib.request", "http"}
# layer -> sibling layers it must not import
LAYER_FORBIDDEN = {
    "core": {"services", "chat", "container", "state", "components", "pages", "api", "cli", "settings"},
    "services": {"chat", "container", "state", "components", "pages", "api", "cli"},
    "chat": {"container", "state", "components", "pages", "api", "cli"},
    "container": {"state", "components", "pages", "api", "cli"},
    "state": {"components", "pages", "api", "cli"},
    "components": {"pages", "api", "cli"},
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules(layer: str) -> list[Path]:
    return sorted((PKG / layer).rglob("*.py")) if (PKG / layer).is_dir() else [PKG / f"{layer}.py"]


@pytest.mark.parametrize("path", modules("core"), ids=lambda p: p.name)
def test_core_imports_no_io_or_ui_library(path):
    # a package by its first name, or one module of a package (urllib.parse is pure text; urllib.request is I/O)
    bad = {name for name in imports_of(path) if name.split(".")[0] in CORE_FORBIDDEN or
           any(name == f or name.startswith(f + ".") for f in CORE_FORBIDDEN)}
    assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


@pytest.mark.parametrize("layer", sorted(LAYER_FORBIDDEN))
def test_layers_only_import_downwards(layer):
    offenders = []
    for path in modules(layer):
        for name in imports_of(path):
            parts = name.split(".")
            if parts[0] == "r42_app" and len(parts) > 1 and parts[1] in LAYER_FORBIDDEN[layer]:
                offenders.append(f"{path.relative_to(PKG)} -> {name}")
    assert not offenders, "layer rule broken:\n" + "\n".join(offenders)


def test_the_rule_itself_catches_a_bad_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import reflex as rx\nfrom httpx import Client\n")
    assert {"reflex", "httpx"} <= imports_of(bad)
