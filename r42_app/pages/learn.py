"""The learn page (`/`) and topic pages (`/topics/<slug>`): the learner's main screens."""

import reflex as rx

from r42_app.components.common import empty_state, error_callout, link_button, skeleton_lines, type_badge, type_color
from r42_app.components.i18n import t, tf, tv
from r42_app.components.markdown import safe_markdown
from r42_app.components.shell import page_frame
from r42_app.components.theme import CONTENT_MAX, NAV_HEIGHT, PROSE, SIDEBAR_WIDTH
from r42_app.state.auth import AuthState
from r42_app.state.language import LanguageState
from r42_app.state.learn import LearnState, RelationLink, TopicCard, TypeCount

CONTENT_ID = "inhoud"  # the reading column beside the topic list: where "Naar de inhoud" leads


def type_filter() -> rx.Component:
    """Segmented control: all topics or one type, with counts."""
    return rx.segmented_control.root(
        rx.segmented_control.item(t("Alles"), value="all"),
        rx.foreach(
            LearnState.type_counts,
            lambda tc: rx.segmented_control.item(tv(tc.label), value=tc.type),
        ),
        value=rx.cond(LearnState.type_filter == "", "all", LearnState.type_filter),
        on_change=LearnState.set_type_filter,
        size="1",
        width="100%",
        id="type-filter",
    )


def search_box() -> rx.Component:
    """Text filter over label, slug and description."""
    return rx.input(
        rx.input.slot(rx.icon("search", size=16)),
        placeholder=t("Filter onderwerpen…"),
        value=LearnState.query,
        on_change=LearnState.set_query.debounce(150),
        aria_label=t("Filter onderwerpen"),
        width="100%",
        id="topic-filter",
    )


def sidebar_item(card: TopicCard) -> rx.Component:
    """One topic in the sidebar list."""
    active = LearnState.topic.slug == card.slug
    return rx.link(
        rx.hstack(
            rx.box(width="8px", height="8px", border_radius="50%", flex_shrink="0",
                   background=f"var(--{type_color(card.type)}-9)"),
            rx.text(card.label, size="2", weight=rx.cond(active, "medium", "regular"), trim="both"),
            align="center",
            spacing="2",
        ),
        href="/topics/" + card.slug,
        underline="none",
        color_scheme="gray",
        high_contrast=True,
        display="block",
        padding="6px 10px",
        border_radius="6px",
        background=rx.cond(active, "var(--accent-4)", "transparent"),
        _hover={"background": rx.cond(active, "var(--accent-4)", "var(--gray-3)")},
        class_name="sidebar-topic",
    )


def no_matches() -> rx.Component:
    """When the filter hides everything."""
    return rx.vstack(
        rx.text(t("Geen onderwerpen gevonden."), size="2", color_scheme="gray"),
        rx.button(t("Filter wissen"), size="1", variant="soft", on_click=LearnState.clear_filters),
        padding="12px 10px",
        spacing="2",
        align="start",
    )


def sidebar() -> rx.Component:
    """Filters and the topic list, on the left of every learn screen (on a phone a drawer over the page, with its
    own close button: the drawer covers the one that opened it; Escape closes it too)."""
    return rx.vstack(
        rx.button(rx.icon("x", size=16), t("Sluit de lijst"), variant="soft", size="2",
                  on_click=LearnState.close_topics, class_name="phone-only", id="topics-close",
                  aria_controls="learn-sidebar", align_self="end"),
        search_box(),
        type_filter(),
        rx.cond(
            LearnState.loading,
            rx.box(skeleton_lines(10, "14px"), padding="8px"),
            rx.cond(
                LearnState.visible.length() > 0,
                rx.vstack(
                    rx.foreach(LearnState.visible, sidebar_item),
                    rx.cond(
                        LearnState.hidden_count > 0,
                        rx.text(tf("+ {count} meer: verfijn je filter", count=LearnState.hidden_count), size="1",
                                color_scheme="gray", padding="6px 10px"),
                    ),
                    spacing="0",
                    width="100%",
                    id="topic-list",
                ),
                rx.cond(LearnState.total > 0, no_matches(), rx.fragment()),
            ),
        ),
        width=SIDEBAR_WIDTH,
        min_width=SIDEBAR_WIDTH,
        padding="16px 12px",
        spacing="3",
        border_right="1px solid var(--gray-5)",
        background="var(--color-panel-solid)",
        height=f"calc(100vh - {NAV_HEIGHT})",
        overflow_y="auto",
        position="sticky",
        top=NAV_HEIGHT,
        class_name=rx.cond(LearnState.show_topics, "learn-sidebar open", "learn-sidebar"),
        id="learn-sidebar",
    )


def topics_toggle() -> rx.Component:
    """Phones only: the topic list opens as a drawer instead of stacking above every page."""
    # Two icons under a cond, not one icon whose name is a cond: an icon named at run time makes Reflex bundle
    # lucide's map of every icon, and each icon as a file of its own, into every page (tests/unit/test_page_weight.py).
    return rx.button(rx.cond(LearnState.show_topics, rx.icon("x", size=16), rx.icon("list", size=16)),
                     rx.cond(LearnState.show_topics, t("Sluit de lijst"), t("Alle onderwerpen")),
                     variant="soft", size="2", on_click=LearnState.toggle_topics, class_name="phone-only",
                     aria_controls="learn-sidebar", aria_expanded=LearnState.show_topics, id="topics-toggle",
                     margin_bottom="12px")


def layout(main: rx.Component) -> rx.Component:
    """Sidebar plus a centred reading column."""
    return rx.flex(
        sidebar(),
        # the skip link's target (CONTENT_ID; tabindex -1: the focus moves here, not only the scroll position)
        rx.box(rx.box(topics_toggle(), main, max_width=CONTENT_MAX, margin_x="auto"), padding="32px 24px", flex="1",
               min_width="0", class_name="learn-main", id=CONTENT_ID, tab_index=-1),
        width="100%",
        class_name="learn-layout",
    )


def topic_card(card: TopicCard) -> rx.Component:
    """A topic on the overview grid."""
    return rx.link(
        rx.card(
            rx.vstack(
                rx.box(type_badge(card.type, card.type_label), class_name="topic-card-badge"),
                rx.text(card.label_breaks, weight="medium", size="3", class_name="topic-card-label"),
                rx.text(card.description, size="2", color_scheme="gray", class_name="topic-card-description"),
                spacing="2",
                align="start",
            ),
            height="100%",
            _hover={"box_shadow": "0 0 0 1px var(--accent-7)"},
            class_name="topic-card-box",
            data_type=card.type,
        ),
        href="/topics/" + card.slug,
        underline="none",
        color_scheme="gray",
        high_contrast=True,
        class_name="topic-card",
    )


def stat(tc: TypeCount) -> rx.Component:
    """A count of topics of one type."""
    return rx.hstack(
        type_badge(tc.type, tc.label),
        rx.text(tc.count, size="2", color_scheme="gray"),
        align="center",
        spacing="1",
    )


def empty_kb() -> rx.Component:
    """A tenant without any topics yet."""
    return empty_state(
        "book_dashed",
        t("Nog geen leerinhoud"),
        rx.cond(
            AuthState.is_admin,
            t("Voeg het eerste onderwerp toe, of importeer een kennisbank met `r42 kb import`."),
            t("Je organisatie heeft nog geen onderwerpen. Kom later terug of vraag je beheerder om inhoud."),
        ),
        rx.cond(AuthState.is_admin, link_button(rx.icon("plus", size=14), t("Onderwerp toevoegen"),
                                                  href="/admin/topics/new"), rx.fragment()),
    )


def overview() -> rx.Component:
    """The learn page body: welcome, counts and the (filtered) topics as cards."""
    return rx.vstack(
        rx.vstack(
            rx.heading(tf("Welkom, {name}", name=AuthState.user_name), size="7", id="welcome"),
            rx.text(t("Kies een onderwerp om te leren. R42 beantwoordt je vragen over deze kennisbank."),
                    color_scheme="gray"),
            rx.hstack(rx.foreach(LearnState.type_counts, stat), spacing="4", wrap="wrap"),
            spacing="2",
            align="start",
        ),
        rx.cond(LearnState.load_error != "", error_callout(LearnState.load_error)),
        rx.cond(
            LearnState.loading,
            rx.grid(*[rx.skeleton(rx.box(height="110px"), loading=True) for _ in range(6)],
                    columns=rx.breakpoints(initial="1", sm="2"), spacing="3", width="100%"),
            rx.cond(
                LearnState.total == 0,
                empty_kb(),
                rx.cond(
                    LearnState.visible.length() > 0,
                    rx.grid(rx.foreach(LearnState.visible, topic_card),
                            columns=rx.breakpoints(initial="1", sm="2"), spacing="3", width="100%",
                            id="topic-grid"),
                    empty_state("search_x", t("Geen onderwerpen gevonden"), t("Pas je filter aan of wis het."),
                                rx.button(t("Filter wissen"), variant="soft", on_click=LearnState.clear_filters)),
                ),
            ),
        ),
        spacing="5",
        width="100%",
    )


def relation_item(link: RelationLink) -> rx.Component:
    """`phrase → Topic` as a link to the related topic. On a phone a long name goes under its phrase and breaks
    where it must ("Arbeidsongeschiktheidspensioen" ran past the card)."""
    return rx.hstack(
        rx.text(tv(link.phrase), size="2", color_scheme="gray", min_width="170px"),
        rx.link(link.label, href="/topics/" + link.slug, size="2", weight="medium", min_width="0",
                overflow_wrap="anywhere", hyphens="auto"),
        align="center",
        spacing="3",
        wrap="wrap",
        row_gap="0",
        class_name="relation-link",
    )


def relations_block() -> rx.Component:
    """Outgoing and incoming relations of the open topic."""
    return rx.cond(
        (LearnState.outgoing.length() + LearnState.incoming.length()) > 0,
        rx.card(
            rx.vstack(
                rx.heading(t("Samenhang"), size="4", as_="h2"),
                rx.text(LearnState.topic.label, " …", size="1", color_scheme="gray"),
                rx.foreach(LearnState.outgoing, relation_item),
                rx.cond(
                    LearnState.incoming.length() > 0,
                    rx.vstack(
                        rx.separator(size="4"),
                        rx.text(t("… en andersom"), size="1", color_scheme="gray"),
                        rx.foreach(LearnState.incoming, relation_item),
                        spacing="2",
                        width="100%",
                    ),
                ),
                spacing="2",
                width="100%",
                id="relations",
            ),
            width="100%",
        ),
    )


# The slug of the topic drawn: the page is drawn from the tab's state before the server's first answer, so a move to
# another topic showed the last one for a moment; assets/r42.js hides it (data-r42-stale) till it is the address's.
TOPIC_SHOWN = {"data-r42-topic": LearnState.topic.slug}


def topic_view() -> rx.Component:
    """One topic: label, type, description, markdown content and relations. The topic's own words carry the
    language they are written in (a Dutch topic on the English page is read out in Dutch)."""
    written_in = {"lang": rx.cond(LearnState.topic_lang != "", LearnState.topic_lang, LanguageState.language)}
    return rx.cond(
        LearnState.topic_loading,
        rx.vstack(rx.skeleton(rx.box(height="36px", width="60%"), loading=True), skeleton_lines(8), spacing="4",
                  width="100%"),
        rx.cond(
            LearnState.topic_found,
            rx.vstack(
                rx.hstack(
                    rx.link(t("Onderwerpen"), href="/", size="2", color_scheme="gray"),
                    rx.icon("chevron_right", size=14, color="var(--gray-9)"),
                    type_badge(LearnState.topic.type, LearnState.topic.type_label),
                    align="center",
                    spacing="2",
                ),
                rx.heading(LearnState.topic.label, size="8", id="topic-title", custom_attrs=written_in),
                rx.text(LearnState.topic.description, size="4", color_scheme="gray", id="topic-description",
                        custom_attrs=written_in),
                rx.cond(
                    LearnState.topic_content != "",
                    rx.box(rx.foreach(LearnState.passages, lambda p: rx.box(
                        rx.cond(p.page != "", rx.text(p.page, size="1", color_scheme="gray", class_name="r42-page")),
                        safe_markdown(p.text, heading_shift=LearnState.heading_shift), id=p.anchor,
                        class_name="r42-passage")),
                        style=PROSE, width="100%", id="topic-content", custom_attrs=written_in),
                    rx.text(t("Voor dit onderwerp is nog geen leerinhoud geschreven."), color_scheme="gray",
                            font_style="italic"),
                ),
                rx.cond(
                    LearnState.original_name != "",
                    # the browser's own link (reloadDocument: the router leaves the click alone), so it downloads
                    # the file from the API
                    rx.el.a(rx.hstack(rx.icon("paperclip", size=14, aria_hidden="true"),
                                      rx.text(tf("Origineel: {name}", name=LearnState.original_name), size="2"),
                                      align="center", spacing="1"),
                            href=LearnState.original_url, id="topic-original", download=LearnState.original_name,
                            class_name="r42-original", style={"color": "var(--accent-11)"},
                            custom_attrs={"reloadDocument": True}),
                ),
                relations_block(),
                rx.cond(
                    AuthState.is_admin,
                    link_button(rx.icon("pencil", size=14), t("Bewerken"), variant="soft", size="2",
                                href="/admin/topics/" + LearnState.topic.slug),
                ),
                spacing="4",
                align="start",
                width="100%",
                custom_attrs=TOPIC_SHOWN,
            ),
            rx.box(empty_state("file_question", t("Onderwerp niet gevonden"),
                               t("Dit onderwerp bestaat niet (meer) in de kennisbank van je organisatie."),
                               link_button(t("Naar de onderwerpen"), variant="soft", href="/"), heading="h1"),
                   width="100%", custom_attrs=TOPIC_SHOWN),
        ),
    )


def index_page() -> rx.Component:
    """`/`: sign-in when signed out, the learn overview when signed in."""
    return page_frame(layout(overview()), content_id=CONTENT_ID)


def topic_page() -> rx.Component:
    """`/topics/<slug>`."""
    return page_frame(layout(rx.vstack(rx.cond(LearnState.load_error != "", error_callout(LearnState.load_error)),
                                       topic_view(), width="100%")), content_id=CONTENT_ID)


def not_found_page() -> rx.Component:
    """Any address that is no page of R42 ("/nope"): said in Dutch, inside the app, with the way home."""
    return page_frame(rx.box(
        rx.heading(t("Pagina niet gevonden"), size="7", id="not-found", as_="h1"),
        empty_state("map_pin_off", t("Deze pagina bestaat niet"),
                    t("Kijk of het adres klopt; misschien is de pagina verplaatst of verwijderd."),
                    link_button(rx.icon("house", size=14), t("Naar de onderwerpen"), variant="soft", href="/",
                                id="not-found-home")),
        max_width="720px", margin_x="auto", padding="28px 24px",
    ))
