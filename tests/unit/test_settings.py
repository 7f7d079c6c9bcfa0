"""Settings come from the environment with defaults that run on a laptop."""

import pytest

from r42_app.settings import DEFAULT_MODEL, load_settings

VARS = ["R42_PORT", "R42_PB_PORT", "R42_DATA_DIR", "R42_DEMO_PASSWORD", "ANTHROPIC_API_KEY", "R42_MODEL", "R42_PB_URL",
        "R42_CORS_ORIGINS", "R42_BIND", "R42_PUBLIC_URL"]


@pytest.fixture
def clean_env(monkeypatch):
    for var in VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_defaults(clean_env):
    cfg = load_settings()
    assert (cfg.port, cfg.pb_port, cfg.model) == (3000, 8090, DEFAULT_MODEL)
    assert cfg.data_dir.name == "data" and cfg.pb_url == "http://127.0.0.1:8090"
    assert cfg.offline


def test_environment_overrides(clean_env, tmp_path):
    clean_env.setenv("R42_PORT", "3999")
    clean_env.setenv("R42_PB_PORT", "8999")
    clean_env.setenv("R42_DATA_DIR", str(tmp_path))
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-test")
    cfg = load_settings()
    assert (cfg.port, cfg.pb_url, cfg.data_dir) == (3999, "http://127.0.0.1:8999", tmp_path)
    assert cfg.superuser_file == tmp_path / "superuser.json"
    assert not cfg.offline


def test_bad_port_is_a_clear_error(clean_env):
    clean_env.setenv("R42_PORT", "drie")
    with pytest.raises(SystemExit, match="R42_PORT must be a whole number"):
        load_settings()


def test_cors_allows_only_the_apps_own_origins_by_default(clean_env):
    clean_env.setenv("R42_PORT", "3999")
    cfg = load_settings()
    assert cfg.cors_origins == ()
    assert cfg.allowed_origins == ("http://127.0.0.1:3999", "http://localhost:3999")


def test_cors_origins_add_to_the_apps_own(clean_env):
    clean_env.setenv("R42_CORS_ORIGINS", " https://leren.example.nl, http://10.0.0.5:8080 ,")
    cfg = load_settings()
    assert cfg.cors_origins == ("https://leren.example.nl", "http://10.0.0.5:8080")
    assert cfg.allowed_origins == ("http://127.0.0.1:3000", "http://localhost:3000",
                                   "https://leren.example.nl", "http://10.0.0.5:8080")


def test_a_web_machine_binds_its_address_and_its_pages_talk_to_the_public_one(clean_env):
    """Issue 50: a web machine behind a load balancer listens on its own address; its pages, its mails and the
    websocket's origin check go by the address people open."""
    clean_env.setenv("R42_BIND", "10.0.0.5")
    clean_env.setenv("R42_PUBLIC_URL", "https://r42.example.nl/")
    cfg = load_settings()
    assert (cfg.app_url, cfg.frontend_url, cfg.link_base) == ("http://10.0.0.5:3000", "https://r42.example.nl",
                                                              "https://r42.example.nl")
    assert "https://r42.example.nl" in cfg.allowed_origins and "http://10.0.0.5:3000" in cfg.allowed_origins


def test_every_interface_is_reached_on_loopback_and_a_bad_address_is_a_clear_error(clean_env):
    clean_env.setenv("R42_BIND", "0.0.0.0")
    cfg = load_settings()
    assert (cfg.bind, cfg.app_url, cfg.frontend_url) == ("0.0.0.0", "http://127.0.0.1:3000", "http://127.0.0.1:3000")
    clean_env.setenv("R42_BIND", "10.0.0.5; rm -rf /")
    with pytest.raises(SystemExit, match="R42_BIND must be an address to listen on"):
        load_settings()


@pytest.mark.parametrize("bad", ["*", "leren.example.nl", "https://leren.example.nl/", "https://leren.example.nl/app",
                                 "ftp://files.example", "https://leren.example.nl:99999",
                                 "https://user@leren.example.nl"])
def test_a_cors_origin_that_is_not_scheme_host_port_is_a_clear_error(clean_env, bad):
    clean_env.setenv("R42_CORS_ORIGINS", f"https://ok.example,{bad}")
    with pytest.raises(SystemExit, match="R42_CORS_ORIGINS"):
        load_settings()


def test_secrets_are_read_but_kept_out_of_the_settings_repr(clean_env):
    clean_env.setenv("CHROMA_URL", "http://127.0.0.1:8001")
    clean_env.setenv("R42_CHROMA_TOKEN", " chroma-token-123 ")
    clean_env.setenv("REFLEX_REDIS_URL", "redis://default:redis-pass-456@127.0.0.1:6390/0")
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-secret-789")
    cfg = load_settings()
    assert cfg.chroma_token == "chroma-token-123" and "redis-pass-456" in cfg.redis_url
    shown = repr(cfg)  # what a log line or a rich traceback with locals would print
    assert "http://127.0.0.1:8001" in shown
    assert not any(secret in shown for secret in ("chroma-token-123", "redis-pass-456", "sk-secret-789"))
