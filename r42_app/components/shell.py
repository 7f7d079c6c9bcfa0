"""The page frame: navigation bar, sign-in card and the refused-access panel."""

import reflex as rx

from r42_app.components.account import change_password_dialog
from r42_app.components.chat import chat
from r42_app.components.common import form_label, link_button
from r42_app.components.i18n import N_, language_marker, t, tf
from r42_app.components.theme import NAV_HEIGHT
from r42_app.core.messages import LANGUAGE_NAMES, LANGUAGES, Language
from r42_app.state.account import AccountState
from r42_app.state.auth import AuthState
from r42_app.state.chat import ChatState
from r42_app.state.language import LanguageState


def brand() -> rx.Component:
    """The R42 word mark in the navigation bar."""
    return rx.link(
        rx.hstack(
            rx.center(
                rx.text("R42", weight="bold", size="2", color="white"),
                background="var(--accent-9)",
                border_radius="8px",
                padding="4px 8px",
            ),
            rx.text(t("Leren"), weight="medium", size="3", color="var(--gray-12)", class_name="sr-narrow"),
            # the name is the visible text and then where the link goes (WCAG 2.5.3: no aria-label that differs)
            rx.el.span(t(", naar het overzicht"), class_name="sr-only"),
            align="center",
            spacing="2",
        ),
        href="/",
        underline="none",
    )


def nav_link(text: str, href: str, icon: str, section: str) -> rx.Component:  # text: marked with N_
    """A top-level navigation link; the one of the current part of the app is marked (aria-current)."""
    return rx.link(
        # the text names the link; on a phone only the icon shows and the text stays for screen readers
        rx.hstack(rx.icon(icon, size=16), rx.text(t(text), size="2", class_name="sr-narrow"),
                  align="center", spacing="1"),
        href=href,
        class_name="r42-nav",
        custom_attrs={"aria-current": rx.cond(AuthState.section == section, "page", "false")},
        color_scheme="gray",
        high_contrast=True,
        underline="none",
        padding="6px 10px",
        border_radius="6px",
        _hover={"background": "var(--gray-3)"},
    )


ADMIN_PAGES = [
    (N_("Kennisbank"), "/admin/topics", "book_marked", "admin-nav-topics"),
    (N_("Voorstellen"), "/admin/suggestions", "inbox", "admin-nav-suggestions"),
    (N_("R42-instellingen"), "/admin/chatbot", "sliders_horizontal", "admin-nav-chatbot"),
    (N_("Kosten en tegoed"), "/admin/costs", "chart_column", "admin-nav-costs"),
    (N_("Externe hulpmiddelen"), "/admin/tools", "wrench", "admin-nav-tools"),
    (N_("Beoordelingen"), "/admin/feedback", "thumbs_up", "admin-nav-feedback"),
    (N_("Kennishiaten"), "/admin/gaps", "circle_help", "admin-nav-gaps"),
    (N_("Mensen"), "/admin/people", "users", "admin-nav-people"),
]


def admin_menu() -> rx.Component:
    """"Beheer": the admin pages in one menu, so the bar fits on a laptop."""
    return rx.menu.root(
        rx.menu.trigger(
            rx.button(rx.icon("settings", size=16), rx.text(t("Beheer"), size="2", class_name="sr-narrow"),
                      rx.icon("chevron_down", size=14), variant="ghost", color_scheme="gray", high_contrast=True,
                      id="admin-menu", class_name="r42-nav",
                      custom_attrs={"aria-current": rx.cond(AuthState.section == "admin", "page", "false")},
                      margin="0", padding="6px 10px", height="auto"),  # a ghost button's negative margin
                                                                      # set it off the bar's line
        ),
        rx.menu.content(*[rx.menu.item(rx.icon(icon, size=14), t(label), on_click=rx.redirect(href), id=item_id)
                          for label, href, icon, item_id in ADMIN_PAGES]),
    )


def language_item(language: Language) -> rx.Component:
    """Nederlands / English in the account menu, each named in its own language (so a reader who does not read
    the page's language still finds theirs); the current one checked."""
    current = LanguageState.language == language
    return rx.menu.item(
        rx.icon("check", size=14, opacity=rx.cond(current, "1", "0")),
        rx.el.span(LANGUAGE_NAMES[language], lang=language),
        on_click=AuthState.choose_language(language), id=f"language-{language}",
        custom_attrs={"role": "menuitemradio", "aria-checked": rx.cond(current, "true", "false")},
    )


def user_menu() -> rx.Component:
    """Avatar with name, role, tenant and the sign-out actions (this session, or every session of the user)."""
    return rx.menu.root(
        rx.menu.trigger(
            rx.button(
                rx.avatar(fallback=AuthState.initials, size="1", radius="full"),
                rx.text(AuthState.user_name, size="2", class_name="sr-narrow"),
                rx.icon("chevron_down", size=14),
                # named by what it shows (initials, name) and what it is (WCAG 2.5.3: no aria-label that differs)
                rx.el.span(t(", accountmenu"), class_name="sr-only"),
                variant="ghost",
                color_scheme="gray",
                high_contrast=True,
                id="user-menu",
            )
        ),
        rx.menu.content(
            rx.box(
                rx.text(AuthState.user_name, weight="medium", size="2"),
                rx.text(AuthState.user_email, size="1", color_scheme="gray"),
                rx.text(
                    rx.cond(AuthState.is_admin, t("Beheerder"), t("Deelnemer")), " · ", AuthState.tenant_name,
                    size="1", color_scheme="gray",
                ),
                padding="8px 12px",
            ),
            rx.menu.separator(),
            rx.menu.item(rx.icon("sparkles", size=14), t("Wat R42 voor je mag doen"),
                         on_click=ChatState.set_show_capabilities(True), id="my-capabilities-open"),
            rx.menu.item(rx.icon("key_round", size=14), t("Wachtwoord wijzigen"),
                         on_click=AccountState.open_change(True), id="change-password-open"),
            rx.menu.separator(),
            rx.text(t("Taal"), size="1", color_scheme="gray", padding="4px 12px 0", id="language-label"),
            *[language_item(lang) for lang in LANGUAGES],  # (Reflex's menu has no group: the heading is seen only)
            rx.menu.item(
                rx.icon("log_out", size=14),
                rx.vstack(rx.text(t("Afmelden"), size="2"),
                          rx.text(t("Wist ook je gesprek met R42 van dit apparaat"), size="1", color_scheme="gray",
                                  id="sign-out-hint"),
                          spacing="0", align="start"),
                on_click=AuthState.sign_out, id="sign-out", height="auto", padding_y="4px",
            ),
            rx.menu.item(
                rx.icon("monitor_smartphone", size=14),
                rx.vstack(rx.text(t("Overal afmelden"), size="2"),
                          rx.text(t("Op al je apparaten en in al je tabbladen"), size="1", color_scheme="gray",
                                  id="sign-out-everywhere-hint"),
                          spacing="0", align="start"),
                on_click=AuthState.sign_out_everywhere, id="sign-out-everywhere", height="auto", padding_y="4px",
            ),
            max_width="calc(100vw - 16px)",  # on a phone it ran 18 px past the screen's edge
        ),
    )


def skip_link(target: str = "main") -> rx.Component:
    """"Naar de inhoud": the first stop of the Tab key, out of sight until it has the focus. It leads to `target`,
    the element with that id (`main`, or on pages with the topic list the reading column beside it)."""
    return rx.fragment(
        rx.el.a(t("Naar de inhoud"), href=f"#{target}", id="skip-link", class_name="skip-link"),
        # the launcher is the last stop of a long page; Ctrl+/ opens R42 from anywhere, said here, where the
        # keyboard starts (hidden during a quiz, with the launcher)
        rx.el.a(t("R42 openen (Ctrl+/)"), href="#r42-launcher", id="skip-r42", class_name="skip-link"),
    )


def navbar() -> rx.Component:
    """The bar at the top of every signed-in page: the `header` landmark with the main navigation."""
    return rx.el.header(
        rx.hstack(
            brand(),
            rx.el.nav(
                rx.hstack(
                    nav_link(N_("Onderwerpen"), "/", "book_open", "learn"),
                    nav_link(N_("Kennisgraaf"), "/graph", "network", "graph"),
                    nav_link(N_("Testen"), "/testen", "graduation_cap", "quiz"),
                    rx.cond(AuthState.is_admin, admin_menu(), rx.fragment()),
                    spacing="1",
                    align="center",
                ),
                aria_label=t("Hoofdmenu"),
                margin_left="12px",
            ),
            align="center",
        ),
        rx.hstack(
            # inside a learning environment's frame only (assets/r42.js marks the page): the way out of the frame
            rx.button(rx.icon("external_link", size=14), rx.text(t("Nieuw tabblad"), class_name="hide-narrow"),
                      variant="soft", size="1", on_click=AuthState.open_in_new_tab, id="r42-new-tab",
                      class_name="r42-framed-only", title=t("R42 openen in een nieuw tabblad"),
                      custom_attrs={"aria-label": t("R42 openen in een nieuw tabblad")}),
            rx.badge(rx.icon("building_2", size=12), AuthState.tenant_name, variant="surface", color_scheme="gray",
                     class_name="hide-narrow"),
            user_menu(),
            align="center",
            spacing="3",
        ),
        class_name="r42-header",
        height=NAV_HEIGHT,
        padding_x="20px",
        background="var(--color-panel-solid)",
        border_bottom="1px solid var(--gray-5)",
        position="sticky",
        top="0",
        z_index="10",
        width="100%",
    )


def sign_in_card() -> rx.Component:
    """Email and password sign-in; the page fills in place afterwards."""
    return rx.el.main(rx.center(
        rx.card(
            rx.form(
                rx.vstack(
                    rx.center(
                        rx.text("R42", weight="bold", size="5", color="white"),
                        background="var(--accent-9)",
                        border_radius="12px",
                        width="56px",
                        height="56px",
                    ),
                    rx.heading(t("Aanmelden"), size="6"),
                    rx.text(t("Leer met de kennisbank van je organisatie."), color_scheme="gray", size="2"),
                    rx.cond(AuthState.signin_error != "", rx.callout(AuthState.signin_error, icon="circle_alert",
                            color_scheme="red", role="alert", width="100%", id="signin-error")),
                    rx.vstack(
                        form_label(t("E-mailadres"), "email", size="2", weight="medium"),
                        rx.input(id="email", name="email", type="email", placeholder=t("naam@organisatie.nl"),
                                 auto_complete="username", required=True, auto_focus=True, size="3", width="100%",
                                 on_blur=AuthState.check_email),
                        # an organisation with its own sign-in page: no password here (Enter goes there)
                        rx.cond(
                            AuthState.sso_name == "",
                            rx.vstack(
                                form_label(t("Wachtwoord"), "password", size="2", weight="medium"),
                                rx.input(id="password", name="password", type="password",
                                         auto_complete="current-password", size="3", width="100%"),
                                spacing="2", width="100%",
                            ),
                            rx.text(tf("Je organisatie {name} laat je aanmelden via haar eigen inlogpagina.",
                                       name=AuthState.sso_name), size="2", id="sso-hint", role="status"),
                        ),
                        spacing="2",
                        width="100%",
                    ),
                    rx.button(rx.cond(AuthState.sso_name == "", t("Aanmelden"),
                                      tf("Inloggen met {name}", name=AuthState.sso_name)),
                              type="submit", size="3", width="100%", id="sign-in"),
                    rx.cond(AuthState.sso_name == "",
                            rx.link(t("Wachtwoord vergeten?"), href="/wachtwoord-vergeten", size="2",
                                    id="forgot-link")),
                    rx.cond(AuthState.demo_hint,
                            rx.text(t("Demo-accounts en wachtwoord staan in de README."), size="1", color_scheme="gray",
                                    id="demo-hint")),
                    spacing="4",
                    align="center",
                    width="100%",
                ),
                on_submit=AuthState.sign_in,
                reset_on_submit=False,
            ),
            size="4",
            width="100%",
            max_width="400px",
            id="sign-in-card",
            # which backend worker this tab talks to (as on signed-in pages; the multi-worker tests read it)
            custom_attrs={"data-r42-worker": ChatState.worker},
        ),
        min_height="100vh",
        padding="16px",
    ), id="main")


def forbidden_panel() -> rx.Component:
    """Shown when a signed-in learner opens an admin URL."""
    return rx.center(
        rx.vstack(
            rx.icon("shield_alert", size=40, color="var(--red-9)"),
            rx.heading(t("Geen toegang"), size="6", id="forbidden"),
            rx.text(t("Deze pagina is alleen voor beheerders van je organisatie."), color_scheme="gray"),
            link_button(t("Naar de onderwerpen"), variant="soft", href="/"),
            align="center",
            spacing="3",
        ),
        padding="80px 16px",
    )


def checking_session() -> rx.Component:
    """Shown for the moment the stored session is being checked."""
    return rx.center(rx.spinner(size="3"), min_height="100vh", aria_label=t("Sessie controleren"))


def page_frame(body: rx.Component, admin: bool = False, content_id: str = "main") -> rx.Component:
    """Signed-out: the sign-in card. Signed-in: navigation and `body` (admin pages refuse learners). The skip link
    leads to `content_id`: `main`, or the id of the content inside it when `body` opens with a long list (the learn
    pages' topic list: its 50 links are not what "Naar de inhoud" should step over to)."""
    content = rx.cond(AuthState.is_admin, body, forbidden_panel()) if admin else body
    return rx.fragment(language_marker(), rx.cond(
        AuthState.signed_in,
        rx.box(skip_link(content_id), navbar(),
               # tabindex -1: the skip link moves the focus here, not only the scroll position
               rx.el.main(content, id="main", class_name="r42-page", tab_index=-1),
               chat(), change_password_dialog(), min_height="100vh"),
        rx.cond(AuthState.checked, sign_in_card(), checking_session()),
    ))
