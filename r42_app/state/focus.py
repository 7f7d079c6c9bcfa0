"""Where the keyboard goes on after the server changed the page under it (assets/r42.js `r42FocusIfLost`)."""

from __future__ import annotations

import json

import reflex as rx
from reflex.event import EventSpec


def focus_if_lost(*selectors: str) -> EventSpec:
    """Once no dialog is open, focus that fell to <body> (a confirmation without a trigger of its own closed, a
    disabled control, a list drawn again) goes to the first of `selectors` on the page; the others are fallbacks.
    Focus the user moved elsewhere stays there."""
    return rx.call_script(f"window.r42FocusIfLost({json.dumps(list(selectors))})")
