"""Pure domain logic: no Reflex, no SDKs, no network, no files (a test enforces it)."""
