"""Where the checkout is: the folder that holds `r42_app/`, `pb_migrations/`, `pb_hooks/` and the app's `.web/`.
A module of its own, importing nothing of R42, so that any layer can ask without importing a service."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
