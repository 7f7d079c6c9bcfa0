"""The app's pages: their paths and Dutch titles. Nothing is imported here, so a browser test can list the pages
without building the app (`r42_app.r42_app` pairs each path with its page and loader)."""


def N_(text: str) -> str:  # noqa: N802 - the catalogue's marker (r42_app/catalogue.py finds it by name): each title
    return text               # is a page word, shown in the reader's language on the browser's tab (title_marker)


PAGES: tuple[tuple[str, str], ...] = (
    ("/", N_("Onderwerpen")),
    ("/topics/[slug]", N_("Onderwerp")),
    ("/graph", N_("Kennisgraaf")),
    ("/testen", N_("Testen")),
    ("/admin/topics", N_("Kennisbank beheren")),
    ("/admin/topics/new", N_("Nieuw onderwerp")),
    ("/admin/topics/[slug]", N_("Onderwerp bewerken")),
    ("/admin/suggestions", N_("Voorstellen")),
    ("/admin/chatbot", N_("R42-instellingen")),
    ("/admin/costs", N_("Kosten en tegoed")),
    ("/admin/tools", N_("Externe hulpmiddelen")),
    ("/admin/feedback", N_("Beoordelingen")),
    ("/admin/gaps", N_("Kennishiaten")),
    ("/admin/people", N_("Mensen")),
    ("/welkom", N_("Welkom")),
    ("/nieuw-wachtwoord", N_("Nieuw wachtwoord")),
    ("/wachtwoord-vergeten", N_("Wachtwoord vergeten")),
)
NOT_FOUND_TITLE = N_("Pagina niet gevonden")  # any other address
