"""The R42 launcher, brand mark and chat window, on every signed-in page."""

import reflex as rx

from r42_app.components.common import form_label
from r42_app.components.i18n import t, tm
from r42_app.components.markdown import safe_markdown
from r42_app.core.capabilities import CAPABILITIES, CAPABILITY_HELP_FOR_YOU, CAPABILITY_LABELS
from r42_app.core.chat_view import UIMessage
from r42_app.state.auth import AuthState
from r42_app.state.chat import ChatState


def around(sentence: rx.Var, field: str) -> tuple[rx.Var, rx.Var]:
    """The words of a translated sentence (`t("... {field} ...")`) before and after its field, for a value shown as
    its own element (code, a quotation): one sentence for the translator, the value where their language puts it."""
    parts = sentence.to(str).split("{" + field + "}")
    return parts[0], parts[1]


def mark(size: str = "2", id: str = "r42-mark") -> rx.Component:
    """The R42 brand mark in its three states: idle, typing (animated) and error."""
    return rx.box(
        rx.text("R42", weight="bold", size=size, color="white", class_name="r42-mark-text"),
        class_name=rx.match(ChatState.mark, ("typing", "r42-mark r42-mark-typing"),
                            ("error", "r42-mark r42-mark-error"), "r42-mark r42-mark-idle"),
        data_state=ChatState.mark,
        id=id,
        aria_label=rx.match(ChatState.mark, ("typing", t("R42 schrijft")), ("error", t("R42: er ging iets mis")),
                            "R42"),
    )


def launcher() -> rx.Component:
    """The floating button, bottom right, that opens and closes the window."""
    return rx.el.button(
        mark("3", id="r42-launcher-mark"),
        on_click=ChatState.toggle,
        class_name=rx.cond(ChatState.availability != "", "r42-launcher r42-launcher-off", "r42-launcher"),
        aria_label=rx.cond(ChatState.is_open, t("Sluit R42"),
                           rx.cond(ChatState.availability != "", t("R42 staat uit"), t("Open R42, je leerassistent"))),
        aria_expanded=ChatState.is_open,
        aria_keyshortcuts="Control+/",
        id="r42-launcher",
        title=t("Vraag het R42 (Ctrl+/)"),
    )


# True where the window covers the page (assets/r42.css, the phone breakpoint): a source link then closes it.
COVERS_PAGE: rx.Var[bool] = rx.Var(_js_expr="window.matchMedia('(max-width: 640px)').matches", _var_type=bool)


def citation_chip(text, **props) -> rx.Component:
    """A [ref:N] of the answer as a chip that opens the cited topic."""
    return rx.link(rx.icon("book_open", size=12), text, class_name="r42-cite",
                   on_click=ChatState.follow_source(COVERS_PAGE), **props)


def sources_list(msg: UIMessage) -> rx.Component:
    """Under a finished answer: every topic it cites, once, as links (the inline chips name each once too)."""
    return rx.cond(
        (msg.status != "streaming") & (msg.sources.length() > 0),
        rx.box(
            rx.text(t("Bronnen"), size="1", weight="medium", class_name="r42-sources-title"),
            rx.el.ul(rx.foreach(msg.sources, lambda c: rx.el.li(
                rx.link(rx.icon("book_open", size=12, aria_hidden="true"), c.label, href=c.href,
                        class_name="r42-source", on_click=ChatState.follow_source(COVERS_PAGE)))),
                aria_label=t("Bronnen")),
            class_name="r42-sources",
        ),
    )


def quota_hint() -> rx.Component:
    """No AI credit left: say so kindly (not an error), and show admins where to top up."""
    return rx.callout(
        rx.text(rx.cond(AuthState.is_admin,
                        t("Vul het tegoed aan, dan kan R42 meteen weer antwoorden. "),
                        t("Je beheerder kan het tegoed aanvullen; daarna kun je je vraag opnieuw stellen.")),
                rx.cond(AuthState.is_admin, rx.link(t("Naar Kosten en tegoed"), href="/admin/costs",
                                                    id="r42-quota-link", high_contrast=True, underline="always",
                                                    weight="medium")),
                size="1"),
        icon="sparkles", color_scheme="amber", size="1", high_contrast=True, class_name="r42-quota", margin_top="6px",
    )


def _action(icon: str, label: rx.Var, on_click, id: str) -> rx.Component:
    return rx.tooltip(rx.icon_button(rx.icon(icon, size=13), size="1", variant="ghost", color_scheme="gray",
                                     on_click=on_click, aria_label=label, class_name=id, type="button"), content=label)


def answer_actions(msg: UIMessage) -> rx.Component:
    """Under a finished answer: copy it; for the last one, ask again."""
    return rx.cond(
        ~ChatState.streaming & (msg.id != "greeting") & (msg.content != "")
        & ((msg.status == "ok") | (msg.status == "offline") | (msg.status == "incomplete")),
        rx.hstack(
            _action("copy", t("Kopieer het antwoord"), ChatState.copy(msg.id), "r42-copy"),
            rx.icon_button(rx.icon("thumbs_up", size=13), size="1", type="button", class_name="r42-thumb-up",
                           variant=rx.cond(msg.rating == "up", "soft", "ghost"),
                           color_scheme=rx.cond(msg.rating == "up", "green", "gray"),
                           on_click=ChatState.rate(msg.id, "up"), aria_label=t("Goed antwoord"),
                           aria_pressed=msg.rating == "up"),
            rx.icon_button(rx.icon("thumbs_down", size=13), size="1", type="button", class_name="r42-thumb-down",
                           variant=rx.cond(msg.rating == "down", "soft", "ghost"),
                           color_scheme=rx.cond(msg.rating == "down", "red", "gray"),
                           on_click=ChatState.rate(msg.id, "down"), aria_label=t("Slecht antwoord"),
                           aria_pressed=msg.rating == "down"),
            rx.cond(msg.id == ChatState.last_assistant_id,
                    _action("refresh_cw", t("Opnieuw antwoorden"), ChatState.regenerate, "r42-regenerate")),
            spacing="1", margin_top="4px", class_name="r42-actions",
        ),
    )


def reason_form(msg: UIMessage) -> rx.Component:
    """After a thumbs-down: what was wrong, optionally (Escape or "Overslaan" skips it)."""
    return rx.cond(
        msg.id == ChatState.reason_for,
        rx.form(
            rx.vstack(
                form_label(t("Bedankt. Wat klopte er niet? (optioneel)"), "r42-reason", size="1", weight="medium"),
                rx.el.textarea(name="reason", id="r42-reason", rows="2", max_length=500, class_name="r42-reason",
                               placeholder=t("Bijvoorbeeld: het antwoord noemt de verkeerde leeftijd")),
                rx.hstack(
                    rx.button(t("Versturen"), type="submit", size="1", id="r42-reason-send"),
                    rx.button(t("Overslaan"), type="button", size="1", variant="soft", color_scheme="gray",
                              on_click=ChatState.skip_reason, id="r42-reason-skip"),
                    spacing="2",
                ),
                spacing="1", width="100%",
            ),
            on_submit=ChatState.send_reason, reset_on_submit=True, class_name="r42-reason-form", width="100%",
            margin_top="4px", aria_label=t("Toelichting bij je beoordeling"),
        ),
    )


def user_bubble(msg: UIMessage) -> rx.Component:
    """The learner's question; the last one can be taken back to edit and send again."""
    return rx.vstack(
        rx.box(rx.text(msg.content, white_space="pre-wrap", size="2"), class_name="r42-bubble r42-user",
               data_editing=(msg.id == ChatState.editing).to_string()),
        rx.cond(msg.id == ChatState.editing,
                rx.text(t("Je bewerkt deze vraag"), size="1", color_scheme="gray", class_name="r42-editing-note"),
                rx.cond(~ChatState.streaming & (msg.id == ChatState.last_user_id),
                        _action("pencil", t("Bewerk en verstuur opnieuw"), ChatState.edit_last, "r42-edit"))),
        align="end", spacing="1", width="100%",
    )


def bubble(msg: UIMessage) -> rx.Component:
    """One message: the learner's on the right, R42's on the left, notices centred."""
    return rx.match(
        msg.role,
        ("user", user_bubble(msg)),
        ("notice", rx.text(msg.content, class_name="r42-notice", size="1", role="note")),
        rx.box(
            rx.cond(msg.status == "offline", rx.badge(t("Offline antwoord uit de kennisbank"), color_scheme="amber",
                                                      variant="soft", high_contrast=True, size="1",
                                                      margin_bottom="4px", class_name="r42-offline-badge")),
            rx.cond(
                (msg.content == "") & (msg.status == "streaming"),
                rx.hstack(rx.spinner(size="1"),
                          rx.text(t("R42 zoekt in de kennisbank…"), size="1", color_scheme="gray")),
                safe_markdown(msg.display, component_map={"a": citation_chip}, chips=msg.chips, class_name="r42-md"),
            ),
            sources_list(msg),
            rx.cond((msg.status == "incomplete") & (msg.content != ""),
                    rx.text(t("Onvolledig antwoord"), size="1", color_scheme="orange", class_name="r42-incomplete")),
            rx.cond(msg.status == "error", rx.text(t("Geen antwoord ontvangen."), size="1", color_scheme="red")),
            rx.cond(msg.status == "quota", quota_hint()),
            rx.cond(msg.delta_state != "", delta_chip(msg)),
            rx.cond(msg.confirm_state != "", confirm_card(msg)),
            answer_actions(msg),
            reason_form(msg),
            class_name="r42-bubble r42-assistant",
            data_status=msg.status,
        ),
    )


def delta_chip(msg: UIMessage) -> rx.Component:
    """A proposed graph edit: what would be added, the reason, and Yes / No (answered once)."""
    return rx.box(
        rx.hstack(rx.icon("git_branch_plus", size=14),
                  rx.text(t("Voorstel voor de kennisbank"), weight="medium", size="1"), align="center", spacing="1"),
        rx.text(msg.delta["reason"].to(str), size="1", color_scheme="gray"),
        rx.vstack(rx.foreach(msg.delta_lines, lambda line: rx.text(line, size="1", class_name="r42-delta-line")),
                  spacing="0"),
        rx.match(
            msg.delta_state,
            ("pending", rx.hstack(
                rx.button(rx.cond(AuthState.is_admin, t("Ja, toevoegen"), t("Ja, voorstellen")), size="1",
                          on_click=ChatState.answer_delta(msg.id, True), class_name="r42-delta-yes"),
                rx.button(t("Nee"), size="1", variant="soft", color_scheme="gray",
                          on_click=ChatState.answer_delta(msg.id, False), class_name="r42-delta-no"),
                spacing="2")),
            ("applied", rx.badge(t("Toegevoegd"), color_scheme="green", size="1")),
            ("suggested", rx.badge(t("Voorgelegd aan de beheerders"), color_scheme="blue", size="1")),
            ("declined", rx.badge(t("Niet gedaan"), color_scheme="gray", size="1")),
            rx.badge(t("Mislukt"), color_scheme="red", size="1"),
        ),
        class_name="r42-delta",
        data_state=msg.delta_state,
    )


def confirm_card(msg: UIMessage) -> rx.Component:
    """A high-risk external tool waits: what it would do, with Toestaan / Weigeren (answered once)."""
    before, after = around(t("R42 wil {tool} uitvoeren met:"), "tool")
    return rx.box(
        rx.hstack(rx.icon("shield_alert", size=14, color="var(--amber-10)"),
                  rx.text(before, rx.code(msg.confirm_tool, size="1"), after, size="1",
                          weight="medium"),
                  align="center", spacing="1", wrap="wrap"),
        rx.vstack(rx.foreach(msg.confirm_lines, lambda line: rx.text(line, size="1", class_name="r42-delta-line")),
                  spacing="0"),
        rx.match(
            msg.confirm_state,
            ("pending", rx.hstack(
                rx.button(t("Toestaan"), size="1", color_scheme="amber",
                          on_click=ChatState.answer_confirmation(msg.id, True), class_name="r42-confirm-allow"),
                rx.button(t("Weigeren"), size="1", variant="soft", color_scheme="gray",
                          on_click=ChatState.answer_confirmation(msg.id, False), class_name="r42-confirm-deny"),
                spacing="2")),
            ("allowed", rx.badge(t("Toegestaan"), color_scheme="amber", size="1")),
            ("denied", rx.badge(t("Geweigerd"), color_scheme="gray", size="1")),
            rx.badge(t("Niet meer geldig"), color_scheme="red", size="1"),
        ),
        class_name="r42-delta r42-confirm",
        data_state=msg.confirm_state,
    )


def clear_button() -> rx.Component:
    """Trash icon that asks before wiping the thread."""
    return rx.alert_dialog.root(
        rx.alert_dialog.trigger(
            rx.icon_button(rx.icon("trash_2", size=16), variant="ghost", color_scheme="gray",
                           aria_label=t("Gesprek wissen"), id="r42-clear", disabled=ChatState.streaming)
        ),
        rx.alert_dialog.content(
            rx.alert_dialog.title(t("Gesprek wissen?")),
            rx.alert_dialog.description(t("Alle berichten in dit venster worden verwijderd. "
                                          "Dit kan niet ongedaan worden gemaakt.")),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button(t("Annuleren"), variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button(t("Wissen"), color_scheme="red", high_contrast=True,
                                                 on_click=ChatState.clear_thread,
                                                 id="r42-clear-confirm")),
                justify="end", spacing="3", margin_top="16px",
            ),
            max_width="360px",
        ),
    )


def header() -> rx.Component:
    """Mark, title, offline label, clear and close."""
    return rx.hstack(
        rx.hstack(
            mark("2"),
            rx.vstack(
                rx.heading("R42", weight="bold", size="3", as_="h2", id="r42-title"),
                rx.cond(ChatState.availability != "",
                        rx.text(t("Niet beschikbaar"), size="1", color_scheme="gray"),
                        rx.cond(ChatState.offline,
                                rx.text(t("Offline: antwoorden komen rechtstreeks uit de kennisbank"), size="1",
                                        color_scheme="amber", high_contrast=True, id="r42-offline"),
                                rx.text(t("Antwoordt vanuit de kennisbank van je organisatie"), size="1",
                                        color_scheme="gray"))),
                spacing="0",
            ),
            align="center", spacing="2",
        ),
        rx.hstack(
            clear_button(),
            rx.icon_button(rx.icon("x", size=16), variant="ghost", color_scheme="gray", on_click=ChatState.close,
                           aria_label=t("Sluit R42 (Esc)"), id="r42-close"),
            spacing="3",  # ghost buttons reach 8 px past their box: at 4 px apart the two overlapped
        ),
        justify="between", align="center", padding="10px 12px", border_bottom="1px solid var(--gray-5)", width="100%",
    )


def queued_question() -> rx.Component:
    """A question typed while R42 answers: shown as waiting, sent when the answer ends, or taken back."""
    before, after = around(t("Wordt verstuurd zodra R42 klaar is: {question}"), "question")
    return rx.cond(
        ChatState.queued != "",
        rx.hstack(
            rx.icon("clock", size=14, color="var(--gray-10)", flex_shrink="0"),
            rx.text(before, rx.el.q(ChatState.queued), after, size="1", color_scheme="gray",
                    class_name="r42-queued-text"),
            rx.icon_button(rx.icon("x", size=12), size="1", variant="ghost", color_scheme="gray", type="button",
                           on_click=ChatState.cancel_queued, aria_label=t("Terug naar het invoerveld"),
                           id="r42-queued-cancel"),
            align="center", spacing="2", padding="6px 12px", width="100%", background="var(--gray-2)",
            id="r42-queued",
        ),
    )


def editing_bar() -> rx.Component:
    """While the last question is being edited: say so, with "Annuleren" that leaves question and answer as they
    were (they go only when the edited question is sent)."""
    return rx.cond(
        ChatState.editing != "",
        rx.hstack(
            rx.icon("pencil", size=14, color="var(--gray-11)", flex_shrink="0", aria_hidden="true"),
            rx.text(t("Je bewerkt je laatste vraag; versturen vervangt de vraag en het antwoord."), size="1",
                    class_name="r42-editing-text"),
            rx.button(t("Annuleren"), size="1", variant="soft", color_scheme="gray", type="button",
                      on_click=ChatState.cancel_edit, id="r42-edit-cancel"),
            align="center", spacing="2", padding="6px 12px", width="100%", background="var(--gray-2)",
            id="r42-editing",
        ),
    )


def composer() -> rx.Component:
    """Enter sends, Shift+Enter adds a line; a stop button while R42 writes. Nothing typed is lost: the box
    is emptied by the server only when it takes the question (too long: it stays, with the reason; typed
    while R42 answers: it waits). A counter shows near the 8,000-character limit."""
    return rx.form(
        rx.vstack(
            rx.hstack(
                rx.el.textarea(
                    name="message",
                    placeholder=rx.cond(ChatState.streaming, t("R42 schrijft nog; je vraag gaat daarna…"),
                                        t("Stel je vraag…")),
                    enter_key_submit=True,
                    rows="2",
                    auto_focus=True,
                    class_name="r42-input",
                    aria_label=t("Je vraag aan R42"),
                    aria_describedby="r42-count",
                    custom_attrs={"data-last": ChatState.last_question},
                    id="r42-input",
                ),
                rx.cond(
                    ChatState.streaming,
                    rx.icon_button(rx.icon("square", size=16), on_click=ChatState.stop, type="button",
                                   color_scheme="gray", aria_label=t("Stop met schrijven"), id="r42-stop"),
                    rx.icon_button(rx.icon("send_horizontal", size=16), type="submit", aria_label=t("Verstuur"),
                                   id="r42-send"),
                ),
                align="end", spacing="2", width="100%",
            ),
            rx.hstack(
                rx.text(t("Enter verstuurt · Shift+Enter nieuwe regel"), class_name="r42-hint"),
                rx.el.div(id="r42-count", class_name="r42-count", hidden=True, aria_live="polite"),
                justify="between", width="100%",
            ),
            spacing="1", width="100%",
        ),
        on_submit=ChatState.send,
        reset_on_submit=False,
        padding="10px 12px",
        border_top="1px solid var(--gray-5)",
        width="100%",
    )


def unavailable() -> rx.Component:
    """What the window says instead of a chat when R42 is off for the tenant or for this user."""
    return rx.center(
        rx.vstack(
            rx.icon("power_off", size=28, color="var(--gray-9)"),
            rx.text(rx.cond(ChatState.availability == "disabled", t("R42 staat uit voor je organisatie"),
                            t("R42 is niet beschikbaar voor jou")), weight="medium", size="3", text_align="center"),
            rx.text(rx.cond(ChatState.availability == "disabled",
                            t("Je beheerder heeft R42 uitgezet. "
                              "Zodra R42 weer aan staat, kun je hier weer vragen stellen."),
                            t("Je beheerder heeft het beantwoorden van vragen voor jou uitgezet. Vraag je beheerder "
                              "als je denkt dat dit niet klopt.")),
                    size="2", color_scheme="gray", text_align="center"),
            align="center", spacing="2", max_width="300px",
        ),
        flex="1", padding="24px", id="r42-unavailable",
    )


def privacy_note() -> rx.Component:
    """Once per browser, while the tenant keeps the question log: what happens to the questions (issue 28)."""
    return rx.cond(
        ChatState.question_log & ~(("," + ChatState.privacy_seen + ",").contains("," + AuthState.user_id + ",")),
        rx.callout(
            rx.hstack(
                rx.text(tm("chat.privacy_note"), size="1"),
                rx.button(t("Begrepen"), size="1", variant="soft", on_click=ChatState.dismiss_privacy,
                          id="r42-privacy-ok", type="button"),
                align="center", justify="between", spacing="2", width="100%",
            ),
            icon="shield_check", size="1", color_scheme="gray", margin="8px 12px 0", id="r42-privacy-note",
        ),
    )


def sign_toggle() -> rx.Component:
    """"Zet mijn naam erbij" (issue 44): off, a rating reaches the admins without a name; on, with it. Said before a
    thumb is pressed, and only for the ratings given while it is on."""
    return rx.vstack(
        rx.checkbox(tm("chat.sign_ratings"), checked=ChatState.sign_ratings, on_change=ChatState.set_sign_ratings,
                    size="1", id="r42-sign", aria_describedby="r42-sign-help"),
        rx.text(tm("chat.sign_ratings_help"), size="1", color_scheme="gray", id="r42-sign-help"),
        spacing="0", padding="6px 12px 0", width="100%", class_name="r42-sign",
    )


def window() -> rx.Component:
    """The chat window: header, messages with autoscroll, error + retry, composer (or why R42 is off)."""
    return rx.cond(
        ChatState.is_open,
        rx.cond(ChatState.availability != "", rx.el.div(header(), unavailable(), class_name="r42-window",
                                                        role="complementary", aria_labelledby="r42-title",
                                                        id="r42-window"), rx.el.div(
            header(),
            rx.cond(ChatState.notice != "",
                    rx.callout(ChatState.notice, icon="info", size="1", color_scheme="amber", margin="8px 12px 0",
                               id="r42-restore-notice")),
            privacy_note(),
            rx.box(
                rx.auto_scroll(
                    rx.foreach(ChatState.messages, bubble),
                    class_name="r42-messages",
                    id="r42-messages",
                    role="log",
                    aria_label=t("Gesprek met R42"),
                    aria_live="off",  # not every token: #r42-status says once when an answer has ended
                    aria_busy=ChatState.streaming.to_string(),
                ),
                rx.button(rx.icon("arrow_down", size=14), t("Naar het nieuwste"), size="1", variant="solid",
                          radius="full", class_name="r42-jump", id="r42-jump", type="button",
                          on_click=rx.call_script("window.r42JumpToLatest()")),
                position="relative", flex="1", min_height="0", display="flex", flex_direction="column",
            ),
            rx.cond(
                ChatState.error != "",
                rx.hstack(
                    rx.text(ChatState.error, size="1", color_scheme="red", id="r42-error"),
                    rx.cond(ChatState.can_retry, rx.button(rx.icon("rotate_ccw", size=12), t("Opnieuw"), size="1",
                                                           variant="soft", on_click=ChatState.retry, id="r42-retry")),
                    justify="between", align="center", padding="6px 12px", width="100%",
                    background="var(--red-2)",
                ),
            ),
            queued_question(),
            editing_bar(),
            sign_toggle(),
            composer(),
            class_name="r42-window",
            role="complementary",  # on a phone assets/r42.js makes it a modal dialog (it covers the page there)
            aria_labelledby="r42-title",
            id="r42-window",
        )),
    )


def capabilities_dialog() -> rx.Component:
    """"Wat R42 voor je mag doen": this user's effective capabilities (account menu)."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(t("Wat R42 voor je mag doen")),
            rx.cond(
                ChatState.availability == "disabled",
                rx.text(t("R42 staat uit voor je organisatie."), size="2", color_scheme="gray"),
                rx.vstack(
                    *[rx.hstack(
                        rx.cond(ChatState.my_capabilities.contains(CAPABILITY_LABELS[c]),
                                rx.icon("circle_check", size=18, color="var(--grass-9)", flex_shrink="0"),
                                rx.icon("circle_minus", size=18, color="var(--gray-8)", flex_shrink="0")),
                        rx.vstack(rx.text(t(CAPABILITY_LABELS[c]), size="2", weight="medium"),
                                  rx.text(t(CAPABILITY_HELP_FOR_YOU[c]), size="1", color_scheme="gray"), spacing="0"),
                        align="start", spacing="2", class_name="my-capability",
                        data_on=ChatState.my_capabilities.contains(CAPABILITY_LABELS[c]).to_string())
                      for c in CAPABILITIES],
                    spacing="3", id="my-capabilities",
                ),
            ),
            rx.text(t("Je beheerder bepaalt dit. Een wijziging geldt vanaf je volgende vraag."), size="1",
                    color_scheme="gray", margin_top="12px"),
            rx.hstack(rx.dialog.close(rx.button(t("Sluiten"), variant="soft")), justify="end", margin_top="12px"),
            max_width="420px",
        ),
        open=ChatState.show_capabilities,
        on_open_change=ChatState.set_show_capabilities,
    )


def chat() -> rx.Component:
    """Launcher and window together (placed once per signed-in page). `data-r42-user` lets the quiz-lock
    script (assets/r42.js) find this user's `quiz:active:{userId}` flag."""
    sync = rx.el.button(on_click=ChatState.reload_thread, id="r42-thread-sync", type="button", hidden=True,
                        tab_index=-1, aria_hidden="true")  # clicked by the `storage` listener (assets/r42.js)
    check = rx.el.button(on_click=ChatState.stream_check, id="r42-stream-check", type="button", hidden=True,
                         tab_index=-1, aria_hidden="true")  # clicked while streaming (assets/r42.js)
    # the one polite announcement when an answer has ended (the log itself is aria-live=off)
    status = rx.el.div(ChatState.announcement, role="status", class_name="sr-only", id="r42-status")
    return rx.box(window(), launcher(), capabilities_dialog(), sync, check, status, id="r42-chat",
                  on_mount=ChatState.page_view,
                  custom_attrs={"data-r42-user": AuthState.user_id, "data-r42-worker": ChatState.worker})
