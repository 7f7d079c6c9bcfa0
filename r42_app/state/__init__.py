"""Reflex State classes: thin, one per feature; they call services and hold what the screen shows."""
