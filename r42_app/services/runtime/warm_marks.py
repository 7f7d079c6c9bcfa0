"""Where the backend workers of one `r42 serve` say they are warm (services/runtime/warmup.py writes a file per
worker, named after its pid; the supervisor empties the folder before it starts them and counts the files)."""

from __future__ import annotations

from pathlib import Path


def warm_markers(data_dir: Path) -> Path:
    return data_dir / "run" / "warm"
