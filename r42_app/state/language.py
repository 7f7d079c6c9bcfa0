"""What the pages speak (issue 52): the reader's language and the pages' words in it. A state of its own, so a
page's words (components/i18n.py t()) re-render only when the language changes, not at every change of who is
signed in (AuthState changes at every page load). Only server code sets it (AuthState._speak)."""

from __future__ import annotations

import reflex as rx

from r42_app.core.messages import DEFAULT_LANGUAGE


class LanguageState(rx.State):
    language: str = DEFAULT_LANGUAGE  # the person's language; before sign-in the browser's
    ui: dict[str, str] = {}  # the pages' words in `language`, by their Dutch text (empty in Dutch)
