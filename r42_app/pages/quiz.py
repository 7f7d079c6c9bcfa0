"""`/testen`: a multiple-choice quiz on the tenant's knowledge base. R42 is locked while it runs."""

import reflex as rx

from r42_app.components.common import error_callout, link_button
from r42_app.components.i18n import t, tf, tm, tv
from r42_app.components.shell import page_frame
from r42_app.core.quiz import QUIZ_MAX_MINUTES
from r42_app.state.quiz import SCOPE_LABELS, UIReview
from r42_app.state.quiz import QuizState as Q


def around(sentence: rx.Var, field: str) -> tuple[rx.Var, rx.Var]:
    """The words of a translated sentence (`t("... {field} ...")`) before and after its field, for a value shown as
    its own element (in bold): one sentence for the translator, the value where their language puts it."""
    parts = sentence.to(str).split("{" + field + "}")
    return parts[0], parts[1]


def focus_mark(name: str) -> dict[str, str]:
    """Mark the heading that takes focus when this view appears (assets/r42.js "quiz focus")."""
    return {"data-r42-focus": name}


def intro() -> rx.Component:
    """Pick a quiz and start it."""
    return rx.card(
        rx.vstack(
            rx.hstack(rx.icon("graduation_cap", size=28, color="var(--accent-9)"),
                      rx.heading(t("Testen"), size="7", tab_index=-1, custom_attrs=focus_mark("intro"),
                                 id="quiz-intro"),
                      align="center", spacing="3"),
            rx.text(t("Test wat je weet van de kennisbank van je organisatie: meerkeuzevragen over omschrijvingen, "
                      "onderdelen, rollen en afhankelijkheden."), color_scheme="gray"),
            rx.text(t("Kies een toets"), size="2", weight="bold"),
            rx.radio_group.root(
                rx.vstack(*[rx.text(rx.flex(rx.radio_group.item(value=value, id=f"scope-{value}"), t(label),
                                            spacing="2", align="center"), as_="label", size="2")
                            for value, label in SCOPE_LABELS.items()], spacing="2"),
                value=Q.scope, on_change=Q.set_scope, id="quiz-scope", aria_label=t("Kies een toets"),
            ),
            rx.callout(rx.text(tf("Tijdens de toets is R42 niet beschikbaar, ook niet in andere tabbladen. Een toets "
                                  "duurt hoogstens {minutes} minuten; daarna komt R42 vanzelf terug.",
                                  minutes=QUIZ_MAX_MINUTES)),
                       icon="lock", color_scheme="gray", size="1", width="100%"),
            rx.cond(Q.error != "", error_callout(Q.error)),
            rx.button(rx.icon("play", size=16), t("Start de toets"), size="3", on_click=Q.start, id="quiz-start",
                      loading=Q.starting),
            spacing="4", width="100%",
        ),
        size="4", width="100%",
    )


def option(value: rx.Var) -> rx.Component:
    """One answer; once checked, the right one is green and a wrong choice red."""
    return rx.el.label(
        rx.radio_group.item(value=value, disabled=Q.revealed),
        rx.text(value, size="3", flex="1", min_width="0", overflow_wrap="break-word", hyphens="auto"),
        rx.cond(Q.revealed & (Q.right_answer == value),
                rx.icon("circle_check", size=18, color="var(--grass-9)", flex_shrink="0")),
        rx.cond(Q.revealed & (Q.choice == value) & ~Q.was_right,
                rx.icon("circle_x", size=18, color="var(--red-9)", flex_shrink="0")),
        class_name=rx.cond(
            Q.revealed & (Q.right_answer == value), "quiz-option quiz-option-right",
            rx.cond(Q.revealed & (Q.choice == value), "quiz-option quiz-option-wrong",
                    rx.cond(Q.choice == value, "quiz-option quiz-option-chosen", "quiz-option"))),
    )


def verdict() -> rx.Component:
    """Right or wrong, shown after "Controleren" (announced to screen readers)."""
    before, after = around(t("Helaas, het goede antwoord is {answer}."), "answer")
    return rx.cond(
        Q.revealed,
        rx.callout(
            rx.cond(Q.was_right, t("Goed!"), rx.text(before, rx.text.strong(Q.right_answer), after)),
            color_scheme=rx.cond(Q.was_right, "grass", "red"), size="1", width="100%", id="quiz-verdict",
        ),
    )


def announcer() -> rx.Component:
    """The polite live region: always in the page, so that screen readers hear each verdict as it is set."""
    heard = rx.cond(Q.was_right, tm("quiz.verdict_right"), tm("quiz.verdict_wrong", answer=Q.right_answer))
    return rx.box(rx.cond(Q.revealed, heard, ""), id="quiz-live", role="status", aria_live="polite",
                  aria_atomic="true", class_name="sr-only")


def stop_dialog() -> rx.Component:
    """"Stoppen" asks first; the attempt ends only on the dialog's own "Stoppen"."""
    return rx.alert_dialog.root(
        rx.alert_dialog.trigger(
            rx.button(rx.icon("square", size=14), t("Stoppen"), variant="surface", color_scheme="gray",
                      high_contrast=True, id="quiz-stop"),
        ),
        rx.alert_dialog.content(
            rx.alert_dialog.title(t("Toets stoppen?")),
            rx.alert_dialog.description(t("Je antwoorden tellen dan niet en je krijgt geen score."), size="2"),
            rx.flex(
                rx.alert_dialog.cancel(rx.button(t("Annuleren"), variant="soft", color_scheme="gray",
                                                 id="quiz-stop-cancel")),
                rx.alert_dialog.action(rx.button(t("Stoppen"), color_scheme="red", high_contrast=True, on_click=Q.stop,
                                                 id="quiz-stop-confirm")),
                spacing="3", justify="end", margin_top="16px",
            ),
            max_width="420px", id="quiz-stop-dialog",
        ),
    )


def question() -> rx.Component:
    """One question at a time, with progress; Enter or the button goes on."""
    progress = tf("Vraag {number} van {total}", number=Q.index + 1, total=Q.questions.length())
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.text(progress, size="2", color_scheme="gray", id="quiz-progress"),
                rx.badge(tv(Q.current.kind), variant="soft", radius="full"),
                justify="between", width="100%",
            ),
            rx.progress(value=Q.progress, width="100%", size="1", aria_label=progress, id="quiz-bar"),
            rx.heading(Q.current.prompt, size=rx.breakpoints(initial="4", sm="5"), id="quiz-question",
                       overflow_wrap="anywhere", tab_index=-1, custom_attrs=focus_mark("question")),
            rx.radio_group.root(
                rx.vstack(rx.foreach(Q.current.options, option), spacing="2", width="100%"),
                value=Q.choice, on_change=Q.choose, id="quiz-options", aria_label=t("Antwoorden"), width="100%",
            ),
            announcer(),
            rx.hstack(  # above the verdict, so that it stays where it was clicked when the verdict appears
                stop_dialog(),
                rx.button(rx.cond(~Q.revealed, t("Controleren"),
                                  rx.cond(Q.is_last, t("Bekijk je score"), t("Volgende vraag"))),
                          rx.cond(Q.revealed, rx.icon("arrow_right", size=16), rx.icon("check", size=16)),
                          on_click=Q.next, disabled=Q.choice == "", id="quiz-next"),
                justify="between", width="100%",
            ),
            verdict(),
            rx.text(rx.cond(Q.held, tm("quiz.hold"), ""), id="quiz-hold", role="status", aria_live="polite",
                    size="2", color_scheme="gray"),
            spacing="4", width="100%",
        ),
        size=rx.breakpoints(initial="2", sm="4"), width="100%",
    )


def review_row(r: UIReview) -> rx.Component:
    yours, yours_after = around(t("Jouw antwoord: {answer}"), "answer")
    right, right_after = around(t("Goed antwoord: {answer}"), "answer")
    return rx.hstack(
        rx.cond(r.correct, rx.icon("circle_check", color="var(--grass-9)", size=20, flex_shrink="0"),
                rx.icon("circle_x", color="var(--red-9)", size=20, flex_shrink="0")),
        rx.vstack(
            rx.text(r.number, ". ", r.prompt, size="2", weight="medium", overflow_wrap="anywhere"),
            rx.text(yours, rx.text.strong(r.chosen), yours_after, size="2",
                    color=rx.cond(r.correct, "var(--grass-11)", "var(--red-11)")),
            rx.cond(~r.correct, rx.text(right, rx.text.strong(r.right), right_after, size="2")),
            rx.link(tf("Lees over {topic}", topic=r.right), href="/topics/" + r.slug, size="1"),
            spacing="1",
        ),
        spacing="3", align="start", width="100%", class_name="quiz-review",
    )


def result() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.heading(t("Je score"), size="6", tab_index=-1, custom_attrs=focus_mark("result"), id="quiz-result"),
            rx.hstack(
                rx.text(tf("{correct} van {total} goed", correct=Q.correct, total=Q.total), size="8", weight="bold",
                        id="quiz-score", as_="p"),
                rx.badge(Q.percent, "%", size="3", radius="full",
                         color_scheme=rx.cond(Q.percent >= 70, "grass", rx.cond(Q.percent >= 50, "amber", "red"))),
                align="center", spacing="3",
            ),
            rx.text(t("R42 is weer beschikbaar."), size="2", color_scheme="gray"),
            rx.divider(),
            rx.vstack(rx.foreach(Q.reviews, review_row), spacing="4", width="100%", id="quiz-review"),
            rx.hstack(
                rx.button(rx.icon("rotate_ccw", size=16), t("Nieuwe toets"), on_click=Q.again, id="quiz-again"),
                link_button(t("Naar de onderwerpen"), variant="soft", href="/"),
                spacing="2", wrap="wrap",  # on a phone the second button goes below, not into two lines
            ),
            spacing="4", width="100%",
        ),
        size="4", width="100%",
    )


def ended() -> rx.Component:
    """The attempt ended elsewhere or ran out of time: no score, a way to start again."""
    return rx.card(
        rx.vstack(
            rx.hstack(rx.icon("circle_stop", size=24, color="var(--amber-9)"),
                      rx.heading(t("Toets beëindigd"), size="6", tab_index=-1, custom_attrs=focus_mark("ended"),
                                 aria_describedby="quiz-ended-reason"),
                      align="center", spacing="3"),
            rx.text(Q.ended_reason, color_scheme="gray", id="quiz-ended-reason"),
            rx.text(t("R42 is weer beschikbaar."), size="2", color_scheme="gray"),
            rx.hstack(
                rx.button(rx.icon("rotate_ccw", size=16), t("Opnieuw beginnen"), on_click=Q.again, id="quiz-restart"),
                link_button(t("Naar de onderwerpen"), variant="soft", href="/"),
                spacing="2", wrap="wrap",  # on a phone the second button goes below, not into two lines
            ),
            spacing="4", width="100%",
        ),
        size="4", width="100%", id="quiz-ended",
    )


def body() -> rx.Component:
    return rx.box(
        rx.box(
            rx.match(Q.phase, ("questions", question()), ("result", result()), ("ended", ended()), intro()),
            max_width="720px", margin_x="auto",
        ),
        padding=rx.breakpoints(initial="16px 12px", sm="28px 24px"),
        on_mount=Q.shown,  # a page view (not a websocket reconnect): the intro, or "ended" after a reload
        on_unmount=Q.leave,  # navigating away ends a running quiz
        id="quiz-page",
    )


def page() -> rx.Component:
    """`/testen` (every signed-in user)."""
    return page_frame(body())
