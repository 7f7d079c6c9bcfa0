"""The app's pages: their paths and Dutch titles. Nothing is imported here, so a browser test can list the pages
without building the app (`r42_app.r42_app` pairs each path with its page and loader)."""

PAGES: tuple[tuple[str, str], ...] = (
    ("/", "Onderwerpen"),
    ("/topics/[slug]", "Onderwerp"),
    ("/graph", "Kennisgraaf"),
    ("/testen", "Testen"),
    ("/admin/topics", "Kennisbank beheren"),
    ("/admin/topics/new", "Nieuw onderwerp"),
    ("/admin/topics/[slug]", "Onderwerp bewerken"),
    ("/admin/suggestions", "Voorstellen"),
    ("/admin/chatbot", "R42-instellingen"),
    ("/admin/costs", "Kosten en tegoed"),
    ("/admin/tools", "Externe hulpmiddelen"),
    ("/admin/feedback", "Beoordelingen"),
    ("/admin/gaps", "Kennishiaten"),
    ("/admin/people", "Mensen"),
    ("/welkom", "Welkom"),
    ("/nieuw-wachtwoord", "Nieuw wachtwoord"),
    ("/wachtwoord-vergeten", "Wachtwoord vergeten"),
)
