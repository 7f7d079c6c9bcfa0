"""One place for R42's look: theme, spacing and the colour of each topic type."""

from typing import Any

import reflex as rx

ACCENT = "indigo"
THEME = rx.theme(appearance="light", accent_color=ACCENT, gray_color="slate", radius="medium", scaling="100%")

TYPE_COLORS = {"concept": "blue", "role": "orange", "process": "grass"}

SIDEBAR_WIDTH = "300px"
NAV_HEIGHT = "56px"
CONTENT_MAX = "860px"

STYLE: dict[Any, Any] = {
    "font_family": "Inter, system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
    "background_color": "var(--gray-2)",
}

PROSE = {
    "font_size": "16px",
    "line_height": "1.7",
    "color": "var(--gray-12)",
    "& h2, & h3": {"margin_top": "1.4em", "margin_bottom": "0.4em", "font_weight": "600"},
    "& p": {"margin_bottom": "0.9em"},
    "& ul, & ol": {"padding_left": "1.4em", "margin_bottom": "0.9em"},
    "& li": {"margin_bottom": "0.25em"},
}
