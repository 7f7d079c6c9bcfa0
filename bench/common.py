"""Helpers shared by the benchmarks: a throwaway PocketBase, timing statistics, synthetic topics."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterator

from r42_app.services.runtime.pb_server import HOOKS_DIR, HOOKS_POOL, PocketBaseServer, ensure_superuser
from r42_app.services.store.pb import PocketBase

SYLLABLES = ["pen", "sioen", "re", "ge", "ling", "part", "ner", "waar", "de", "over", "dracht", "pre", "mie",
             "uit", "ke", "ring", "aan", "spraak", "fonds", "deel", "ne", "mer", "werk", "ge", "ver", "bouw",
             "per", "cen", "ta", "ge", "dek", "kings", "graad", "in", "dex", "a", "tie", "fran", "chise"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def pocketbase(hooks_dir: Path = HOOKS_DIR, hooks_pool: int = HOOKS_POOL) -> Iterator[tuple[PocketBase, Path]]:
    """A fresh PocketBase with our schema in a temp dir, as superuser (with the hooks of `hooks_dir` and a pool of
    `hooks_pool` JS runtimes)."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        creds = ensure_superuser(data / "pb_data", data / "superuser.json")
        server = PocketBaseServer(data / "pb_data", free_port(), hooks_dir=hooks_dir, hooks_pool=hooks_pool).start()
        try:
            pb = PocketBase(server.url).as_superuser(creds.email, creds.password)
            yield pb, data
            pb.close()
        finally:
            server.stop()


ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def served_app(*args: str, root: Path = ROOT, **env_extra: str) -> Iterator[tuple[str, PocketBase, Path]]:
    """`r42 serve [args]` on free ports in a temp data dir, as `make run` starts it (indexer off), from the
    checkout `root` (another one is a baseline's worktree: give PYTHONPATH=root too).
    Yields (app url, superuser PocketBase client, data dir)."""
    data = Path(tempfile.mkdtemp(prefix="r42-bench-"))
    port, pb_port = free_port(), free_port()
    env = {**os.environ, "R42_DATA_DIR": str(data), "R42_PORT": str(port), "R42_PB_PORT": str(pb_port),
           "R42_APP_INDEXER": "0", **env_extra}
    env.pop("R42_PB_URL", None)
    log = open(data / "serve.log", "wb")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "r42"), "serve", *args], cwd=root, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 900
        while "R42 is running" not in (data / "serve.log").read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("r42 serve did not start: see " + str(data / "serve.log"))
            time.sleep(1)
        creds = json.loads((data / "superuser.json").read_text())
        pb = PocketBase(f"http://127.0.0.1:{pb_port}").as_superuser(creds["email"], creds["password"])
        yield f"http://127.0.0.1:{port}", pb, data
        pb.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
        log.close()


LOAD_BASELINE = "3cdbe6d"  # the last commit before issue 26's cuts: `load` and `turn-cpu` run it beside this checkout


def load_baseline() -> str:
    """The commit `load` and `turn-cpu` measure beside this checkout: R42_BENCH_BASELINE, else LOAD_BASELINE;
    "" when R42_BENCH_BASELINE is `none` (this checkout alone, half the time)."""
    chosen = os.environ.get("R42_BENCH_BASELINE", LOAD_BASELINE).strip()
    return "" if chosen.lower() in ("", "none") else chosen


@contextlib.contextmanager
def baseline_checkout(commit: str) -> Iterator[Path]:
    """`commit` checked out as a git worktree (its `tools/` shared with this checkout's: PocketBase, bun, the
    injection model), for a benchmark to serve beside this checkout: `served_app(root=tree, PYTHONPATH=tree)`.
    Removed afterwards."""
    tree = Path(tempfile.mkdtemp(prefix="r42-baseline-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True,
                   capture_output=True)
    try:
        if (ROOT / "tools").exists() and not (tree / "tools").exists():
            (tree / "tools").symlink_to(ROOT / "tools")
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(tree.parent, ignore_errors=True)


def timings(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def p50(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def synthetic_words(rng: random.Random, n: int) -> list[str]:
    """Dutch-looking words glued from syllables (so the compound fallback has real work)."""
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 5))))
    return sorted(words)


def synthetic_topics(n: int, seed: int = 42, content_words: int = 40) -> list[dict]:
    """Import-format topics: a two-word label, a 10-word description and `content_words` of content."""
    rng = random.Random(seed)
    vocab = synthetic_words(rng, 5000)
    zipf = [1 / (i + 1) for i in range(len(vocab))]

    def text(k: int) -> str:
        return " ".join(rng.choices(vocab, weights=zipf, k=k))

    return [
        {"id": f"t-{i}", "label": f"{text(2)} {i}", "type": ("concept", "role", "process")[i % 3],
         "description": text(10) + ".", "content": text(content_words)}
        for i in range(n)
    ]


class Clocked:
    """A proxy that adds up the time spent in each method of `target` (to break a path down: indexer, store, model)."""

    def __init__(self, target):
        self._target = target
        self.spent: dict[str, float] = defaultdict(float)

    def __getattr__(self, name):
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self.spent[name] += time.perf_counter() - start

        return call
