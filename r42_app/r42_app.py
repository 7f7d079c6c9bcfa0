"""The Reflex app: theme, pages and the HTTP API."""

import reflex as rx

from r42_app.api import api
from r42_app.components.theme import STYLE
from r42_app.pages import admin_suggestions, admin_topics, graph, learn
from r42_app.state.admin_topics import AdminTopicsState
from r42_app.state.auth import AuthState, page_loader
from r42_app.state.graph import GraphState
from r42_app.state.learn import LearnState
from r42_app.state.suggestions import SuggestionsState

app = rx.App(
    style=STYLE,
    stylesheets=["/r42.css"],
    head_components=[
        rx.el.link(rel="icon", href="/favicon.svg", type="image/svg+xml"),
        # Esc closes the R42 window from anywhere on the page (keyboard users).
        rx.script("document.addEventListener('keydown', function (e) { if (e.key === 'Escape') { "
                  "var b = document.getElementById('r42-close'); if (b) { b.click(); "
                  "var l = document.getElementById('r42-launcher'); if (l) l.focus(); } } });"),
    ],
    api_transformer=api,
)



async def index_outbox() -> None:
    """Keep the search index fresh: drain the outbox for as long as the backend runs."""
    from r42_app.services import deps

    if deps.settings().app_indexer:
        await deps.indexer().run_forever()


app.register_lifespan_task(index_outbox)

ROUTES = [
    ("/", learn.index_page, "Onderwerpen", LearnState.load_index),
    ("/topics/[slug]", learn.topic_page, "Onderwerp", LearnState.load_topic),
    ("/graph", graph.page, "Kennisgraaf", GraphState.load),
    ("/admin/topics", admin_topics.list_page, "Kennisbank beheren", AdminTopicsState.load_list),
    ("/admin/topics/new", admin_topics.editor_page, "Nieuw onderwerp", AdminTopicsState.load_new),
    ("/admin/topics/[slug]", admin_topics.editor_page, "Onderwerp bewerken", AdminTopicsState.load_edit),
    ("/admin/suggestions", admin_suggestions.page, "Voorstellen", SuggestionsState.load),
]

for route, component, title, loader in ROUTES:
    page_loader(route, loader)
    app.add_page(component, route=route, title=f"{title} · R42", on_load=[AuthState.check_session, loader])
