"""Issue 21: what `r42 serve` (one worker, the embedded Chroma) leaves to other local users: PocketBase answers
no foreign origin's preflight, and nothing in the data dir is open to them. No browser needed."""

import stat
import time

import httpx

FOREIGN = "http://evil.example"


def pocketbase_preflight(app, origin):
    return httpx.options(f"{app.pb_url}/api/collections/users/auth-with-password", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})


def test_pocketbase_answers_only_the_apps_origins(served_app):
    foreign = pocketbase_preflight(served_app, FOREIGN)
    assert foreign.headers.get("access-control-allow-origin") is None, dict(foreign.headers)
    for origin in (served_app.url, served_app.url.replace("127.0.0.1", "localhost")):
        own = pocketbase_preflight(served_app, origin)
        assert own.status_code < 300 and own.headers["access-control-allow-origin"] == origin


def test_nothing_in_the_data_dir_is_open_to_other_users(served_app):
    data = served_app.data_dir
    deadline = time.monotonic() + 120  # the backend builds the embedded index after the start
    while not (data / "chroma" / "chroma.sqlite3").is_file() and time.monotonic() < deadline:
        time.sleep(1)
    assert (data / "pb_data" / "data.db").is_file() and (data / "chroma" / "chroma.sqlite3").is_file()
    open_ = [f"{p.relative_to(data)} {stat.filemode(p.lstat().st_mode)}" for p in [data, *data.rglob("*")]
             if not p.is_symlink() and p.lstat().st_mode & 0o077]
    assert open_ == []
