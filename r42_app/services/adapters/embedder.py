"""What every embedder is (services/adapters/embeddings.py picks one, services/adapters/e5.py is the default), and
the error any of them raises when its model cannot be loaded. Its own module so that an embedder imports it
without importing the module that chooses among embedders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class EmbeddingUnavailable(RuntimeError):
    """The embedding model cannot be loaded (missing package or path)."""


class Embedder(Protocol):
    model_id: str
    multilingual: bool  # reads Dutch as well as English (hybrid search then trusts it on any KB)

    @property
    def dimension(self) -> int:
        """The length of every vector."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Passages (documents) as unit vectors."""

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries as unit vectors (a model such as e5 embeds them differently from passages)."""
