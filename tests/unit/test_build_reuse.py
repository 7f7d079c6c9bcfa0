"""A second start serves the last build when nothing it is made of changed (r42_app/reflex_main.py, issue 49)."""

from r42_app.reflex_main import BUILD_INPUTS, build_fingerprint


def tree(tmp_path):
    (tmp_path / "r42_app" / "pages").mkdir(parents=True)
    (tmp_path / "r42_app" / "pages" / "learn.py").write_text("TITLE = 'Leren'\n")
    (tmp_path / "r42_app" / "__pycache__").mkdir()
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "r42.css").write_text("body { margin: 0; }\n")
    (tmp_path / "rxconfig.py").write_text("config = None\n")
    return tmp_path


def test_the_same_tree_and_settings_give_the_same_fingerprint(tmp_path, monkeypatch):
    root = tree(tmp_path)
    monkeypatch.setenv("R42_PORT", "3000")
    first = build_fingerprint(root)
    (root / "r42_app" / "__pycache__" / "learn.cpython-311.pyc").write_bytes(b"\0compiled")  # not an input
    generated = root / "assets" / "external" / "r42_app" / "components"
    generated.mkdir(parents=True)
    (generated / "r42_graph.jsx").write_text("// copied by Reflex as it compiles")  # made by the build itself
    assert build_fingerprint(root) == first
    assert set(BUILD_INPUTS) >= {"r42_app", "assets", "rxconfig.py"}


def test_a_changed_source_asset_or_setting_means_a_new_build(tmp_path, monkeypatch):
    root = tree(tmp_path)
    monkeypatch.setenv("R42_PORT", "3000")
    first = build_fingerprint(root)
    (root / "r42_app" / "pages" / "learn.py").write_text("TITLE = 'Leren!'\n")
    second = build_fingerprint(root)
    (root / "assets" / "r42.css").write_text("body { margin: 1px; }\n")
    third = build_fingerprint(root)
    monkeypatch.setenv("R42_PORT", "3001")  # the built frontend talks to its own URL
    fourth = build_fingerprint(root)
    (root / "r42_app" / "pages" / "new.py").write_text("")
    fifth = build_fingerprint(root)
    assert len({first, second, third, fourth, fifth}) == 5
