"""Markdown as the browser shows it: the only way R42 renders stored or generated text as markdown.

Topic content, the editor's preview and R42's answers (which may carry text from the knowledge base, an MCP
tool or a document) are markdown with raw HTML allowed (tables, `<br>`, `<sub>` in imported content). The
parsed tree goes through our sanitiser (`r42_sanitize.js`, an allowlist on hast-util-sanitize) before React
renders it (rxconfig installs its `rehype-sanitize`); `tests/unit/test_layers.py` checks that nothing calls
`rx.markdown` around it.

Source chips are R42's, never the text's: a rendering of an answer passes the chips R42 made for it (`chips`, the
validated citations of that answer, each {href, label}), and only a link with exactly that href and text becomes a
chip. Any other link is a plain one; one that leaves the app is marked (an arrow, and EXTERNAL_LINK for screen
readers) and opens in a new tab without a referrer.
"""

from __future__ import annotations

import reflex as rx
from reflex_base.vars.base import Var
from reflex_components_core.base.error_boundary import ErrorBoundary

from r42_app.components.i18n import N_, t

_SANITIZE = rx.markdown.plugin.create(rx.asset("r42_sanitize.js", shared=True).importable_path, "r42Sanitize")
EXTERNAL_LINK = N_("(externe link)")  # what a screen reader says after a link that leaves the app


# Untrusted text that still trips the renderer costs that one block, never the page (or, from a stored chat
# thread, every page): the boundary shows this instead.
_UNRENDERABLE = Var.create(  # the prop wraps it in the render function itself
    rx.text(t("Dit stuk tekst kan niet worden getoond."), color_scheme="gray", size="2", class_name="r42-unrenderable"))


def safe_markdown(source, component_map: dict | None = None, chips=None, heading_shift=0, **props) -> rx.Component:
    """Markdown rendered with raw HTML parsed and then sanitised (no math: a `$` in a sum stays a `$`). `chips`:
    the source chips R42 made for this text (a list of objects with `href` and `label`; none where not given).
    `heading_shift`: levels to move its headings by (core/passages.py heading_shift; a number or a state var)."""
    sanitise = Var.create([_SANITIZE, {"chips": chips if chips is not None else [], "external": t(EXTERNAL_LINK),
                                       "shift": heading_shift}])
    return ErrorBoundary.create(
        rx.markdown(source, use_math=False, use_katex=False, use_raw=True, rehype_plugins=[sanitise],
                    component_map=component_map or {}, **props),
        fallback_render=_UNRENDERABLE)
