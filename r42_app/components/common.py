"""Small shared pieces: type badges, empty states, skeletons."""

import reflex as rx
from reflex_components_core.react_router.dom import ReactRouterLink

from r42_app.components.i18n import t, tv
from r42_app.components.theme import TYPE_COLORS
from r42_app.core.dates import DAY_FORMAT

Text = str | rx.Var[str]  # a label: a literal, or a page word in the reader's language (components/i18n.py t)


def type_color(topic_type) -> rx.Var:
    """The Radix colour of a topic type (a Var, for use inside rx.foreach)."""
    return rx.match(topic_type, *[(t, c) for t, c in TYPE_COLORS.items()], "gray")


def type_badge(topic_type, label) -> rx.Component:
    """A coloured badge naming the topic type (high contrast: the soft text alone is under 4.5:1 at 12 px); `label` is
    its Dutch name as a state keeps it (core/kb.py TYPE_LABELS), shown in the reader's language."""
    return rx.badge(tv(label), color_scheme=type_color(topic_type), variant="soft", radius="full", high_contrast=True)


def form_label(text, control_id: str, **props) -> rx.Component:
    """A visible label tied to its control (a click on it focuses the control). Radix Text takes `html_for` as a
    style, not as the attribute, so `htmlFor` is passed as is."""
    return rx.text(text, as_="label", custom_attrs={"htmlFor": control_id}, **props)


def day_field(label: Text, name: str, value, control_id: str) -> rx.Component:
    """A day of a range, as a Dutch reader writes it ("01-12-2026", core/dates.py): a text field, not the browser's
    date field, which shows mm/dd/yyyy to an English browser. `value` is the state's day in that format; the field
    is drawn again (its key) when the state changes it."""
    return rx.vstack(
        form_label(label, control_id, size="1"),
        rx.input(name=name, default_value=value, key=value, id=control_id, size="2", placeholder=DAY_FORMAT,
                 width="9.5rem", autocomplete="off", spell_check=False,
                 custom_attrs={"aria-description": t("dag-maand-jaar, bijvoorbeeld 01-12-2026")}),
        spacing="1")


def card_cell(label: Text, *children, **props) -> rx.Component:
    """A table cell that names its column: on a phone a `r42-cards` table shows each row as a card, and the
    column header is then written above the value (assets/r42.css)."""
    return rx.table.cell(*children, data_label=label, **props)


def empty_state(icon: str, title, body, *actions: rx.Component, heading: str = "h2") -> rx.Component:
    """A deliberate empty state: icon, title, one line of help and optional actions. `heading`: "h1" when it is all
    the page says (a topic that does not exist), so the page still has its one h1."""
    return rx.center(
        rx.vstack(
            rx.center(rx.icon(icon, size=28, color="var(--accent-9)"), class_name="empty-icon",
                      width="56px", height="56px", border_radius="50%", background="var(--accent-3)"),
            rx.heading(title, size="4", weight="medium", text_align="center", as_=heading),
            rx.text(body, color_scheme="gray", size="2", text_align="center", max_width="420px"),
            rx.hstack(*actions, spacing="2") if actions else rx.fragment(),
            align="center",
            spacing="3",
        ),
        padding="48px 16px",
        width="100%",
    )


def skeleton_lines(count: int = 6, height: str = "18px") -> rx.Component:
    """Placeholder lines while data loads."""
    return rx.vstack(
        *[rx.skeleton(rx.box(height=height, width=f"{90 - (i * 7) % 35}%"), loading=True) for i in range(count)],
        spacing="3",
        width="100%",
        aria_busy="true",
    )


def error_callout(message) -> rx.Component:
    """A red callout for a failed load or action."""
    return rx.callout(message, icon="triangle_alert", color_scheme="red", role="alert", width="100%")


def link_button(*children, href: str, **props) -> rx.Component:
    """A link that looks like a button: one element, one Tab stop, announced as a link (a button inside a link was
    two stops and "link, button" to a screen reader). `props` are the button's (variant, size, id, ...)."""
    # A bare router link (client-side navigation), not rx.link: Radix's Link would recolour the text on hover
    # (indigo-8 on the button, ~2.5:1), drop the button's colour scheme and square its focus ring.
    return rx.button(ReactRouterLink.create(*children, to=href), as_child=True, **props)


def label_file_input(component: rx.Component, label: Text) -> rx.Component:
    """Give the drop zone's hidden file input a name (react-dropzone renders it; axe's `label` rule)."""
    for child in component.children:
        if isinstance(child, rx.Component):
            if getattr(child, "tag", "") == "input":
                child.custom_attrs["aria-label"] = label
            label_file_input(child, label)
    return component


def named_rejections(rejected: rx.Var) -> rx.Var:
    """The drop zone's turned-away files as the server can read them: each file's name and error codes (the File
    itself reaches the server as its bytes, without its name)."""
    return rx.Var(_js_expr=f"(({rejected}) || []).map(r => ({{name: String((r && r.file && (r.file.path || "
                           f"r.file.name)) || ''), codes: ((r && r.errors) || []).map(e => String(e && e.code))}}))",
                  _var_type=list)


def card_section(title: Text, subtitle, *children: rx.Component, **props) -> rx.Component:
    """A titled card of an admin page (its subtitle may be a Var)."""
    return rx.card(
        rx.vstack(
            rx.vstack(rx.heading(title, size="4", as_="h2"), rx.text(subtitle, size="2", color_scheme="gray"),
                      spacing="1"),
            *children, spacing="4", width="100%",
        ),
        width="100%", **props,
    )


def copy_box(value, box_id: str, label: Text, rows: int = 2) -> rx.Component:
    """A read-only field with a link (or `rows` lines of links) and a copy button."""
    return rx.hstack(
        rx.text_area(value=value, read_only=True, id=box_id, rows=str(rows), width="100%", size="1",
                     custom_attrs={"aria-label": label}, on_focus=rx.call_script(f"document.getElementById('{box_id}')"
                                                                                 ".select()")),
        rx.button(rx.icon("copy", size=14), t("Kopiëren"), variant="soft", size="2",
                  high_contrast=True,  # its text at 4.5:1 inside a coloured callout too
                  on_click=[rx.set_clipboard(value), rx.toast.success(t("Gekopieerd"))], id=f"{box_id}-copy"),
        width="100%", align="start", spacing="2",
    )
