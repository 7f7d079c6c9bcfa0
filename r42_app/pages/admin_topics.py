"""Admin pages: `/admin/topics` (list), `/admin/topics/new` and `/admin/topics/<slug>` (editor)."""

import reflex as rx
from reflex.utils.imports import ImportVar
from reflex.vars.base import VarData
from reflex_base.event import parse_args_spec
from reflex_components_core.core.upload import _on_drop_spec

from r42_app.components.common import (
    card_cell,
    empty_state,
    error_callout,
    form_label,
    label_file_input,
    link_button,
    named_rejections,
    skeleton_lines,
    type_badge,
)
from r42_app.components.i18n import t, tf, tv
from r42_app.components.markdown import safe_markdown
from r42_app.components.shell import page_frame
from r42_app.core.documents import MAX_FILE_BYTES, MAX_FILES
from r42_app.core.kb import RELATION_LABELS, TOPIC_TYPES, TYPE_LABELS
from r42_app.state.admin_topics import AdminRelationRow, AdminTopicRow
from r42_app.state.admin_topics import AdminTopicEditorState as E
from r42_app.state.admin_topics import AdminTopicListState as L
from r42_app.state.documents import ACCEPT, UPLOAD_ID, DocumentRow
from r42_app.state.documents import DocumentUploadState as D


def frame(body: rx.Component) -> rx.Component:
    """Admin-only page frame with a centred column."""
    return page_frame(rx.box(rx.box(body, max_width="1040px", margin_x="auto"), padding="28px 24px"), admin=True)


def delete_dialog(row: AdminTopicRow) -> rx.Component:
    """Delete button with a confirmation dialog."""
    return rx.alert_dialog.root(
        rx.alert_dialog.trigger(
            rx.icon_button(rx.icon("trash_2", size=14), variant="ghost", color_scheme="red",
                           aria_label=tf("Verwijder {name}", name=row.label))
        ),
        rx.alert_dialog.content(
            rx.alert_dialog.title(t("Onderwerp verwijderen?")),
            rx.alert_dialog.description(
                rx.cond(
                    row.original != "",
                    rx.cond(row.sections == 1,
                            tf("“{name}” komt uit het document {file}. Het onderwerp, zijn {count} hoofdstuk, hun "
                               "relaties en het originele bestand worden verwijderd. Dit kan niet ongedaan worden "
                               "gemaakt.", name=row.label, file=row.original, count=row.sections),
                            tf("“{name}” komt uit het document {file}. Het onderwerp, zijn {count} hoofdstukken, hun "
                               "relaties en het originele bestand worden verwijderd. Dit kan niet ongedaan worden "
                               "gemaakt.", name=row.label, file=row.original, count=row.sections)),
                    rx.match(row.relation_count,
                             (0, tf("“{name}” wordt verwijderd. Dit kan niet ongedaan worden gemaakt.",
                                    name=row.label)),
                             (1, tf("“{name}” en zijn {count} relatie worden verwijderd. Dit kan niet ongedaan "
                                    "worden gemaakt.", name=row.label, count=row.relation_count)),
                             tf("“{name}” en zijn {count} relaties worden verwijderd. Dit kan niet ongedaan worden "
                                "gemaakt.", name=row.label, count=row.relation_count)),
                ),
            ),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button(t("Annuleren"), variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(
                    rx.button(t("Verwijderen"), color_scheme="red", high_contrast=True,
                              on_click=L.delete_topic(row.slug))
                ),
                justify="end",
                spacing="3",
                margin_top="16px",
            ),
            max_width="460px",  # as the other confirmations
        ),
    )


def topic_row(row: AdminTopicRow) -> rx.Component:
    """One row of the admin topic table."""
    return rx.table.row(
        rx.table.cell(rx.hstack(
            rx.link(row.label, href="/admin/topics/" + row.slug, weight="medium", class_name="card-title"),
            rx.cond(row.original != "", rx.tooltip(rx.icon("paperclip", size=13, color="var(--gray-9)",
                                                           aria_label=tf("Uit {file}", file=row.original)),
                                                   content=tf("Uit {file}", file=row.original))),
            align="center", spacing="1")),
        card_cell(t("Id"), rx.code(row.slug, variant="ghost", size="1")),
        card_cell(t("Type"), type_badge(row.type, row.type_label)),
        card_cell(t("Relaties"), row.relation_count),
        rx.table.cell(
            rx.hstack(
                rx.link(rx.icon_button(rx.icon("eye", size=14), variant="ghost",
                                       aria_label=tf("Bekijk {name}", name=row.label)),
                        href="/topics/" + row.slug),
                rx.link(rx.icon_button(rx.icon("pencil", size=14), variant="ghost",
                                       aria_label=tf("Bewerk {name}", name=row.label)),
                        href="/admin/topics/" + row.slug),
                delete_dialog(row),
                spacing="3",
                justify="end",
            )
        ),
        align="center",
    )


def document_row(row: DocumentRow) -> rx.Component:
    """One file of the last upload: name, size, what happened, and the topics it became (linked)."""
    return rx.box(
        rx.hstack(
            rx.icon("file_text", size=16, color="var(--gray-10)", aria_hidden="true"),
            rx.text(row.name, weight="medium", size="2", class_name="doc-name", word_break="break-all"),
            rx.text(row.size, size="1", color_scheme="gray"),
            rx.spacer(),
            rx.cond(row.status == "reading", rx.spinner(size="1")),
            rx.cond(row.status == "queued", rx.icon("hourglass", size=14, color="var(--amber-10)", aria_hidden="true")),
            rx.badge(tv(row.status_label), color_scheme=row.tone, variant="soft", class_name="doc-status"),
            align="center",
            spacing="2",
            width="100%",
        ),
        rx.cond(row.message != "", rx.text(row.message, size="1", color_scheme=rx.cond(row.status == "refused",
                                                                                         "red", "gray"),
                                           class_name="doc-message", margin_top="4px")),
        rx.cond(
            row.topics.length() > 0,
            rx.flex(
                rx.foreach(row.topics, lambda topic: rx.link(topic.label, href="/topics/" + topic.slug, size="1",
                                                             class_name="doc-topic")),
                rx.cond(row.more > 0, rx.text(rx.cond(row.more == 1, tf("en nog {count} onderwerp", count=row.more),
                                                      tf("en nog {count} onderwerpen", count=row.more)),
                                              size="1", color_scheme="gray")),
                wrap="wrap",
                spacing="3",
                margin_top="4px",
            ),
        ),
        padding="8px 0",
        border_top="1px solid var(--gray-4)",
        width="100%",
        class_name="doc-row",
        data_status=row.status,
    )


# A drop's id (a random string), made by the first event of on_drop and read by the events after it: by the upload,
# second in on_drop, and by on_drop_rejected, which react-dropzone calls right after on_drop for the same drop. So
# NEW_DROP must stay first in on_drop.
NEW_DROP: rx.Var[str] = rx.Var(
    _js_expr="(window.r42Drop = Date.now().toString(36) + Math.random().toString(36).slice(2, 8))", _var_type=str)
THIS_DROP: rx.Var[str] = rx.Var(_js_expr="String(window.r42Drop || '')", _var_type=str)
# Whether the files of an earlier drop are still on their way when this one is dropped: Reflex's page then does not
# send this drop's upload ("Upload already in progress", in the console only), so upload_starting says it. Read from
# the controller Reflex's uploadFiles keeps for the zone while its request is in flight (utils/helpers/upload.js).
STILL_SENDING: rx.Var[bool] = rx.Var(_js_expr=f"Boolean(refs['__upload_controllers_{UPLOAD_ID}'])", _var_type=bool,
                                     _var_data=VarData(imports={"$/utils/state": [ImportVar(tag="refs")]}))


# The bytes of the files the drop zone took, counted in the page before they are sent: on_drop's files, by the name
# Reflex gives them (rx.upload_files reads them so too; a lambda in on_drop cannot be used on rx.upload.root).
_DROPPED = parse_args_spec(_on_drop_spec)[0][0]
DROPPED_BYTES: rx.Var[int] = rx.Var(
    _js_expr=f"(({_DROPPED}) || []).reduce((n, f) => n + (Number(f && f.size) || 0), 0)", _var_type=int)


# The bytes of a drop are on their way: its upload's progress came, the upload itself not yet (state/documents.py).
SENDING = (D.doc_sending_drop != "") & (D.doc_sending_drop != D.doc_arrived_drop)


def documents_card() -> rx.Component:
    """"Documenten toevoegen": drop or pick files; each is read, checked and turned into topics, one by one."""
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.heading(t("Documenten toevoegen"), size="4", as_="h2", id="documents-heading"),
                rx.spacer(),
                rx.hstack(
                    form_label(t("Type"), "doc-type", size="2", color_scheme="gray"),
                    rx.select.root(
                        rx.select.trigger(id="doc-type", aria_label=t("Type van de onderwerpen uit documenten")),
                        rx.select.content(*[rx.select.item(t(TYPE_LABELS[k]), value=k) for k in TOPIC_TYPES]),
                        value=D.doc_type,
                        on_change=D.set_doc_type,
                        disabled=D.doc_busy,
                        size="1",
                    ),
                    align="center",
                    spacing="2",
                ),
                width="100%",
                align="center",
                wrap="wrap",
            ),
            label_file_input(rx.upload.root(
                rx.vstack(
                    rx.icon("upload", size=22, color="var(--accent-9)", aria_hidden="true"),
                    rx.text(t("Sleep bestanden hierheen of "), rx.text(t("kies bestanden"), as_="span",
                                                                        color="var(--accent-11)", weight="medium"),
                            size="2"),
                    rx.text(t("PDF, Word (.docx), PowerPoint (.pptx), Markdown, HTML of tekst; tot 50 MB en 500 "
                              "pagina's per bestand, 50 bestanden en 250 MB tegelijk."), size="1", color_scheme="gray",
                            text_align="center"),
                    align="center",
                    spacing="1",
                ),
                id=UPLOAD_ID,
                multiple=True,
                accept=ACCEPT,
                max_files=MAX_FILES,
                max_size=MAX_FILE_BYTES,
                disabled=D.doc_busy,
                # first say at once if the upload would be refused (too many in flight), then send it; the three
                # events of one drop carry its id (they reach the server in any order)
                on_drop=[
                    D.upload_starting(NEW_DROP, STILL_SENDING, DROPPED_BYTES),
                    D.upload_documents(rx.upload_files(
                        upload_id=UPLOAD_ID,
                        on_upload_progress=lambda p: D.upload_progress(p, THIS_DROP).throttle(200)),
                        THIS_DROP)],
                on_drop_rejected=lambda rejected: D.files_rejected(named_rejections(rejected), THIS_DROP),
                border="2px dashed var(--gray-6)",
                border_radius="10px",
                padding="20px",
                width="100%",
                cursor="pointer",
                class_name="doc-drop",
                aria_label=t("Documenten toevoegen: sleep bestanden hierheen of druk op Enter om bestanden te kiezen"),
            ), t("Bestanden kiezen om toe te voegen")),
            rx.cond(SENDING,
                    rx.hstack(
                        rx.progress(value=D.doc_sent, max=100, width="100%", aria_label=t("Bestanden versturen"),
                                    id="doc-sending"),
                        rx.text(tf("Versturen: {percent} %", percent=D.doc_sent), size="1", color_scheme="gray",
                                white_space="nowrap", aria_hidden="true"),
                        width="100%", align="center", spacing="3")),
            rx.cond(D.doc_error != "", error_callout(D.doc_error)),
            rx.cond(
                D.doc_rows.length() > 0,
                rx.vstack(
                    rx.foreach(D.doc_rows, document_row),
                    rx.cond((D.doc_summary != "") & ~SENDING,  # not "Klaar" while files are on their way
                            rx.hstack(rx.text(D.doc_summary, size="2", weight="medium", id="doc-summary"),
                                      rx.spacer(),
                                      rx.button(t("Lijst wissen"), variant="ghost", size="1",
                                                on_click=D.clear_documents),
                                      width="100%", align="center")),
                    width="100%",
                    spacing="0",
                    role="status",
                    aria_live="polite",
                    id="doc-results",
                ),
            ),
            spacing="3",
            width="100%",
        ),
        width="100%",
        id="documents",
    )


def list_body() -> rx.Component:
    """Search, the new-topic button and the table."""
    return rx.vstack(
        rx.hstack(
            rx.vstack(
                rx.heading(t("Kennisbank beheren"), size="7"),
                rx.text(tf("{count} onderwerpen in je organisatie", count=L.total), color_scheme="gray", size="2"),
                spacing="1",
            ),
            link_button(rx.icon("plus", size=16), t("Nieuw onderwerp"), href="/admin/topics/new", id="new-topic",
                        white_space="nowrap"),
            justify="between",
            align="end",
            width="100%",
            wrap="wrap",
            spacing="3",
        ),
        documents_card(),
        rx.input(rx.input.slot(rx.icon("search", size=16)), placeholder=t("Zoek op naam, id of beschrijving…"),
                 value=L.query, on_change=L.set_query.debounce(150), width="100%", max_width="420px",
                 aria_label=t("Zoek onderwerpen")),
        rx.cond(L.load_error != "", error_callout(L.load_error)),
        rx.cond(
            L.loading,
            skeleton_lines(8, "28px"),
            rx.cond(
                L.rows.length() > 0,
                rx.card(
                    rx.table.root(
                        rx.table.header(
                            rx.table.row(
                                rx.table.column_header_cell(t("Onderwerp")),
                                rx.table.column_header_cell(t("Id")),
                                rx.table.column_header_cell(t("Type")),
                                rx.table.column_header_cell(t("Relaties")),
                                rx.table.column_header_cell(rx.text(t("Acties"), class_name="sr-only")),
                            )
                        ),
                        rx.table.body(rx.foreach(L.rows, topic_row)),
                        width="100%",
                        variant="ghost",
                        id="admin-topics",
                        class_name="r42-cards",
                    ),
                    width="100%",
                ),
                rx.cond(
                    L.total == 0,
                    empty_state("book_dashed", t("Nog geen onderwerpen"),
                                t("Maak het eerste onderwerp aan, voeg hierboven documenten toe, of importeer een "
                                  "kennisbank met `r42 kb import`."),
                                link_button(rx.icon("plus", size=14), t("Nieuw onderwerp"),
                                            href="/admin/topics/new")),
                    empty_state("search_x", t("Niets gevonden"), t("Geen onderwerp past bij je zoekopdracht.")),
                ),
            ),
        ),
        spacing="4",
        width="100%",
    )


def invalid(name: str) -> dict:
    """A text field's attributes for its validation: invalid while its message shows, described by it (or its hint)."""
    wrong = E.field_errors.contains(name)
    return {"aria-invalid": rx.cond(wrong, "true", "false"), "aria-describedby": rx.cond(wrong, f"{name}-help", None)}


def field(label: rx.Var[str], name: str, control: rx.Component, hint: rx.Var[str] | None = None) -> rx.Component:
    """A labelled form control with its validation message (`invalid(name)` on the control: it says it is invalid,
    and which text says why)."""
    return rx.vstack(
        form_label(label, name, size="2", weight="medium", id=f"{name}-label"),
        control,
        rx.cond(
            E.field_errors.contains(name),
            rx.text(E.field_errors[name], size="1", color_scheme="red", role="alert", class_name="field-error",
                    id=f"{name}-help"),
            rx.text(hint, size="1", color_scheme="gray", id=f"{name}-help") if hint is not None else rx.fragment(),
        ),
        spacing="1",
        width="100%",
    )


def topic_form() -> rx.Component:
    """Label, id, type, description and markdown content, with a preview. `data-r42-dirty` tells the page
    script (assets/r42.js) to warn before unsaved changes are lost."""
    return rx.card(
        rx.vstack(
            rx.grid(
                field(t("Naam"), "label", rx.input(id="label", value=E.f_label, on_change=E.set_label, max_length=120,
                                                  custom_attrs=invalid("label"),
                                                  placeholder=t("Bijvoorbeeld: Partnerpensioen"), width="100%")),
                field(
                    t("Id (in de URL)"),
                    "id",
                    rx.input(id="id", value=E.f_slug, on_change=E.set_slug, read_only=~E.is_new, max_length=80,
                             custom_attrs=invalid("id"),
                             placeholder=rx.cond(E.auto_slug != "", E.auto_slug, t("partnerpensioen")), width="100%"),
                    rx.cond(E.is_new, t("kleine letters, cijfers en koppeltekens; leeg: het id volgt de naam; vast na "
                                        "aanmaken"), t("kleine letters, cijfers en koppeltekens; vast na aanmaken")),
                ),
                columns=rx.breakpoints(initial="1", sm="2"),
                spacing="4",
                width="100%",
            ),
            field(
                t("Type"),
                "type",
                rx.select.root(
                    # a label does not name a button for axe: the trigger names itself "Type" plus its value
                    rx.select.trigger(id="type", width="100%", custom_attrs={"aria-labelledby": "type-label type"}),
                    rx.select.content(*[rx.select.item(t(TYPE_LABELS[k]), value=k) for k in TOPIC_TYPES]),
                    value=E.f_type,
                    on_change=E.set_type,
                ),
            ),
            field(t("Korte beschrijving"), "description",
                  rx.text_area(id="description", value=E.f_description, on_change=E.set_description, rows="2",
                               custom_attrs=invalid("description"),
                               max_length=500, placeholder=t("Eén zin die het onderwerp uitlegt."), width="100%")),
            field(
                t("Leerinhoud (markdown)"),
                "content",
                rx.tabs.root(
                    rx.tabs.list(rx.tabs.trigger(t("Schrijven"), value="write"),
                                 rx.tabs.trigger(t("Voorbeeld"), value="preview")),
                    rx.tabs.content(
                        rx.text_area(id="content", value=E.f_content, on_change=E.set_content, rows="14",
                                     custom_attrs=invalid("content"),
                                     width="100%", font_family="ui-monospace, monospace"),
                        value="write",
                        padding_top="8px",
                    ),
                    rx.tabs.content(
                        rx.box(safe_markdown(E.f_content), padding="12px", border="1px solid var(--gray-5)",
                               border_radius="6px", min_height="120px", id="topic-preview"),
                        value="preview",
                        padding_top="8px",
                    ),
                    default_value="write",
                    width="100%",
                ),
            ),
            rx.hstack(
                link_button(t("Annuleren"), href="/admin/topics", variant="soft", color_scheme="gray",
                            id="cancel-topic"),
                rx.button(rx.cond(E.is_new, t("Aanmaken"), t("Opslaan")), on_click=E.save, loading=E.saving,
                          id="save-topic"),
                justify="end",
                spacing="3",
                width="100%",
            ),
            spacing="4",
            width="100%",
        ),
        width="100%",
        id="topic-form",
        custom_attrs={"data-r42-dirty": rx.cond(E.dirty, "true", "false"),
                      "data-r42-dirty-message": t("Je wijzigingen aan dit onderwerp zijn nog niet opgeslagen. Toch "
                                                  "weggaan?")},
    )


def relation_row(row: AdminRelationRow) -> rx.Component:
    """One relation of the edited topic, with a remove button."""
    return rx.hstack(
        rx.cond(
            row.outgoing,
            rx.text(rx.text.strong(t("deze")), " ", tv(row.phrase), " ", rx.text.strong(row.other_label), size="2"),
            rx.text(rx.text.strong(row.other_label), " ", tv(row.phrase), " ", rx.text.strong(t("deze")), size="2"),
        ),
        rx.icon_button(rx.icon("x", size=14), variant="ghost", color_scheme="red",
                       aria_label=tf("Relatie met {name} verwijderen", name=row.other_label),
                       on_click=E.remove_relation(row.source, row.target, row.type)),
        justify="between",
        align="center",
        width="100%",
        class_name="admin-relation",
    )


def relations_editor() -> rx.Component:
    """The edited topic's relations and a form to add one."""
    return rx.card(
        rx.vstack(
            rx.heading(t("Relaties"), size="4", as_="h2"),
            rx.cond(
                E.relation_rows.length() > 0,
                rx.vstack(rx.foreach(E.relation_rows, relation_row), spacing="2", width="100%"),
                rx.text(t("Dit onderwerp heeft nog geen relaties."), size="2", color_scheme="gray"),
            ),
            rx.separator(size="4"),
            rx.text(t("Relatie toevoegen vanuit dit onderwerp"), size="2", weight="medium"),
            rx.flex(
                rx.select.root(
                    rx.select.trigger(aria_label=t("Soort relatie"), id="relation-type"),
                    rx.select.content(*[rx.select.item(t(RELATION_LABELS[k]), value=k) for k in RELATION_LABELS]),
                    value=E.r_type,
                    on_change=E.set_r_type,
                ),
                # type to search: the browser's own list of the tenant's topics (in Dutch order), however many
                rx.input(placeholder=t("Zoek een onderwerp…"), value=E.r_query, on_change=E.set_r_query,
                         id="relation-target", min_width="260px", auto_complete="off",
                         custom_attrs={"list": "relation-targets", "aria-label": t("Doelonderwerp")}),
                rx.el.datalist(rx.foreach(E.topic_options, lambda o: rx.el.option(value=o.label)),
                               id="relation-targets"),
                rx.button(rx.icon("plus", size=14), t("Toevoegen"), on_click=E.add_relation, variant="soft",
                          id="add-relation"),
                spacing="2",
                wrap="wrap",
            ),
            rx.cond(E.relation_error != "", rx.text(E.relation_error, color_scheme="red", size="2", role="alert")),
            spacing="3",
            width="100%",
        ),
        width="100%",
    )


def gap_draft_callout() -> rx.Component:
    """Where a topic made from a knowledge gap comes from: the questions, R42 writing, R42's draft, or why not."""
    return rx.vstack(
        rx.callout(
            rx.cond(E.model_drafted,
                    t("Ingevuld vanuit Kennishiaten: R42 schreef beschrijving en inhoud uit de vragen van leerlingen "
                      "en de dichtstbijzijnde onderwerpen. Het is een concept: controleer elke zin en vul aan wat "
                      "tussen [aanvullen: …] staat."),
                    t("Ingevuld vanuit Kennishiaten: een concept uit de vragen van leerlingen. Controleer naam en "
                      "beschrijving en schrijf het antwoord in de inhoud.")),
            icon="lightbulb", color_scheme="blue", width="100%", id="topic-from-gap"),
        rx.cond(E.drafting,
                rx.hstack(rx.spinner(size="2"),
                          rx.text(t("R42 schrijft een concept uit de dichtstbijzijnde onderwerpen…"), size="2"),
                          align="center", spacing="2", id="gap-drafting", role="status")),
        rx.cond(E.draft_note != "",
                rx.callout(rx.hstack(rx.text(E.draft_note), rx.button(t("Opnieuw proberen"), size="1", variant="soft",
                                                                      on_click=E.retry_draft, id="gap-draft-retry"),
                                     align="center", spacing="3", wrap="wrap"),
                           icon="info", color_scheme="amber", width="100%", id="gap-draft-note", role="status")),
        spacing="2",
        width="100%",
    )


def editor_body() -> rx.Component:
    """Header, topic form and (for existing topics) the relations editor."""
    return rx.cond(
        E.loading,
        skeleton_lines(10, "28px"),
        rx.cond(
            E.found,
            rx.vstack(
                rx.hstack(
                    rx.link(t("Kennisbank beheren"), href="/admin/topics", size="2", color_scheme="gray"),
                    rx.icon("chevron_right", size=14, color="var(--gray-9)"),
                    rx.text(rx.cond(E.is_new, t("Nieuw onderwerp"), E.f_label), size="2"),
                    align="center",
                    spacing="2",
                ),
                rx.hstack(
                    rx.heading(rx.cond(E.is_new, t("Nieuw onderwerp"), t("Onderwerp bewerken")), size="7"),
                    rx.cond(~E.is_new, link_button(rx.icon("eye", size=14), t("Bekijken"), variant="ghost",
                                                   href="/topics/" + E.f_slug)),
                    justify="between",
                    width="100%",
                ),
                rx.cond(E.from_gap != "", gap_draft_callout()),
                topic_form(),
                rx.cond(~E.is_new, relations_editor()),
                spacing="4",
                width="100%",
            ),
            empty_state("file_question", t("Onderwerp niet gevonden"),
                        t("Dit onderwerp bestaat niet in je organisatie."),
                        link_button(t("Terug naar de lijst"), variant="soft", href="/admin/topics")),
        ),
    )


def list_page() -> rx.Component:
    """`/admin/topics`."""
    return frame(list_body())


def editor_page() -> rx.Component:
    """`/admin/topics/new` and `/admin/topics/<slug>`."""
    return frame(editor_body())
