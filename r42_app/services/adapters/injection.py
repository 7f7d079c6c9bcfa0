"""Loads the learned injection detector (`core.injection_model`) trained by `make setup`.

Without the file (or with a damaged one) the rules work alone, and this says so once; `r42 doctor`
reports it too.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from r42_app.core.injection import learned_model, use_learned_model
from r42_app.core.injection_model import LinearModel

log = logging.getLogger(__name__)

MAX_BYTES = 32 * 1024 * 1024


def load_learned_model(path: Path) -> LinearModel:
    """The model in `path`; ValueError (with the reason) when it is missing, too large or not a model."""
    if not path.is_file():
        raise ValueError(f"{path} does not exist (make setup trains it)")
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"{path} is larger than {MAX_BYTES // (1024 * 1024)} MB")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not readable JSON: {exc}") from exc
    return LinearModel.from_dict(data)


def install_learned_model(path: Path) -> LinearModel | None:
    """Load and install the learned detector once per process; None (rules only, logged) when it cannot."""
    current = learned_model()
    if current is not None:
        return current
    try:
        model = load_learned_model(path)
    except ValueError as exc:
        log.warning("learned injection detector not loaded, using the rules only: %s", exc)
        return None
    use_learned_model(model)
    return model
