"""Passage vectors the embedding model made before, kept on this machine across test runs (issue 45).

Every pytest-xdist worker indexes the demo seed once (`indexed`, tests/integration/conftest.py): ~200 passages,
~40 s of a CPU core each time, for vectors that are the same in every run. `RememberedVectors` wraps the real
embedder for such a fixture: a passage it has seen before, with this model file and this embedding code, gets the
vector the model made then; any other passage is embedded by the model and remembered for the next run. Queries
always go to the model.

The cache lives in `$R42_CACHE/test-vectors` (as the Makefile's other caches: `make clean-cache` empties it), one
file per fixture and fingerprint: a hash of the model file, of `services/adapters/e5.py` and of the machine's
architecture, so a new model, changed embedding code or another machine starts empty. On every load one
remembered passage is embedded again and compared; a file that disagrees, or that cannot be read, is ignored.
A new machine therefore runs the fixture as it always did, at its old speed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    base = os.environ.get("R42_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "r42"
    return Path(base) / "test-vectors"


def fingerprint(embedder) -> str:
    """What the vectors depend on: the model's id and file, the code that runs it, the machine's architecture."""
    from r42_app.services.adapters.e5 import model_file

    digest = hashlib.sha256(f"{embedder.model_id}\n{platform.machine()}\n".encode())
    digest.update((ROOT / "r42_app" / "services" / "adapters" / "e5.py").read_bytes())
    model = getattr(embedder, "path", None) or model_file()
    with open(model, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:24]


class RememberedVectors:
    """An embedder (the `Embedder` protocol) that answers passages it has seen from the cache file. Use it as a
    context manager: the file is read on entry and written (atomically) on a clean exit, with the passages this
    run embedded; nothing else is kept, so the file holds one fixture's passages and does not grow."""

    def __init__(self, embedder, name: str):
        self.embedder = embedder
        self.model_id = embedder.model_id
        self.multilingual = embedder.multilingual
        self.file = cache_dir() / f"{name}-{fingerprint(embedder)}.npz"
        self.known: dict[str, np.ndarray] = {}
        self.used: dict[str, np.ndarray] = {}
        self.embedded = 0  # passages the model embedded in this run (not found in the cache)

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    def __enter__(self) -> RememberedVectors:
        try:
            with np.load(self.file, allow_pickle=False) as data:
                texts, vectors = [str(t) for t in data["texts"]], np.asarray(data["vectors"], dtype=np.float32)
        except (OSError, KeyError, ValueError) as exc:
            if self.file.exists():
                log.warning("ignoring the vector cache %s: %s", self.file, exc)
            return self
        if vectors.shape != (len(texts), self.embedder.dimension) or not np.all(np.isfinite(vectors)):
            log.warning("ignoring the vector cache %s: its shape does not fit the model", self.file)
            return self
        if texts:  # the model still makes these vectors: one of them, embedded again
            probe = random.randrange(len(texts))
            again = self.embedder.encode([texts[probe]])[0]
            if float(again @ vectors[probe]) < 0.999:
                log.warning("ignoring the vector cache %s: the model no longer makes its vectors", self.file)
                return self
        self.known = dict(zip(texts, vectors))
        return self

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.known))
        if missing:
            self.known.update(zip(missing, self.embedder.encode(missing)))
            self.embedded += len(missing)
        rows = [self.known[t] for t in texts]
        self.used.update(zip(texts, rows))
        return np.stack(rows) if rows else self.embedder.encode([])

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.encode_queries(texts)

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None or not self.embedded:
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            part = self.file.with_suffix(f".{os.getpid()}.npz")  # two workers may write at once: each renames
            np.savez(part, texts=np.array(list(self.used), dtype=str), vectors=np.stack(list(self.used.values())))
            part.replace(self.file)
        except OSError as exc:  # a read-only or full cache costs the next run time, never this run's result
            log.warning("could not write the vector cache %s: %s", self.file, exc)
