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


def test_web_machines_behind_one_public_address_share_one_build(tmp_path, monkeypatch):
    """Two `r42 serve --web-only` on two addresses, behind one load balancer (issue 50): their pages talk to the
    public address, so the second machine serves the first one's build; another public address is another build."""
    root = tree(tmp_path)
    monkeypatch.setenv("R42_PORT", "3000")
    monkeypatch.setenv("R42_PUBLIC_URL", "http://127.0.0.1:3000")
    monkeypatch.setenv("R42_BIND", "127.0.0.3")
    monkeypatch.setenv("REFLEX_WEB_WORKDIR", str(tmp_path / "a" / ".web"))
    machine_a = build_fingerprint(root)
    monkeypatch.setenv("R42_BIND", "127.0.0.4")
    monkeypatch.setenv("R42_PORT", "3002")
    monkeypatch.setenv("REFLEX_WEB_WORKDIR", str(tmp_path / "b" / ".web"))
    assert build_fingerprint(root) == machine_a
    monkeypatch.setenv("R42_PUBLIC_URL", "https://r42.example.nl")
    assert build_fingerprint(root) != machine_a


def test_without_a_public_address_the_pages_talk_to_the_bound_one(tmp_path, monkeypatch):
    root = tree(tmp_path)
    monkeypatch.delenv("R42_PUBLIC_URL", raising=False)
    monkeypatch.setenv("R42_PORT", "3000")
    monkeypatch.setenv("R42_BIND", "127.0.0.3")
    first = build_fingerprint(root)
    monkeypatch.setenv("R42_BIND", "127.0.0.4")
    assert build_fingerprint(root) != first


def test_where_bun_is_is_not_part_of_the_build(tmp_path, monkeypatch):
    """A copy of the tree links the same tools under another path (`r42 serve` points REFLEX_BUN_PATH at the
    tree's own `tools`): the browser tests' second worker serves a build made from the source tree (issue 45)."""
    root = tree(tmp_path)
    monkeypatch.setenv("R42_PORT", "3000")
    monkeypatch.setenv("REFLEX_BUN_PATH", "/work/r42/tools/bin/bun")
    first = build_fingerprint(root)
    monkeypatch.setenv("REFLEX_BUN_PATH", "/tmp/copy/r42/tools/bin/bun")
    assert build_fingerprint(root) == first
    monkeypatch.setenv("REFLEX_ENV_MODE", "dev")  # another REFLEX_ setting still counts
    assert build_fingerprint(root) != first
